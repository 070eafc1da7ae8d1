//! Device memory blocks kept after their free for a later allocation of the same size.
//!
//! Measured on the H200 (docs/gpu.md, 2026-12-04 third session): `cuMemAlloc` of 1 GiB takes
//! 0.4-0.9 ms (2.8 ms at times) and `cuMemFree` 1-24 ms, both on the one allocation thread, so
//! a program that drops a buffer and creates one of the same size (an iteration's temporaries,
//! a re-uploaded input) waits for both before its copy can start. A freed block is kept here
//! instead, up to [`MAX_BLOCKS_PER_MEMORY`] blocks and a byte bound per device memory, and an
//! allocation of exactly its size takes it back. Blocks leave for the driver when the bounds
//! are exceeded (oldest first), when an allocation in their memory fails for lack of memory
//! (the caller frees them and retries), and when the backend shuts down.
//!
//! Plain bookkeeping over addresses, so the policy is tested without a GPU.

use std::collections::HashMap;

use crate::types::MemoryId;

/// The most blocks kept per device memory.
pub const MAX_BLOCKS_PER_MEMORY: usize = 8;

/// The share of a device's memory that freed blocks may keep: one sixteenth (8.8 GB of an
/// H200's 141 GB), so that CUDA code of the program's own rarely meets memory the runtime
/// holds but does not use.
pub const fn byte_bound(device_bytes: usize) -> usize {
    device_bytes / 16
}

#[derive(Debug, Clone, Copy)]
struct Block {
    bytes: usize,
    address: usize,
}

/// Freed device blocks by memory, oldest first; see the module documentation.
#[derive(Debug, Default)]
pub struct DeviceBlockCache {
    memories: HashMap<MemoryId, Kept>,
    reuses: usize,
}

#[derive(Debug, Default)]
struct Kept {
    blocks: Vec<Block>,
    bytes: usize,
    bound: usize,
}

impl DeviceBlockCache {
    /// A cache that keeps up to `bound` bytes of each memory in `bounds`; blocks of any other
    /// memory are never kept.
    pub fn new(bounds: impl IntoIterator<Item = (MemoryId, usize)>) -> Self {
        let memories = bounds
            .into_iter()
            .map(|(memory, bound)| {
                let kept = Kept {
                    bound,
                    ..Kept::default()
                };
                (memory, kept)
            })
            .collect();
        Self {
            memories,
            reuses: 0,
        }
    }

    /// A kept block of exactly `bytes` in `memory` (the most recently freed), now the caller's.
    pub fn take(&mut self, memory: MemoryId, bytes: usize) -> Option<usize> {
        let kept = self.memories.get_mut(&memory)?;
        let index = kept.blocks.iter().rposition(|b| b.bytes == bytes)?;
        let block = kept.blocks.remove(index);
        kept.bytes -= block.bytes;
        self.reuses += 1;
        Some(block.address)
    }

    /// Keeps the freed block `address` of `bytes` in `memory`. Returns the blocks the caller
    /// must free now: this one when it alone exceeds the bound, else the oldest ones that no
    /// longer fit.
    pub fn keep(&mut self, memory: MemoryId, bytes: usize, address: usize) -> Vec<usize> {
        let Some(kept) = self.memories.get_mut(&memory) else {
            return vec![address];
        };
        if bytes > kept.bound {
            return vec![address];
        }
        kept.blocks.push(Block { bytes, address });
        kept.bytes += bytes;
        let mut evicted = Vec::new();
        while kept.bytes > kept.bound || kept.blocks.len() > MAX_BLOCKS_PER_MEMORY {
            let oldest = kept.blocks.remove(0);
            kept.bytes -= oldest.bytes;
            evicted.push(oldest.address);
        }
        evicted
    }

    /// Every block kept in `memory`, which the caller frees (an allocation there failed).
    pub fn drain(&mut self, memory: MemoryId) -> Vec<usize> {
        self.memories
            .get_mut(&memory)
            .map_or_else(Vec::new, |kept| {
                kept.bytes = 0;
                kept.blocks.drain(..).map(|b| b.address).collect()
            })
    }

