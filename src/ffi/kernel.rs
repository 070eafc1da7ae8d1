//! What kernels and host tasks receive: accessors and the kernel context.

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int, c_void};

use super::boundary;
use super::geometry::{celerity_chunk, celerity_subrange};
use super::status::celerity_status;
use crate::error::Error;

/// Which backend runs a kernel (`celerity_runtime_info.backend`, `celerity_kernel_context.backend`).
pub type celerity_backend = u32;
/// Host memory and emulated host devices (`devices=host:N`).
pub const CELERITY_BACKEND_HOST: celerity_backend = 0;
/// CUDA devices.
pub const CELERITY_BACKEND_CUDA: celerity_backend = 1;

/// Where accessor boundary checking (`accessor_boundary_check`) records the element accesses of
/// one accessor outside its `accessed` box; written by `celerity_accessor_check_box` (and so by
/// `celerity_accessor_ptr`) with atomic operations, from host code or CUDA device code, and
/// reported by the runtime after the chunk completed. Indices are recorded as signed values, so
/// an underflowing `i - 1` shows as -1.
#[repr(C)]
#[derive(Debug)]
pub struct celerity_accessor_record {
    /// Number of out-of-bounds element accesses.
    pub count: u64,
    /// Per dimension, the smallest offending index (INT64_MAX while none).
    pub min: [i64; 3],
    /// Per dimension, the largest offending index (INT64_MIN while none).
    pub max: [i64; 3],
    /// `fallback_size` bytes that out-of-bounds accesses are redirected to, so a wrong index
    /// does not touch memory outside the allocation.
    pub fallback: *mut c_void,
    /// Size of `fallback` in bytes (larger elements are clamped into the allocation instead).
    pub fallback_size: u64,
}

/// One buffer access of a kernel chunk, resolved to memory. Element `(i0, i1, i2)` lives at
/// `base + (((i0 - allocation.offset[0]) * allocation.range[1] + (i1 - allocation.offset[1])) *
/// allocation.range[2] + (i2 - allocation.offset[2])) * elem_size`; see
/// `celerity_accessor_ptr`. An accessor whose range mapper yields an empty region has
/// `base == NULL`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct celerity_accessor {
    /// First element of the backing allocation (device memory on CUDA).
    pub base: *mut c_void,
    /// The backing allocation's box, in buffer coordinates.
    pub allocation: celerity_subrange,
    /// What the range mapper asked for, for this chunk (its bounding box).
    pub accessed: celerity_subrange,
    /// Bytes per element.
    pub elem_size: usize,
    /// With `accessor_boundary_check` on: where accesses outside `accessed` are recorded;
    /// NULL when checking is off (the inline helpers then skip the check).
    pub record: *mut celerity_accessor_record,
}

/// Everything a kernel or host task needs to compute its chunk. Valid only during the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct celerity_kernel_context {
    /// The backend running this chunk.
    pub backend: celerity_backend,
    /// Local device index; host tasks: 0.
    pub device: u32,
    /// CUDA: the `CUstream` to launch on; host: NULL.
    pub stream: *mut c_void,
    /// The chunk to compute; offsets include the global offset.
    pub chunk: celerity_chunk,
    /// The iteration space's global offset.
    pub global_offset: [usize; 3],
    /// Accessors, in `celerity_cg_access` order.
    pub accessors: *const celerity_accessor,
    /// Number of accessors.
    pub num_accessors: u32,
    /// One element per reduction (in `celerity_cg_reduction` order), pre-set to the identity.
    pub reductions: *const *mut c_void,
    /// Number of reductions.
    pub num_reductions: u32,
    /// Host object instances, in side-effect order.
    pub host_objects: *const *mut c_void,
    /// Number of host objects.
    pub num_host_objects: u32,
    /// This process's node id.
    pub node: u32,
    /// Number of nodes.
    pub num_nodes: u32,
    /// Collective host tasks: pointer to the group's `MPI_Comm`; otherwise NULL.
    pub mpi_comm: *const c_void,
}

/// A kernel or host-task body: computes (host) or enqueues on `ctx->stream` (CUDA) the chunk
/// `ctx->chunk`. Returns 0 on success; any other value fails the task with
/// `CELERITY_ERROR_TASK_FAILED`, reported at the next synchronising call.
pub type celerity_kernel_fn = Option<
    unsafe extern "C" fn(ctx: *const celerity_kernel_context, user_data: *mut c_void) -> c_int,
>;

/// Releases a kernel's `user_data`; runs exactly once, on any thread, after the task's last
/// chunk on this node (also when nothing ran here).
pub type celerity_drop_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// How a host task is distributed.
pub type celerity_host_task_kind = u32;
/// Once, on node 0.
pub const CELERITY_HOST_TASK_ON_MASTER_NODE: celerity_host_task_kind = 0;
/// Once, on one node chosen by the runtime.
pub const CELERITY_HOST_TASK_ONCE: celerity_host_task_kind = 1;
/// Over `range`, split across nodes like a kernel.
pub const CELERITY_HOST_TASK_DISTRIBUTED: celerity_host_task_kind = 2;
/// One chunk on every node, serialised per collective group.
pub const CELERITY_HOST_TASK_COLLECTIVE: celerity_host_task_kind = 3;

thread_local! {
    /// The failure message `celerity_kernel_fail` recorded for the chunk running on this thread,
    /// keyed by the address of that chunk's context.
    static KERNEL_FAILURE: RefCell<Option<(usize, String)>> = const { RefCell::new(None) };
}

/// Takes the failure message recorded for the chunk whose context is `ctx`, if any (also
/// discarding a stale message left by another chunk on this thread).
pub(crate) fn take_kernel_failure(ctx: *const celerity_kernel_context) -> Option<String> {
    KERNEL_FAILURE
        .try_with(|slot| slot.borrow_mut().take())
        .ok()
        .flatten()
        .and_then(|(address, message)| (address == ctx as usize).then_some(message))
}

/// Fails the chunk that `ctx` describes with `message` (copied; NULL: "unknown error"), for
/// kernels and host tasks that cannot express their failure as a return code alone, such as
/// the C++ frontend catching an exception. Call it from inside the kernel or host-task
/// function, on the thread that runs it, before returning. The task then fails with
/// `CELERITY_ERROR_TASK_FAILED` whatever the function returns, and the report at the next
/// synchronising call names this message (the last one recorded, if called more than once).
///
/// Errors: `ctx` NULL → `CELERITY_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_kernel_fail(
    ctx: *const celerity_kernel_context,
    message: *const c_char,
) -> celerity_status {
    boundary::call("celerity_kernel_fail", || {
        if ctx.is_null() {
            return Err(Error::invalid_argument("argument `ctx` is NULL"));
        }
        let text = if message.is_null() {
            "unknown error".to_owned()
        } else {
            // SAFETY: a non-NULL `message` is a NUL-terminated string valid during the call
            // (the caller's contract); it is copied before returning.
            unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned()
        };
        KERNEL_FAILURE
            .try_with(|slot| *slot.borrow_mut() = Some((ctx as usize, text)))
            .map_err(|_| Error::invalid_state("celerity_kernel_fail: thread is shutting down"))
    })
}
