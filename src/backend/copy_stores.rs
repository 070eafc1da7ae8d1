//! How one thread copies a piece of a large host copy: `memcpy`, streaming stores, or a touch
//! of each page. Shared by [`parallel_copy`](super::parallel_copy), which splits copies, and
//! the crew of threads that runs the pieces.

/// How a piece writes its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Stores {
    /// `memcpy`: for a destination the CPU reads again soon.
    Cached = 0,
    /// Non-temporal (streaming) stores, which do not read the destination's cache lines first:
    /// a third less memory traffic for a destination that the CPU does not read soon (a
    /// staging slot that the DMA engine reads, user memory after a fence, a fresh copy).
    Streaming = 1,
    /// No copy: one zero byte per page (the source is not read), which faults fresh memory in
    /// (`parallel_copy::touch_pages`).
    Touch = 2,
}

impl Stores {
    /// The inverse of `stores as u8` (the crew passes it through an atomic).
    pub(super) fn from_u8(value: u8) -> Stores {
        match value {
            0 => Stores::Cached,
            1 => Stores::Streaming,
            _ => Stores::Touch,
        }
    }
}

/// Copies one piece with `stores`.
///
/// # Safety
/// Both ranges must be valid for `len` bytes, must not overlap, and must not be accessed by
/// anyone else during the call.
pub(super) unsafe fn copy_piece(dest: *mut u8, source: *const u8, len: usize, stores: Stores) {
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

/// A copy whose 16-byte-aligned body is written with `movntdq` (SSE2, present on every
/// x86-64 CPU), then fenced so that the stores are visible before the copy counts as done.
///
/// # Safety
/// Both ranges must be valid for `len` bytes, must not overlap, and must not be accessed by
/// anyone else during the call.
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
/// Both ranges must be valid for `len` bytes, must not overlap, and must not be accessed by
/// anyone else during the call.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn copy_streaming(dest: *mut u8, source: *const u8, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { std::ptr::copy_nonoverlapping(source, dest, len) }
}
