//! The CUDA backend (cudarc, driver API, loaded at run time; C++ Celerity: `backend/backend.h`).
//!
//! The library is built without the CUDA toolkit and runs with or without a GPU: the driver
//! (`libcuda.so`) is loaded on first use, and its absence is an `Unsupported` error, not a crash.
//!
//! Protocol:
//! * Each device's **primary context** is retained, so streams handed to user code are valid for
//!   CUDA runtime API launches (`<<<grid, block, 0, stream>>>` from nvcc-built code). Every
//!   thread that calls into the driver makes the context current first.
//! * Each device has one **submission thread**; kernels and copies touching device memory are
//!   enqueued there, on one non-blocking stream per lane (created lazily). A kernel's launcher is
//!   called on that thread with the lane's stream and must only enqueue work on it.
//! * A `CUevent` is recorded after the last submission queued for a lane (and every 32nd while
//!   more follow, `submission`); [`Backend::poll`] queries pending events and completes their
//!   [`AsyncEvent`]s, so the executor never blocks on the GPU. Kernels queued back to back on
//!   a lane whose launchers are declared launch-only (or all, with `cuda_graphs=on`) are
//!   captured and launched as one CUDA graph (`graphs`).
//! * Host memory (memory 1) is pinned (`cuMemHostAlloc`, portable) and comes from a bounded
//!   [`PinnedPool`], so repeated host allocations reuse page-locked blocks; beyond the pool's
//!   limit host allocations are pageable. Device memory comes from `cuMemAlloc`; freed device
//!   blocks are kept for the next allocation of their size ([`DeviceBlockCache`]), within a
//!   bound, and returned when an allocation runs out of memory.
//! * User memory (memory 0) copies to and from device memories directly (`copy`): a
//!   contiguous copy with a pageable end is staged through pinned chunks with parallel host
//!   copies (`staging`, whose slots are pinned in the background when the backend starts);
//!   pinned ends (the pool's blocks, memory the program pinned, the runtime's copies of
//!   host-initialised buffers that [`Backend::host_pinner`] page-locked in place) are DMA'd as
//!   is. Buffer fences therefore copy device memory straight into user memory
//!   (`instruction::fence`).
//! * With accessor boundary checking, a kernel's records are copied to device memory before
//!   its launch and back after it, on its stream (`records`).
//! * Events recorded after each submission are reused, and [`Backend::poll`] queries only the
//!   oldest pending event of each stream (a stream completes in order). All allocations run in order on one
//!   allocation thread. Peer access is enabled between devices that support it both ways; the
//!   system model marks only those pairs as copy peers, so other device↔device copies are staged
//!   through host memory by the instruction graph.
//! * Host tasks and host↔host copies run on host lane threads, as in the host backend.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{DriverError, result, sys};
use parking_lot::Mutex;

const GIB: f64 = (1u64 << 30) as f64;

use super::SendPtr;
use super::bounds::BoundsRecords;
use super::device_cache::{self, DeviceBlockCache};
use super::event::{AsyncEvent, Completion, EventCompleter};
use super::host::host_copy_job;
use super::host_copy::HostPinner;
use super::host_memory::HostAllocation;
use super::interface::{
    Backend, CopyLane, GraphCapture, KernelInvocation, LaunchEnvironment, Launcher, SubmissionSlice,
};
use super::nd_memory::StridedBox;
use super::pinned_pool::PinnedPool;
use super::system_info::SystemInfo;
use super::thread_queue::HostLaunch;
use super::thread_queue::{Lanes, SUBMISSION_SPIN, ThreadQueue};
use crate::error::{Error, ErrorKind, Result};
use crate::types::{DeviceId, MemoryId};

mod copy;
mod graphs;
mod pinned;
mod records;
mod staging;
mod submission;
use pinned::DriverPinned;
use records::{DeviceRecords, RecordSlab, SharedSlots};
use submission::{LaneSubmissions, Submission, SubmissionRecorder};

fn device_error(what: &str, error: DriverError) -> Error {
    let kind = if error.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        ErrorKind::OutOfMemory
    } else {
        ErrorKind::Device
    };
    let name = error
        .error_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Error::new(kind, format!("{what} failed: {name} ({:?})", error.0))
}

fn check(what: &str, code: sys::CUresult) -> Result<()> {
    code.result().map_err(|e| device_error(what, e))
}

