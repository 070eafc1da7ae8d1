//! Aligned host allocations owned by the runtime (memory 1, and the memories of emulated host
//! devices).
//!
//! Buffer memory comes from the system allocator, whatever the global allocator is: its sizes
//! are the user's, and glibc refuses what the machine cannot back (an out-of-memory error at
//! allocation), where mimalloc reserves address space and fails only when the pages are touched.
//! Small blocks the runtime sizes itself ([`HostAllocation::small`]) come from the global
//! allocator, the runtime heap: glibc's aligned path took about 850 instructions for a block of
//! a few hundred bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::NonNull;

use crate::error::{Error, ErrorKind, Result};

/// One aligned, zero-size-safe block of host memory, freed on drop.
#[derive(Debug)]
pub struct HostAllocation {
    ptr: NonNull<u8>,
    layout: Layout,
    size: usize,
    /// Whether the block came from the global allocator instead of the system's.
    global: bool,
}

// SAFETY: the allocation is plain memory exclusively owned by this value; moving the owner to
// another thread is sound, and shared references only expose the address.
unsafe impl Send for HostAllocation {}
// SAFETY: `&HostAllocation` only gives out the address and sizes; reads and writes through the
// address are synchronised by the instruction graph's dependencies.
unsafe impl Sync for HostAllocation {}

impl HostAllocation {
    /// Allocates `size` bytes aligned to `align` (a power of two). Size 0 is allowed and still
    /// yields a unique, aligned address.
    pub fn new(size: usize, align: usize) -> Result<Self> {
        Self::allocate(size, align, false)
    }

    /// [`Self::new`] from the global allocator (the runtime heap), for small blocks the runtime
    /// sizes itself and allocates often, such as bounds records.
    pub fn small(size: usize, align: usize) -> Result<Self> {
        Self::allocate(size, align, true)
    }

    fn allocate(size: usize, align: usize, global: bool) -> Result<Self> {
        if !align.is_power_of_two() {
            return Err(Error::invalid_argument(format!(
                "host allocation alignment {align} is not a power of two"
            )));
        }
        let layout = Layout::from_size_align(size.max(1), align).map_err(|_| {
            Error::new(
                ErrorKind::OutOfMemory,
                format!(
                    "host allocation of {size} bytes aligned to {align} exceeds the address space"
                ),
            )
        })?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe {
            if global {
                std::alloc::alloc(layout)
            } else {
                System.alloc(layout)
            }
        };
        let ptr = NonNull::new(ptr).ok_or_else(|| {
            Error::new(
                ErrorKind::OutOfMemory,
                format!("host allocation of {size} bytes aligned to {align} failed"),
            )
        })?;
        Ok(Self {
            ptr,
            layout,
            size,
            global,
        })
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The requested size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The alignment in bytes.
    pub fn align(&self) -> usize {
        self.layout.align()
    }
}

impl Drop for HostAllocation {
    fn drop(&mut self) {
        // SAFETY: `ptr` was returned by the allocator `global` names, with exactly this layout,
        // and is freed only here.
        unsafe {
            if self.global {
                std::alloc::dealloc(self.ptr.as_ptr(), self.layout)
            } else {
                System.dealloc(self.ptr.as_ptr(), self.layout)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_writable_and_distinct() {
        let a = HostAllocation::new(1000, 128).unwrap();
        let b = HostAllocation::new(0, 64).unwrap();
        assert_eq!(a.as_ptr() as usize % 128, 0);
        assert_eq!(b.as_ptr() as usize % 64, 0);
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert_eq!((a.size(), a.align()), (1000, 128));
        // SAFETY: the allocation holds 1000 writable bytes.
        unsafe { std::ptr::write_bytes(a.as_ptr(), 0xAB, 1000) };
        // SAFETY: just written.
        assert_eq!(unsafe { *a.as_ptr().add(999) }, 0xAB);
    }

    #[test]
    fn small_blocks_are_aligned_writable_and_refuse_bad_alignment() {
        let a = HostAllocation::small(320, 256).unwrap();
        assert_eq!(a.as_ptr() as usize % 256, 0);
        // SAFETY: the allocation holds 320 writable bytes.
        unsafe { std::ptr::write_bytes(a.as_ptr(), 0xCD, 320) };
        // SAFETY: just written.
        assert_eq!(unsafe { *a.as_ptr().add(319) }, 0xCD);
        let e = HostAllocation::small(16, 3).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn bad_alignment_and_huge_sizes_are_errors_not_aborts() {
        let e = HostAllocation::new(16, 3).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("alignment 3"));
        let e = HostAllocation::new(usize::MAX - 8, 16).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    }
}
