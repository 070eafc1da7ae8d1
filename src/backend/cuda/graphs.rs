//! Kernel batches launched as CUDA graphs (`cuda_graphs`: `auto` for kernels declared launch-only,
//! `on` for all).
//!
//! A stream launch of an empty kernel costs the submission thread 3-4 µs on an H200, while
//! capturing the same launch into a graph and launching that graph costs 0.9-1.6 µs per kernel
//! (`gpu_bench graphs`, docs/gpu.md). So while a lane has more kernels queued behind the one at
//! hand, its submission thread captures them (calling their launchers as usual, on the lane's
//! stream) and launches the batch as one graph once the lane's queue runs dry, a submission that
//! cannot be captured comes, or the batch is full. Every batch is captured anew, because a
//! launcher's arguments (accessor pointers, ranges) differ from task to task; the captured graph
//! is applied to an executable graph of the same shape cached per lane (`cuGraphExecUpdate`,
//! much cheaper than instantiating one), so the runtime never replays work it did not just
//! capture.
//!
//! Kernels with reductions, or with accessor boundary records outside the pinned pool, are not
//! captured (their identities or records are copied from pageable host memory on the stream,
//! which a graph would read at its launch instead of at the call); records in pinned memory are
//! copied when the stream or graph reaches them either way ([`records`]).
//!
//! A launcher must only enqueue work on the stream it is given (API.md); one that makes a call that
//! stream capture does not allow (a synchronous copy, a synchronisation), or enqueues a copy from
//! or to pageable host memory (a stream stages it during the call, a graph would access it at its
//! launch, after the launcher may have freed it), fails its whole batch with an error that says so.
//! That is why a kernel is captured only when its command group declared its launcher launch-only
//! (`hint_launch_only`; the C++ frontend does so for device lambdas, whose launcher it writes) or
//! the program set `cuda_graphs=on`: a C launcher that was valid without graphs stays valid.
//!
//! [`records`]: super::records

use std::collections::HashMap;

use cudarc::driver::sys;
use smallvec::SmallVec;

use super::{Handle, check};
use crate::error::{Error, ErrorKind, Result};

/// Most kernels one graph holds: the batch is launched when it is full even if more are queued,
/// so the device starts working while the rest is captured.
pub(super) const MAX_GRAPH_KERNELS: usize = 32;

/// The graph state of one lane (stream), touched only by its device's submission thread.
#[derive(Default)]
pub(super) struct LaneGraphs {
    /// Whether the lane's stream is capturing a batch.
    capturing: bool,
    /// Executable graphs by the number of kernels and of nodes they were instantiated for
    /// (kernels with boundary records bring two copies each: batches of one kernel count may
    /// differ in shape).
    executables: HashMap<(usize, usize), Handle<sys::CUgraphExec>>,
    /// Batches launched so far (tests check that batches formed).
    pub(super) batches_launched: usize,
    /// Kernels launched inside those batches (the shutdown summary reports them).
    pub(super) kernels_in_batches: usize,
}

impl LaneGraphs {
    /// Whether a batch is being captured on this lane's stream.
    pub(super) fn is_capturing(&self) -> bool {
        self.capturing
    }

    /// Starts capturing `stream`. The capture is relaxed: it does not forbid the submission
    /// thread's own driver calls for other streams (copies, event records) meanwhile.
    pub(super) fn begin(&mut self, stream: Handle<sys::CUstream>) -> Result<()> {
        debug_assert!(!self.capturing);
        // SAFETY: a stream of the current context, not capturing.
        check("cuStreamBeginCapture", unsafe {
            sys::cuStreamBeginCapture_v2(
                stream.0,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
            )
        })?;
        self.capturing = true;
        Ok(())
    }

    /// Ends the capture of `stream` and launches the batch of `kernels` submissions on it. On
    /// error nothing of the batch was launched.
    pub(super) fn end_and_launch(
        &mut self,
        stream: Handle<sys::CUstream>,
        kernels: usize,
    ) -> Result<()> {
        if !std::mem::take(&mut self.capturing) {
            return Ok(());
        }
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: `stream` is capturing (begun by `begin`), on the current context.
        let ended = unsafe { sys::cuStreamEndCapture(stream.0, &mut graph) };
        if ended == sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED {
            if !graph.is_null() {
                // SAFETY: the graph the failed capture returned, used nowhere else.
                unsafe { sys::cuGraphDestroy(graph) };
            }
            return Err(Error::new(
                ErrorKind::Device,
                format!(
                    "a batch of {kernels} kernel(s) captured as a CUDA graph was invalidated: a \
                 launcher made a call that stream capture does not allow (a synchronous copy or \
                 a synchronisation; a launcher must only enqueue work on its stream); drop \
                 the task's launch-only hint or set cuda_graphs=off to launch kernels one by one"
                ),
            ));
        }
        check("cuStreamEndCapture", ended)?;
        let nodes = graph_nodes(graph);
        let launched = match pageable_copy_in(&nodes) {
            Some(copy) => Err(Error::new(
                ErrorKind::Device,
                format!(
                    "a launcher in a batch of {kernels} kernel(s) captured as a CUDA graph \
                     enqueued a copy {copy}: a graph accesses it when it runs, not during the \
                     call as a stream copy of pageable memory does; copy page-locked memory, drop \
                     the task's launch-only hint or set cuda_graphs=off"
                ),
            )),
            None => self.launch((kernels, nodes.len()), graph, stream),
        };
        // SAFETY: the captured graph; an executable graph does not refer to it once
        // instantiated or updated.
        unsafe { sys::cuGraphDestroy(graph) };
        launched
    }

