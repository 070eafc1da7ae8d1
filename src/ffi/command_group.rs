//! `celerity_cg`: describing a command group (accesses, side effects, reductions, hints) and
//! submitting it as a kernel or host task.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::boundary::{self, OutPtr};
use super::buffer::{celerity_buffer, lookup};
use super::geometry::{celerity_chunk, celerity_subrange, check_dims, read_offset, read_range};
use super::handle::{self, HandleKind, Registry};
use super::host_object::{
    celerity_collective_group, celerity_host_object, lookup_group, lookup_host_object,
};
use super::kernel::{
    CELERITY_BACKEND_CUDA, CELERITY_BACKEND_HOST, CELERITY_HOST_TASK_COLLECTIVE,
    CELERITY_HOST_TASK_DISTRIBUTED, CELERITY_HOST_TASK_ON_MASTER_NODE, CELERITY_HOST_TASK_ONCE,
    celerity_accessor, celerity_drop_fn, celerity_host_task_kind, celerity_kernel_context,
    celerity_kernel_fn, take_kernel_failure,
};
use super::range_mapper::*;
use super::reduction::{CELERITY_REDUCE_CUSTOM, celerity_reduction_op, reducer_of};
use super::runtime_slot::{run_program_callback, with_runtime};
use super::status::celerity_status;
use crate::backend::cuda_error_names::kernel_failure_message;
use crate::backend::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use crate::error::{Error, ErrorKind, Result};
use crate::grid::{Id, Range, Subrange};
use crate::runtime::Runtime;
use crate::task::{AccessMode, Chunk, CommandGroup, HostTaskKind, RangeMapper, TaskSpec};
use crate::types::ReductionId;
use crate::user_objects::Reducer;

/// How a kernel accesses a buffer.
pub type celerity_access_mode = u32;
/// Read only.
pub const CELERITY_ACCESS_READ: celerity_access_mode = 0;
/// Write; elements not written keep their values.
pub const CELERITY_ACCESS_WRITE: celerity_access_mode = 1;
/// Read and write.
pub const CELERITY_ACCESS_READ_WRITE: celerity_access_mode = 2;
/// Write; the previous contents of the accessed region are not needed (no_init).
pub const CELERITY_ACCESS_DISCARD_WRITE: celerity_access_mode = 3;
/// Read and write; the previous contents of the accessed region are not needed.
pub const CELERITY_ACCESS_DISCARD_READ_WRITE: celerity_access_mode = 4;

/// A command group being described (opaque). Created by `celerity_cg_create`, consumed by
/// `celerity_submit_parallel_for` / `celerity_submit_host_task` (also on error) or discarded
/// with `celerity_cg_destroy`. Thread: the runtime's thread only.
pub struct celerity_cg {
    _opaque: [u8; 0],
}

/// A command group being described: the task layer's record exactly as it will be submitted,
/// and the operator of each of its reductions, registered with the executor only once the task
/// manager has accepted the task.
#[derive(Default)]
struct PendingGroup {
    group: CommandGroup,
    reducers: Vec<(ReductionId, Arc<dyn Reducer>)>,
}

static GROUPS: Registry<Mutex<PendingGroup>> = Registry::new(HandleKind::CommandGroup);

/// Invalidates the handles of command groups that were never submitted nor destroyed (at
/// shutdown); returns their names (`None`: unnamed).
pub(crate) fn take_unsubmitted() -> Vec<Option<String>> {
    GROUPS
        .take_all()
        .iter()
        .map(|state| state.lock().group.name.clone())
        .collect()
}

/// Runs `f` on the command group `cg` with the runtime (whose thread and state are checked).
fn with_cg<T>(
    cg: *mut celerity_cg,
    f: impl FnOnce(&mut Runtime, &mut PendingGroup) -> Result<T>,
) -> Result<T> {
    let state = GROUPS.get(handle::from_ptr(cg), "cg")?;
    with_runtime(|rt| f(rt, &mut state.lock()))
}