/// `bytes` of device memory in `memory` (its context current): a kept block of that size, else
/// the driver's, after returning the kept blocks of `memory` to it when it has too little.
fn allocate_device(
    memory: MemoryId,
    bytes: usize,
    kept: &Mutex<DeviceBlockCache>,
) -> Result<usize> {
    if let Some(address) = kept.lock().take(memory, bytes) {
        return Ok(address);
    }
    let mut pointer: sys::CUdeviceptr = 0;
    // SAFETY: valid out-pointer; the context is current.
    let mut code = unsafe { sys::cuMemAlloc_v2(&mut pointer, bytes) };
    if code == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        let returned = kept.lock().drain(memory);
        if !returned.is_empty() {
            // SAFETY: kept blocks from cuMemAlloc in this context that nothing uses.
            unsafe { free_device_blocks(&returned) }?;
            // SAFETY: as above.
            code = unsafe { sys::cuMemAlloc_v2(&mut pointer, bytes) };
        }
    }
    check("cuMemAlloc", code)?;
    Ok(pointer as usize)
}

/// Returns device blocks to the driver (all are freed; the first failure is reported).
///
/// # Safety
/// Each address must come from `cuMemAlloc` in the current context, and nothing may use it.
unsafe fn free_device_blocks(addresses: &[usize]) -> Result<()> {
    let mut outcome = Ok(());
    for &address in addresses {
        // SAFETY: forwarded contract.
        let freed = check("cuMemFree", unsafe {
            sys::cuMemFree_v2(address as sys::CUdeviceptr)
        });
        outcome = outcome.and(freed);
    }
    outcome
}

/// Loads the driver and initialises it, or says why CUDA is unusable here.
fn init_driver() -> Result<()> {
    // SAFETY: is_culib_present only attempts to dlopen the driver library and reports whether
    // it succeeded; it has no preconditions.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::unsupported(
            "no CUDA driver: libcuda.so could not be loaded (is the NVIDIA driver installed?)",
        ));
    }
    result::init().map_err(|e| Error::unsupported(format!("cuInit failed: {e}")))
}

