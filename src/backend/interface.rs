//! What the executor asks of a backend (C++ Celerity: `backend/backend.h`), independent of host,
//! emulated or CUDA devices.
//!
//! Every operation is enqueued and returns an [`AsyncEvent`]; allocations complete with
//! [`Completion::Allocation`]. Allocations and frees of one backend run in order on one
//! allocation thread. Copies, kernels and host tasks run on *lanes*: in-order queues chosen by
//! the out-of-order engine (a host lane is a thread; a device lane is a thread of an emulated
//! device or a CUDA stream).
//!
//! [`Completion::Allocation`]: super::event::Completion::Allocation

use std::sync::Arc;
use std::time::Instant;

use super::SendPtr;
use super::bounds::BoundsRecords;
use super::event::AsyncEvent;
use super::nd_memory::StridedBox;
use super::system_info::SystemInfo;
use crate::error::Result;
use crate::grid::{GridBox, Id, Range};
use crate::types::{DeviceId, MemoryId};

/// One buffer access of a kernel or host task, resolved to memory.
#[derive(Debug, Clone, Copy)]
pub struct AccessorInfo {
    /// First element of the backing allocation (null when nothing is accessed).
    pub base: SendPtr,
    /// The allocation's box, in buffer coordinates.
    pub allocated_box: GridBox,
    /// The box the range mapper asked for, for this chunk.
    pub accessed_box: GridBox,
    /// Bytes per element of the buffer.
    pub elem_size: usize,
    /// With `accessor_boundary_check`: this accessor's [`BoundsRecord`]; otherwise null.
    ///
    /// [`BoundsRecord`]: super::bounds::BoundsRecord
    pub bounds: SendPtr,
}

/// Everything a kernel or host task needs to run one chunk.
#[derive(Debug, Clone)]
pub struct KernelInvocation {
    /// The chunk of the iteration space (offsets include the global offset).
    pub chunk: GridBox,
    /// The whole iteration space.
    pub global_range: Range,
    /// Its offset.
    pub global_offset: Id,
    /// Dimensionality of the iteration space.
    pub dims: usize,
    /// Buffer accesses, in the order the program declared them.
    pub accessors: Vec<AccessorInfo>,
    /// One element per reduction; the backend sets it to the identity (the bytes in
    /// `reduction_identities`) before the launcher runs.
    pub reductions: Vec<SendPtr>,
    /// The identity of each reduction, as bytes.
    pub reduction_identities: Vec<Vec<u8>>,
    /// Host object instances, in side-effect order.
    pub host_objects: Vec<SendPtr>,
    /// The device (kernels) or `None` (host tasks).
    pub device: Option<DeviceId>,
    /// Collective host tasks: the address of the group's native communicator (`MPI_Comm*`), else 0.
    pub collective_comm: usize,
    /// The program declared that the launcher only launches kernels on its stream
    /// (`hint_launch_only`), so a CUDA backend may capture it into a graph.
    pub launch_only: bool,
}

impl KernelInvocation {
    /// Sets every reduction slot to its identity, for slots in host-accessible memory.
    ///
    /// # Safety
    /// Each slot must be one writable element of host-accessible memory reserved for this chunk.
    pub unsafe fn write_host_reduction_identities(&self) {
        for (slot, identity) in self.reductions.iter().zip(&self.reduction_identities) {
            // SAFETY: guaranteed by the caller.
            unsafe { std::ptr::copy_nonoverlapping(identity.as_ptr(), slot.0, identity.len()) };
        }
    }
}

/// Which kernels a CUDA backend may capture into graph batches (`cuda_graphs`): a graph reads
/// host memory when it runs, not when the launcher enqueues, and refuses synchronisation, so only
/// launchers that just launch kernels behave the same captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphCapture {
    /// None: every kernel launches on its stream.
    Off,
    /// Kernels whose command group declared its launcher launch-only (`hint_launch_only`; the
    /// C++ frontend declares it for device lambdas).
    LaunchOnly,
    /// Every kernel (the launchers must all be launch-only).
    All,
}

impl GraphCapture {
    /// Whether a kernel whose launcher is (`launch_only`) or is not declared launch-only may
    /// join a batch.
    #[inline]
    pub fn admits(self, launch_only: bool) -> bool {
        match self {
            GraphCapture::Off => false,
            GraphCapture::LaunchOnly => launch_only,
            GraphCapture::All => true,
        }
    }
}

/// Where a launcher runs and what native handles it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchEnvironment {
    /// CUDA: the `CUstream` to enqueue on; host and emulated devices: 0.
    pub stream: usize,
    /// Whether the launcher runs on a CUDA device.
    pub cuda: bool,
}

/// A kernel or host-task body. It must finish (host, emulated devices) or enqueue (CUDA) the
/// whole chunk before returning; an error fails the task.
pub type Launcher = Arc<dyn Fn(&KernelInvocation, &LaunchEnvironment) -> Result<()> + Send + Sync>;

