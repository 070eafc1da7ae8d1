//! Accessor boundary records for CUDA kernels (`accessor_boundary_check`).
//!
//! The executor hands every accessor of a chunk a [`BoundsRecord`] in host memory and reads the
//! records once the chunk completed. A CUDA kernel cannot write pageable host memory, and
//! atomics on mapped host memory would cross the bus on every offending access, so the records
//! live on the device while the kernel runs:
//!
//! 1. The host block (fallbacks, then records) is a pinned block of the [`PinnedPool`], so the
//!    copies below are asynchronous.
//! 2. On the lane's stream, before the launcher: a stream-ordered allocation of the same size,
//!    the block copied into it (the records' `fallback` pointers first set to the device's
//!    fallbacks), and the accessors' `record` pointers redirected to the device records.
//! 3. After the launcher: the records copied back into the host block and the device block
//!    freed, both stream-ordered, so the chunk's completion event covers them.
//!
//! The device code (`celerity_accessor_record_box` in `celerity.h`, and the C++ accessor) updates
//! the records with `atomicAdd`/`atomicMin`/`atomicMax`. Only chunks whose accessors carry a
//! record pay any of this.
//!
//! [`BoundsRecord`]: super::super::bounds::BoundsRecord
//! [`PinnedPool`]: super::super::pinned_pool::PinnedPool

use std::ffi::c_void;
use std::mem::size_of;

use cudarc::driver::sys;

use super::super::SendPtr;
use super::super::bounds::{BoundsRecord, BoundsRecords, FALLBACK_BYTES, RecordMemory};
use super::super::interface::AccessorInfo;
use super::{SharedPool, check};
use crate::error::{Error, Result};

/// A pinned block of the pool holding one chunk's host records; back to the pool on drop.
struct PinnedRecordBlock {
    address: usize,
    pool: SharedPool,
}

impl std::fmt::Debug for PinnedRecordBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedRecordBlock({:#x})", self.address)
    }
}

impl RecordMemory for PinnedRecordBlock {
    fn as_ptr(&self) -> *mut u8 {
        self.address as *mut u8
    }
}

impl Drop for PinnedRecordBlock {
    fn drop(&mut self) {
        self.pool.lock().release(self.address);
    }
}

/// Fresh host records for a CUDA kernel with `len` accessors: pinned when the pool lends a
/// block (then the copies around the kernel are asynchronous), else pageable (still correct:
/// the driver then copies synchronously).
pub(super) fn host_records(pool: &SharedPool, len: usize) -> Result<BoundsRecords> {
    let bytes = BoundsRecords::bytes(len);
    let Some(address) = pool.lock().acquire(bytes) else {
        return BoundsRecords::new_host(len);
    };
    let block = PinnedRecordBlock {
        address,
        pool: pool.clone(),
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

/// Where record `i` of a block starts.
fn record_offset(len: usize, i: usize) -> usize {
    BoundsRecords::records_offset(len) + i * size_of::<BoundsRecord>()
}

impl DeviceRecords {
    /// Whether the executor armed boundary records for these accessors (then the chunk's
    /// launch uploads and downloads them).
    pub(super) fn armed(accessors: &[AccessorInfo]) -> bool {
        accessors.first().is_some_and(|a| !a.bounds.0.is_null())
    }

    /// Step 2 for the accessors of one chunk, if they carry records: allocates the device
    /// block on `stream`, uploads the host block and points the accessors at the device records.
    ///
    /// # Safety
    /// The accessors' records must come from one [`BoundsRecords`] block armed in accessor order
    /// (the executor's `bounds_check::arm`) that stays alive until the stream passed
    /// [`DeviceRecords::download`]; the context of `stream` must be current.
    pub(super) unsafe fn upload(
        accessors: &mut [AccessorInfo],
        stream: sys::CUstream,
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
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: valid out-pointer; the stream belongs to the current context.
        check("cuMemAllocAsync (bounds records)", unsafe {
            sys::cuMemAllocAsync(&mut device, bytes, stream)
        })?;
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
        // before returning); the device block was just allocated on this stream.
        let uploaded = check("cuMemcpyHtoDAsync (bounds records)", unsafe {
            sys::cuMemcpyHtoDAsync_v2(device, host as *const c_void, bytes, stream)
        });
        if let Err(error) = uploaded {
            // SAFETY: the device block is not used by anything enqueued after this point.
            unsafe { sys::cuMemFreeAsync(device, stream) };
            return Err(error);
        }
        for (i, accessor) in accessors.iter_mut().enumerate() {
            accessor.bounds = SendPtr((device as usize + record_offset(len, i)) as *mut u8);
        }
        Ok(Some(records))
    }

    /// Step 3: copies the records back into the host block and frees the device block, after
    /// everything enqueued on `stream` so far (the kernel).
    ///
    /// # Safety
    /// As for [`DeviceRecords::upload`], on the same stream.
    pub(super) unsafe fn download(self, stream: sys::CUstream) -> Result<()> {
        let offset = BoundsRecords::records_offset(self.len);
        let bytes = self.len * size_of::<BoundsRecord>();
        // SAFETY: both blocks are live and hold the records at `offset` (caller's contract).
        let copied = check("cuMemcpyDtoHAsync (bounds records)", unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                self.host.wrapping_add(offset).cast::<c_void>(),
                self.device + offset as sys::CUdeviceptr,
                bytes,
                stream,
            )
        });
        // SAFETY: allocated on this stream in `upload`; nothing enqueued later uses it.
        let freed = check("cuMemFreeAsync (bounds records)", unsafe {
            sys::cuMemFreeAsync(self.device, stream)
        });
        copied.and(freed)
    }
}
