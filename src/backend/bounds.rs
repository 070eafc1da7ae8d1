//! Accessor boundary checking (`accessor_boundary_check`): one [`BoundsRecord`] per accessor of a
//! kernel chunk, in memory the chunk's code can write, where element accesses outside the
//! declared box are recorded (the C ABI mirrors the record as `celerity_accessor_record`; the
//! header's `celerity_accessor_ptr` writes it). The executor reads the records once the chunk
//! completed and reports each violated accessor.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use super::SendPtr;
use super::host_memory::HostAllocation;
use crate::error::Result;

/// Bytes of scratch per accessor that out-of-bounds accesses are redirected to, so that a wrong
/// index reads and writes garbage instead of memory outside the allocation. Element types larger
/// than this are clamped into the allocation instead (see `celerity_accessor_ptr`).
pub const FALLBACK_BYTES: usize = 256;

/// The out-of-bounds record of one accessor. 64-bit fields throughout, so that CUDA device code
/// can update them with `atomicAdd` and `atomicMin`/`atomicMax` on (`unsigned`) `long long`.
/// Indices are recorded as signed values, so that `i - 1` at `i == 0` shows as -1.
#[repr(C)]
#[derive(Debug)]
pub struct BoundsRecord {
    /// Number of out-of-bounds element accesses.
    pub count: AtomicU64,
    /// Per dimension, the smallest offending index (`i64::MAX` while none).
    pub min: [AtomicI64; 3],
    /// Per dimension, the largest offending index (`i64::MIN` while none).
    pub max: [AtomicI64; 3],
    /// `fallback_size` bytes that out-of-bounds accesses use instead of the buffer.
    pub fallback: *mut u8,
    /// Size of `fallback` in bytes.
    pub fallback_size: u64,
}

impl BoundsRecord {
    /// Records an access of element `index` outside the declared box, as the C helper does.
    pub fn record(&self, index: [usize; 3]) {
        self.count.fetch_add(1, Ordering::Relaxed);
        for (d, &i) in index.iter().enumerate() {
            self.min[d].fetch_min(i as i64, Ordering::Relaxed);
            self.max[d].fetch_max(i as i64, Ordering::Relaxed);
        }
    }

    /// The bounding box of the recorded indices, if any were recorded.
    pub fn violation(&self) -> Option<OffendingBox> {
        let count = self.count.load(Ordering::Acquire);
        if count == 0 {
            return None;
        }
        Some(OffendingBox {
            min: std::array::from_fn(|d| self.min[d].load(Ordering::Relaxed)),
            max: std::array::from_fn(|d| self.max[d].load(Ordering::Relaxed).saturating_add(1)),
            count,
        })
    }
}

/// The bounding box `[min, max)` of the indices an accessor used outside its declared box; signed,
/// since a wrong index is often an underflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffendingBox {
    /// Per dimension, the smallest offending index.
    pub min: [i64; 3],
    /// Per dimension, one past the largest offending index.
    pub max: [i64; 3],
    /// Number of out-of-bounds element accesses.
    pub count: u64,
}

impl OffendingBox {
    /// `[min0,max0)x[min1,max1)` over the first `dims` dimensions (at least one).
    pub fn display(&self, dims: usize) -> String {
        let parts: Vec<String> = (0..dims.clamp(1, 3))
            .map(|d| format!("[{},{})", self.min[d], self.max[d]))
            .collect();
        parts.join("x")
    }
}

/// Host memory holding the records of one chunk: a plain allocation, or a pinned block that a
/// device backend copies to and from device memory around the kernel.
pub trait RecordMemory: Send + Sync + std::fmt::Debug {
    /// The first byte (aligned to [`FALLBACK_BYTES`], at least [`BoundsRecords::bytes`] long),
    /// the same for the memory's whole life.
    fn as_ptr(&self) -> *mut u8;
}

impl RecordMemory for HostAllocation {
    fn as_ptr(&self) -> *mut u8 {
        HostAllocation::as_ptr(self)
    }
}

/// The records of one kernel chunk, one per accessor, with their fallback elements. Layout:
/// `len` fallbacks of [`FALLBACK_BYTES`], then `len` [`BoundsRecord`]s.
#[derive(Debug)]
pub struct BoundsRecords {
    /// The block, owned: released when the records are dropped, and read through `base`.
    _memory: Box<dyn RecordMemory>,
    /// `_memory`'s first byte, kept here: arming, checking and resetting a chunk's records ask
    /// for it once per accessor, and the call through the box each time took 1.3-1.6 % of the
    /// executor's samples in a `host:4` chain.
    base: SendPtr,
    len: usize,
}

impl BoundsRecords {
    /// Bytes of the records of `len` accessors, fallbacks included.
    pub fn bytes(len: usize) -> usize {
        Self::records_offset(len) + len * std::mem::size_of::<BoundsRecord>()
    }

    /// Where the records start, after the fallbacks.
    pub fn records_offset(len: usize) -> usize {
        len * FALLBACK_BYTES
    }

    /// Fresh (empty) records for `len` accessors, in host memory. Host tasks and kernels on
    /// emulated devices write them directly.
    pub fn new_host(len: usize) -> Result<Self> {
        // from the runtime heap: the executor allocates records whenever the chunks in flight
        // outnumber the spare ones
        let memory = HostAllocation::small(Self::bytes(len), FALLBACK_BYTES)?;
        // SAFETY: a fresh allocation of exactly that size and alignment.
        Ok(unsafe { Self::new_in(Box::new(memory), len) })
    }

