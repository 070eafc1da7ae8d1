//! The threads behind [`parallel_copy`](super::parallel_copy): a crew that copies one large
//! range at a time, split into pieces that whoever is running claims, and that stays awake
//! between copies that follow each other closely.
//!
//! A staged transfer between pageable user memory and a device (`cuda/staging.rs`) copies a
//! chunk of a few MiB between user memory and a pinned slot every 150 µs or so. Measured raw on
//! the H200 host (docs/gpu.md, call 19), such a pipeline runs at 0.98-0.99 of pinned DMA speed
//! with 8 MiB chunks when the copy threads persist and spin between chunks and every chunk is
//! split over all of them; threads woken through a channel per chunk, one 1 MiB piece each,
//! reached 0.55-0.58. So members spin for a while after their last piece (yielding their core
//! after the first microseconds) before they sleep: a transfer keeps the crew awake, and an
//! idle program does not burn cores.
//!
//! Pieces are claimed, not assigned: the caller and every member take the next unclaimed piece
//! until none is left, and the caller returns once every piece is done. A member the OS has
//! descheduled (the crew is as large as the machine, and the runtime's own threads and the
//! program's share its cores) then costs the copy nothing, where with one piece per member
//! every chunk waited for the last member to get a core.
//!
//! One copy runs at a time; a second caller waits for its turn (the copies share the memory
//! system anyway).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::copy_stores::{Stores, copy_piece};

/// Pieces are at least this long: 8 MiB staging chunks go to 16 members.
const MIN_PIECE: usize = 512 << 10;
/// Pieces per participant at most, so that the threads that run take the pieces of one that
/// does not.
const PIECES_PER_PARTICIPANT: usize = 4;
/// Most threads one copy uses (the caller included). On the H200 host (16 cores) a 1 GiB copy
/// into fresh memory took 854 ms on 1 thread, 111 ms on 8 and 61 ms on 16 (page faults scale
/// with threads); into warm pinned memory 114, 45 and 28 ms.
const MAX_THREADS: usize = 16;
/// How long a member spins for the next copy after its last one. The staged uploads' 64 MiB
/// chunks come about 1.2 ms apart at DMA speed.
const SPIN_FOR: Duration = Duration::from_millis(3);
/// After this long without a copy a spinning member yields its core between polls.
const SPIN_HOT_FOR: Duration = Duration::from_micros(50);

/// The claim word: the copy's generation, its number of pieces and the next unclaimed piece,
/// in one atomic so that a claim succeeds only for the copy whose description was read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Claim {
    generation: u64,
    pieces: u16,
    next: u16,
}

impl Claim {
    fn pack(self) -> u64 {
        (self.generation << 32) | (u64::from(self.pieces) << 16) | u64::from(self.next)
    }

    fn unpack(word: u64) -> Claim {
        Claim {
            generation: word >> 32,
            pieces: (word >> 16) as u16,
            next: word as u16,
        }
    }

    fn exhausted(self) -> bool {
        self.next >= self.pieces
    }
}

