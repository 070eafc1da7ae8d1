//! `celerity_buffer`: buffers of 0 to 3 dimensions.

use std::ffi::{c_char, c_void};

use super::boundary::{self, OutPtr};
use super::geometry::{check_dims, read_range};
use super::handle::{self, HandleKind, Registry};
use super::runtime_slot::with_runtime;
use super::status::celerity_status;
use crate::error::{Error, Result};
use crate::grid::Range;
use crate::types::BufferId;

/// A buffer (opaque). Created by `celerity_buffer_create`, released with
/// `celerity_buffer_release`. Thread: the runtime's thread only.
pub struct celerity_buffer {
    _opaque: [u8; 0],
}

/// What a buffer handle stands for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BufferHandle {
    pub bid: BufferId,
    pub dims: usize,
    pub range: Range,
    pub elem_size: usize,
}

static BUFFERS: Registry<BufferHandle> = Registry::new(HandleKind::Buffer);

/// Invalidates the handles of buffers the program never released (at shutdown).
pub(crate) fn take_unreleased() -> Vec<BufferHandle> {
    BUFFERS.take_all().iter().map(|b| **b).collect()
}

/// The buffer behind handle argument `argument`.
pub(crate) fn lookup(buf: *const celerity_buffer, argument: &str) -> Result<BufferHandle> {
    BUFFERS.get(handle::from_ptr(buf), argument).map(|b| *b)
}

/// Creates a buffer of `dims` (0 to 3) dimensions and extent `range` (entries beyond `dims` must
/// be 1) with elements of `elem_size` bytes aligned to `elem_align` (a power of two). With
/// `host_init`, range × elem_size bytes are copied from it before this returns; without, the
/// contents are uninitialised.
///
/// Ownership: the caller owns `*out` and releases it with `celerity_buffer_release`.
/// Errors: `out` or `range` NULL, dims > 3, elem_size 0, elem_align not a power of two, an
/// element count or byte size that overflows (more than `PTRDIFF_MAX` bytes) →
/// `CELERITY_ERROR_INVALID_ARGUMENT`; `host_init` cannot be copied → `CELERITY_ERROR_OUT_OF_MEMORY`; not running, wrong thread → `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_buffer_create(
    dims: u32,
    range: *const usize,
    elem_size: usize,
    elem_align: usize,
    host_init: *const c_void,
    out: *mut *mut celerity_buffer,
) -> celerity_status {
    boundary::call("celerity_buffer_create", || {
        let out = OutPtr::new(out, "out")?;
        let dims = check_dims(dims, "dims")?;
        let range = read_range(range, dims, "range")?;
        if elem_size == 0 {
            return Err(Error::invalid_argument(
                "argument `elem_size` is 0; elements need at least one byte",
            ));
        }
        if !elem_align.is_power_of_two() {
            return Err(Error::invalid_argument(format!(
                "argument `elem_align` ({elem_align}) is not a power of two"
            )));
        }
        let count = range.checked_size().ok_or_else(|| {
            Error::invalid_argument(format!(
                "argument `range` ({range:?}): the element count overflows 64 bits"
            ))
        })?;
        let bytes = range.checked_bytes(elem_size).ok_or_else(|| {
            Error::invalid_argument(format!(
                "argument `range` ({range:?}, {count} elements) with argument `elem_size` ({elem_size}) needs more than the {} bytes one allocation can hold",
                isize::MAX
            ))
        })?;
        let init = if host_init.is_null() {
            None
        } else {
            // SAFETY: the C caller guarantees `host_init` points to range × elem_size readable bytes.
            Some(unsafe { std::slice::from_raw_parts(host_init.cast::<u8>(), bytes) })
        };
        let bid = with_runtime(|rt| rt.create_buffer(dims, range, elem_size, elem_align, init))?;
        let bits = BUFFERS.insert(BufferHandle {
            bid,
            dims,
            range,
            elem_size,
        })?;
        out.write(handle::to_ptr(bits));
        Ok(())
    })
}

/// Sets the buffer's debug name (used in messages and graph output; the string is copied).
///
/// Errors: NULL `buf` or `name` → `CELERITY_ERROR_INVALID_ARGUMENT`; released handle →
/// `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_buffer_set_name(
    buf: *mut celerity_buffer,
    name: *const c_char,
) -> celerity_status {
    boundary::call("celerity_buffer_set_name", || {
        let buffer = lookup(buf, "buf")?;
        let name = boundary::str_arg(name, "name")?;
        with_runtime(|rt| rt.set_buffer_name(buffer.bid, name))
    })
}

/// Writes the buffer's extent (3-wide, padded with 1) to `out_range`.
///
/// Errors: NULL arguments → `CELERITY_ERROR_INVALID_ARGUMENT`; released handle →
/// `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_buffer_get_range(
    buf: *const celerity_buffer,
    out_range: *mut usize,
) -> celerity_status {
    boundary::call("celerity_buffer_get_range", || {
        let out = OutPtr::new(out_range.cast::<[usize; 3]>(), "out_range")?;
        let buffer = lookup(buf, "buf")?;
        with_runtime(|_| Ok(()))?;
        out.write(buffer.range.0);
        Ok(())
    })
}

/// Releases the buffer handle; the runtime frees the buffer after all work submitted on it.
/// NULL is ignored.
///
/// Errors: released or forged handle → `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_buffer_release(buf: *mut celerity_buffer) -> celerity_status {
    if buf.is_null() {
        return super::status::CELERITY_OK;
    }
    boundary::call("celerity_buffer_release", || {
        let buffer = lookup(buf, "buf")?;
        with_runtime(|rt| rt.release_buffer(buffer.bid))?;
        BUFFERS.remove(handle::from_ptr(buf), "buf").map(drop)
    })
}