    /// Fresh (empty) records for `len` accessors in `memory`.
    ///
    /// # Safety
    /// `memory` must be valid for [`Self::bytes`]`(len)` bytes, aligned to [`FALLBACK_BYTES`]
    /// and used by nothing else while `self` lives.
    pub unsafe fn new_in(memory: Box<dyn RecordMemory>, len: usize) -> Self {
        let base = SendPtr(memory.as_ptr());
        let mut records = Self {
            _memory: memory,
            base,
            len,
        };
        records.initialise();
        records
    }

    /// Number of accessors these records serve.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether these are the records of no accessor.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes used records fresh again, so that the next chunk with as many accessors can take
    /// them instead of allocating (and zeroing) a new block. The chunk that used them must have
    /// completed: nothing may access the memory any more.
    pub fn reset(&mut self) {
        self.initialise();
    }

    /// Zeroes the fallbacks and writes empty records (`new_in`'s contract holds for `memory`).
    fn initialise(&mut self) {
        let (len, fallback_bytes) = (self.len, Self::records_offset(self.len));
        let base = self.base.0;
        // SAFETY: the fallbacks lie inside the memory (`new_in`'s contract); zeroed so that an
        // out-of-bounds read yields zero bytes unless the kernel wrote the scratch element before.
        unsafe { std::ptr::write_bytes(base, 0, fallback_bytes) };
        for i in 0..len {
            let record = BoundsRecord {
                count: AtomicU64::new(0),
                min: std::array::from_fn(|_| AtomicI64::new(i64::MAX)),
                max: std::array::from_fn(|_| AtomicI64::new(i64::MIN)),
                // SAFETY: within the memory: `len` fallbacks precede the records.
                fallback: unsafe { base.add(i * FALLBACK_BYTES) },
                fallback_size: FALLBACK_BYTES as u64,
            };
            // SAFETY: the record slot lies inside the memory, is aligned (FALLBACK_BYTES is a
            // multiple of 8 and so is the record size) and is not yet referenced.
            unsafe { Self::slot(base, fallback_bytes, i).write(record) };
        }
    }

    /// The first byte of the block whose first record is at `first_record`, for a backend that
    /// mirrors the records of `len` accessors (armed from one block, in accessor order) on a
    /// device.
    pub fn block_of(first_record: *mut u8, len: usize) -> *mut u8 {
        first_record.wrapping_sub(Self::records_offset(len))
    }

    /// The address of record `index` (inside the memory for index < len, see `new_in`).
    fn slot(base: *mut u8, fallback_bytes: usize, index: usize) -> *mut BoundsRecord {
        base.wrapping_add(fallback_bytes)
            .cast::<BoundsRecord>()
            .wrapping_add(index)
    }

    /// The address of accessor `index`'s record, for the accessor handed to the kernel.
    pub fn pointer(&self, index: usize) -> SendPtr {
        assert!(index < self.len, "bounds record {index} of {}", self.len);
        SendPtr(Self::slot(self.base.0, self.len * FALLBACK_BYTES, index).cast())
    }

    /// Accessor `index`'s record.
    pub fn get(&self, index: usize) -> &BoundsRecord {
        // SAFETY: initialised in `new_in`, alive as long as `self`; every field that the kernel
        // writes is atomic.
        unsafe { &*self.pointer(index).0.cast::<BoundsRecord>() }
    }

    /// Whether some accessor's record holds an access outside its declared box.
    pub fn any_violation(&self) -> bool {
        (0..self.len).any(|i| self.get(i).violation().is_some())
    }

    /// Per violated accessor: its index and the bounding box of the offending indices.
    pub fn violations(&self) -> Vec<(usize, OffendingBox)> {
        (0..self.len)
            .filter_map(|i| self.get(i).violation().map(|b| (i, b)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_the_bounding_box_of_offending_indices() {
        let records = BoundsRecords::new_host(2).unwrap();
        assert!(records.violations().is_empty());
        assert!(!records.any_violation());
        records.get(1).record([5, 0, 0]);
        assert!(records.any_violation());
        records.get(1).record([usize::MAX, 3, 0]);
        let violations = records.violations();
        assert_eq!(violations.len(), 1);
        let (index, bbox) = violations[0];
        assert_eq!((index, bbox.count), (1, 2));
        assert_eq!(bbox.display(2), "[-1,6)x[0,4)");
        assert_eq!(records.get(0).fallback_size, FALLBACK_BYTES as u64);
        assert_eq!(records.get(0).fallback as usize % FALLBACK_BYTES, 0);
    }

    #[test]
    fn reset_records_report_no_violation_and_zeroed_fallbacks() {
        let mut records = BoundsRecords::new_host(2).unwrap();
        records.get(0).record([7, 0, 0]);
        // A kernel wrote the scratch element of accessor 1.
        // SAFETY: the fallback is FALLBACK_BYTES long and nothing else uses it.
        unsafe { records.get(1).fallback.write(0xab) };
        records.reset();
        assert!(records.violations().is_empty());
        // SAFETY: as above.
        assert_eq!(unsafe { records.get(1).fallback.read() }, 0);
        assert_eq!(records.len(), 2);
    }
}
