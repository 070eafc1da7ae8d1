//! The CUDA backend (cudarc, driver API, loaded at run time; digest 6.6).
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
//! * After each enqueue a `CUevent` is recorded; [`Backend::poll`] queries pending events and
//!   completes their [`AsyncEvent`]s, so the executor never blocks on the GPU.
//! * Host memory (memory 1) is pinned (`cuMemHostAlloc`, portable) so host↔device copies are
//!   asynchronous; device memory comes from `cuMemAlloc`. All allocations run in order on one
//!   allocation thread. Peer access is enabled between devices that support it both ways; the
//!   system model marks only those pairs as copy peers, so other device↔device copies are staged
//!   through host memory by the instruction graph.
//! * Host tasks and host↔host copies run on host lane threads, as in the host backend.

use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{DriverError, result, sys};
use parking_lot::Mutex;

const GIB: f64 = (1u64 << 30) as f64;

use super::SendPtr;
use super::bounds::BoundsRecords;
use super::event::{AsyncEvent, Completion, EventCompleter};
use super::host::{host_copy_job, host_launch_job};
use super::interface::{Backend, CopyLane, KernelInvocation, LaunchEnvironment, Launcher};
use super::nd_memory::{NdCopyLayout, StridedBox};
use super::system_info::SystemInfo;
use super::thread_queue::{Lanes, ThreadQueue};
use crate::error::{Error, ErrorKind, Result};
use crate::types::{DeviceId, MemoryId};

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

/// Makes `context` current on the calling thread.
fn make_current(context: Handle<sys::CUcontext>) -> Result<()> {
    // SAFETY: the context is a retained primary context that outlives the backend's threads.
    unsafe { result::ctx::set_current(context.0) }.map_err(|e| device_error("cuCtxSetCurrent", e))
}

/// Per-device state touched only by the device's submission thread.
struct DeviceLanes {
    streams: Vec<Handle<sys::CUstream>>,
}

struct CudaDevice {
    cu_device: sys::CUdevice,
    context: Handle<sys::CUcontext>,
    submitter: ThreadQueue,
    lanes: Arc<Mutex<DeviceLanes>>,
}

type PendingEvents = Arc<Mutex<Vec<(Handle<sys::CUevent>, EventCompleter)>>>;

/// The CUDA backend.
pub struct CudaBackend {
    system: SystemInfo,
    devices: Vec<CudaDevice>,
    host_lanes: Lanes,
    alloc_queue: ThreadQueue,
    pending: PendingEvents,
    /// Live allocations by (memory, address), to reject bad frees.
    live: Arc<Mutex<HashSet<(MemoryId, usize)>>>,
}

// SAFETY: all raw CUDA handles inside are only used on threads that make their context current
// first; the structure itself is owned by the executor thread.
unsafe impl Send for CudaBackend {}