/// A C pointer the runtime may use from its threads (user data of callbacks).
#[derive(Clone, Copy)]
struct UserPtr(*mut c_void);
// SAFETY: API.md requires callbacks and their user data to be thread-safe.
unsafe impl Send for UserPtr {}
// SAFETY: as above.
unsafe impl Sync for UserPtr {}

fn access_mode(mode: celerity_access_mode) -> Result<AccessMode> {
    AccessMode::ALL.get(mode as usize).copied().ok_or_else(|| {
        Error::invalid_argument(format!(
            "argument `mode` ({mode}) is not a celerity_access_mode (0 to 4)"
        ))
    })
}

fn range_mapper(mapper: &celerity_range_mapper) -> Result<RangeMapper> {
    Ok(match mapper.kind {
        CELERITY_RANGE_MAPPER_ONE_TO_ONE => RangeMapper::OneToOne,
        CELERITY_RANGE_MAPPER_ALL => RangeMapper::All,
        CELERITY_RANGE_MAPPER_FIXED => RangeMapper::Fixed(mapper.fixed.to_subrange()),
        CELERITY_RANGE_MAPPER_SLICE => RangeMapper::Slice(mapper.slice_dim as usize),
        CELERITY_RANGE_MAPPER_NEIGHBORHOOD => RangeMapper::Neighborhood(mapper.neighborhood),
        CELERITY_RANGE_MAPPER_NEIGHBORHOOD_ALONG_AXES => {
            RangeMapper::NeighborhoodAlongAxes(mapper.neighborhood)
        }
        CELERITY_RANGE_MAPPER_CUSTOM => {
            let function = mapper.custom.ok_or_else(|| {
                Error::invalid_argument(
                    "argument `mapper`: kind CUSTOM with a NULL `custom` function",
                )
            })?;
            let user_data = UserPtr(mapper.custom_user_data);
            RangeMapper::Custom(Arc::new(
                move |chunk: &Chunk, buffer_dims: usize, buffer_range: Range| {
                    let user_data = user_data;
                    let c_chunk = celerity_chunk {
                        dims: chunk.dims as u32,
                        offset: chunk.offset.0,
                        range: chunk.range.0,
                        global_range: chunk.global_range.0,
                    };
                    let mut out = celerity_subrange {
                        offset: [0; 3],
                        range: [0; 3],
                    };
                    // SAFETY: the program's pure, thread-safe mapper (API.md) with valid pointers
                    // that live across the call.
                    unsafe {
                        function(
                            user_data.0,
                            &c_chunk,
                            buffer_dims as u32,
                            buffer_range.0.as_ptr(),
                            &mut out,
                        )
                    };
                    Subrange::new(Id(out.offset), Range(out.range))
                },
            ))
        }
        kind => {
            return Err(Error::invalid_argument(format!(
                "argument `mapper`: kind {kind} is not a celerity_range_mapper_kind (0 to 6)"
            )));
        }
    })
}

/// Creates an empty command group.
///
/// Ownership: consumed by a submit function or `celerity_cg_destroy`.
/// Errors: `out` NULL → `CELERITY_ERROR_INVALID_ARGUMENT`; not running, wrong thread →
/// `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_create(out: *mut *mut celerity_cg) -> celerity_status {
    boundary::call("celerity_cg_create", || {
        let out = OutPtr::new(out, "out")?;
        with_runtime(|_| Ok(()))?;
        out.write(handle::to_ptr(
            GROUPS.insert(Mutex::new(PendingGroup::default()))?,
        ));
        Ok(())
    })
}

