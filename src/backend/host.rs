//! The host backend: runtime host memory plus N emulated devices (`devices=host:N`).
//!
//! Each emulated device has its own memory (distinct allocations) and runs kernels on its own
//! lane threads, so multi-device data movement — peer copies, or staging through host memory
//! when `host_device_peer_copies=off` — is exercised exactly as on GPUs. All allocations and
//! frees run in order on one allocation thread; lanes are created lazily.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::SendPtr;
use super::event::{AsyncEvent, Completion};
use super::host_memory::HostAllocation;
use super::interface::{Backend, CopyLane, KernelInvocation, Launcher};
use super::nd_memory::{StridedBox, copy_box_raw};
use super::system_info::SystemInfo;
use super::thread_queue::{HostLaunch, IntoJob, Lanes, ThreadQueue};
use crate::error::{Error, Result};
use crate::types::{DeviceId, MemoryId};

/// Live allocations by address, per memory.
type AllocationTable = Arc<Mutex<HashMap<(MemoryId, usize), HostAllocation>>>;

/// The host backend with emulated devices.
pub struct HostBackend {
    system: SystemInfo,
    allocations: AllocationTable,
    alloc_queue: ThreadQueue,
    host_lanes: Lanes,
    device_lanes: Vec<Lanes>,
}

impl HostBackend {
    /// A backend with `num_devices` emulated devices; `peer_copies` says whether they may copy
    /// to each other directly (`host_device_peer_copies`).
    pub fn new(num_devices: usize, peer_copies: bool) -> Result<Self> {
        Ok(Self {
            system: SystemInfo::with_devices(num_devices, peer_copies)?,
            allocations: Arc::default(),
            alloc_queue: ThreadQueue::new("celerity-alloc")?,
            host_lanes: Lanes::new("celerity-host"),
            device_lanes: (0..num_devices)
                .map(|d| Lanes::new(format!("celerity-D{d}")))
                .collect(),
        })
    }

    /// Number of live allocations in `memory` (for leak checks at shutdown).
    pub fn live_allocations(&self, memory: MemoryId) -> usize {
        self.allocations
            .lock()
            .keys()
            .filter(|(m, _)| *m == memory)
            .count()
    }

    /// Queues `job` on lane `index` of `device`.
    fn submit_to_device(
        &mut self,
        device: DeviceId,
        index: usize,
        job: impl IntoJob,
    ) -> AsyncEvent {
        match self.device_lanes.get_mut(device.0 as usize) {
            Some(lanes) => lanes.submit(index, job),
            None => AsyncEvent::ready(Err(Error::internal(format!(
                "{device} does not exist on this node"
            )))),
        }
    }

    fn check_memory(&self, memory: MemoryId) -> Result<()> {
        if memory == MemoryId::USER || memory.0 as usize >= self.system.memories.len() {
            return Err(Error::internal(format!(
                "the backend cannot allocate in {memory}"
            )));
        }
        Ok(())
    }
}

/// A job copying the box `source_box` of `source` into `dest_box` of `dest` on the host.
///
/// # Safety
/// Both allocations must cover their boxes and stay valid, and the copied elements must not be
/// accessed concurrently, until the job has run.
pub(crate) unsafe fn host_copy_job(
    source: *const u8,
    source_box: StridedBox,
    dest: *mut u8,
    dest_box: StridedBox,
    elem_size: usize,
) -> impl FnOnce() -> Result<Completion> + Send + 'static {
    let (source, dest) = (SendPtr(source.cast_mut()), SendPtr(dest));
    move || {
        let (source, dest) = (source, dest);
        // SAFETY: guaranteed by the caller of host_copy_job.
        unsafe { copy_box_raw(source.0, source_box, dest.0, dest_box, elem_size) };
        Ok(Completion::Done)
    }
}

impl Backend for HostBackend {
    fn system_info(&self) -> &SystemInfo {
        &self.system
    }

    fn describe_devices(&self) -> String {
        let n = self.device_lanes.len();
        let devices = &self.system.devices;
        let direct = n > 1
            && self.system.memories[devices[0].native_memory.0 as usize]
                .copy_peers
                .contains(devices[1].native_memory);
        let peers = if direct {
            ", direct peer copies"
        } else if n > 1 {
            ", copies staged through host memory"
        } else {
            ""
        };
        format!("{n} emulated host device(s) (host memory{peers})")
    }