impl CudaBackend {
    /// A backend over all CUDA devices of this node. `Unsupported` without a usable driver or
    /// without devices.
    pub fn new() -> Result<Self> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::unsupported("the CUDA driver reports no devices"));
        }
        if count + 2 > super::system_info::MAX_MEMORIES {
            return Err(Error::unsupported(format!(
                "{count} CUDA devices exceed the supported {}",
                super::system_info::MAX_MEMORIES - 2
            )));
        }
        let mut devices = Vec::with_capacity(count);
        for ordinal in 0..count {
            let cu_device =
                result::device::get(ordinal as i32).map_err(|e| device_error("cuDeviceGet", e))?;
            // SAFETY: `cu_device` is a valid device handle; the primary context is released in Drop.
            let context = unsafe { result::primary_ctx::retain(cu_device) }
                .map_err(|e| device_error("cuDevicePrimaryCtxRetain", e))?;
            let context = Handle(context);
            let submitter = ThreadQueue::new(format!("celerity-cuda-D{ordinal}"))?;
            devices.push(CudaDevice {
                cu_device,
                context,
                submitter,
                lanes: Arc::new(Mutex::new(DeviceLanes {
                    streams: Vec::new(),
                })),
            });
        }
        let system = Self::system_with_peer_access(&devices)?;
        Ok(Self {
            system,
            devices,
            host_lanes: Lanes::new("celerity-host"),
            alloc_queue: ThreadQueue::new("celerity-alloc")?,
            pending: Arc::default(),
            live: Arc::default(),
        })
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

    /// Runs `enqueue(stream)` on `device`'s submission thread, on lane `lane`'s stream, then
    /// records an event that completes the returned [`AsyncEvent`].
    fn submit_to_stream(
        &self,
        device: DeviceId,
        lane: usize,
        enqueue: impl FnOnce(Handle<sys::CUstream>) -> Result<()> + Send + 'static,
    ) -> AsyncEvent {
        let device_state = match self.device(device) {
            Ok(d) => d,
            Err(error) => return AsyncEvent::ready(Err(error)),
        };
        let (event, completer) = AsyncEvent::pending();
        let (context, lanes, pending) = (
            device_state.context,
            device_state.lanes.clone(),
            self.pending.clone(),
        );
        let _ = device_state.submitter.submit(move || {
            let outcome = (|| {
                make_current(context)?;
                let stream = {
                    let mut lanes = lanes.lock();
                    while lanes.streams.len() <= lane {
                        let stream =
                            result::stream::create(result::stream::StreamKind::NonBlocking)
                                .map_err(|e| device_error("cuStreamCreate", e))?;
                        lanes.streams.push(Handle(stream));
                    }
                    lanes.streams[lane]
                };
                enqueue(stream)?;
                let cu_event = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                    .map_err(|e| device_error("cuEventCreate", e))?;
                // SAFETY: event and stream belong to the current context.
                unsafe { result::event::record(cu_event, stream.0) }
                    .map_err(|e| device_error("cuEventRecord", e))?;
                Ok(Handle(cu_event))
            })();
            match outcome {
                Ok(cu_event) => pending.lock().push((cu_event, completer)),
                Err(error) => completer.complete(Err(error)),
            }
            Ok(Completion::Done)
        });
        event
    }
}

/// Enqueues the copy described by `layout` on `stream` (unified addressing: any pointer kind).
///
/// # Safety
/// The pointers must cover the layout's runs and stay valid until the stream reaches the copy.
unsafe fn enqueue_layout_copy(
    source: *const u8,
    dest: *mut u8,
    layout: &NdCopyLayout,
    stream: sys::CUstream,
) -> Result<()> {
    if layout.contiguous_size == 0 {
        return Ok(());
    }
    let copy_2d = |src_offset: usize, dst_offset: usize, pitch: (usize, usize), height: usize| {
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED,
            srcHost: std::ptr::null(),
            srcDevice: source as sys::CUdeviceptr + src_offset as sys::CUdeviceptr,
            srcArray: std::ptr::null_mut(),
            srcPitch: pitch.0,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED,
            dstHost: std::ptr::null_mut(),
            dstDevice: dest as sys::CUdeviceptr + dst_offset as sys::CUdeviceptr,
            dstArray: std::ptr::null_mut(),
            dstPitch: pitch.1,
            WidthInBytes: layout.contiguous_size,
            Height: height,
        };
        // SAFETY: the caller guarantees both ranges are valid; `copy` lives across the call.
        check("cuMemcpy2DAsync", unsafe {
            sys::cuMemcpy2DAsync_v2(&copy, stream)
        })
    };
    match layout.num_complex_strides {
        0 => {
            // SAFETY: as above; unified addressing lets cuMemcpyAsync take any pointer kind.
            check("cuMemcpyAsync", unsafe {
                sys::cuMemcpyAsync(
                    dest as sys::CUdeviceptr + layout.offset_in_dest as sys::CUdeviceptr,
                    source as sys::CUdeviceptr + layout.offset_in_source as sys::CUdeviceptr,
                    layout.contiguous_size,
                    stream,
                )
            })
        }
        1 => {
            let s = layout.strides[0];
            copy_2d(
                layout.offset_in_source,
                layout.offset_in_dest,
                (s.source_stride, s.dest_stride),
                s.count,
            )
        }
        _ => {
            let (outer, inner) = (layout.strides[0], layout.strides[1]);
            for i in 0..outer.count {
                copy_2d(
                    layout.offset_in_source + i * outer.source_stride,
                    layout.offset_in_dest + i * outer.dest_stride,
                    (inner.source_stride, inner.dest_stride),
                    inner.count,
                )?;
            }
            Ok(())
        }
    }
}