/// Declares that the kernel accesses `buf` in `mode` through `mapper`. The accessor index in the
/// kernel context is the call order.
///
/// Errors (`CELERITY_ERROR_INVALID_ARGUMENT`, nothing recorded): NULL arguments, a bad `mode` or
/// mapper kind, a FIXED subrange outside the buffer, a SLICE dimension ≥ the buffer's dimensions,
/// a CUSTOM mapper without function, a buffer already used by a reduction of this group.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_access(
    cg: *mut celerity_cg,
    buf: *mut celerity_buffer,
    mode: celerity_access_mode,
    mapper: *const celerity_range_mapper,
) -> celerity_status {
    boundary::call("celerity_cg_access", || {
        let buffer = lookup(buf, "buf")?;
        let mode = access_mode(mode)?;
        if mapper.is_null() {
            return Err(Error::invalid_argument("argument `mapper` is NULL"));
        }
        // SAFETY: non-NULL, pointing to a celerity_range_mapper by the caller's contract.
        let mapper = range_mapper(unsafe { &*mapper })?;
        with_runtime(|rt| {
            let label = rt.task_manager().buffer_label(buffer.bid);
            mapper.validate_for_buffer(label, buffer.dims, buffer.range)
        })?;
        with_cg(cg, |rt, state| {
            let reduced = state.group.reductions.iter().any(|r| r.bid == buffer.bid);
            CommandGroup::check_access(rt.task_manager().buffer_label(buffer.bid), reduced)?;
            state.group.accesses.push((buffer.bid, mode, mapper));
            Ok(())
        })
    })
}

/// Declares a side effect on host object `obj`: the task gets its instance and is serialised
/// with every other task affecting it.
///
/// Errors: NULL arguments → `CELERITY_ERROR_INVALID_ARGUMENT`; released handles →
/// `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_side_effect(
    cg: *mut celerity_cg,
    obj: *mut celerity_host_object,
) -> celerity_status {
    boundary::call("celerity_cg_side_effect", || {
        let id = lookup_host_object(obj, "obj")?;
        with_cg(cg, |_, state| {
            state.group.side_effects.push(id);
            Ok(())
        })
    })
}

/// Declares a reduction of the kernel's per-chunk contributions into `buf` (0-D or one
/// element) with operator `op`. Without `initialize_to_identity` the buffer's previous value is
/// included once.
///
/// Errors (`CELERITY_ERROR_INVALID_ARGUMENT`): NULL arguments, a buffer of more than one element,
/// an element size that does not match the operator, a second reduction on the same buffer, a
/// buffer also accessed by this group, a bad operator kind or type, a CUSTOM operator without
/// `combine` or `identity`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_reduction(
    cg: *mut celerity_cg,
    buf: *mut celerity_buffer,
    op: *const celerity_reduction_op,
    initialize_to_identity: bool,
) -> celerity_status {
    boundary::call("celerity_cg_reduction", || {
        let buffer = lookup(buf, "buf")?;
        with_cg(cg, |rt, state| {
            let group = &state.group;
            CommandGroup::check_reduction(
                rt.task_manager().buffer_label(buffer.bid),
                buffer.range.size(),
                group.reductions.iter().any(|r| r.bid == buffer.bid),
                group.accesses.iter().any(|(bid, ..)| *bid == buffer.bid),
            )
        })?;
        if op.is_null() {
            return Err(Error::invalid_argument("argument `op` is NULL"));
        }
        // SAFETY: non-NULL, pointing to a celerity_reduction_op by the caller's contract.
        let op = unsafe { &*op };
        if op.kind == CELERITY_REDUCE_CUSTOM && op.elem_size != buffer.elem_size {
            return Err(Error::invalid_argument(format!(
                "argument `op.elem_size` ({}) differs from buffer {}'s {}-byte elements",
                op.elem_size, buffer.bid, buffer.elem_size
            )));
        }
        let reducer = reducer_of(op)?;
        if reducer.elem_size() != buffer.elem_size {
            return Err(Error::invalid_argument(format!(
                "argument `op` reduces {}-byte elements, but buffer {} has {}-byte elements",
                reducer.elem_size(),
                buffer.bid,
                buffer.elem_size
            )));
        }
        with_cg(cg, |rt, state| {
            let rid = rt.reserve_reduction_id();
            state.group =
                std::mem::take(&mut state.group).reduction(rid, buffer.bid, initialize_to_identity);
            state.reducers.push((rid, reducer));
            Ok(())
        })
    })
}