    fn enqueue_alloc(&mut self, memory: MemoryId, size: usize, align: usize) -> AsyncEvent {
        if let Err(error) = self.check_memory(memory) {
            return AsyncEvent::ready(Err(error));
        }
        let table = self.allocations.clone();
        self.alloc_queue.submit(move || {
            let allocation = HostAllocation::new(size, align)
                .map_err(|e| e.context(format!("allocating in {memory}")))?;
            let address = allocation.as_ptr() as usize;
            table.lock().insert((memory, address), allocation);
            Ok(Completion::Allocation(address))
        })
    }

    unsafe fn enqueue_free(&mut self, memory: MemoryId, ptr: *mut u8) -> AsyncEvent {
        let table = self.allocations.clone();
        let address = ptr as usize;
        self.alloc_queue.submit(move || {
            table
                .lock()
                .remove(&(memory, address))
                .map(|_| Completion::Done)
                .ok_or_else(|| {
                    Error::internal(format!(
                        "free of {address:#x} in {memory}, which is not a live allocation"
                    ))
                })
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
        // SAFETY: forwarded contract of enqueue_copy.
        let job = unsafe { host_copy_job(source, source_box, dest, dest_box, elem_size) };
        match lane {
            CopyLane::Host(index) => self.host_lanes.submit(index, job),
            CopyLane::Device(device, index) => self.submit_to_device(device, index, job),
        }
    }

    fn host_reaches_copies_on(&self, _lane: CopyLane) -> bool {
        // An emulated device's memory is host memory.
        true
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
        self.submit_to_device(device, lane, HostLaunch::new(launcher, invocation))
    }

    fn poll(&mut self) -> Result<()> {
        // Lane threads complete their events themselves.
        Ok(())
    }

    fn begin_submissions(&mut self) {
        self.host_lanes.hold_wakeups();
        self.device_lanes.iter_mut().for_each(Lanes::hold_wakeups);
    }

    fn end_submissions(&mut self) {
        self.host_lanes.wake();
        self.device_lanes.iter_mut().for_each(Lanes::wake);
    }

    fn check_async_errors(&mut self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::interface::LaunchEnvironment;
    use crate::grid::{GridBox, Id, Range};

    fn wait(event: &AsyncEvent) -> Completion {
        while !event.is_complete() {
            std::thread::yield_now();
        }
        event.take_outcome().unwrap().unwrap()
    }

    fn allocate(backend: &mut HostBackend, memory: u64, bytes: usize) -> *mut u8 {
        match wait(&backend.enqueue_alloc(MemoryId(memory), bytes, 64)) {
            Completion::Allocation(address) => address as *mut u8,
            other => panic!("{other:?}"),
        }
    }

    fn invocation(
        device: Option<DeviceId>,
        accessors: Vec<super::super::interface::AccessorInfo>,
    ) -> KernelInvocation {
        KernelInvocation {
            chunk: GridBox::from_arrays([0, 0, 0], [16, 1, 1]),
            global_range: Range::new(16, 1, 1),
            global_offset: Id::default(),
            dims: 1,
            accessors,
            reductions: Vec::new(),
            reduction_identities: Vec::new(),
            host_objects: Vec::new(),
            device,
            collective_comm: 0,
            launch_only: false,
        }
    }

    #[test]
    fn device_memories_are_distinct_and_copies_move_data_between_them() {
        let mut backend = HostBackend::new(2, true).unwrap();
        let d0 = allocate(&mut backend, 2, 64);
        let d1 = allocate(&mut backend, 3, 64);
        let host = allocate(&mut backend, 1, 64);
        assert!(d0 != d1 && d1 != host);
        assert_eq!(d0 as usize % 64, 0);
        // SAFETY: d0 holds 64 bytes.
        unsafe { std::slice::from_raw_parts_mut(d0, 64) }
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8);
        let whole = StridedBox {
            allocation_range: [64, 1, 1],
            offset: [0; 3],
            range: [64, 1, 1],
        };
        let part = StridedBox {
            allocation_range: [64, 1, 1],
            offset: [8, 0, 0],
            range: [16, 1, 1],
        };
        // SAFETY: all three allocations hold 64 bytes and are not used concurrently.
        unsafe {
            wait(&backend.enqueue_copy(CopyLane::Device(DeviceId(1), 0), d0, whole, d1, whole, 1));
            wait(&backend.enqueue_copy(CopyLane::Host(0), d1, part, host, part, 1));
        }
        // SAFETY: the copies completed.
        let (d1_bytes, host_bytes) = unsafe {
            (
                std::slice::from_raw_parts(d1, 64),
                std::slice::from_raw_parts(host, 64),
            )
        };
        assert_eq!(d1_bytes, &(0..64).collect::<Vec<u8>>()[..]);
        assert_eq!(&host_bytes[8..24], &(8..24).collect::<Vec<u8>>()[..]);
        assert_eq!(backend.live_allocations(MemoryId(2)), 1);
        for (memory, ptr) in [(2, d0), (3, d1), (1, host)] {
            // SAFETY: each pointer is a live allocation of its memory and no longer used.
            wait(&unsafe { backend.enqueue_free(MemoryId(memory), ptr) });
        }
        assert_eq!(
            backend.live_allocations(MemoryId(2)) + backend.live_allocations(MemoryId(1)),
            0
        );
    }

    #[test]
    fn kernels_run_on_their_device_thread_and_see_their_accessors() {
        let mut backend = HostBackend::new(2, false).unwrap();
        let memory = allocate(&mut backend, 3, 16 * 4);
        let accessor = super::super::interface::AccessorInfo {
            base: SendPtr(memory),
            allocated_box: GridBox::from_arrays([0, 0, 0], [16, 1, 1]),
            accessed_box: GridBox::from_arrays([0, 0, 0], [16, 1, 1]),
            elem_size: 4,
            bounds: SendPtr(std::ptr::null_mut()),
        };
        let launcher: Launcher = Arc::new(|inv: &KernelInvocation, env: &LaunchEnvironment| {
            assert!(!env.cuda);
            assert_eq!(std::thread::current().name(), Some("celerity-D1-0"));
            let a = inv.accessors[0];
            for i in inv.chunk.min().0[0]..inv.chunk.max().0[0] {
                // SAFETY: the accessor's allocation holds 16 u32 elements.
                unsafe { *(a.base.0 as *mut u32).add(i) = (i * i) as u32 };
            }
            Ok(())
        });
        wait(&backend.enqueue_device_kernel(
            DeviceId(1),
            0,
            launcher,
            invocation(Some(DeviceId(1)), vec![accessor]),
        ));
        // SAFETY: the kernel completed.
        let values = unsafe { std::slice::from_raw_parts(memory as *const u32, 16) };
        assert_eq!(values, &(0..16).map(|i| i * i).collect::<Vec<u32>>()[..]);
        // SAFETY: no longer used.
        wait(&unsafe { backend.enqueue_free(MemoryId(3), memory) });
    }

    #[test]
    fn failing_host_tasks_and_bad_requests_report_errors() {
        let mut backend = HostBackend::new(1, true).unwrap();
        let failing: Launcher = Arc::new(|_: &KernelInvocation, _: &LaunchEnvironment| {
            Err(Error::new(
                crate::ErrorKind::TaskFailed,
                "kernel returned 3",
            ))
        });
        let event = backend.enqueue_host_task(2, failing, invocation(None, Default::default()));
        while !event.is_complete() {
            std::thread::yield_now();
        }
        let error = event.take_outcome().unwrap().unwrap_err();
        assert_eq!(error.kind(), crate::ErrorKind::TaskFailed);
        let error = backend
            .enqueue_alloc(MemoryId::USER, 8, 8)
            .take_outcome()
            .unwrap()
            .unwrap_err();
        assert!(error.message().contains("cannot allocate in M0"));
        let launcher: Launcher = Arc::new(|_: &KernelInvocation, _: &LaunchEnvironment| Ok(()));
        let error = backend
            .enqueue_device_kernel(
                DeviceId(5),
                0,
                launcher,
                invocation(None, Default::default()),
            )
            .take_outcome()
            .unwrap()
            .unwrap_err();
        assert!(error.message().contains("D5 does not exist"));
        // SAFETY: the address is not dereferenced; the free is rejected.
        let event = unsafe { backend.enqueue_free(MemoryId::HOST, 0x1000 as *mut u8) };
        while !event.is_complete() {
            std::thread::yield_now();
        }
        assert!(event.take_outcome().unwrap().is_err());
    }
}
