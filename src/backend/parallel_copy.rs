//! Large host copies split across a crew of copy threads.
//!
//! One thread copies at 6-10 GB/s, well under what the memory system and a device's DMA engine
//! reach (about 55 GB/s host↔H200). Copies of user memory (a host-initialised buffer's contents,
//! and the staging of pageable memory in `staged_copy`) therefore run on the threads of
//! `copy_crew`, started on first use; the calling thread claims pieces
//! itself and returns once every piece is done. Small copies stay on the calling thread.

use super::copy_crew::Crew;
pub use super::copy_stores::Stores;
use super::copy_stores::copy_piece;

/// Copies shorter than this run on the calling thread.
pub const PARALLEL_THRESHOLD: usize = 2 << 20;

/// Copies `len` bytes from `source` to `dest`, in parallel when the copy is large.
///
/// # Safety
/// Both ranges must be valid for `len` bytes, must not overlap, and must not be accessed by
/// anyone else during the call.
pub unsafe fn copy(dest: *mut u8, source: *const u8, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { copy_with(dest, source, len, Stores::Cached) }
}

/// [`copy`] with the stores chosen by the caller.
///
/// # Safety
/// As for [`copy`].
pub unsafe fn copy_with(dest: *mut u8, source: *const u8, len: usize, stores: Stores) {
    if len < PARALLEL_THRESHOLD {
        // SAFETY: guaranteed by the caller.
        unsafe { std::ptr::copy_nonoverlapping(source, dest, len) };
        return;
    }
    // SAFETY: forwarded contract.
    unsafe { Crew::get().copy(dest, source, len, stores) }
}

/// Faults the pages of a fresh range in, in parallel when large: one zero byte per page, so
/// the range's contents are unspecified afterwards. (A driver registering fresh memory faults
/// it in on one thread: 1 GiB took 5x longer than copying into it with 16 threads.)
///
/// # Safety
/// `dest` must be valid for writes of `len` bytes that nobody else accesses during the call.
pub unsafe fn touch_pages(dest: *mut u8, len: usize) {
    if len < PARALLEL_THRESHOLD {
        // SAFETY: forwarded contract; `Touch` never reads its source.
        return unsafe { copy_piece(dest, dest, len, Stores::Touch) };
    }
    // SAFETY: forwarded contract; large copies go through `copy_piece`, and `Touch` pieces
    // never read their source.
    unsafe { copy_with(dest, dest, len, Stores::Touch) }
}

/// Transparent huge pages for a fresh, untouched range of at least [`HUGE_PAGE`] bytes (on
/// Linux): its first touch then faults 2 MiB at a time instead of 4 KiB (a fresh 1 GiB copy on
/// the H200 host spent about half its 61 ms in page faults). Only advice: where the kernel has
/// huge pages off, nothing changes.
pub(crate) fn advise_huge_pages(start: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        unsafe extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        const MADV_HUGEPAGE: i32 = 14;
        let first = (start as usize).next_multiple_of(HUGE_PAGE);
        let end = (start as usize + len) / HUGE_PAGE * HUGE_PAGE;
        if end > first {
            // SAFETY: the aligned interior of a range the caller owns; MADV_HUGEPAGE changes no
            // contents and no mapping, only how later faults are served.
            unsafe { madvise(first as *mut std::ffi::c_void, end - first, MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

/// The size of a transparent huge page on x86-64 and most aarch64 kernels.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_and_small_copies_are_exact() {
        for len in [
            0,
            1,
            4095,
            PARALLEL_THRESHOLD - 1,
            PARALLEL_THRESHOLD + 12_345,
            9 << 20,
        ] {
            let source: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let mut copy = vec![0u8; len];
            // SAFETY: both hold `len` bytes and do not overlap.
            unsafe { copy_with(copy.as_mut_ptr(), source.as_ptr(), len, Stores::Cached) };
            assert_eq!(copy, source, "length {len}");
        }
    }

    #[test]
    fn streaming_copies_of_unaligned_ranges_are_exact() {
        let source: Vec<u8> = (0..(5 << 20) + 77).map(|i| (i % 251) as u8).collect();
        for (from, to, len) in [
            (0, 0, 5 << 20),
            (3, 5, (5 << 20) - 9),
            (1, 0, 63),
            (7, 9, 4095),
        ] {
            let mut dest = vec![0u8; source.len() + 16];
            // SAFETY: both ranges hold `len` bytes from their offsets and do not overlap. The
            // large ones go through the thread pool, the small ones straight to the stores.
            unsafe {
                let (d, s) = (dest.as_mut_ptr().add(to), source.as_ptr().add(from));
                if len >= PARALLEL_THRESHOLD {
                    copy_with(d, s, len, Stores::Streaming)
                } else {
                    copy_piece(d, s, len, Stores::Streaming)
                }
            };
            assert_eq!(
                &dest[to..to + len],
                &source[from..from + len],
                "{from} {to} {len}"
            );
            assert!(dest[..to].iter().all(|&b| b == 0));
            assert!(dest[to + len..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn unaligned_ranges_copy_exactly() {
        let source: Vec<u8> = (0..(5 << 20)).map(|i| (i % 253) as u8).collect();
        let mut dest = vec![0u8; 5 << 20];
        // SAFETY: both ranges hold len bytes from offset 3 / 5 and do not overlap.
        unsafe {
            copy(
                dest.as_mut_ptr().add(5),
                source.as_ptr().add(3),
                (5 << 20) - 8,
            )
        };
        assert_eq!(&dest[5..(5 << 20) - 3], &source[3..(5 << 20) - 5]);
        assert_eq!(&dest[..5], &[0; 5]);
    }
}