    /// Applies `graph` to the cached executable graph of its `shape` (kernels, nodes),
    /// instantiating one when there is none or the update fails, and launches it on `stream`.
    fn launch(
        &mut self,
        shape: (usize, usize),
        graph: sys::CUgraph,
        stream: Handle<sys::CUstream>,
    ) -> Result<()> {
        let cached = self.executables.get(&shape).copied();
        let updated = cached.is_some_and(|exec| {
            let mut info = std::mem::MaybeUninit::<sys::CUgraphExecUpdateResultInfo>::zeroed();
            // SAFETY: an executable graph of this context (only this thread launches or updates
            // it), a captured graph and room for the result, which is not read.
            let code = unsafe { sys::cuGraphExecUpdate_v2(exec.0, graph, info.as_mut_ptr()) };
            code == sys::CUresult::CUDA_SUCCESS
        });
        let exec = if updated {
            cached.expect("updated a cached graph")
        } else {
            if let Some(stale) = self.executables.remove(&shape) {
                // SAFETY: launches already enqueued keep their own copy of the graph's work.
                unsafe { sys::cuGraphExecDestroy(stale.0) };
            }
            let mut exec: sys::CUgraphExec = std::ptr::null_mut();
            // SAFETY: valid out-pointer and a complete captured graph.
            check("cuGraphInstantiate", unsafe {
                sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0)
            })?;
            self.executables.insert(shape, Handle(exec));
            Handle(exec)
        };
        // SAFETY: an executable graph and a stream of the current context.
        check("cuGraphLaunch", unsafe {
            sys::cuGraphLaunch(exec.0, stream.0)
        })?;
        self.batches_launched += 1;
        self.kernels_in_batches += shape.0;
        Ok(())
    }

    /// Destroys the cached executable graphs (the context must be current, the stream idle).
    pub(super) fn destroy(&mut self) {
        for (_, exec) in self.executables.drain() {
            // SAFETY: executable graphs of the current context, never launched again.
            unsafe { sys::cuGraphExecDestroy(exec.0) };
        }
    }
}

/// The nodes of a captured batch (empty if the driver does not list them).
fn graph_nodes(graph: sys::CUgraph) -> GraphNodes {
    let mut count = 0usize;
    // SAFETY: a null node array asks for the count only.
    if unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count) }
        != sys::CUresult::CUDA_SUCCESS
    {
        return GraphNodes::new();
    }
    let mut nodes: GraphNodes = smallvec::smallvec![std::ptr::null_mut(); count];
    // SAFETY: room for `count` nodes.
    unsafe { sys::cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count) };
    nodes.truncate(count);
    nodes
}

/// A batch's nodes: at most MAX_GRAPH_KERNELS launches, with their records' copies, fit on the
/// stack.
type GraphNodes = SmallVec<[sys::CUgraphNode; 3 * MAX_GRAPH_KERNELS]>;

/// The first copy among `nodes` from or to pageable host memory, described ("from pageable
/// host memory at 0x..."). Stream copies of pageable memory are staged during the call, so a
/// launcher may free or reuse the memory at once; a graph would read or write it at its launch.
fn pageable_copy_in(nodes: &[sys::CUgraphNode]) -> Option<String> {
    nodes.iter().find_map(|&node| {
        // Node and memory types are C enums read as plain integers: a newer driver may write
        // values this binding does not name, and a zeroed struct holds none.
        let mut kind = u32::MAX;
        // SAFETY: a node of the graph; the driver writes one enum value (4 bytes).
        unsafe { sys::cuGraphNodeGetType(node, (&mut kind as *mut u32).cast()) };
        if kind != sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMCPY as u32 {
            return None;
        }
        let mut copy = std::mem::MaybeUninit::<sys::CUDA_MEMCPY3D>::zeroed();
        // SAFETY: a memcpy node of the graph and room for its parameters.
        let code = unsafe { sys::cuGraphMemcpyNodeGetParams(node, copy.as_mut_ptr()) };
        if code != sys::CUresult::CUDA_SUCCESS {
            return None;
        }
        let copy = copy.as_ptr();
        // SAFETY: fields of the zeroed, then written struct; the enum fields are read as the
        // integers they are in C.
        let (source, dest) = unsafe {
            (
                (
                    std::ptr::addr_of!((*copy).srcMemoryType)
                        .cast::<u32>()
                        .read(),
                    (*copy).srcHost as usize,
                    (*copy).srcDevice as usize,
                ),
                (
                    std::ptr::addr_of!((*copy).dstMemoryType)
                        .cast::<u32>()
                        .read(),
                    (*copy).dstHost as usize,
                    (*copy).dstDevice as usize,
                ),
            )
        };
        if let Some(address) = pageable(source) {
            return Some(format!("from pageable host memory at {address:#x}"));
        }
        pageable(dest).map(|address| format!("to pageable host memory at {address:#x}"))
    })
}

/// The address of one end of a copy if it is host memory the driver does not know (pageable).
fn pageable((kind, host, device): (u32, usize, usize)) -> Option<usize> {
    let address = if kind == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 {
        host
    } else if kind == sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32 {
        device
    } else {
        return None;
    };
    let mut memory_type = 0u32;
    // SAFETY: a valid out-pointer; any address may be queried.
    let known = unsafe {
        sys::cuPointerGetAttribute(
            (&mut memory_type as *mut u32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            address as sys::CUdeviceptr,
        )
    };
    (known != sys::CUresult::CUDA_SUCCESS).then_some(address)
}
