//! A pool of page-locked (pinned) host memory: host allocations (memory 1) and the staging
//! chunks of copies between pageable memory and devices reuse pinned blocks instead of paying
//! the driver's page-locking cost (hundreds of ms per GiB) on every allocation.
//!
//! Blocks are handed out in *size classes* (four per power of two, at least one page), so a
//! freed block serves any later request of its class; the first allocation of a class pays the
//! driver once. The pool never holds more than `limit` pinned bytes (in use plus cached): when a
//! new block would exceed it, cached blocks of other classes are returned to the driver first,
//! and when that is not enough the request is refused; the caller then uses pageable memory,
//! which the copy path stages through the pool's chunks (see `staged_copy`).
//!
//! The pool is plain bookkeeping over a [`PinnedAllocator`], so its policy is tested without a
//! GPU.

use std::collections::{BTreeMap, HashMap};

use crate::error::Result;

/// Page-locked allocations from the driver (CUDA: `cuMemHostAlloc` / `cuMemFreeHost`).
pub trait PinnedAllocator: Send {
    /// Allocates `bytes` of page-locked memory; returns its address.
    fn allocate(&mut self, bytes: usize) -> Result<usize>;

    /// Frees a block from [`PinnedAllocator::allocate`].
    ///
    /// # Safety
    /// `address` must come from `allocate(bytes)` and nothing may use it any more.
    unsafe fn free(&mut self, address: usize, bytes: usize);
}

/// The smallest size class: one page.
pub const MIN_CLASS_BYTES: usize = 4096;

/// The size class serving a request of `bytes`: the next of `2^k`, `1.25·2^k`, `1.5·2^k`,
/// `1.75·2^k` at or above it, at least [`MIN_CLASS_BYTES`] (so at most 25 % is wasted).
pub fn size_class(bytes: usize) -> usize {
    if bytes <= MIN_CLASS_BYTES {
        return MIN_CLASS_BYTES;
    }
    let power = usize::BITS - 1 - bytes.leading_zeros();
    let quarter = 1usize << (power - 2);
    bytes.div_ceil(quarter).saturating_mul(quarter)
}

/// Counters of a pool, for tests and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pinned bytes held (in use plus cached).
    pub pinned_bytes: usize,
    /// The most pinned bytes ever held.
    pub peak_pinned_bytes: usize,
    /// Blocks obtained from the driver.
    pub driver_allocations: usize,
    /// Requests served by a cached block.
    pub reuses: usize,
    /// Requests refused because of the limit (or a failing driver).
    pub refusals: usize,
}

/// A bounded pool of pinned blocks; see the module documentation.
pub struct PinnedPool<A: PinnedAllocator> {
    allocator: A,
    limit: usize,
    /// Cached blocks by class.
    cached: BTreeMap<usize, Vec<usize>>,
    /// Blocks handed out: address → class.
    in_use: HashMap<usize, usize>,
    /// Every pinned block the pool holds (in use or cached) and every range registered in
    /// place: start → length, for [`PinnedPool::contains`].
    ranges: BTreeMap<usize, usize>,
    /// Ranges registered in place: start → length.
    registered: HashMap<usize, usize>,
    stats: PoolStats,
}

impl<A: PinnedAllocator> PinnedPool<A> {
    /// A pool holding at most `limit` pinned bytes.
    pub fn new(allocator: A, limit: usize) -> Self {
        Self {
            allocator,
            limit,
            cached: BTreeMap::new(),
            in_use: HashMap::new(),
            ranges: BTreeMap::new(),
            registered: HashMap::new(),
            stats: PoolStats::default(),
        }
    }

    /// A pinned block of at least `bytes`, or `None` when the limit (or the driver) does not
    /// allow one; the caller falls back to pageable memory.
    pub fn acquire(&mut self, bytes: usize) -> Option<usize> {
        let class = size_class(bytes);
        if let Some(address) = self.cached.get_mut(&class).and_then(Vec::pop) {
            self.in_use.insert(address, class);
            self.stats.reuses += 1;
            return Some(address);
        }
        if !self.make_room(class) {
            return None;
        }
        match self.allocator.allocate(class) {
            Ok(address) => {
                self.count_pinned(class);
                self.stats.driver_allocations += 1;
                self.in_use.insert(address, class);
                self.ranges.insert(address, class);
                Some(address)
            }
            Err(error) => {
                tracing::debug!(
                    "pinned allocation of {class} bytes failed ({error}); using pageable memory"
                );
                self.stats.refusals += 1;
                None
            }
        }
    }

    /// Returns a block from [`PinnedPool::acquire`] to the cache. Returns false (and does
    /// nothing) for an address the pool did not hand out.
    pub fn release(&mut self, address: usize) -> bool {
        match self.in_use.remove(&address) {
            Some(class) => {
                self.cached.entry(class).or_default().push(address);
                true
            }
            None => false,
        }
    }

