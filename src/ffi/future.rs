//! Fences, futures and synchronisation: `celerity_fence_*`, `celerity_future_*`, `celerity_wait`,
//! `celerity_barrier`, `celerity_flush`, `celerity_set_lookahead`.

use std::ffi::c_void;
use std::sync::Arc;
use std::time::Duration;

use super::boundary::{self, OutPtr};
use super::buffer::{celerity_buffer, lookup};
use super::geometry::celerity_subrange;
use super::handle::{self, HandleKind, Registry};
use super::host_object::{celerity_host_object, lookup_host_object};
use super::runtime_slot::{is_runtime_thread, with_runtime};
use super::status::celerity_status;
use crate::error::{Error, Result};
use crate::runtime::config::Lookahead;
use crate::user_objects::Promise;

/// The result of a fence (opaque). Released with `celerity_future_release`. Thread: any thread.
pub struct celerity_future {
    _opaque: [u8; 0],
}

static FUTURES: Registry<Arc<Promise>> = Registry::new(HandleKind::Future);

/// Invalidates the handles of futures the program never released (at shutdown); returns how
/// many there were.
pub(crate) fn take_unreleased() -> usize {
    FUTURES.take_all().len()
}

/// When to use lookahead (see `celerity_set_lookahead`).
pub type celerity_lookahead = u32;
/// Compile every command at once.
pub const CELERITY_LOOKAHEAD_NONE: celerity_lookahead = 0;
/// Hold back allocating commands until two horizons have passed (default).
pub const CELERITY_LOOKAHEAD_AUTO: celerity_lookahead = 1;
/// Hold back until a fence, wait, barrier or flush.
pub const CELERITY_LOOKAHEAD_INFINITE: celerity_lookahead = 2;

/// Fences `region` of `buf` (NULL: the whole buffer): once the future is ready, `dest` holds the
/// region as it is after every task submitted before, as dense row-major elements (each node
/// receives the full region). `dest` must stay valid until then.
///
/// Ownership: the caller owns `*out` (`celerity_future_release`).
/// Errors (`CELERITY_ERROR_INVALID_ARGUMENT`): NULL `buf`, `dest` or `out`; a region outside the
/// buffer; `dest_bytes` < area × elem_size.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_fence_buffer(
    buf: *mut celerity_buffer,
    region: *const celerity_subrange,
    dest: *mut c_void,
    dest_bytes: usize,
    out: *mut *mut celerity_future,
) -> celerity_status {
    boundary::call("celerity_fence_buffer", || {
        let out = OutPtr::new(out, "out")?;
        let buffer = lookup(buf, "buf")?;
        let subrange = if region.is_null() {
            None
        } else {
            // SAFETY: non-NULL, pointing to a celerity_subrange by the caller's contract.
            let region = unsafe { *region };
            let b = region.to_box("region")?;
            if (0..3).any(|d| b.max().0[d] > buffer.range.0[d]) {
                return Err(Error::invalid_argument(format!(
                    "argument `region` (offset {:?}, range {:?}) exceeds buffer {} range {:?}",
                    region.offset, region.range, buffer.bid, buffer.range.0
                )));
            }
            Some(region.to_subrange())
        };
        let area = subrange.map_or(buffer.range.size(), |s| s.range.size());
        let needed = area * buffer.elem_size;
        if dest_bytes < needed {
            return Err(Error::invalid_argument(format!(
                "argument `dest_bytes` ({dest_bytes}) is smaller than the fenced region's {needed} bytes ({area} elements of {} bytes)",
                buffer.elem_size
            )));
        }
        if dest.is_null() && needed > 0 {
            return Err(Error::invalid_argument("argument `dest` is NULL"));
        }
        // SAFETY: `dest` holds `needed` writable bytes until the future is ready (caller's contract).
        let promise =
            with_runtime(|rt| unsafe { rt.fence_buffer(buffer.bid, subrange, dest.cast()) })?;
        out.write(handle::to_ptr(FUTURES.insert(promise)?));
        Ok(())
    })
}

