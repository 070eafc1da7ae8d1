//! Accessor boundary records for CUDA kernels (`accessor_boundary_check`).
//!
//! The executor hands every accessor of a chunk a [`BoundsRecord`] in host memory and reads the
//! records once the chunk completed. A CUDA kernel cannot write pageable host memory, and
//! atomics on mapped host memory would cross the bus on every offending access, so the records
//! live on the device while the kernel runs:
//!
//! 1. The host block (fallbacks, then records) is pinned memory, so the copies below are
//!    asynchronous: a slot of [`RecordSlots`] for chunks of a few accessors (one pool block per
//!    512 chunks in flight; a pinned allocation of its own per chunk cost the driver more than
//!    the chunk's launch), else a block of the [`PinnedPool`].
//! 2. On the lane's stream, before the launcher: the block copied into the lane's device block
//!    ([`RecordSlab`], the records' `fallback` pointers first set to the device's fallbacks), and
//!    the accessors' `record` pointers redirected to the device records.
//! 3. After the launcher: the records copied back into the host block on the stream, so the
//!    chunk's completion event covers the copy.
//!
//! A lane's chunks run in stream order, so each reuses the lane's device block after the
//! previous chunk's records went back: no allocation per chunk. With a pinned host block both
//! copies read and write page-locked memory when the stream (or a graph) reaches them, not during
//! the call, so such kernels may join CUDA graph batches like any other.
//!
//! The device code (`celerity_accessor_record_box` in `celerity.h`, and the C++ accessor) updates
//! the records with `atomicAdd`/`atomicMin`/`atomicMax`. Only chunks whose accessors carry a
//! record pay any of this.
//!
//! [`BoundsRecord`]: super::super::bounds::BoundsRecord
//! [`PinnedPool`]: super::super::pinned_pool::PinnedPool

use std::ffi::c_void;
use std::mem::size_of;
use std::sync::Arc;

use cudarc::driver::sys;
use parking_lot::Mutex;

use super::super::SendPtr;
use super::super::bounds::{BoundsRecord, BoundsRecords, FALLBACK_BYTES, RecordMemory};
use super::super::interface::AccessorInfo;
use super::{SharedPool, check};
use crate::error::{Error, Result};

/// Bytes of one record slot: the records of up to 12 accessors with their fallbacks.
const SLOT_BYTES: usize = 4096;
/// Bytes of the pool blocks that slots are carved from.
const SLOT_BLOCK_BYTES: usize = 2 << 20;

/// Pinned slots for the host records of chunks with a few accessors, carved out of pool blocks
/// that are kept (not returned to the pool) while the backend lives.
#[derive(Default)]
pub(super) struct RecordSlots {
    free: Vec<usize>,
    blocks: Vec<usize>,
}

/// The slots, shared by the thread that arms records and those that drop them.
pub(super) type SharedSlots = Arc<Mutex<RecordSlots>>;

impl RecordSlots {
    /// A free slot, carving a new pool block when none is left; `None` when the pool refuses.
    fn acquire(&mut self, pool: &SharedPool) -> Option<usize> {
        if self.free.is_empty() {
            let block = pool.lock().acquire(SLOT_BLOCK_BYTES)?;
            self.blocks.push(block);
            self.free.extend(
                (0..SLOT_BLOCK_BYTES / SLOT_BYTES)
                    .rev()
                    .map(|i| block + i * SLOT_BYTES),
            );
        }
        self.free.pop()
    }

    /// Returns the blocks to `pool` once every slot is free (at shutdown). Blocks with a slot
    /// still in use are kept: a record may yet be read.
    pub(super) fn return_blocks(&mut self, pool: &SharedPool) {
        if self.free.len() != self.blocks.len() * (SLOT_BLOCK_BYTES / SLOT_BYTES) {
            return;
        }
        self.free.clear();
        let mut pool = pool.lock();
        for block in self.blocks.drain(..) {
            pool.release(block);
        }
    }
}

/// Where one chunk's pinned host records live, and where they go back on drop.
enum PinnedRecordOwner {
    /// A block of the pool of its own.
    Pool(SharedPool),
    /// A slot of [`RecordSlots`].
    Slots(SharedSlots),
}