    /// Makes room for `bytes` of memory pinned outside the pool (a range the driver registers
    /// in place, [`PinnedPool::add_registered`]) and counts them against the limit, evicting
    /// cached blocks if needed. False when the limit does not allow it.
    pub fn reserve_registration(&mut self, bytes: usize) -> bool {
        if !self.make_room(bytes) {
            return false;
        }
        self.count_pinned(bytes);
        true
    }

    /// Whether `bytes` more fit under the limit, after evicting cached blocks as needed; counts
    /// a refusal when they do not.
    fn make_room(&mut self, bytes: usize) -> bool {
        if bytes > self.limit {
            self.stats.refusals += 1;
            return false;
        }
        while self.stats.pinned_bytes + bytes > self.limit {
            if !self.evict_one() {
                self.stats.refusals += 1;
                return false;
            }
        }
        true
    }

    /// Counts `bytes` newly pinned.
    fn count_pinned(&mut self, bytes: usize) {
        self.stats.pinned_bytes += bytes;
        self.stats.peak_pinned_bytes = self.stats.peak_pinned_bytes.max(self.stats.pinned_bytes);
    }

    /// Records a range registered after [`PinnedPool::reserve_registration`], so that
    /// [`PinnedPool::contains`] knows it.
    pub fn add_registered(&mut self, address: usize, bytes: usize) {
        self.ranges.insert(address, bytes);
        self.registered.insert(address, bytes);
    }

    /// Gives back a reservation whose registration failed, or the range of a registration that
    /// ended (`address`, when it was added). Returns the bytes given back.
    pub fn end_registration(&mut self, address: Option<usize>, bytes: usize) -> usize {
        if let Some(address) = address
            && self.registered.remove(&address).is_some()
        {
            self.ranges.remove(&address);
        }
        self.stats.pinned_bytes -= bytes.min(self.stats.pinned_bytes);
        bytes
    }

    /// Whether `[address, address + bytes)` lies inside one pinned block of the pool.
    pub fn contains(&self, address: usize, bytes: usize) -> bool {
        self.ranges
            .range(..=address)
            .next_back()
            .is_some_and(|(&start, &class)| address + bytes <= start + class)
    }

    /// Returns every cached block to the driver.
    pub fn trim(&mut self) {
        while self.evict_one() {}
    }

    /// The pool's counters.
    pub fn stats(&self) -> PoolStats {
        self.stats
    }

    /// Frees one cached block (the largest class first); false when none is cached.
    fn evict_one(&mut self) -> bool {
        let Some(mut entry) = self.cached.last_entry() else {
            return false;
        };
        let class = *entry.key();
        let address = entry.get_mut().pop();
        if entry.get().is_empty() {
            entry.remove();
        }
        let Some(address) = address else {
            return false;
        };
        self.ranges.remove(&address);
        self.stats.pinned_bytes -= class;
        // SAFETY: a cached block came from `allocate(class)` and is no longer handed out.
        unsafe { self.allocator.free(address, class) };
        true
    }
}

