//! [`CommandTable`]: the generator's bookkeeping about the commands it created that can still be
//! referenced: forward (true) edges, the buffer regions each command reads (for
//! anti-dependencies), and execution-front membership. Indexed by command id; entries older than
//! the effective epoch are dropped, which keeps it bounded.

use std::collections::VecDeque;

use smallvec::SmallVec;

use crate::grid::{GridBox, Region};
use crate::types::{BufferId, CommandId, TaskId};

/// What the generator remembers about one command.
pub(super) struct Entry {
    /// The task whose build created the command.
    pub task: TaskId,
    /// Epoch, horizon, execution or fence (not push, await-push or reduction).
    pub is_task_command: bool,
    /// No command depends on this one yet.
    pub in_front: bool,
    /// Newer commands with a true dependency on this one.
    pub true_dependents: SmallVec<[CommandId; 4]>,
    /// Buffer elements this command reads: one entry per box as it came (overlapping,
    /// unordered, buffers interleaved), since they only answer intersection tests. Flat, so a
    /// command reading a few buffers (three in jacobi) fits inline instead of growing a list of
    /// per-buffer box lists on the heap.
    pub reads: SmallVec<[(BufferId, GridBox); READS_INLINE]>,
}

impl Entry {
    /// Whether the command reads part of `region` of `bid`.
    #[inline]
    pub fn reads_intersect(&self, bid: BufferId, region: &Region) -> bool {
        let mut read = self.reads.iter().filter(|(b, _)| *b == bid).map(|(_, x)| x);
        match region.boxes() {
            [single] => read.any(|x| x.intersects(single)),
            boxes => read.any(|x| boxes.iter().any(|y| x.intersects(y))),
        }
    }
}

/// Read boxes a command holds without a heap allocation.
const READS_INLINE: usize = 3;

/// Entries of the live commands, by id.
pub(super) struct CommandTable {
    /// Id of `entries[0]`.
    base: u64,
    entries: VecDeque<Entry>,
    /// The last command the execution front was reduced to; the front only holds it and newer
    /// commands.
    front_start: u64,
}

impl Default for CommandTable {
    fn default() -> Self {
        CommandTable {
            base: 0,
            // room for the commands between two horizons of a small program: growing from empty
            // reallocated three times in every short run
            entries: VecDeque::with_capacity(Self::INITIAL_CAPACITY),
            front_start: 0,
        }
    }
}

impl CommandTable {
    const INITIAL_CAPACITY: usize = 16;

    /// Adds the entry of the next command, which must have id `base + len`.
    pub fn push(&mut self, cid: CommandId, task: TaskId, is_task_command: bool) {
        debug_assert_eq!(cid.0, self.base + self.entries.len() as u64);
        self.entries.push_back(Entry {
            task,
            is_task_command,
            in_front: true,
            true_dependents: SmallVec::new(),
            reads: SmallVec::new(),
        });
    }

    #[inline]
    pub fn get(&self, cid: CommandId) -> &Entry {
        &self.entries[(cid.0 - self.base) as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, cid: CommandId) -> &mut Entry {
        &mut self.entries[(cid.0 - self.base) as usize]
    }

    /// Records that `cmd` reads the union of `boxes` of `bid` (added to earlier reads of it).
    pub fn add_read(&mut self, cmd: CommandId, bid: BufferId, boxes: &[GridBox]) {
        let reads = &mut self.get_mut(cmd).reads;
        match boxes {
            // the common case, without `extend`'s size hint and reservation
            [single] => reads.push((bid, *single)),
            _ => reads.extend(boxes.iter().map(|b| (bid, *b))),
        }
    }

    /// Records that `cmd` reads the union of `regions` of `bid` (a push's targets: the read
    /// list grows once, and the boxes go in one by one without a per-region call).
    pub fn add_read_regions<'a>(
        &mut self,
        cmd: CommandId,
        bid: BufferId,
        regions: impl Iterator<Item = &'a Region> + Clone,
    ) {
        let reads = &mut self.get_mut(cmd).reads;
        reads.reserve_exact(regions.clone().map(|r| r.boxes().len()).sum());
        for region in regions {
            for b in region.boxes() {
                reads.push((bid, *b));
            }
        }
    }

    /// The ids that may be in the execution front (those of the last command the front was
    /// reduced to and newer ones); the front is those whose entry is still `in_front`.
    pub fn front_candidates(&self) -> std::ops::Range<u64> {
        self.front_start..self.base + self.entries.len() as u64
    }

    /// Notes that the front was just reduced to `cmd`.
    pub fn set_front_start(&mut self, cmd: CommandId) {
        self.front_start = cmd.0;
    }

    /// Drops the entries of commands older than `epoch`: nothing refers to them any more once
    /// `epoch` is the effective epoch.
    pub fn prune_before(&mut self, epoch: CommandId) {
        debug_assert!(epoch.0 <= self.front_start);
        while self.base < epoch.0 && !self.entries.is_empty() {
            self.entries.pop_front();
            self.base += 1;
        }
    }

    /// Number of commands tracked.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}
