//! The threads behind [`parallel_copy`](super::parallel_copy): a crew that copies one large
//! range at a time, split over all of its members, and that stays awake between copies that
//! follow each other closely.
//!
//! A staged transfer between pageable user memory and a device (`cuda/staging.rs`) copies a
//! chunk of a few MiB between user memory and a pinned slot every 150 µs or so. Measured raw on
//! the H200 host (docs/gpu.md, call 19), such a pipeline runs at 0.98-0.99 of pinned DMA speed
//! with 8 MiB chunks when the copy threads persist and spin between chunks and every chunk is
//! split over all of them; threads woken through a channel per chunk, one 1 MiB piece each,
//! reached 0.55-0.58. So every member takes a piece of every copy, and a member spins for a
//! while after its last piece (yielding its core after the first microseconds) before it
//! sleeps: a transfer keeps the crew awake, and an idle program does not burn cores.
//!
//! One copy runs at a time; a second caller waits for its turn (the copies share the memory
//! system anyway). Members acknowledge every copy, whether or not it had a piece for them, so a
//! member never reads the description of a copy other than the one it acknowledges.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::copy_stores::{Stores, copy_piece};

/// Pieces are at least this long: 8 MiB staging chunks go to 16 members.
const MIN_PIECE: usize = 512 << 10;
/// Most threads one copy uses (the caller included). On the H200 host (16 cores) a 1 GiB copy
/// into fresh memory took 854 ms on 1 thread, 111 ms on 8 and 61 ms on 16 (page faults scale
/// with threads); into warm pinned memory 114, 45 and 28 ms.
const MAX_THREADS: usize = 16;
/// How long a member spins for the next copy after its last one. The staged uploads' 64 MiB
/// chunks come about 1.2 ms apart at DMA speed.
const SPIN_FOR: Duration = Duration::from_millis(3);
/// After this long without a copy a spinning member yields its core between polls.
const SPIN_HOT_FOR: Duration = Duration::from_micros(50);

/// The copy the crew works on, published by bumping `generation`.
struct Copy {
    dest: AtomicUsize,
    source: AtomicUsize,
    len: AtomicUsize,
    piece_len: AtomicUsize,
    stores: AtomicU8,
}

pub(super) struct Crew {
    /// Members started, plus the caller of each copy (set once, before the crew is shared).
    participants: AtomicUsize,
    /// Held by the caller of the copy in progress.
    turn: Mutex<()>,
    copy: Copy,
    /// Bumped once per copy; every member acknowledges each value.
    generation: AtomicU64,
    /// Members that have not yet acknowledged the current copy.
    remaining: AtomicUsize,
    /// Members asleep on `wake`, waiting for the next generation.
    sleepers: AtomicUsize,
    sleep_lock: Mutex<()>,
    wake: Condvar,
}