/// One chunk's pinned host records.
struct PinnedRecordMemory {
    address: usize,
    owner: PinnedRecordOwner,
}

impl std::fmt::Debug for PinnedRecordMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedRecordMemory({:#x})", self.address)
    }
}

impl RecordMemory for PinnedRecordMemory {
    fn as_ptr(&self) -> *mut u8 {
        self.address as *mut u8
    }
}

impl Drop for PinnedRecordMemory {
    fn drop(&mut self) {
        match &self.owner {
            PinnedRecordOwner::Pool(pool) => {
                pool.lock().release(self.address);
            }
            PinnedRecordOwner::Slots(slots) => slots.lock().free.push(self.address),
        }
    }
}

/// Fresh host records for a CUDA kernel with `len` accessors: pinned when a slot or the pool
/// lends a block (then the copies around the kernel are asynchronous), else pageable (still
/// correct: the driver then copies synchronously).
pub(super) fn host_records(
    pool: &SharedPool,
    slots: &SharedSlots,
    len: usize,
) -> Result<BoundsRecords> {
    let bytes = BoundsRecords::bytes(len);
    if bytes <= SLOT_BYTES {
        let slot = slots.lock().acquire(pool);
        if let Some(address) = slot {
            let slot = PinnedRecordMemory {
                address,
                owner: PinnedRecordOwner::Slots(slots.clone()),
            };
            // SAFETY: a slot of SLOT_BYTES >= `bytes` inside a page-aligned pool block, at a
            // multiple of SLOT_BYTES (so aligned to FALLBACK_BYTES), owned by the records from
            // here on.
            return Ok(unsafe { BoundsRecords::new_in(Box::new(slot), len) });
        }
    }
    let Some(address) = pool.lock().acquire(bytes) else {
        return BoundsRecords::new_host(len);
    };
    let block = PinnedRecordMemory {
        address,
        owner: PinnedRecordOwner::Pool(pool.clone()),
    };
    // SAFETY: a pool block of at least `bytes`, page-aligned (so aligned to FALLBACK_BYTES),
    // owned by the records from here on.
    Ok(unsafe { BoundsRecords::new_in(Box::new(block), len) })
}

/// The device copy of one chunk's records, from before its launch until after it.
pub(super) struct DeviceRecords {
    host: *mut u8,
    device: sys::CUdeviceptr,
    len: usize,
}

/// A lane's device block for the records of its chunks, grown (never shrunk) to the largest
/// chunk seen. Touched only by the device's submission thread.
#[derive(Default)]
pub(super) struct RecordSlab {
    block: sys::CUdeviceptr,
    bytes: usize,
    /// Outgrown blocks: chunks enqueued before the growth may still use them, so they are freed
    /// only with the lane ([`RecordSlab::free`]).
    outgrown: Vec<sys::CUdeviceptr>,
}

/// The smallest device block a lane allocates (room for a chunk of several accessors).
const MIN_SLAB_BYTES: usize = 64 << 10;

impl RecordSlab {
    /// The lane's device block, at least `bytes` long.
    fn reserve(&mut self, bytes: usize) -> Result<sys::CUdeviceptr> {
        if bytes <= self.bytes {
            return Ok(self.block);
        }
        let size = bytes.next_power_of_two().max(MIN_SLAB_BYTES);
        let mut block: sys::CUdeviceptr = 0;
        // SAFETY: valid out-pointer; the lane's context is current. A plain (not stream-ordered)
        // allocation, so that a capturing stream records no allocation node.
        check("cuMemAlloc (bounds records)", unsafe {
            sys::cuMemAlloc_v2(&mut block, size)
        })?;
        if self.block != 0 {
            self.outgrown.push(self.block);
        }
        self.block = block;
        self.bytes = size;
        Ok(block)
    }

    /// Frees the blocks; the lane's stream must be idle and its context current.
    pub(super) fn free(&mut self) {
        let current = std::mem::take(&mut self.block);
        for block in self
            .outgrown
            .drain(..)
            .chain((current != 0).then_some(current))
        {
            // SAFETY: blocks of this context that no enqueued work uses any more.
            unsafe { sys::cuMemFree_v2(block) };
        }
        self.bytes = 0;
    }
}

