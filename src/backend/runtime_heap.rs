//! The runtime's heap (feature `mimalloc`): mimalloc for the Rust allocations of the runtime,
//! with the plain entry points wherever they give the alignment asked for.
//!
//! `mi_malloc_aligned` handles a block above 1 KiB on its slow path, which over-allocates by
//! the alignment and marks the page as holding interior pointers (so its frees search for the
//! block start). That path took 4 % of the scheduler thread's instructions in a `host:4` chain
//! (docs/benchmarks.md, "The runtime heap's plain allocations"). Every mimalloc block is at least
//! `PLAIN_ALIGN`-aligned (block sizes are multiples of 8 and pages start 16-aligned), so
//! layouts aligned to at most that take `mi_malloc` and its siblings.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment every block `mi_malloc` returns has.
const PLAIN_ALIGN: usize = 8;

/// The global allocator of the library and of every binary that links it.
pub struct RuntimeHeap;

// SAFETY: each method hands out blocks of at least `layout.size()` bytes aligned to
// `layout.align()` (mimalloc's plain calls where `PLAIN_ALIGN` suffices, its aligned calls
// otherwise) and frees only blocks it handed out; mimalloc is thread-safe.
unsafe impl GlobalAlloc for RuntimeHeap {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        allocate(layout, mi::mi_malloc, mi::mi_malloc_aligned)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        allocate(layout, mi::mi_zalloc, mi::mi_zalloc_aligned)
    }

    #[inline]
    unsafe fn dealloc(&self, block: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a block this allocator handed out; mi_free takes blocks of
        // either kind of call.
        unsafe { mi::mi_free(block.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a block this allocator handed out for `layout`; the block
        // keeps `layout.align()` either way.
        let moved = unsafe {
            if layout.align() <= PLAIN_ALIGN {
                mi::mi_realloc(block.cast::<c_void>(), new_size)
            } else {
                mi::mi_realloc_aligned(block.cast::<c_void>(), new_size, layout.align())
            }
        };
        debug_assert_eq!(moved as usize % layout.align(), 0);
        moved.cast()
    }
}

/// A block for `layout` from `plain` where [`PLAIN_ALIGN`] suffices, else from `aligned`.
#[inline(always)]
fn allocate(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: mimalloc's allocation calls have no preconditions.
    let block = unsafe {
        if layout.align() <= PLAIN_ALIGN {
            plain(layout.size())
        } else {
            aligned(layout.size(), layout.align())
        }
    };
    debug_assert_eq!(block as usize % layout.align(), 0);
    block.cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_have_the_alignment_asked_for_and_keep_their_contents_on_realloc() {
        let heap = RuntimeHeap;
        for size in [1usize, 8, 24, 1000, 1032, 1500, 4104, 70_000, 3 << 20] {
            for align in [1usize, 8, 16, 64, 4096] {
                let Ok(layout) = Layout::from_size_align(size.next_multiple_of(align), align)
                else {
                    continue;
                };
                // SAFETY: a non-zero layout; the blocks are written within their sizes and
                // freed with their layouts.
                unsafe {
                    let block = heap.alloc(layout);
                    assert_eq!(block as usize % align, 0, "{layout:?}");
                    block.write_bytes(0xa5, layout.size());
                    let grown = heap.realloc(block, layout, layout.size() * 2);
                    assert_eq!(grown as usize % align, 0, "{layout:?} grown");
                    assert!((0..layout.size()).all(|i| *grown.add(i) == 0xa5));
                    let grown_layout = Layout::from_size_align(layout.size() * 2, align).unwrap();
                    heap.dealloc(grown, grown_layout);
                    let zeroed = heap.alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0, "{layout:?} zeroed");
                    assert!((0..layout.size()).all(|i| *zeroed.add(i) == 0));
                    heap.dealloc(zeroed, layout);
                }
            }
        }
    }
}