/// Names the task (copied; used in messages and graph output).
///
/// Errors: NULL arguments → `CELERITY_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_set_name(
    cg: *mut celerity_cg,
    name: *const c_char,
) -> celerity_status {
    boundary::call("celerity_cg_set_name", || {
        let name = boundary::str_arg(name, "name")?.to_owned();
        with_cg(cg, |_, state| {
            state.group.name = Some(name);
            Ok(())
        })
    })
}

/// Hints that the task should be split in two dimensions (e.g. for 2-D stencils).
///
/// Errors: `cg` NULL → `CELERITY_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_hint_split_2d(cg: *mut celerity_cg) -> celerity_status {
    boundary::call("celerity_cg_hint_split_2d", || {
        with_cg(cg, |_, state| {
            state.group.hints.split_2d = true;
            Ok(())
        })
    })
}

/// Hints that each device chunk should be split `factor` times more (load balancing and
/// overlap). Tasks with side effects, reductions or collective groups ignore it.
///
/// Errors: `cg` NULL, `factor` 0 or above 4096 → `CELERITY_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_hint_oversubscribe(
    cg: *mut celerity_cg,
    factor: u32,
) -> celerity_status {
    boundary::call("celerity_cg_hint_oversubscribe", || {
        CommandGroup::check_oversubscribe(factor)?;
        with_cg(cg, |_, state| {
            state.group.hints.oversubscribe = factor;
            Ok(())
        })
    })
}

/// Declares that the kernel function of this command group only launches kernels on
/// `ctx->stream` (device-memory copies and memsets included): it reads no host memory through the
/// stream and never synchronises. On CUDA devices with `cuda_graphs=auto` (the default) the
/// runtime may then capture chunks queued back to back on one stream and launch them as one CUDA
/// graph, which roughly halves the per-task cost of short kernels. A captured copy of pageable
/// host memory would read that memory when the graph runs, not during the call: such a copy, or
/// a synchronisation, fails the batch with `CELERITY_ERROR_DEVICE`. Kernels with reductions, host
/// tasks and host devices ignore the hint. `celerity.hpp` declares it for device lambdas.
///
/// Errors: `cg` NULL → `CELERITY_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_hint_launch_only(cg: *mut celerity_cg) -> celerity_status {
    boundary::call("celerity_cg_hint_launch_only", || {
        with_cg(cg, |_, state| {
            state.group.hints.launch_only = true;
            Ok(())
        })
    })
}

/// Constrains chunk boundaries to multiples of `granularity` (3-wide). Each entry must divide the
/// iteration space's extent in that dimension (checked at submission).
///
/// Errors: NULL arguments or a zero entry → `CELERITY_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_constrain_split(
    cg: *mut celerity_cg,
    granularity: *const usize,
) -> celerity_status {
    boundary::call("celerity_cg_constrain_split", || {
        let granularity = read_range(granularity, 3, "granularity")?;
        if granularity.0.contains(&0) {
            return Err(Error::invalid_argument(format!(
                "argument `granularity` ({:?}) has a zero entry",
                granularity.0
            )));
        }
        with_cg(cg, |_, state| {
            state.group.granularity = Some(granularity);
            Ok(())
        })
    })
}

/// Discards a command group without submitting it. NULL is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_cg_destroy(cg: *mut celerity_cg) {
    if cg.is_null() {
        return;
    }
    boundary::call_void("celerity_cg_destroy", || {
        GROUPS.remove(handle::from_ptr(cg), "cg").map(drop)
    });
}

/// Runs a C `drop(user_data)` exactly once when the last reference to the task's launcher dies.
struct UserData {
    pointer: UserPtr,
    drop: celerity_drop_fn,
}

impl UserData {
    fn get(&self) -> *mut c_void {
        self.pointer.0
    }
}

