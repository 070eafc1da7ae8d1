//! What each local chunk of a task accesses, evaluated once per compilation: the range mappers
//! run once per access and chunk, and every later stage (allocation, receives, coherence, the
//! kernel's allocation map, dependency tracking) reads these regions.

use smallvec::SmallVec;

use crate::grid::{BoxVec, GridBox, Region};
use crate::task::Task;
use crate::types::BufferId;

/// One buffer's requirements of one chunk.
#[derive(Debug, Clone)]
pub(crate) struct BufferRequirements {
    /// The buffer.
    pub bid: BufferId,
    /// Elements read (consuming accesses).
    pub reads: Region,
    /// Elements written (producing accesses; reductions not included).
    pub writes: Region,
    /// Bounding box of each non-empty access: each must be allocated contiguously.
    pub contiguous: BoxVec,
}

/// The requirements of one chunk.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChunkRequirements {
    /// Per access of the task, the region it touches.
    pub accesses: SmallVec<[Region; 1]>,
    /// Per buffer the task touches (accesses and reductions), in the order given.
    pub buffers: SmallVec<[BufferRequirements; 2]>,
}

impl ChunkRequirements {
    /// Evaluates every access of `task` on `chunk`, for the buffers `bids`.
    pub fn new(task: &Task, chunk: &GridBox, bids: &[BufferId]) -> Self {
        let mut requirements = Self::default();
        requirements.evaluate(task, chunk, bids);
        requirements
    }

    /// [`ChunkRequirements::new`] in place: the record is several hundred bytes, and a kernel
    /// without buffers cost more in copies of it than in evaluation.
    pub fn evaluate(&mut self, task: &Task, chunk: &GridBox, bids: &[BufferId]) {
        let access_map = task.access_map();
        self.accesses.clear();
        self.accesses.extend(
            (0..access_map.num_accesses())
                .map(|i| access_map.requirements_for_nth_access(i, chunk)),
        );
        // the records of the previous evaluation are overwritten in place: moving a fresh one
        // in copied its few hundred bytes per buffer
        self.buffers.truncate(bids.len());
        for (k, &bid) in bids.iter().enumerate() {
            if k == self.buffers.len() {
                self.buffers.push(BufferRequirements {
                    bid,
                    reads: Region::new(),
                    writes: Region::new(),
                    contiguous: BoxVec::new(),
                });
            }
            let slot = &mut self.buffers[k];
            slot.bid = bid;
            slot.contiguous.clear();
            let (mut any_read, mut any_write) = (false, false);
            for (i, region) in self.accesses.iter().enumerate() {
                let (b, mode) = access_map.nth_access(i);
                if b != bid || region.is_empty() {
                    continue;
                }
                slot.contiguous.push(region.bounding_box());
                if mode.is_consumer() {
                    accumulate(&mut slot.reads, &mut any_read, region);
                }
                if mode.is_producer() {
                    accumulate(&mut slot.writes, &mut any_write, region);
                }
            }
            if !any_read {
                slot.reads.clear();
            }
            if !any_write {
                slot.writes.clear();
            }
        }
    }

    /// The requirements on `bid`.
    pub fn buffer(&self, bid: BufferId) -> &BufferRequirements {
        self.buffers
            .iter()
            .find(|b| b.bid == bid)
            .expect("buffer requirements were evaluated")
    }
}

/// Adds `region` to `acc`, which holds a stale value until `any` is set.
fn accumulate(acc: &mut Region, any: &mut bool, region: &Region) {
    if !*any {
        acc.clone_from(region);
        *any = true;
    } else if *acc != *region {
        // (the same elements read or written by two accesses need no union)
        *acc = acc.union(region);
    }
}