/// The number of CUDA devices the driver reports, or `Unsupported` when there is no usable
/// driver (no `libcuda.so`, or `cuInit` failing, e.g. without a GPU).
pub fn device_count() -> Result<usize> {
    init_driver()?;
    let count = result::device::get_count().map_err(|e| device_error("cuDeviceGetCount", e))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// A raw CUDA handle moved between the backend's threads.
#[derive(Clone, Copy)]
struct Handle<T>(T);
// SAFETY: CUDA contexts, streams and events may be used from any thread once the context is
// current there; every use below makes the owning context current first.
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above; shared references only copy the handle value.
unsafe impl<T> Sync for Handle<T> {}

thread_local! {
    /// The context this thread last made current: a submission thread serves one device, so
    /// its copies and event records need not set the context again. Forgotten after every user
    /// launcher, which may switch contexts.
    static CURRENT_CONTEXT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Makes `context` current on the calling thread.
fn make_current(context: Handle<sys::CUcontext>) -> Result<()> {
    let address = context.0 as usize;
    if CURRENT_CONTEXT.get() == address {
        return Ok(());
    }
    // SAFETY: the context is a retained primary context that outlives the backend's threads.
    unsafe { result::ctx::set_current(context.0) }
        .map_err(|e| device_error("cuCtxSetCurrent", e))?;
    CURRENT_CONTEXT.set(address);
    Ok(())
}

/// Per-device state touched only by the device's submission thread.
struct DeviceLanes {
    streams: Vec<Handle<sys::CUstream>>,
    /// Per lane: submissions handed to the submission thread and not yet run.
    queued: Vec<usize>,
}

/// How often the executor queries the streams' events while it keeps submitting work (measured
/// on the H200 with empty kernels: querying on every poll made the task floor 6.8-7.0 µs, every
/// 10 µs 5.5-6.8 µs; docs/gpu.md).
const QUERY_INTERVAL_WHILE_SUBMITTING: std::time::Duration = std::time::Duration::from_micros(10);

struct CudaDevice {
    cu_device: sys::CUdevice,
    /// The driver's number for the device (`cuDeviceGet`).
    ordinal: usize,
    context: Handle<sys::CUcontext>,
    submitter: ThreadQueue,
    lanes: Arc<Mutex<DeviceLanes>>,
    /// Per lane: what only the submission thread touches (event bookkeeping, graph batches).
    submissions: Arc<Mutex<Vec<LaneSubmissions>>>,
    /// Completed events of this device's context, for reuse.
    spare_events: SpareEvents,
}

/// Submitted work not yet known complete, per (device, lane) stream in submission order. Only
/// some submissions record an event (the last one queued for its lane, or every 32nd: see
/// `submission`); a stream runs in order, so an event completes every entry before it.
/// An entry without a completer only carries an event (after a failed submission).
type PendingEvents = Arc<Mutex<HashMap<(usize, usize), VecDeque<PendingEntry>>>>;
type PendingEntry = (Option<Handle<sys::CUevent>>, Option<EventCompleter>);

/// Completed events, reused by later submissions (creating one per task costs a driver call).
type SpareEvents = Arc<Mutex<Vec<Handle<sys::CUevent>>>>;

type SharedPool = Arc<Mutex<PinnedPool<DriverPinned>>>;

/// The default bound of pinned host memory (the `pinned_memory_limit` default).
pub const DEFAULT_PINNED_LIMIT: usize = 4 << 30;

/// The CUDA backend.
pub struct CudaBackend {
    system: SystemInfo,
    devices: Vec<CudaDevice>,
    host_lanes: Lanes,
    alloc_queue: ThreadQueue,
    pending: PendingEvents,
    /// Live allocations by (memory, address), with their bytes, to reject bad frees.
    live: Arc<Mutex<HashMap<(MemoryId, usize), usize>>>,
    /// Freed device blocks kept for the next allocation of their size.
    device_blocks: Arc<Mutex<DeviceBlockCache>>,
    /// Pinned host memory: memory 1's allocations and staging chunks.
    pool: SharedPool,
    /// Pinned slots for the host records of kernel chunks (`accessor_boundary_check`).
    record_slots: SharedSlots,
    /// Host allocations the pool refused (beyond its limit), by address.
    pageable: Arc<Mutex<HashMap<usize, HostAllocation>>>,
    /// Page-locks the runtime's host copies in place (counted in `pool`).
    pinner: Arc<pinned::DriverHostPinner>,
    /// Present while the trace records the submission threads' work.
    submission_recorder: Option<Arc<SubmissionRecorder>>,
    /// `poll`'s list of each stream's oldest recorded event, kept for its capacity.
    poll_scratch: Vec<((usize, usize), Handle<sys::CUevent>)>,
    /// When the executor last queried the streams' events, and when it last submitted work.
    last_query: Instant,
    last_submission: std::cell::Cell<Instant>,
    /// `cuda_graphs`: which kernels queued back to back on a lane launch as one captured graph.
    kernel_graphs: GraphCapture,
}

// SAFETY: all raw CUDA handles inside are only used on threads that make their context current
// first; the structure itself is owned by the executor thread.
unsafe impl Send for CudaBackend {}

impl CudaBackend {
    /// A backend over all CUDA devices of this node with the default pinned-memory bound.
    /// `Unsupported` without a usable driver or without devices.
    pub fn new() -> Result<Self> {
        Self::with_pinned_limit(DEFAULT_PINNED_LIMIT)
    }

    /// A backend over all CUDA devices of this node holding at most `pinned_limit` bytes of
    /// page-locked host memory.
    pub fn with_pinned_limit(pinned_limit: usize) -> Result<Self> {
        Self::on_devices(None, pinned_limit)
    }

    /// A backend over the CUDA devices `ordinals` (all when `None`; as the driver numbers them,
    /// after `CUDA_VISIBLE_DEVICES`), which become the runtime's devices D0, D1, ... in this order.
    pub fn on_devices(ordinals: Option<&[usize]>, pinned_limit: usize) -> Result<Self> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::unsupported("the CUDA driver reports no devices"));
        }
        let ordinals: Vec<usize> = match ordinals {
            Some(chosen) => {
                if let Some(bad) = chosen.iter().find(|&&o| o >= count) {
                    return Err(Error::invalid_argument(format!(
                        "CUDA device {bad} does not exist: the driver reports {count} device(s)"
                    )));
                }
                chosen.to_vec()
            }
            None => (0..count).collect(),
        };
        if ordinals.len() + 2 > super::system_info::MAX_MEMORIES {
            return Err(Error::unsupported(format!(
                "{} CUDA devices exceed the supported {}",
                ordinals.len(),
                super::system_info::MAX_MEMORIES - 2
            )));
        }
        let mut devices = Vec::with_capacity(ordinals.len());
        for &ordinal in &ordinals {
            let cu_device =
                result::device::get(ordinal as i32).map_err(|e| device_error("cuDeviceGet", e))?;
            // SAFETY: `cu_device` is a valid device handle; the primary context is released in Drop.
            let context = unsafe { result::primary_ctx::retain(cu_device) }
                .map_err(|e| device_error("cuDevicePrimaryCtxRetain", e))?;
            let context = Handle(context);
            let submitter =
                ThreadQueue::with_idle_poll(format!("celerity-cuda-D{ordinal}"), SUBMISSION_SPIN)?;
            devices.push(CudaDevice {
                cu_device,
                ordinal,
                context,
                submitter,
                lanes: Arc::new(Mutex::new(DeviceLanes {
                    streams: Vec::new(),
                    queued: Vec::new(),
                })),
                submissions: Arc::default(),
                spare_events: Arc::default(),
            });
        }
        let mut system = Self::system_with_peer_access(&devices)?;
        system.connect_user_memory_to_devices();
        let pool = PinnedPool::new(
            DriverPinned {
                context: devices[0].context,
            },
            pinned_limit,
        );
        let pool = Arc::new(Mutex::new(pool));
        let alloc_queue = ThreadQueue::new("celerity-alloc")?;
        let warm = pool.clone();
        // In the background, so that init does not wait for it; the first large copy of
        // pageable memory then finds its pinned slots instead of paying their page-locking.
        let _ = alloc_queue.submit(move || {
            staging::prewarm_slots(&warm);
            Ok(Completion::Done)
        });
        let pinner = Arc::new(pinned::DriverHostPinner {
            context: devices[0].context,
            pool: pool.clone(),
            alive: Mutex::new(true),
        });
        let block_bounds = devices.iter().zip(&system.devices).map(|(device, info)| {
            // SAFETY: `cu_device` is a valid device handle.
            let bytes = unsafe { result::device::total_mem(device.cu_device) }.unwrap_or(0);
            (info.native_memory, device_cache::byte_bound(bytes))
        });
        let device_blocks = Arc::new(Mutex::new(DeviceBlockCache::new(block_bounds)));
        Ok(Self {
            system,
            devices,
            host_lanes: Lanes::new("celerity-host"),
            alloc_queue,
            pending: Arc::default(),
            live: Arc::default(),
            device_blocks,
            pinner,
            submission_recorder: None,
            poll_scratch: Vec::new(),
            last_query: Instant::now(),
            last_submission: std::cell::Cell::new(Instant::now()),
            kernel_graphs: GraphCapture::Off,
            pool,
            record_slots: Arc::default(),
            pageable: Arc::default(),
        })
    }

    /// Kernels that `capture` admits, queued back to back on one lane (no reductions, boundary
    /// records only in pinned memory), are captured and launched as one CUDA graph (`graphs`).
    pub fn with_kernel_graphs(mut self, capture: GraphCapture) -> Self {
        self.kernel_graphs = capture;
        self
    }

    /// Graph batches launched on all lanes so far.
    #[cfg(test)]
    fn graph_batches_launched(&self) -> usize {
        let lanes = |d: &CudaDevice| -> usize {
            let submissions = d.submissions.lock();
            submissions.iter().map(|l| l.graphs.batches_launched).sum()
        };
        self.devices.iter().map(lanes).sum()
    }

    /// Enables peer access where both directions support it and builds the system model.
    fn system_with_peer_access(devices: &[CudaDevice]) -> Result<SystemInfo> {
        SystemInfo::with_device_peers(devices.len(), |i, j| {
            let (a, b) = (&devices[i], &devices[j]);
            let (mut ab, mut ba) = (0, 0);
            // SAFETY: valid device handles and out-pointers.
            unsafe {
                check(
                    "cuDeviceCanAccessPeer",
                    sys::cuDeviceCanAccessPeer(&mut ab, a.cu_device, b.cu_device),
                )?;
                check(
                    "cuDeviceCanAccessPeer",
                    sys::cuDeviceCanAccessPeer(&mut ba, b.cu_device, a.cu_device),
                )?;
            }
            if ab == 0 || ba == 0 {
                return Ok(false);
            }
            for (from, to) in [(a, b), (b, a)] {
                make_current(from.context)?;
                // SAFETY: both contexts are retained primary contexts; enabling twice is
                // reported as PEER_ACCESS_ALREADY_ENABLED, which is fine.
                let code = unsafe { sys::cuCtxEnablePeerAccess(to.context.0, 0) };
                if code != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                    check("cuCtxEnablePeerAccess", code)?;
                }
            }
            Ok(true)
        })
    }

    fn device(&self, device: DeviceId) -> Result<&CudaDevice> {
        self.devices
            .get(device.0 as usize)
            .ok_or_else(|| Error::internal(format!("{device} does not exist on this node")))
    }

    /// The stream `key` passed `cu_event`, its oldest recorded event, with `code`: completes
    /// every submission up to that event, then does the same for the stream's next events as
    /// long as they are passed too (queried with the lock released, like the first).
    fn event_reached(
        &self,
        key: (usize, usize),
        mut cu_event: Handle<sys::CUevent>,
        mut code: sys::CUresult,
    ) {
        let device = key.0;
        loop {
            match self.devices.get(device) {
                Some(d) if code == sys::CUresult::CUDA_SUCCESS => {
                    d.spare_events.lock().push(cu_event)
                }
                // SAFETY: a failed event is not reused; nothing else holds it.
                _ => unsafe {
                    sys::cuEventDestroy_v2(cu_event.0);
                },
            }
            let outcome = check("CUDA work on the stream", code)
                .map(|()| Completion::Done)
                .map_err(|e| e.context(format!("device D{device}")));
            let next_event = {
                let mut pending = self.pending.lock();
                let Some(queue) = pending.get_mut(&key) else {
                    return;
                };
                // Only this thread drains a queue and the submission threads only append, so
                // the first recorded event is still `cu_event`.
                let Some(index) = queue.iter().position(|(event, _)| event.is_some()) else {
                    return;
                };
                for (_, completer) in queue.drain(..=index) {
                    if let Some(completer) = completer {
                        completer.complete(outcome.clone());
                    }
                }
                queue.iter().find_map(|(event, _)| *event)
            };
            let Some(next_event) = next_event else {
                return;
            };
            // SAFETY: as for the first event: recorded, and queried by the polling thread only.
            let next_code = unsafe { sys::cuEventQuery(next_event.0) };
            if next_code == sys::CUresult::CUDA_ERROR_NOT_READY {
                return;
            }
            (cu_event, code) = (next_event, next_code);
        }
    }

    /// Runs `enqueue(stream)` on `device`'s submission thread, on lane `lane`'s stream (or
    /// captures it into the lane's graph batch when `capturable`); the returned [`AsyncEvent`]
    /// completes once the stream passed it.
    fn submit_to_stream(
        &self,
        device: DeviceId,
        lane: usize,
        what: &'static str,
        capturable: bool,
        enqueue: impl FnOnce(Handle<sys::CUstream>, &mut RecordSlab) -> Result<()> + Send + 'static,
    ) -> AsyncEvent {
        let device_state = match self.device(device) {
            Ok(d) => d,
            Err(error) => return AsyncEvent::ready(Err(error)),
        };
        self.last_submission.set(Instant::now());
        let (event, completer) = AsyncEvent::pending();
        let (context, lanes, submissions, pending, spare, recorder) = (
            device_state.context,
            device_state.lanes.clone(),
            device_state.submissions.clone(),
            self.pending.clone(),
            device_state.spare_events.clone(),
            self.submission_recorder.clone(),
        );
        let key = (device.0 as usize, lane);
        {
            let mut lanes = lanes.lock();
            if lanes.queued.len() <= lane {
                lanes.queued.resize(lane + 1, 0);
            }
            lanes.queued[lane] += 1;
        }
        let _ = device_state.submitter.submit(move || {
            let start_us = recorder.as_ref().map(|r| r.now_us());
            // (stream, whether more submissions for this lane are queued behind this one)
            let lane_state = (|| {
                make_current(context)?;
                let mut lanes = lanes.lock();
                lanes.queued[lane] -= 1;
                while lanes.streams.len() <= lane {
                    let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
                        .map_err(|e| device_error("cuStreamCreate", e))?;
                    lanes.streams.push(Handle(stream));
                }
                Ok((lanes.streams[lane], lanes.queued[lane] > 0))
            })();
            let (stream, more_queued) = match lane_state {
                Ok(state) => state,
                Err(error) => {
                    completer.complete(Err(error));
                    return Ok(Completion::Done);
                }
            };
            let job = Submission {
                key,
                stream,
                more_queued,
                capturable,
                pending: &pending,
                spare: &spare,
            };
            {
                let mut submissions = submissions.lock();
                if submissions.len() <= lane {
                    submissions.resize_with(lane + 1, Default::default);
                }
                submissions[lane].submit(&job, completer, enqueue);
            }
            if let (Some(recorder), Some(start_us)) = (recorder, start_us) {
                let end_us = recorder.now_us();
                recorder.slices.lock().push(SubmissionSlice {
                    device,
                    what,
                    start_us,
                    end_us,
                });
            }
            Ok(Completion::Done)
        });
        event
    }
}