impl Drop for UserData {
    fn drop(&mut self) {
        if let Some(drop) = self.drop {
            let pointer = UserPtr(self.pointer.0);
            // Deferred while the application thread holds the runtime lock (a pruned task's
            // launcher), so that the callback may call the API.
            run_program_callback(Box::new(move || {
                // SAFETY: the program's drop callback, called exactly once with its own user data.
                unsafe { drop(pointer.0) };
            }));
        }
    }
}

/// The launcher that turns a chunk into a `celerity_kernel_context` and calls `kernel`.
fn c_launcher(
    kernel: unsafe extern "C" fn(*const celerity_kernel_context, *mut c_void) -> c_int,
    user_data: UserData,
    node: u32,
    num_nodes: u32,
) -> Launcher {
    Arc::new(
        move |invocation: &KernelInvocation, environment: &LaunchEnvironment| {
            // Inline for up to three accessors: no allocation per launch.
            let accessors: SmallVec<[celerity_accessor; 3]> = invocation
                .accessors
                .iter()
                .map(|a| celerity_accessor {
                    base: a.base.0.cast(),
                    allocation: a.allocated_box.into(),
                    accessed: a.accessed_box.into(),
                    elem_size: a.elem_size,
                    record: a.bounds.0.cast(),
                })
                .collect();
            let reductions: Vec<*mut c_void> =
                invocation.reductions.iter().map(|r| r.0.cast()).collect();
            let host_objects: Vec<*mut c_void> =
                invocation.host_objects.iter().map(|h| h.0.cast()).collect();
            let chunk = invocation.chunk;
            let context = celerity_kernel_context {
                backend: if environment.cuda {
                    CELERITY_BACKEND_CUDA
                } else {
                    CELERITY_BACKEND_HOST
                },
                device: invocation.device.map_or(0, |d| d.0 as u32),
                stream: environment.stream as *mut c_void,
                chunk: celerity_chunk {
                    dims: invocation.dims as u32,
                    offset: chunk.min().0,
                    range: chunk.range().0,
                    global_range: invocation.global_range.0,
                },
                global_offset: invocation.global_offset.0,
                accessors: accessors.as_ptr(),
                num_accessors: accessors.len() as u32,
                reductions: reductions.as_ptr(),
                num_reductions: reductions.len() as u32,
                host_objects: host_objects.as_ptr(),
                num_host_objects: host_objects.len() as u32,
                node,
                num_nodes,
                mpi_comm: invocation.collective_comm as *const c_void,
            };
            // SAFETY: the program's kernel with a context whose arrays live across the call.
            let code = unsafe { kernel(&context, user_data.get()) };
            match (take_kernel_failure(&context), code) {
                (None, 0) => Ok(()),
                (None, code) => {
                    let cuda_device = environment
                        .cuda
                        .then(|| invocation.device.map_or(0, |d| d.0));
                    Err(Error::new(
                        ErrorKind::TaskFailed,
                        kernel_failure_message(code, cuda_device),
                    ))
                }
                (Some(message), _) => Err(Error::new(
                    ErrorKind::TaskFailed,
                    format!("the kernel failed: {message}"),
                )),
            }
        },
    )
}

/// Consumes `cg` and submits it as task `spec` running `kernel`.
fn submit(
    cg: *mut celerity_cg,
    spec: impl FnOnce() -> Result<TaskSpec>,
    kernel: celerity_kernel_fn,
    user_data: *mut c_void,
    drop: celerity_drop_fn,
) -> Result<()> {
    // The user data is dropped exactly once whatever happens below.
    let user_data = UserData {
        pointer: UserPtr(user_data),
        drop,
    };
    let state = GROUPS.remove(handle::from_ptr(cg), "cg")?;
    let kernel =
        kernel.ok_or_else(|| Error::invalid_argument("argument `kernel` (or `fn`) is NULL"))?;
    let spec = spec()?;
    let PendingGroup { group, reducers } = std::mem::take(&mut *state.lock());
    with_runtime(|rt| {
        let info = rt.info();
        let launcher = c_launcher(kernel, user_data, info.node, info.num_nodes);
        rt.submit_with_reducers(spec, group, launcher, reducers)
            .map(|_| ())
    })
}