/// The copy the crew works on, valid while its generation's pieces are not all done.
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
    /// [`Claim`], packed. Published (with a new generation) after `copy` is written.
    claim: AtomicU64,
    /// Pieces of the current copy that are done.
    done: AtomicUsize,
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
            let crew = Crew::leaked(threads);
            let mut started = 1;
            for index in 1..threads {
                let spawned = std::thread::Builder::new()
                    .name(format!("celerity-copy-{index}"))
                    .spawn(move || crew.serve());
                if spawned.is_err() {
                    break;
                }
                started += 1;
            }
            crew.participants.store(started, Ordering::Relaxed);
            crew
        })
    }

    /// A crew that splits copies for `participants` threads, with no member started yet.
    fn leaked(participants: usize) -> &'static Crew {
        Box::leak(Box::new(Crew {
            participants: AtomicUsize::new(participants),
            turn: Mutex::new(()),
            copy: Copy {
                dest: AtomicUsize::new(0),
                source: AtomicUsize::new(0),
                len: AtomicUsize::new(0),
                piece_len: AtomicUsize::new(0),
                stores: AtomicU8::new(0),
            },
            claim: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
        }))
    }

    /// Threads one copy is split over (the caller included).
    pub(super) fn participants(&self) -> usize {
        self.participants.load(Ordering::Relaxed)
    }

    /// Copies `len` bytes with `stores`, split into page-aligned pieces that the crew and the
    /// caller claim; returns once every piece is done.
    ///
    /// # Safety
    /// As for [`parallel_copy::copy`](super::parallel_copy::copy).
    pub(super) unsafe fn copy(&self, dest: *mut u8, source: *const u8, len: usize, stores: Stores) {
        let participants = self.participants();
        let most_pieces = if participants > 1 {
            participants * PIECES_PER_PARTICIPANT
        } else {
            1
        };
        // Page-aligned pieces, so no two threads first-touch the same page.
        let piece_len = len
            .div_ceil((len / MIN_PIECE).clamp(1, most_pieces))
            .next_multiple_of(4096);
        let pieces = len.div_ceil(piece_len);
        let _turn = self.turn.lock();
        let copy = &self.copy;
        copy.dest.store(dest as usize, Ordering::Relaxed);
        copy.source.store(source as usize, Ordering::Relaxed);
        copy.len.store(len, Ordering::Relaxed);
        copy.piece_len.store(piece_len, Ordering::Relaxed);
        copy.stores.store(stores as u8, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        let generation = Claim::unpack(self.claim.load(Ordering::Relaxed)).generation + 1;
        let claim = Claim {
            generation: generation & u64::from(u32::MAX),
            pieces: pieces as u16,
            next: 0,
        };
        // SeqCst with the sleepers' count: either a member about to sleep sees this
        // generation, or this thread sees it counted and wakes it under the lock. The store
        // also releases the description above to whoever claims a piece.
        self.claim.store(claim.pack(), Ordering::SeqCst);
        if pieces > 1 && self.sleepers.load(Ordering::SeqCst) > 0 {
            let _lock = self.sleep_lock.lock();
            self.wake.notify_all();
        }
        self.copy_claimed_pieces(claim.generation);
        let mut polls = 0u32;
        while self.done.load(Ordering::Acquire) != pieces {
            polls += 1;
            if polls < 1 << 12 {
                std::hint::spin_loop();
            } else {
                // The piece still running is a descheduled member's: let it run.
                std::thread::yield_now();
            }
        }
    }

    /// Claims and copies pieces of the copy of `generation` until none is left unclaimed.
    fn copy_claimed_pieces(&self, generation: u64) {
        let copy = &self.copy;
        let mut word = self.claim.load(Ordering::Acquire);
        loop {
            let claim = Claim::unpack(word);
            if claim.generation != generation || claim.exhausted() {
                return;
            }
            // Read before the claim: a successful claim below proves that the copy of this
            // generation was not done yet, so these are its values (its caller rewrites them
            // only for the next copy, after every piece is done).
            let len = copy.len.load(Ordering::Relaxed);
            let piece_len = copy.piece_len.load(Ordering::Relaxed);
            let dest = copy.dest.load(Ordering::Relaxed);
            let source = copy.source.load(Ordering::Relaxed);
            let stores = copy.stores.load(Ordering::Relaxed);
            let claimed = Claim {
                next: claim.next + 1,
                ..claim
            };
            if let Err(current) = self.claim.compare_exchange_weak(
                word,
                claimed.pack(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                word = current;
                continue;
            }
            let offset = usize::from(claim.next) * piece_len;
            // SAFETY: the caller of `copy` keeps both ranges valid and unaliased until every
            // piece of its generation is done; piece `claim.next` lies inside them, and no
            // other thread claimed it.
            unsafe {
                copy_piece(
                    (dest + offset) as *mut u8,
                    (source + offset) as *const u8,
                    piece_len.min(len - offset),
                    Stores::from_u8(stores),
                )
            };
            self.done.fetch_add(1, Ordering::Release);
            word = claimed.pack();
        }
    }

    /// A member's loop: waits for each copy and takes pieces of it while any are left.
    fn serve(&self) {
        let mut seen = 0u64;
        loop {
            seen = self.next_generation(seen);
            self.copy_claimed_pieces(seen);
        }
    }

    /// Spins, then sleeps, until a generation other than `seen` is published; returns it.
    fn next_generation(&self, seen: u64) -> u64 {
        let generation_now = || Claim::unpack(self.claim.load(Ordering::SeqCst)).generation;
        let idle_since = Instant::now();
        let mut polls = 0u32;
        loop {
            let generation = generation_now();
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
            while generation_now() == seen {
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
    fn a_copy_completes_when_no_member_gets_a_core() {
        // Split for 16 threads, but none of the 15 members ever runs (as when the OS gives
        // their cores to others): the caller claims every piece itself.
        let crew = Crew::leaked(16);
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let len = 8 << 20;
            let source = pattern(len, 3);
            let mut dest = vec![0u8; len];
            // SAFETY: both hold `len` bytes and do not overlap.
            unsafe { crew.copy(dest.as_mut_ptr(), source.as_ptr(), len, Stores::Cached) };
            sender.send(dest == source).ok();
        });
        let exact = receiver
            .recv_timeout(Duration::from_secs(20))
            .expect("the copy waited for members that never ran");
        assert!(exact, "the copied bytes differ");
    }

    #[test]
    fn claims_round_trip_through_their_word() {
        let claim = Claim {
            generation: u64::from(u32::MAX),
            pieces: 64,
            next: 63,
        };
        assert_eq!(Claim::unpack(claim.pack()), claim);
        assert!(!claim.exhausted());
        assert!(Claim { next: 64, ..claim }.exhausted());
    }

    #[test]
    fn stores_survive_the_round_trip_through_the_atomic() {
        for stores in [Stores::Cached, Stores::Streaming, Stores::Touch] {
            assert_eq!(Stores::from_u8(stores as u8), stores);
        }
    }
}
