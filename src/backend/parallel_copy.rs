//! Large host copies split across a few worker threads.
//!
//! One thread copies at 6-10 GB/s, well under what the memory system and a device's DMA engine
//! reach (about 55 GB/s host↔H200). Copies of user memory (a host-initialised buffer's contents,
//! and the staging of pageable memory in `staged_copy`) therefore run on a shared pool of copy
//! threads started on first use; the calling thread copies one piece itself and returns once
//! every piece is done. Small copies stay on the calling thread.

use std::sync::OnceLock;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

/// Copies shorter than this run on the calling thread.
pub const PARALLEL_THRESHOLD: usize = 2 << 20;
/// Pieces are at least this long.
const MIN_PIECE: usize = 1 << 20;
/// Most threads one copy uses (the caller included). On the H200 host (16 cores) a 1 GiB copy
/// into fresh memory took 854 ms on 1 thread, 111 ms on 8 and 61 ms on 16 (page faults scale
/// with threads); into warm pinned memory 114, 45 and 28 ms.
const MAX_THREADS: usize = 16;

struct Piece {
    dest: usize,
    source: usize,
    len: usize,
    stores: Stores,
    done: Sender<()>,
}

/// How a piece writes its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stores {
    /// `memcpy`: for a destination the CPU reads again soon.
    Cached,
    /// Non-temporal (streaming) stores, which do not read the destination's cache lines first:
    /// a third less memory traffic for a destination that the CPU does not read soon (a
    /// staging slot that the DMA engine reads, user memory after a fence, a fresh copy).
    Streaming,
    /// No copy: one zero byte per page (the source is not read), which faults fresh memory in
    /// ([`touch_pages`]).
    Touch,
}

/// Copies one piece with `stores`.
///
/// # Safety
/// As for [`copy`].
unsafe fn copy_piece(dest: *mut u8, source: *const u8, len: usize, stores: Stores) {
    match stores {
        // SAFETY: forwarded contract.
        Stores::Cached => unsafe { std::ptr::copy_nonoverlapping(source, dest, len) },
        // SAFETY: forwarded contract.
        Stores::Streaming => unsafe { copy_streaming(dest, source, len) },
        Stores::Touch => {
            for offset in (0..len).step_by(PAGE) {
                // SAFETY: inside the caller's destination range.
                unsafe { dest.add(offset).write_volatile(0) };
            }
        }
    }
}

/// The smallest page size of the platforms we run on.
const PAGE: usize = 4096;

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

/// A copy whose 16-byte-aligned body is written with `movntdq` (SSE2, present on every
/// x86-64 CPU), then fenced so that the stores are visible before the copy counts as done.
///
/// # Safety
/// As for [`copy`].
#[cfg(target_arch = "x86_64")]
unsafe fn copy_streaming(dest: *mut u8, source: *const u8, len: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    let head = ((dest as usize).wrapping_neg() & 15).min(len);
    // SAFETY: the first `head` bytes of the caller's ranges.
    unsafe { std::ptr::copy_nonoverlapping(source, dest, head) };
    let mut i = head;
    while i + 64 <= len {
        // SAFETY: 64 bytes at offset i lie inside both ranges; `dest + i` is 16-byte aligned
        // (i - head is a multiple of 64); loads may be unaligned.
        unsafe {
            let s = source.add(i).cast::<__m128i>();
            let d = dest.add(i).cast::<__m128i>();
            let (a, b) = (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)));
            let (c, e) = (_mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
        }
        i += 64;
    }
    // SAFETY: the remaining tail of both ranges; then order the streaming stores before any
    // later store (the caller's "done").
    unsafe {
        std::ptr::copy_nonoverlapping(source.add(i), dest.add(i), len - i);
        _mm_sfence();
    }
}

/// Elsewhere plain copies.
///
/// # Safety
/// As for [`copy`].
#[cfg(not(target_arch = "x86_64"))]
unsafe fn copy_streaming(dest: *mut u8, source: *const u8, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { std::ptr::copy_nonoverlapping(source, dest, len) }
}

struct CopyPool {
    sender: Sender<Piece>,
    threads: usize,
}

fn pool() -> &'static CopyPool {
    static POOL: OnceLock<CopyPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS);
        let (sender, receiver) = unbounded::<Piece>();
        let mut started = 1; // the caller
        for index in 1..threads {
            let receiver: Receiver<Piece> = receiver.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("celerity-copy-{index}"))
                .spawn(move || {
                    for piece in receiver {
                        // SAFETY: the submitting call keeps both ranges valid and unaliased
                        // until it has received this piece's `done` (see `copy`).
                        unsafe {
                            copy_piece(
                                piece.dest as *mut u8,
                                piece.source as *const u8,
                                piece.len,
                                piece.stores,
                            )
                        };
                        let _ = piece.done.send(());
                    }
                });
            if spawned.is_ok() {
                started += 1;
            }
        }
        CopyPool {
            sender,
            threads: started,
        }
    })
}

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
    let pool = pool();
    let pieces = (len / MIN_PIECE).clamp(1, pool.threads);
    // Page-aligned pieces, so no two threads first-touch the same page.
    let piece_len = len.div_ceil(pieces).next_multiple_of(4096);
    let (done, finished) = bounded(pieces);
    let mut sent = 0;
    let mut offset = piece_len;
    while offset < len {
        let piece = Piece {
            dest: dest as usize + offset,
            source: source as usize + offset,
            len: piece_len.min(len - offset),
            stores,
            done: done.clone(),
        };
        if pool.sender.send(piece).is_ok() {
            sent += 1;
        }
        offset += piece_len;
    }
    // SAFETY: the first piece, on this thread; within the caller's ranges.
    unsafe { copy_piece(dest, source, piece_len.min(len), stores) };
    for _ in 0..sent {
        // A worker that died (it cannot panic in a memcpy) would drop `done`; recv then fails.
        let _ = finished.recv();
    }
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