impl<A: PinnedAllocator> Drop for PinnedPool<A> {
    fn drop(&mut self) {
        self.trim();
        // Blocks still in use at this point belong to allocations the executor failed to free
        // (it reports those); they are leaked rather than freed under a possible user.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use parking_lot::Mutex;

    /// (operation, address, bytes) as the fake driver saw them.
    type DriverLog = Arc<Mutex<Vec<(&'static str, usize, usize)>>>;

    /// Hands out fake addresses and records what the pool asked of the driver.
    #[derive(Clone, Default)]
    struct FakeDriver {
        log: DriverLog,
        next: Arc<Mutex<usize>>,
        fail: bool,
    }

    impl PinnedAllocator for FakeDriver {
        fn allocate(&mut self, bytes: usize) -> Result<usize> {
            if self.fail {
                return Err(crate::error::Error::new(
                    crate::ErrorKind::OutOfMemory,
                    "no pinned memory",
                ));
            }
            let mut next = self.next.lock();
            let address = 1 << 40 | *next;
            *next += bytes + 4096;
            self.log.lock().push(("alloc", address, bytes));
            Ok(address)
        }

        unsafe fn free(&mut self, address: usize, bytes: usize) {
            self.log.lock().push(("free", address, bytes));
        }
    }

    #[test]
    fn size_classes_waste_at_most_a_quarter() {
        assert_eq!(size_class(1), 4096);
        assert_eq!(size_class(4096), 4096);
        assert_eq!(size_class(4097), 5120);
        assert_eq!(size_class(1 << 30), 1 << 30);
        assert_eq!(size_class((1 << 30) + 1), (1 << 30) + (1 << 28));
        for bytes in [5000, 123_457, 16 << 20, (3 << 29) + 7] {
            let class = size_class(bytes);
            assert!(
                class >= bytes && class - bytes <= bytes / 4,
                "{bytes} -> {class}"
            );
        }
    }

    #[test]
    fn a_freed_block_serves_the_next_request_of_its_class_without_the_driver() {
        let driver = FakeDriver::default();
        let mut pool = PinnedPool::new(driver.clone(), 1 << 30);
        let a = pool.acquire(16 << 20).unwrap();
        assert!(pool.release(a));
        for _ in 0..10 {
            let b = pool.acquire((16 << 20) - 100).unwrap();
            assert_eq!(b, a, "same class, same block");
            pool.release(b);
        }
        let stats = pool.stats();
        assert_eq!((stats.driver_allocations, stats.reuses), (1, 10));
        assert_eq!(driver.log.lock().len(), 1, "first touch paid once");
    }

    #[test]
    fn pinned_memory_never_exceeds_the_limit_and_cached_blocks_make_room() {
        let driver = FakeDriver::default();
        let mut pool = PinnedPool::new(driver.clone(), 40 << 20);
        let a = pool.acquire(16 << 20).unwrap();
        let b = pool.acquire(16 << 20).unwrap();
        assert_eq!(pool.acquire(16 << 20), None, "48 MiB would exceed 40 MiB");
        pool.release(a);
        // a 20 MiB block needs room: the cached 16 MiB block goes back to the driver
        let c = pool.acquire(20 << 20).unwrap();
        assert_eq!(pool.stats().pinned_bytes, 36 << 20);
        assert!(driver.log.lock().contains(&("free", a, 16 << 20)));
        assert_eq!(pool.acquire(41 << 20), None, "larger than the whole limit");
        assert!(pool.stats().peak_pinned_bytes <= 40 << 20);
        assert_eq!(pool.stats().refusals, 2);
        pool.release(b);
        pool.release(c);
        drop(pool);
        let frees = driver.log.lock().iter().filter(|e| e.0 == "free").count();
        assert_eq!(frees, 3, "dropping the pool frees every cached block");
    }

    #[test]
    fn ranges_pinned_in_place_count_against_the_limit_and_are_known_until_they_end() {
        let driver = FakeDriver::default();
        let mut pool = PinnedPool::new(driver.clone(), 40 << 20);
        let a = pool.acquire(16 << 20).unwrap();
        pool.release(a);
        // 30 MiB in place: the cached 16 MiB block goes back to the driver to make room
        assert!(pool.reserve_registration(30 << 20));
        assert!(driver.log.lock().contains(&("free", a, 16 << 20)));
        let range = 7 << 40;
        pool.add_registered(range, 30 << 20);
        assert!(pool.contains(range + 4096, 1 << 20));
        assert!(!pool.contains(range, 31 << 20));
        assert_eq!(pool.acquire(16 << 20), None, "46 MiB would exceed 40 MiB");
        assert!(!pool.reserve_registration(16 << 20));
        assert!(
            !pool.reserve_registration(41 << 20),
            "larger than the whole limit"
        );
        pool.end_registration(Some(range), 30 << 20);
        assert!(!pool.contains(range, 1));
        assert_eq!(pool.stats().pinned_bytes, 0);
        // a reservation whose registration failed is given back as well
        assert!(pool.reserve_registration(40 << 20));
        pool.end_registration(None, 40 << 20);
        assert!(pool.acquire(16 << 20).is_some());
    }

    #[test]
    fn contains_covers_exactly_the_held_blocks() {
        let mut pool = PinnedPool::new(FakeDriver::default(), 1 << 30);
        let a = pool.acquire(10_000).unwrap();
        let class = size_class(10_000);
        assert!(pool.contains(a, class));
        assert!(pool.contains(a + 100, 1000));
        assert!(!pool.contains(a + 100, class), "runs past the block");
        assert!(!pool.contains(a - 1, 1));
        pool.release(a);
        assert!(pool.contains(a, 1), "cached blocks stay pinned");
        pool.trim();
        assert!(!pool.contains(a, 1));
    }

    #[test]
    fn a_failing_driver_or_a_zero_limit_means_pageable_memory() {
        let mut failing = PinnedPool::new(
            FakeDriver {
                fail: true,
                ..FakeDriver::default()
            },
            1 << 30,
        );
        assert_eq!(failing.acquire(4096), None);
        let mut none = PinnedPool::new(FakeDriver::default(), 0);
        assert_eq!(none.acquire(1), None);
        assert!(!none.release(12345), "unknown addresses are refused");
    }
}