/// Fences a host object: the future is ready once every side effect submitted before has run.
///
/// Errors: NULL arguments → `CELERITY_ERROR_INVALID_ARGUMENT`; released handle →
/// `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_fence_host_object(
    obj: *mut celerity_host_object,
    out: *mut *mut celerity_future,
) -> celerity_status {
    boundary::call("celerity_fence_host_object", || {
        let out = OutPtr::new(out, "out")?;
        let id = lookup_host_object(obj, "obj")?;
        let promise = with_runtime(|rt| rt.fence_host_object(id))?;
        out.write(handle::to_ptr(FUTURES.insert(promise)?));
        Ok(())
    })
}

/// Blocks until the future is ready. On the runtime's thread it also reports an asynchronous
/// failure (e.g. a failed kernel) that happened before.
///
/// Thread: any thread. Errors: NULL → `CELERITY_ERROR_INVALID_ARGUMENT`; released →
/// `CELERITY_ERROR_INVALID_STATE`; a reported failure → its status.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_future_wait(f: *mut celerity_future) -> celerity_status {
    boundary::call("celerity_future_wait", || {
        let promise = FUTURES.get(handle::from_ptr(f), "f")?;
        let waited = promise.wait(Duration::from_secs(10), |waited| {
            tracing::warn!("celerity_future_wait: still waiting after {waited:.0?}")
        });
        if is_runtime_thread() {
            with_runtime(|rt| rt.check_async_errors())?;
        }
        waited
    })
}

/// Writes whether the future is ready to `*out` without blocking.
///
/// Thread: any thread. Errors: NULL arguments → `CELERITY_ERROR_INVALID_ARGUMENT`; released →
/// `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_future_is_ready(
    f: *const celerity_future,
    out: *mut bool,
) -> celerity_status {
    boundary::call("celerity_future_is_ready", || {
        let out = OutPtr::new(out, "out")?;
        let promise = FUTURES.get(handle::from_ptr(f), "f")?;
        out.write(promise.is_ready());
        Ok(())
    })
}

/// Releases a future (waiting is not required first: the fence completes anyway). NULL is
/// ignored. Thread: any thread.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_future_release(f: *mut celerity_future) {
    if f.is_null() {
        return;
    }
    boundary::call_void("celerity_future_release", || {
        FUTURES.remove(handle::from_ptr(f), "f").map(drop)
    });
}

fn sync(
    function: &'static str,
    f: impl FnOnce(&mut crate::runtime::Runtime) -> Result<()>,
) -> celerity_status {
    boundary::call(function, || with_runtime(f))
}

/// Blocks until all work submitted on this node has finished; reports asynchronous failures.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_wait() -> celerity_status {
    sync("celerity_wait", |rt| rt.wait())
}

/// `celerity_wait`, then blocks until every node reached its barrier.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_barrier() -> celerity_status {
    sync("celerity_barrier", |rt| rt.barrier())
}

/// Hands every command queued by the lookahead to the executor now.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_flush() -> celerity_status {
    sync("celerity_flush", |rt| rt.flush())
}

/// Sets the scheduler's lookahead (NONE, AUTO or INFINITE); also flushes.
///
/// Errors: a bad value → `CELERITY_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_set_lookahead(mode: celerity_lookahead) -> celerity_status {
    boundary::call("celerity_set_lookahead", || {
        let lookahead = match mode {
            CELERITY_LOOKAHEAD_NONE => Lookahead::None,
            CELERITY_LOOKAHEAD_AUTO => Lookahead::Auto,
            CELERITY_LOOKAHEAD_INFINITE => Lookahead::Infinite,
            other => {
                return Err(Error::invalid_argument(format!(
                    "argument `mode` ({other}) is not a celerity_lookahead (0 to 2)"
                )));
            }
        };
        with_runtime(|rt| rt.set_lookahead(lookahead))
    })
}