    /// Every block kept, by memory (shutdown).
    pub fn drain_all(&mut self) -> Vec<(MemoryId, usize)> {
        let memories: Vec<MemoryId> = self.memories.keys().copied().collect();
        memories
            .into_iter()
            .flat_map(|memory| self.drain(memory).into_iter().map(move |a| (memory, a)))
            .collect()
    }

    /// Bytes kept in `memory`.
    pub fn kept_bytes(&self, memory: MemoryId) -> usize {
        self.memories.get(&memory).map_or(0, |kept| kept.bytes)
    }

    /// Allocations served by a kept block so far.
    pub fn reuses(&self) -> usize {
        self.reuses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D0: MemoryId = MemoryId(2);
    const D1: MemoryId = MemoryId(3);
    const MIB: usize = 1 << 20;

    fn cache() -> DeviceBlockCache {
        DeviceBlockCache::new([(D0, 64 * MIB), (D1, 64 * MIB)])
    }

    #[test]
    fn a_freed_block_serves_the_next_allocation_of_its_size_in_its_memory_only() {
        let mut cache = cache();
        assert!(cache.keep(D0, 16 * MIB, 0x1000).is_empty());
        assert_eq!(cache.take(D1, 16 * MIB), None, "another device");
        assert_eq!(cache.take(D0, 8 * MIB), None, "another size");
        assert_eq!(cache.take(D0, 16 * MIB), Some(0x1000));
        assert_eq!(cache.take(D0, 16 * MIB), None, "taken once");
        assert_eq!((cache.reuses(), cache.kept_bytes(D0)), (1, 0));
    }

    #[test]
    fn the_most_recently_freed_block_of_a_size_is_taken_first() {
        let mut cache = cache();
        cache.keep(D0, MIB, 0x1000);
        cache.keep(D0, MIB, 0x2000);
        assert_eq!(cache.take(D0, MIB), Some(0x2000));
        assert_eq!(cache.take(D0, MIB), Some(0x1000));
    }

    #[test]
    fn blocks_beyond_the_byte_bound_or_block_count_are_returned_oldest_first() {
        let mut cache = cache();
        assert_eq!(
            cache.keep(D0, 65 * MIB, 0x9000),
            vec![0x9000],
            "alone too large"
        );
        cache.keep(D0, 30 * MIB, 0x1000);
        cache.keep(D0, 30 * MIB, 0x2000);
        assert_eq!(cache.keep(D0, 30 * MIB, 0x3000), vec![0x1000]);
        assert_eq!(cache.kept_bytes(D0), 60 * MIB);
        assert!(
            cache.keep(D1, 30 * MIB, 0x4000).is_empty(),
            "bounds are per memory"
        );

        let mut cache = DeviceBlockCache::new([(D0, usize::MAX)]);
        let evicted: Vec<usize> = (1..=MAX_BLOCKS_PER_MEMORY + 2)
            .flat_map(|i| cache.keep(D0, i, i * 0x1000))
            .collect();
        assert_eq!(evicted, vec![0x1000, 0x2000]);
    }

    #[test]
    fn memories_without_a_bound_keep_nothing() {
        let mut cache = cache();
        assert_eq!(cache.keep(MemoryId(7), MIB, 0x1000), vec![0x1000]);
        assert_eq!(cache.take(MemoryId(7), MIB), None);
    }

    #[test]
    fn draining_hands_back_every_kept_block() {
        let mut cache = cache();
        cache.keep(D0, MIB, 0x1000);
        cache.keep(D0, 2 * MIB, 0x2000);
        cache.keep(D1, MIB, 0x3000);
        assert_eq!(cache.drain(D0), vec![0x1000, 0x2000]);
        assert_eq!(cache.kept_bytes(D0), 0);
        assert_eq!(cache.take(D0, MIB), None);
        assert_eq!(cache.drain_all(), vec![(D1, 0x3000)]);
        assert!(cache.drain_all().is_empty());
    }
}