/// The lane of a copy: a host lane, or a lane of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyLane {
    /// Host lane `lane`.
    Host(usize),
    /// Lane `lane` of `device`.
    Device(DeviceId, usize),
}

/// Work a backend's submission thread did (for the trace): on which device, what, and when, in
/// microseconds since the epoch given to [`Backend::record_submissions`].
#[derive(Debug, Clone, Copy)]
pub struct SubmissionSlice {
    /// The device whose submission thread did the work.
    pub device: DeviceId,
    /// What it enqueued (`kernel`, `copy`).
    pub what: &'static str,
    /// Start.
    pub start_us: f64,
    /// End.
    pub end_us: f64,
}

/// A backend: memory, copies, kernels and host tasks for one node.
pub trait Backend: Send {
    /// What page-locks host memory in place for this backend's devices, where that makes copies
    /// faster (CUDA); `None` where host memory needs nothing (host devices).
    fn host_pinner(&self) -> Option<std::sync::Arc<dyn super::host_copy::HostPinner>> {
        None
    }

    /// The node's devices and memories.
    fn system_info(&self) -> &SystemInfo;

    /// The devices in words for the startup line: kind, name and memory of each.
    fn describe_devices(&self) -> String;

    /// Allocates `size` bytes aligned to `align` in `memory` (host or a device's memory).
    fn enqueue_alloc(&mut self, memory: MemoryId, size: usize, align: usize) -> AsyncEvent;

    /// Frees an allocation of `memory` made by [`Backend::enqueue_alloc`].
    ///
    /// # Safety
    /// `ptr` must come from a completed allocation of `memory` that no pending operation uses.
    unsafe fn enqueue_free(&mut self, memory: MemoryId, ptr: *mut u8) -> AsyncEvent;

    /// Copies the box `source_box` of the allocation at `source` into `dest_box` of `dest`.
    ///
    /// # Safety
    /// Both allocations must cover their boxes' allocation ranges and stay valid, and the copied
    /// elements must not be accessed concurrently, until the event completes.
    unsafe fn enqueue_copy(
        &mut self,
        lane: CopyLane,
        source: *const u8,
        source_box: StridedBox,
        dest: *mut u8,
        dest_box: StridedBox,
        elem_size: usize,
    ) -> AsyncEvent;

    /// Whether the host reaches both ends of every copy on `lane`, so that the executor may do
    /// a small one itself ([`copy_box_raw`](super::nd_memory::copy_box_raw)) rather than hand it
    /// to the lane: a host lane's copies on every backend, every copy of emulated devices.
    fn host_reaches_copies_on(&self, lane: CopyLane) -> bool {
        matches!(lane, CopyLane::Host(_))
    }

    /// Runs a host task chunk on host lane `lane`.
    fn enqueue_host_task(
        &mut self,
        lane: usize,
        launcher: Launcher,
        invocation: KernelInvocation,
    ) -> AsyncEvent;

    /// Runs a kernel chunk on lane `lane` of `device`.
    fn enqueue_device_kernel(
        &mut self,
        device: DeviceId,
        lane: usize,
        launcher: Launcher,
        invocation: KernelInvocation,
    ) -> AsyncEvent;

    /// Records for accessor boundary checking of a device kernel with `len` accessors, in
    /// memory the kernel writes (host memory for emulated devices); `None` where the backend
    /// cannot offer such memory, which leaves the kernel's accessors unchecked.
    fn device_bounds_records(&self, len: usize) -> Result<Option<BoundsRecords>> {
        BoundsRecords::new_host(len).map(Some)
    }

    /// Advances asynchronous work (e.g. queries CUDA events) and completes finished events.
    /// Never blocks; the executor calls it on every loop iteration.
    fn poll(&mut self) -> Result<()>;

    /// The executor starts handing over every instruction that became ready in one pass: until
    /// [`Self::end_submissions`] the backend may hold back waking its worker threads.
    fn begin_submissions(&mut self) {}

    /// The pass of [`Self::begin_submissions`] is over: every worker thread that received work
    /// must run it now.
    fn end_submissions(&mut self) {}

    /// Errors that happened outside any event (e.g. a CUDA context fault).
    fn check_async_errors(&mut self) -> Result<()>;

    /// Starts recording what the backend's own submission threads spend on each enqueue (CUDA:
    /// the per-device thread that launches kernels and copies), timed from `epoch`. Backends
    /// whose lanes run the work itself record nothing: the trace's lane slices show it.
    fn record_submissions(&mut self, _epoch: Instant) {}

    /// The submissions recorded since the last call (see [`Self::record_submissions`]).
    fn take_submissions(&mut self) -> Vec<SubmissionSlice> {
        Vec::new()
    }
}