/// Submits `cg` (consumed, also on error) as a kernel over the `dims`-dimensional iteration space
/// `range` (offset `offset`, NULL: 0), split across nodes and devices. Each chunk calls
/// `kernel(ctx, user_data)`; `drop(user_data)` (nullable) runs once after the last chunk on this
/// node.
///
/// Errors (`CELERITY_ERROR_INVALID_ARGUMENT`): NULL `cg`, `range` or `kernel`; dims > 3; an empty
/// range; a ONE_TO_ONE access whose buffer dimensions differ from `dims`; a granularity that does
/// not divide the range.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_submit_parallel_for(
    cg: *mut celerity_cg,
    dims: u32,
    range: *const usize,
    offset: *const usize,
    kernel: celerity_kernel_fn,
    user_data: *mut c_void,
    drop: celerity_drop_fn,
) -> celerity_status {
    boundary::call("celerity_submit_parallel_for", || {
        submit(
            cg,
            || {
                let dims = check_dims(dims, "dims")?;
                Ok(TaskSpec::DeviceKernel {
                    dims,
                    range: read_range(range, dims, "range")?,
                    offset: read_offset(offset, dims, "offset")?,
                })
            },
            kernel,
            user_data,
            drop,
        )
    })
}

/// Submits `cg` (consumed, also on error) as a host task of `kind`: ON_MASTER_NODE (once, on node
/// 0), ONCE (once, on a node the runtime picks), DISTRIBUTED (over the `dims`-dimensional `range`,
/// split across nodes), or COLLECTIVE (one chunk per node, serialised within `group`; NULL: the
/// default group; `ctx->mpi_comm` points to the group's `MPI_Comm`). `fn(ctx, user_data)` runs on
/// a host thread; `drop(user_data)` runs once afterwards.
///
/// Errors (`CELERITY_ERROR_INVALID_ARGUMENT`): NULL `cg` or `fn`, a bad `kind`, dims > 3,
/// DISTRIBUTED with a NULL or empty range.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_submit_host_task(
    cg: *mut celerity_cg,
    kind: celerity_host_task_kind,
    dims: u32,
    range: *const usize,
    group: *mut celerity_collective_group,
    r#fn: celerity_kernel_fn,
    user_data: *mut c_void,
    drop: celerity_drop_fn,
) -> celerity_status {
    boundary::call("celerity_submit_host_task", || {
        submit(
            cg,
            || {
                let (kind, dims, range) = match kind {
                    CELERITY_HOST_TASK_ON_MASTER_NODE => {
                        (HostTaskKind::OnMasterNode, 0, Range::ONE)
                    }
                    CELERITY_HOST_TASK_ONCE => (HostTaskKind::Once, 0, Range::ONE),
                    CELERITY_HOST_TASK_DISTRIBUTED => {
                        let dims = check_dims(dims, "dims")?;
                        (
                            HostTaskKind::Distributed,
                            dims,
                            read_range(range, dims, "range")?,
                        )
                    }
                    CELERITY_HOST_TASK_COLLECTIVE => (HostTaskKind::Collective, 1, Range::ONE),
                    other => {
                        return Err(Error::invalid_argument(format!(
                            "argument `kind` ({other}) is not a celerity_host_task_kind (0 to 3)"
                        )));
                    }
                };
                let group_id = if kind == HostTaskKind::Collective {
                    if group.is_null() {
                        with_runtime(|rt| Ok(rt.default_collective_group()))?
                    } else {
                        lookup_group(group, "group")?
                    }
                } else {
                    crate::types::CollectiveGroupId::NONE
                };
                Ok(TaskSpec::from_host_task_kind(kind, dims, range, group_id))
            },
            r#fn,
            user_data,
            drop,
        )
    })
}