impl Backend for CudaBackend {
    fn host_pinner(&self) -> Option<Arc<dyn HostPinner>> {
        Some(self.pinner.clone())
    }

    fn system_info(&self) -> &SystemInfo {
        &self.system
    }

    fn describe_devices(&self) -> String {
        let names: Vec<String> = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, device)| {
                let name = result::device::get_name(device.cu_device)
                    .unwrap_or_else(|_| "unknown device".to_owned());
                let ordinal = device.ordinal;
                // SAFETY: `cu_device` is a valid device handle.
                match unsafe { result::device::total_mem(device.cu_device) } {
                    Ok(bytes) => format!(
                        "D{i} = CUDA device {ordinal} {name} ({:.1} GiB)",
                        bytes as f64 / GIB
                    ),
                    Err(_) => format!("D{i} = CUDA device {ordinal} {name}"),
                }
            })
            .collect();
        names.join(", ")
    }

    fn enqueue_alloc(&mut self, memory: MemoryId, size: usize, align: usize) -> AsyncEvent {
        let target = if memory == MemoryId::HOST {
            None
        } else {
            match self.system.device_of(memory) {
                Some(device) => Some(self.devices[device.0 as usize].context),
                None => {
                    return AsyncEvent::ready(Err(Error::internal(format!(
                        "the CUDA backend cannot allocate in {memory}"
                    ))));
                }
            }
        };
        let context = target.unwrap_or(self.devices[0].context);
        let (live, blocks) = (self.live.clone(), self.device_blocks.clone());
        let (pool, pageable) = (self.pool.clone(), self.pageable.clone());
        self.alloc_queue.submit(move || {
            let limit = if target.is_some() { 256 } else { 4096 };
            if !align.is_power_of_two() || align > limit {
                return Err(Error::unsupported(format!(
                    "alignment {align} in {memory}: CUDA allocations are aligned to at most {limit} bytes"
                )));
            }
            make_current(context)?;
            let bytes = size.max(1);
            let address = if target.is_some() {
                allocate_device(memory, bytes, &blocks)
                    .map_err(|e| e.context(format!("allocating {size} bytes in {memory}")))?
            } else if let Some(address) = pool.lock().acquire(bytes) {
                address // page-aligned: satisfies any alignment up to 4096
            } else {
                // Beyond the pinned limit: pageable memory, which copies stage (staging.rs).
                let allocation = HostAllocation::new(bytes, align)
                    .map_err(|e| e.context(format!("allocating {size} host bytes")))?;
                let address = allocation.as_ptr() as usize;
                pageable.lock().insert(address, allocation);
                address
            };
            live.lock().insert((memory, address), bytes);
            Ok(Completion::Allocation(address))
        })
    }

    unsafe fn enqueue_free(&mut self, memory: MemoryId, ptr: *mut u8) -> AsyncEvent {
        let context = self
            .system
            .device_of(memory)
            .map_or(self.devices[0].context, |d| {
                self.devices[d.0 as usize].context
            });
        let (live, blocks) = (self.live.clone(), self.device_blocks.clone());
        let (pool, pageable) = (self.pool.clone(), self.pageable.clone());
        let address = ptr as usize;
        self.alloc_queue.submit(move || {
            let Some(bytes) = live.lock().remove(&(memory, address)) else {
                return Err(Error::internal(format!(
                    "free of {address:#x} in {memory}, which is not a live allocation"
                )));
            };
            make_current(context)?;
            if memory == MemoryId::HOST {
                // Pinned blocks go back to the pool, pageable ones are dropped.
                if !pool.lock().release(address) && pageable.lock().remove(&address).is_none() {
                    return Err(Error::internal(format!(
                        "host allocation {address:#x} is neither pooled nor pageable"
                    )));
                }
            } else {
                let evicted = blocks.lock().keep(memory, bytes, address);
                // SAFETY: blocks from cuMemAlloc that nothing uses any more.
                unsafe { free_device_blocks(&evicted) }?;
            }
            Ok(Completion::Done)
        })
    }

    unsafe fn enqueue_copy(
        &mut self,
        lane: CopyLane,
        source: *const u8,
        source_box: StridedBox,
        dest: *mut u8,
        dest_box: StridedBox,
        elem_size: usize,
    ) -> AsyncEvent {
        let (source, dest) = (SendPtr(source.cast_mut()), SendPtr(dest));
        match lane {
            CopyLane::Host(index) => {
                // SAFETY: forwarded contract of enqueue_copy.
                let job =
                    unsafe { host_copy_job(source.0, source_box, dest.0, dest_box, elem_size) };
                self.host_lanes.submit(index, job)
            }
            CopyLane::Device(device, index) => {
                let layout = source_box.copy_layout_to(&dest_box, elem_size);
                let pool = self.pool.clone();
                self.submit_to_stream(device, index, "copy", false, move |stream, _| {
                    let (source, dest) = (source, dest);
                    // SAFETY: the caller guarantees validity until the event completes, which
                    // happens only after the stream passed the copy.
                    unsafe { copy::enqueue_copy(source.0, dest.0, &layout, stream.0, &pool) }
                })
            }
        }
    }

    fn enqueue_host_task(
        &mut self,
        lane: usize,
        launcher: Launcher,
        invocation: KernelInvocation,
    ) -> AsyncEvent {
        self.host_lanes
            .submit(lane, HostLaunch::new(launcher, invocation))
    }

    fn enqueue_device_kernel(
        &mut self,
        device: DeviceId,
        lane: usize,
        launcher: Launcher,
        invocation: KernelInvocation,
    ) -> AsyncEvent {
        // Reduction identities (and boundary records outside the pinned pool) are copied from
        // pageable memory on the stream, which a graph would read at its launch instead: such
        // kernels launch directly.
        let capturable = self.kernel_graphs.admits(invocation.launch_only)
            && invocation.reductions.is_empty()
            && DeviceRecords::capturable(&invocation.accessors, &self.pool);
        self.submit_to_stream(device, lane, "kernel", capturable, move |stream, slab| {
            let mut invocation = invocation;
            for (slot, identity) in invocation
                .reductions
                .iter()
                .zip(&invocation.reduction_identities)
            {
                // SAFETY: the slot is one device element reserved for this chunk; a copy from
                // pageable memory returns once the bytes are staged, so `identity` may go.
                check("cuMemcpyHtoDAsync", unsafe {
                    sys::cuMemcpyHtoDAsync_v2(
                        slot.0 as sys::CUdeviceptr,
                        identity.as_ptr().cast(),
                        identity.len(),
                        stream.0,
                    )
                })?;
            }
            // SAFETY: the executor armed the records from one block that lives until the chunk
            // completed, which is after the stream passed the download below.
            let records =
                unsafe { DeviceRecords::upload(&mut invocation.accessors, stream.0, slab) }?;
            let environment = LaunchEnvironment {
                stream: stream.0 as usize,
                cuda: true,
            };
            let launched = launcher(&invocation, &environment);
            // User code may have made another context current (against the launch protocol);
            // the next submission sets this device's context again rather than trust the cache.
            CURRENT_CONTEXT.set(0);
            // SAFETY: as above, on the same stream, after the kernel.
            let downloaded = records.map_or(Ok(()), |r| unsafe { r.download(stream.0) });
            launched.and(downloaded)
        })
    }

    fn device_bounds_records(&self, len: usize) -> Result<Option<BoundsRecords>> {
        records::host_records(&self.pool, &self.record_slots, len).map(Some)
    }

    fn poll(&mut self) -> Result<()> {
        // While work is being submitted, event queries contend with the submission threads'
        // launches for the driver's locks: query at most every QUERY_INTERVAL_WHILE_SUBMITTING
        // then. Once submissions pause (a wait, a fence), every poll queries.
        let now = Instant::now();
        if now.duration_since(self.last_submission.get()) < QUERY_INTERVAL_WHILE_SUBMITTING
            && now.duration_since(self.last_query) < QUERY_INTERVAL_WHILE_SUBMITTING
        {
            return Ok(());
        }
        self.last_query = now;
        // The submission threads push to `pending` after every launch: the driver is queried
        // with the lock released, so a launch never waits for this thread's queries.
        let mut oldest = std::mem::take(&mut self.poll_scratch);
        oldest.clear();
        oldest.extend(self.pending.lock().iter().filter_map(|(&key, queue)| {
            queue.iter().find_map(|(event, _)| *event).map(|e| (key, e))
        }));
        for &(key, cu_event) in &oldest {
            // SAFETY: the event was recorded by a submission thread; it is reused or destroyed
            // only below, after its query, by this thread.
            let code = unsafe { sys::cuEventQuery(cu_event.0) };
            if code == sys::CUresult::CUDA_ERROR_NOT_READY {
                continue;
            }
            self.event_reached(key, cu_event, code);
        }
        self.poll_scratch = oldest;
        Ok(())
    }

    fn check_async_errors(&mut self) -> Result<()> {
        Ok(())
    }

    fn record_submissions(&mut self, epoch: Instant) {
        self.submission_recorder = Some(Arc::new(SubmissionRecorder {
            epoch,
            slices: Mutex::new(Vec::new()),
        }));
    }

    fn take_submissions(&mut self) -> Vec<SubmissionSlice> {
        self.submission_recorder
            .as_ref()
            .map_or_else(Vec::new, |r| std::mem::take(&mut *r.slices.lock()))
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        *self.pinner.alive.lock() = false;
        // The executor has retired every instruction: the allocation thread is idle, and the
        // kept device blocks go back to the driver while the contexts exist.
        let mut blocks = self.device_blocks.lock();
        tracing::debug!(
            "CUDA backend: {} device allocation(s) served by a kept block",
            blocks.reuses()
        );
        for (memory, address) in blocks.drain_all() {
            let device = self
                .system
                .device_of(memory)
                .map(|d| &self.devices[d.0 as usize]);
            if device.is_some_and(|d| make_current(d.context).is_ok()) {
                // SAFETY: a kept block from cuMemAlloc in the current context, unused.
                let _ = unsafe { free_device_blocks(&[address]) };
            }
        }
        drop(blocks);
        let mut retained = Vec::with_capacity(self.devices.len());
        for (index, device) in std::mem::take(&mut self.devices).into_iter().enumerate() {
            let lanes = device.lanes.clone();
            let submissions = device.submissions.clone();
            let (pending, spare) = (self.pending.clone(), device.spare_events.clone());
            let context = device.context;
            let _ = device.submitter.submit(move || {
                make_current(context)?;
                let streams = lanes.lock().streams.clone();
                let mut submissions = submissions.lock();
                // A lane's submission state exists only once its stream does.
                for (lane, (lane_submissions, stream)) in
                    submissions.iter_mut().zip(streams).enumerate()
                {
                    let job = Submission {
                        key: (index, lane),
                        stream,
                        more_queued: false,
                        capturable: false,
                        pending: &pending,
                        spare: &spare,
                    };
                    lane_submissions.close(&job);
                }
                // What `cuda_graphs` did on this device: lets a program (and the GPU checks of
                // the C++ frontend) see whether its kernels were captured at all.
                let (batches, kernels) = submissions.iter().fold((0, 0), |(b, k), lane| {
                    (b + lane.graphs.batches_launched, k + lane.graphs.kernels_in_batches)
                });
                tracing::debug!(
                    "CUDA device D{index}: {kernels} kernel(s) launched in {batches} CUDA graph batch(es)"
                );
                for event in spare.lock().drain(..) {
                    // SAFETY: completed events of the current context, never used again.
                    unsafe { sys::cuEventDestroy_v2(event.0) };
                }
                for stream in lanes.lock().streams.drain(..) {
                    // SAFETY: streams of the current context, no longer used after this point.
                    unsafe {
                        let _ = result::stream::synchronize(stream.0);
                        let _ = result::stream::destroy(stream.0);
                    }
                }
                // The streams are idle: nothing uses the lanes' record blocks any more.
                for lane_submissions in submissions.iter_mut() {
                    lane_submissions.records.free();
                }
                Ok(Completion::Done)
            });
            retained.push(device.cu_device);
            // Dropping the device joins its submission thread after the job above ran.
        }
        // Retire the finished events and return the cached pinned blocks while the contexts
        // still exist, then release them.
        self.poll().ok();
        self.record_slots.lock().return_blocks(&self.pool);
        self.pool.lock().trim();
        for cu_device in retained {
            // SAFETY: retained in new(); nothing uses the context any more.
            unsafe {
                let _ = result::primary_ctx::release(cu_device);
            }
        }
    }
}

#[cfg(test)]
#[path = "tests/cuda.rs"]
mod tests;