impl Backend for CudaBackend {
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
                // SAFETY: `cu_device` is a valid device handle.
                match unsafe { result::device::total_mem(device.cu_device) } {
                    Ok(bytes) => format!("D{i} CUDA {name} ({:.1} GiB)", bytes as f64 / GIB),
                    Err(_) => format!("D{i} CUDA {name}"),
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
        let live = self.live.clone();
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
                let mut pointer: sys::CUdeviceptr = 0;
                // SAFETY: valid out-pointer; the context is current.
                check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut pointer, bytes) }).map_err(|e| e.context(format!("allocating {size} bytes in {memory}")))?;
                pointer as usize
            } else {
                let mut pointer: *mut c_void = std::ptr::null_mut();
                // SAFETY: valid out-pointer; portable pinned memory is usable from every context.
                check("cuMemHostAlloc", unsafe { sys::cuMemHostAlloc(&mut pointer, bytes, sys::CU_MEMHOSTALLOC_PORTABLE) })
                    .map_err(|e| e.context(format!("allocating {size} pinned host bytes")))?;
                pointer as usize
            };
            live.lock().insert((memory, address));
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
        let live = self.live.clone();
        let address = ptr as usize;
        self.alloc_queue.submit(move || {
            if !live.lock().remove(&(memory, address)) {
                return Err(Error::internal(format!(
                    "free of {address:#x} in {memory}, which is not a live allocation"
                )));
            }
            make_current(context)?;
            // SAFETY: the address came from the matching allocation call and is no longer used.
            if memory == MemoryId::HOST {
                check("cuMemFreeHost", unsafe {
                    sys::cuMemFreeHost(address as *mut c_void)
                })?;
            } else {
                check("cuMemFree", unsafe {
                    sys::cuMemFree_v2(address as sys::CUdeviceptr)
                })?;
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
                self.submit_to_stream(device, index, move |stream| {
                    let (source, dest) = (source, dest);
                    // SAFETY: the caller guarantees validity until the event completes, which
                    // happens only after the stream passed the copy.
                    unsafe { enqueue_layout_copy(source.0, dest.0, &layout, stream.0) }
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
            .submit(lane, host_launch_job(launcher, invocation))
    }

    fn enqueue_device_kernel(
        &mut self,
        device: DeviceId,
        lane: usize,
        launcher: Launcher,
        invocation: KernelInvocation,
    ) -> AsyncEvent {
        self.submit_to_stream(device, lane, move |stream| {
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
            let environment = LaunchEnvironment {
                stream: stream.0 as usize,
                cuda: true,
            };
            launcher(&invocation, &environment)
        })
    }

    fn device_bounds_records(&self, _len: usize) -> Result<Option<BoundsRecords>> {
        // Kernels cannot write pageable host memory; records in pinned, device-mapped memory
        // are not implemented yet, so CUDA kernels run unchecked (host tasks are checked).
        Ok(None)
    }

    fn poll(&mut self) -> Result<()> {
        let mut pending = self.pending.lock();
        let mut index = 0;
        while index < pending.len() {
            let cu_event = pending[index].0;
            // SAFETY: the event was created by a submission thread and is destroyed only here.
            let code = unsafe { sys::cuEventQuery(cu_event.0) };
            if code == sys::CUresult::CUDA_ERROR_NOT_READY {
                index += 1;
                continue;
            }
            let (_, completer) = pending.swap_remove(index);
            // SAFETY: the event is complete (or failed) and no longer used.
            unsafe { sys::cuEventDestroy_v2(cu_event.0) };
            completer.complete(check("CUDA work", code).map(|()| Completion::Done));
        }
        Ok(())
    }

    fn check_async_errors(&mut self) -> Result<()> {
        Ok(())
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        let mut retained = Vec::with_capacity(self.devices.len());
        for device in std::mem::take(&mut self.devices) {
            let lanes = device.lanes.clone();
            let context = device.context;
            let _ = device.submitter.submit(move || {
                make_current(context)?;
                for stream in lanes.lock().streams.drain(..) {
                    // SAFETY: streams of the current context, no longer used after this point.
                    unsafe {
                        let _ = result::stream::synchronize(stream.0);
                        let _ = result::stream::destroy(stream.0);
                    }
                }
                Ok(Completion::Done)
            });
            retained.push(device.cu_device);
            // Dropping the device joins its submission thread after the job above ran.
        }
        // Retire the finished events while the contexts still exist, then release them.
        self.poll().ok();
        for cu_device in retained {
            // SAFETY: retained in new(); nothing uses the context any more.
            unsafe {
                let _ = result::primary_ctx::release(cu_device);
            }
        }
    }
}

#[cfg(test)]
mod tests;
