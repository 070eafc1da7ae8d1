//! Copies between pageable host memory (user memory, or host allocations beyond the pinned
//! limit) and a device, at close to DMA speed.
//!
//! The driver's own pageable path copies through a small internal buffer on one thread (8-14
//! GB/s on an H200 host). Here the copy is split into chunks that go through a few pinned slots
//! from the [`PinnedPool`]: for an upload, the host copy of chunk i+1 (in parallel, see
//! `parallel_copy`) overlaps the DMA of chunk i; for a download, the DMA of later chunks
//! overlaps the host copy-out of earlier ones. Every DMA is enqueued on the lane's stream, so
//! the copy stays ordered with the lane's other work. The submitting thread waits for the slots
//! it reuses and for the last chunks before it returns (the slots go back to the pool then).

use std::ffi::c_void;

use cudarc::driver::sys;
use parking_lot::Mutex;

use super::super::parallel_copy::{self, Stores};
use super::super::pinned_pool::{PinnedAllocator, PinnedPool};
use super::check;
use crate::error::Result;

/// Bytes per staged chunk of an upload. Measured on the H200 host (1 GiB, 4 slots, copy threads
/// started per chunk): 4 MiB chunks reach 7-14 GB/s, 16 MiB 20-28 GB/s, 64 MiB 26-34 GB/s
/// (docs/gpu.md).
pub(super) const CHUNK_BYTES: usize = 64 << 20;
/// Pinned slots one upload cycles through.
const SLOTS: usize = 4;
/// Bytes per staged chunk of a download, and the slots it cycles through: small enough that a
/// chunk the DMA engine just wrote is still in the host's last-level cache when the copy threads
/// read it out. Raw, with persistent copy threads (docs/gpu.md, call 19): 8 MiB × 4-16 slots
/// 0.98-0.99 of pinned DMA speed, 4 MiB × 16 0.97-0.98, 64 MiB × 4-16 (what downloads used)
/// 0.56-0.91.
pub(super) const DOWNLOAD_CHUNK_BYTES: usize = 8 << 20;
const DOWNLOAD_SLOTS: usize = 8;
/// Contiguous copies shorter than this use the driver's pageable path directly.
pub(super) const STAGING_THRESHOLD: usize = 4 << 20;

/// Allocates the slots of one full-speed staged upload and download into `pool`'s cache (a
/// copy of 1 GiB otherwise pays their page-locking, about 100 ms on the H200 host, on its first
/// use).
pub(super) fn prewarm_slots<A: PinnedAllocator>(pool: &Mutex<PinnedPool<A>>) {
    for direction in [Direction::ToDevice, Direction::ToHost] {
        let (chunk, slots) = direction.chunk_and_slots();
        // One block per lock, so that copies classifying their ends meanwhile wait for one
        // allocation at most.
        let blocks: Vec<usize> = (0..slots)
            .map_while(|_| pool.lock().acquire(chunk))
            .collect();
        let mut pool = pool.lock();
        for block in blocks {
            pool.release(block);
        }
    }
}

/// Which way a staged copy goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// Pageable host memory to the device.
    ToDevice,
    /// The device to pageable host memory.
    ToHost,
}

impl Direction {
    /// The chunk size and slot count of a full-speed staged copy this way.
    fn chunk_and_slots(self) -> (usize, usize) {
        match self {
            Direction::ToDevice => (CHUNK_BYTES, SLOTS),
            Direction::ToHost => (DOWNLOAD_CHUNK_BYTES, DOWNLOAD_SLOTS),
        }
    }
}

/// Copies `len` bytes between `host` (pageable) and `device` on `stream` through pinned slots
/// of `pool`; falls back to the driver's pageable copy when the pool lends no slot. Returns
/// once the host side is done (uploads: the DMAs are enqueued and the slots drained).
///
/// # Safety
/// Both ranges must be valid for `len` bytes until the call returns (and, for `device`, until
/// the stream passed the copy); the device context must be current.
pub(super) unsafe fn staged_copy<A: PinnedAllocator>(
    direction: Direction,
    host: *mut u8,
    device: sys::CUdeviceptr,
    len: usize,
    stream: sys::CUstream,
    pool: &Mutex<PinnedPool<A>>,
) -> Result<()> {
    let (chunk_bytes, slot_count) = direction.chunk_and_slots();
    let chunk = chunk_bytes.min(len.next_multiple_of(4096));
    let slots: Vec<usize> = {
        let mut pool = pool.lock();
        (0..slot_count.min(len.div_ceil(chunk)))
            .map_while(|_| pool.acquire(chunk))
            .collect()
    };
    if slots.is_empty() {
        // SAFETY: forwarded contract; the driver's pageable copies return once the host side
        // is staged.
        return unsafe { direct_pageable_copy(direction, host, device, len, stream) };
    }
    let mut staging = Staging {
        host,
        device,
        len,
        chunk,
        stream,
        slots,
        events: Vec::new(),
    };
    let outcome = staging.create_events().and_then(|()| match direction {
        // SAFETY: forwarded contract (ranges valid, context current).
        Direction::ToDevice => unsafe { staging.upload() },
        // SAFETY: as above.
        Direction::ToHost => unsafe { staging.download() },
    });
    let drained = staging.drain(outcome.is_ok());
    if drained.is_ok() {
        let mut pool = pool.lock();
        for slot in staging.slots.drain(..) {
            pool.release(slot);
        }
    }
    // (A slot whose DMA state is unknown after a failed drain is leaked, never reused.)
    outcome.and(drained)
}