impl Crew {
    /// The process's crew, started on first use.
    pub(super) fn get() -> &'static Crew {
        static CREW: OnceLock<&'static Crew> = OnceLock::new();
        CREW.get_or_init(|| {
            let threads = std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(MAX_THREADS);
            let crew: &'static Crew = Box::leak(Box::new(Crew {
                participants: AtomicUsize::new(1),
                turn: Mutex::new(()),
                copy: Copy {
                    dest: AtomicUsize::new(0),
                    source: AtomicUsize::new(0),
                    len: AtomicUsize::new(0),
                    piece_len: AtomicUsize::new(0),
                    stores: AtomicU8::new(0),
                },
                generation: AtomicU64::new(0),
                remaining: AtomicUsize::new(0),
                sleepers: AtomicUsize::new(0),
                sleep_lock: Mutex::new(()),
                wake: Condvar::new(),
            }));
            let mut started = 1;
            for index in 1..threads {
                let spawned = std::thread::Builder::new()
                    .name(format!("celerity-copy-{index}"))
                    .spawn(move || crew.serve(index));
                if spawned.is_err() {
                    break;
                }
                started += 1;
            }
            crew.participants.store(started, Ordering::Relaxed);
            crew
        })
    }

    /// Threads one copy is split over (the caller included).
    pub(super) fn participants(&self) -> usize {
        self.participants.load(Ordering::Relaxed)
    }

    /// Copies `len` bytes with `stores`, split into page-aligned pieces over the crew; returns
    /// once every piece is done.
    ///
    /// # Safety
    /// As for [`parallel_copy::copy`](super::parallel_copy::copy).
    pub(super) unsafe fn copy(&self, dest: *mut u8, source: *const u8, len: usize, stores: Stores) {
        let participants = self.participants();
        let pieces = (len / MIN_PIECE).clamp(1, participants);
        // Page-aligned pieces, so no two threads first-touch the same page.
        let piece_len = len.div_ceil(pieces).next_multiple_of(4096);
        let _turn = self.turn.lock();
        let members = participants - 1;
        if members > 0 {
            let copy = &self.copy;
            copy.dest.store(dest as usize, Ordering::Relaxed);
            copy.source.store(source as usize, Ordering::Relaxed);
            copy.len.store(len, Ordering::Relaxed);
            copy.piece_len.store(piece_len, Ordering::Relaxed);
            copy.stores.store(stores as u8, Ordering::Relaxed);
            self.remaining.store(members, Ordering::Relaxed);
            // SeqCst with the sleepers' count: either a member about to sleep sees this
            // generation, or this thread sees it counted and wakes it under the lock.
            self.generation.fetch_add(1, Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                let _lock = self.sleep_lock.lock();
                self.wake.notify_all();
            }
        }
        // SAFETY: the first piece, within the caller's ranges.
        unsafe { copy_piece(dest, source, piece_len.min(len), stores) };
        let mut polls = 0u32;
        while self.remaining.load(Ordering::Acquire) != 0 {
            polls += 1;
            if polls < 1 << 16 {
                std::hint::spin_loop();
            } else {
                // A member was descheduled (more threads than cores): let it run.
                std::thread::yield_now();
            }
        }
    }

    /// A member's loop: waits for each copy, copies its piece, acknowledges.
    fn serve(&self, index: usize) {
        let mut seen = 0u64;
        loop {
            seen = self.next_generation(seen);
            let copy = &self.copy;
            let len = copy.len.load(Ordering::Relaxed);
            let piece_len = copy.piece_len.load(Ordering::Relaxed);
            let offset = index * piece_len;
            if offset < len {
                let stores = Stores::from_u8(copy.stores.load(Ordering::Relaxed));
                let (dest, source) = (
                    copy.dest.load(Ordering::Relaxed),
                    copy.source.load(Ordering::Relaxed),
                );
                // SAFETY: the caller of `copy` keeps both ranges valid and unaliased until
                // every member acknowledged this generation; piece `index` lies inside them.
                unsafe {
                    copy_piece(
                        (dest + offset) as *mut u8,
                        (source + offset) as *const u8,
                        piece_len.min(len - offset),
                        stores,
                    )
                };
            }
            self.remaining.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Spins, then sleeps, until a generation other than `seen` is published; returns it.
    fn next_generation(&self, seen: u64) -> u64 {
        let idle_since = Instant::now();
        let mut polls = 0u32;
        loop {
            let generation = self.generation.load(Ordering::SeqCst);
            if generation != seen {
                return generation;
            }
            polls = polls.wrapping_add(1);
            if polls % 64 != 0 {
                std::hint::spin_loop();
                continue;
            }
            let idle = idle_since.elapsed();
            if idle < SPIN_HOT_FOR {
                continue;
            }
            if idle < SPIN_FOR {
                std::thread::yield_now();
                continue;
            }
            let mut lock = self.sleep_lock.lock();
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            while self.generation.load(Ordering::SeqCst) == seen {
                self.wake.wait(&mut lock);
            }
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(len: usize, seed: usize) -> Vec<u8> {
        (0..len).map(|i| ((i + seed) * 7 % 251) as u8).collect()
    }

    #[test]
    fn concurrent_callers_each_get_their_own_bytes() {
        let threads: Vec<_> = (0..4)
            .map(|seed| {
                std::thread::spawn(move || {
                    for round in 0..20 {
                        let len = (3 << 20) + seed * 4099 + round * 511;
                        let source = pattern(len, seed * 100 + round);
                        let mut dest = vec![0u8; len];
                        // SAFETY: both hold `len` bytes, do not overlap, and are this
                        // thread's own.
                        unsafe {
                            Crew::get().copy(
                                dest.as_mut_ptr(),
                                source.as_ptr(),
                                len,
                                Stores::Streaming,
                            )
                        };
                        assert_eq!(dest, source, "caller {seed}, round {round}");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("a copying thread panicked");
        }
    }

    #[test]
    fn members_that_fell_asleep_wake_for_the_next_copy() {
        let len = 8 << 20;
        for round in 0..3 {
            let source = pattern(len, round);
            let mut dest = vec![0u8; len];
            // SAFETY: both hold `len` bytes and do not overlap.
            unsafe { Crew::get().copy(dest.as_mut_ptr(), source.as_ptr(), len, Stores::Cached) };
            assert_eq!(dest, source, "round {round}");
            // Longer than members spin: the next copy finds them asleep.
            std::thread::sleep(SPIN_FOR * 3);
        }
    }

    #[test]
    fn stores_survive_the_round_trip_through_the_atomic() {
        for stores in [Stores::Cached, Stores::Streaming, Stores::Touch] {
            assert_eq!(Stores::from_u8(stores as u8), stores);
        }
    }
}