/// Where record `i` of a block starts.
fn record_offset(len: usize, i: usize) -> usize {
    BoundsRecords::records_offset(len) + i * size_of::<BoundsRecord>()
}

impl DeviceRecords {
    /// Whether a chunk with these accessors may join a CUDA graph batch as far as its records
    /// go: it has none, or their host block is pinned memory of `pool` (a graph copies it when
    /// it runs, as the stream would; a pageable block is staged by the driver during the call).
    pub(super) fn capturable(accessors: &[AccessorInfo], pool: &SharedPool) -> bool {
        let Some(first) = accessors.first().map(|a| a.bounds.0) else {
            return true;
        };
        if first.is_null() {
            return true;
        }
        let len = accessors.len();
        let host = BoundsRecords::block_of(first, len) as usize;
        pool.lock().contains(host, BoundsRecords::bytes(len))
    }

    /// Step 2 for the accessors of one chunk, if they carry records: uploads the host block into
    /// the lane's device block and points the accessors at the device records.
    ///
    /// # Safety
    /// The accessors' records must come from one [`BoundsRecords`] block armed in accessor order
    /// (the executor's `bounds_check::arm`) that stays alive until the stream passed
    /// [`DeviceRecords::download`]; `slab` must be the lane's of `stream`, whose context must be
    /// current.
    pub(super) unsafe fn upload(
        accessors: &mut [AccessorInfo],
        stream: sys::CUstream,
        slab: &mut RecordSlab,
    ) -> Result<Option<Self>> {
        let len = accessors.len();
        let Some(first) = accessors.first().map(|a| a.bounds.0) else {
            return Ok(None);
        };
        if first.is_null() {
            return Ok(None);
        }
        let host = BoundsRecords::block_of(first, len);
        for (i, accessor) in accessors.iter().enumerate() {
            if accessor.bounds.0 != host.wrapping_add(record_offset(len, i)) {
                return Err(Error::internal(format!(
                    "accessor {i}'s bounds record is not part of its chunk's record block"
                )));
            }
        }
        let bytes = BoundsRecords::bytes(len);
        let device = slab.reserve(bytes)?;
        for i in 0..len {
            let record = host
                .wrapping_add(record_offset(len, i))
                .cast::<BoundsRecord>();
            // SAFETY: record `i` of the live host block (caller's contract); nothing reads it
            // while the chunk has not started.
            unsafe {
                (*record).fallback = (device as usize + i * FALLBACK_BYTES) as *mut u8;
            }
        }
        let records = Self { host, device, len };
        // SAFETY: the host block holds `bytes` bytes (pinned, or pageable: then the driver copies
        // before returning); the lane's device block holds at least as many, and the chunks
        // before this one on the stream are done with it when the stream reaches this copy.
        check("cuMemcpyHtoDAsync (bounds records)", unsafe {
            sys::cuMemcpyHtoDAsync_v2(device, host as *const c_void, bytes, stream)
        })?;
        for (i, accessor) in accessors.iter_mut().enumerate() {
            accessor.bounds = SendPtr((device as usize + record_offset(len, i)) as *mut u8);
        }
        Ok(Some(records))
    }

    /// Step 3: copies the records back into the host block, after everything enqueued on
    /// `stream` so far (the kernel).
    ///
    /// # Safety
    /// As for [`DeviceRecords::upload`], on the same stream.
    pub(super) unsafe fn download(self, stream: sys::CUstream) -> Result<()> {
        let offset = BoundsRecords::records_offset(self.len);
        let bytes = self.len * size_of::<BoundsRecord>();
        // SAFETY: both blocks are live and hold the records at `offset` (caller's contract).
        check("cuMemcpyDtoHAsync (bounds records)", unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                self.host.wrapping_add(offset).cast::<c_void>(),
                self.device + offset as sys::CUdeviceptr,
                bytes,
                stream,
            )
        })
    }
}