/// One staged copy in flight: the caller's ranges, the pinned slots it cycles through and one
/// event per slot marking when the slot's last DMA is done.
struct Staging {
    host: *mut u8,
    device: sys::CUdeviceptr,
    len: usize,
    chunk: usize,
    stream: sys::CUstream,
    slots: Vec<usize>,
    events: Vec<sys::CUevent>,
}

impl Staging {
    fn create_events(&mut self) -> Result<()> {
        for _ in &self.slots {
            let mut event = std::ptr::null_mut();
            // SAFETY: valid out-pointer; the context is current.
            check("cuEventCreate", unsafe {
                sys::cuEventCreate(
                    &mut event,
                    sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32,
                )
            })?;
            self.events.push(event);
        }
        Ok(())
    }

    fn pieces(&self) -> usize {
        self.len.div_ceil(self.chunk)
    }

    /// Offset, length and slot of piece `i`.
    fn piece(&self, i: usize) -> (usize, usize, usize) {
        let offset = i * self.chunk;
        (
            offset,
            self.chunk.min(self.len - offset),
            i % self.slots.len(),
        )
    }

    fn wait_for_slot(&self, k: usize) -> Result<()> {
        // SAFETY: an event created here (recorded on this stream, or never: then complete).
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(self.events[k])
        })
    }

    fn record(&self, k: usize) -> Result<()> {
        // SAFETY: event and stream of the current context.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.events[k], self.stream)
        })
    }

    /// Host copy of piece i into its slot, then its DMA; a slot is reused once its event says
    /// the previous DMA out of it is done.
    ///
    /// # Safety
    /// As for [`staged_copy`].
    unsafe fn upload(&self) -> Result<()> {
        for i in 0..self.pieces() {
            let (offset, bytes, k) = self.piece(i);
            if i >= self.slots.len() {
                self.wait_for_slot(k)?;
            }
            // SAFETY: the slot holds `chunk` pinned bytes no DMA uses any more (its event
            // completed); the host range is the caller's.
            unsafe {
                parallel_copy::copy_with(
                    self.slots[k] as *mut u8,
                    self.host.add(offset),
                    bytes,
                    Stores::Streaming,
                )
            };
            // SAFETY: pinned source, device destination within the caller's range.
            check("cuMemcpyHtoDAsync", unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    self.device + offset as u64,
                    self.slots[k] as *const c_void,
                    bytes,
                    self.stream,
                )
            })?;
            self.record(k)?;
        }
        Ok(())
    }

    /// Enqueues the DMA of piece `i` into its slot.
    fn issue_download(&self, i: usize) -> Result<()> {
        let (offset, bytes, k) = self.piece(i);
        // SAFETY: device source within the caller's range, pinned slot destination whose
        // previous contents were already copied out.
        check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                self.slots[k] as *mut c_void,
                self.device + offset as u64,
                bytes,
                self.stream,
            )
        })?;
        self.record(k)
    }

    /// DMAs into every slot first; then, per piece, waits for its DMA, copies it out and
    /// reuses the slot for the next piece still to come.
    ///
    /// # Safety
    /// As for [`staged_copy`].
    unsafe fn download(&self) -> Result<()> {
        let (pieces, slots) = (self.pieces(), self.slots.len());
        for i in 0..pieces.min(slots) {
            self.issue_download(i)?;
        }
        for i in 0..pieces {
            let (offset, bytes, k) = self.piece(i);
            self.wait_for_slot(k)?;
            // SAFETY: the slot holds this chunk (its DMA completed); the host range is the
            // caller's.
            unsafe {
                parallel_copy::copy_with(
                    self.host.add(offset),
                    self.slots[k] as *const u8,
                    bytes,
                    Stores::Streaming,
                )
            };
            if i + slots < pieces {
                self.issue_download(i + slots)?;
            }
        }
        Ok(())
    }

    /// The slots may only go back once no DMA uses them: waits for every recorded event (after
    /// a failure, for the whole stream), then destroys the events.
    fn drain(&mut self, copied: bool) -> Result<()> {
        let drained = if copied {
            (0..self.events.len()).try_for_each(|k| self.wait_for_slot(k))
        } else {
            // SAFETY: the caller's stream.
            check("cuStreamSynchronize", unsafe {
                sys::cuStreamSynchronize(self.stream)
            })
        };
        for event in self.events.drain(..) {
            // SAFETY: created above, no longer waited on.
            unsafe { sys::cuEventDestroy_v2(event) };
        }
        drained
    }
}

/// The driver's own copy from or to pageable memory.
///
/// # Safety
/// As for [`staged_copy`].
pub(super) unsafe fn direct_pageable_copy(
    direction: Direction,
    host: *mut u8,
    device: sys::CUdeviceptr,
    len: usize,
    stream: sys::CUstream,
) -> Result<()> {
    match direction {
        // SAFETY: forwarded contract.
        Direction::ToDevice => check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(device, host as *const c_void, len, stream)
        }),
        // SAFETY: forwarded contract; a download into pageable memory completes before the
        // call returns.
        Direction::ToHost => check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(host as *mut c_void, device, len, stream)
        }),
    }
}
