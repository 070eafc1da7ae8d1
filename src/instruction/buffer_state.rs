//! Per-buffer tracking state of the instruction graph generator (C++ Celerity:
//! `instruction_graph_generator.cc`).
//!
//! For every buffer and memory the generator keeps a list of disjoint allocations. Each
//! allocation tracks, per element, its *last writers* and its *last concurrent accesses* as
//! [`AccessFront`]s:
//!
//! * a read depends on the last writers and joins the concurrent-access front (if that front is a
//!   read front; otherwise it starts a new one);
//! * an atomic write (copy, receive, reduce) depends on the last concurrent accesses and replaces
//!   both fronts;
//! * kernels and host tasks, which may write overlapping regions when the error policy allows it,
//!   first reset the fronts to an empty write front and then add themselves to it.
//!
//! Across allocations and memories the buffer tracks which memories hold the newest value of each
//! element (`up_to_date`), the instruction that originally produced it (never a copy) and the
//! memory it was produced in. Await-pushes wait in `pending_receives` / `pending_gathers` until a
//! reader needs them.
//!
//! Every tracked instruction id older than an applied epoch (or horizon) is replaced by it, which
//! bounds the state.

use std::borrow::Cow;

use smallvec::SmallVec;

use crate::backend::system_info::MemoryMask;
use crate::grid::{BoxVec, GridBox, Range, Region, RegionBuilder, RegionMap};
use crate::types::{AllocationId, InstructionId, MemoryId, ReductionId, TaskId};

/// `region ∩ b`, without set arithmetic when `region` lies inside `b` or misses it (the common
/// cases when a buffer has many allocations), and without a copy when it lies inside.
pub(crate) fn clip<'a>(region: &'a Region, b: &GridBox) -> Cow<'a, Region> {
    let bounds = region.bounding_box();
    if !bounds.intersects(b) {
        Cow::Owned(Region::new())
    } else if b.covers(&bounds) {
        Cow::Borrowed(region)
    } else {
        Cow::Owned(region.intersection_with_box(b))
    }
}

/// Values per memory for the few memories a command touches, in memory-id order (a node may
/// have dozens of memories, a task usually touches one or two).
#[derive(Debug, Clone)]
pub(crate) struct PerMemory<T>(SmallVec<[(MemoryId, T); 2]>);

impl<T: Default> PerMemory<T> {
    pub fn new() -> Self {
        Self(SmallVec::new())
    }

    /// The value of `memory`, inserted as default if absent.
    pub fn entry(&mut self, memory: MemoryId) -> &mut T {
        let i = match self.0.binary_search_by_key(&memory, |(m, _)| *m) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (memory, T::default()));
                i
            }
        };
        &mut self.0[i].1
    }

    /// The value of the only memory, if exactly one has a value.
    pub fn only(&self) -> Option<&T> {
        match self.0.as_slice() {
            [(_, v)] => Some(v),
            _ => None,
        }
    }

    /// Entries in memory-id order.
    pub fn iter(&self) -> impl Iterator<Item = (MemoryId, &T)> {
        self.0.iter().map(|(m, v)| (*m, v))
    }

    /// Entries in memory-id order, by value.
    pub fn into_entries(self) -> impl Iterator<Item = (MemoryId, T)> {
        self.0.into_iter()
    }
}

/// The regions each memory's chunks read of one buffer (usually one chunk, one memory).
pub(crate) type ReadsByMemory = PerMemory<SmallVec<[Region; 1]>>;

/// Boxes grouped by a key (an original writer, a source memory): usually one or two groups, so
/// a small vector beats a map. [`BoxGroups::into_regions`] yields the groups in key order.
pub(crate) struct BoxGroups<K>(SmallVec<[(K, RegionBuilder); 2]>);

impl<K: Ord + Copy> BoxGroups<K> {
    pub fn new() -> Self {
        Self(SmallVec::new())
    }

    pub fn add(&mut self, key: K, b: GridBox) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, builder)) => {
                builder.add_box(b);
            }
            None => {
                let mut builder = RegionBuilder::new();
                builder.add_box(b);
                self.0.push((key, builder));
            }
        }
    }

    pub fn into_regions(mut self) -> impl Iterator<Item = (K, Region)> {
        self.0.sort_unstable_by_key(|(k, _)| *k);
        self.0.into_iter().map(|(k, b)| (k, b.into_region()))
    }
}

/// What the instructions of an [`AccessFront`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrontMode {
    /// Nothing (user allocations before their first use).
    None,
    /// The alloc instruction.
    Allocate,
    /// Concurrent reads.
    Read,
    /// One write, or overlapping concurrent writes.
    Write,
}

/// A set of concurrent instructions accessing part of an allocation, sorted by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessFront {
    instructions: SmallVec<[InstructionId; 2]>,
    mode: FrontMode,
}

impl AccessFront {
    /// An empty front.
    pub fn empty(mode: FrontMode) -> Self {
        Self {
            instructions: SmallVec::new(),
            mode,
        }
    }

    /// A front of one instruction.
    pub fn single(instruction: InstructionId, mode: FrontMode) -> Self {
        let mut instructions = SmallVec::new();
        instructions.push(instruction);
        Self { instructions, mode }
    }

    /// Adds a newer instruction (ids grow, so the front stays sorted).
    pub fn add(&mut self, instruction: InstructionId) {
        debug_assert!(self.instructions.last().is_none_or(|&l| l < instruction));
        self.instructions.push(instruction);
    }

    /// The front with a newer instruction added, allocated once at its final size (a clone
    /// followed by [`Self::add`] grows a spilled front a second time).
    pub fn with_added(&self, instruction: InstructionId) -> Self {
        debug_assert!(self.instructions.last().is_none_or(|&l| l < instruction));
        let mut instructions = SmallVec::with_capacity(self.instructions.len() + 1);
        instructions.extend_from_slice(&self.instructions);
        instructions.push(instruction);
        Self {
            instructions,
            mode: self.mode,
        }
    }

    /// The instructions, sorted by id.
    pub fn instructions(&self) -> &[InstructionId] {
        &self.instructions
    }

    /// The mode.
    pub fn mode(&self) -> FrontMode {
        self.mode
    }

    /// The front with every instruction older than `epoch` replaced by `epoch` (unchanged if
    /// none is older).
    pub fn with_epoch_applied(&self, epoch: InstructionId) -> Self {
        let first_kept = self.instructions.partition_point(|&i| i <= epoch);
        if first_kept == 0 {
            return self.clone();
        }
        let mut instructions = SmallVec::with_capacity(1 + self.instructions.len() - first_kept);
        instructions.push(epoch);
        instructions.extend_from_slice(&self.instructions[first_kept..]);
        Self {
            instructions,
            mode: self.mode,
        }
    }

    /// Replaces every instruction older than `epoch` by `epoch` in place; returns whether any
    /// was (the front then equals [`Self::with_epoch_applied`]).
    pub fn apply_epoch(&mut self, epoch: InstructionId) -> bool {
        let first_kept = self.instructions.partition_point(|&i| i <= epoch);
        if first_kept == 0 || (first_kept == 1 && self.instructions[0] == epoch) {
            return false;
        }
        self.instructions[0] = epoch;
        self.instructions.drain(1..first_kept);
        true
    }

    /// Whether the front is exactly `[epoch]`.
    pub fn is_only(&self, epoch: InstructionId) -> bool {
        self.instructions.as_slice() == [epoch]
    }
}

/// One allocation of a buffer on one memory.
#[derive(Debug, Clone)]
pub struct BufferAllocation {
    /// Its id.
    pub aid: AllocationId,
    /// The box it backs, in buffer coordinates.
    pub allocated_box: GridBox,
    /// Last writers per element.
    pub last_writers: RegionMap<AccessFront>,
    /// Last concurrent accesses per element.
    pub last_concurrent_accesses: RegionMap<AccessFront>,
}

impl BufferAllocation {
    /// A fresh allocation whose fronts are its alloc instruction (`None`: a user allocation).
    pub fn new(aid: AllocationId, alloc: Option<InstructionId>, allocated_box: GridBox) -> Self {
        let front = match alloc {
            Some(i) => AccessFront::single(i, FrontMode::Allocate),
            None => AccessFront::empty(FrontMode::None),
        };
        Self {
            aid,
            allocated_box,
            last_writers: RegionMap::with_box(allocated_box, front.clone()),
            last_concurrent_accesses: RegionMap::with_box(allocated_box, front),
        }
    }

    /// Joins `instruction` to the read fronts of `region` (or starts new read fronts).
    pub fn track_concurrent_read(&mut self, region: &Region, instruction: InstructionId) {
        if region.is_empty() {
            return;
        }
        // in place: a read front of a buffer many tasks read grows by a push, not a rebuild;
        // every changed front gains `instruction`, which reads this allocation only here, so no
        // other front equals it (no merge search for a lone changed front)
        self.last_concurrent_accesses
            .change_region_values_unique(region, |front| {
                if front.mode == FrontMode::Read {
                    front.add(instruction);
                } else {
                    *front = AccessFront::single(instruction, FrontMode::Read);
                }
                true
            });
    }

    /// Makes `instruction` the only writer and access of `region`. Every instruction writes an
    /// allocation once, so no front equals its write front before (no merge search for it).
    pub fn track_atomic_write(&mut self, region: &Region, instruction: InstructionId) {
        if region.is_empty() {
            return;
        }
        let front = AccessFront::single(instruction, FrontMode::Write);
        self.last_writers
            .update_region_unique(region, front.clone());
        self.last_concurrent_accesses
            .update_region_unique(region, front);
    }

    /// Resets `region` to an empty write front, ahead of [`Self::track_concurrent_write`].
    pub fn begin_concurrent_writes(&mut self, region: &Region) {
        if region.is_empty() {
            return;
        }
        let front = AccessFront::empty(FrontMode::Write);
        self.last_writers.update_region(region, front.clone());
        self.last_concurrent_accesses.update_region(region, front);
    }

    /// Adds `instruction` to the write fronts of `region`.
    pub fn track_concurrent_write(&mut self, region: &Region, instruction: InstructionId) {
        if region.is_empty() {
            return;
        }
        for (b, front) in self.last_writers.get_region_values(region) {
            debug_assert_eq!(front.mode, FrontMode::Write);
            let front = front.with_added(instruction);
            self.last_writers.update_box(&b, front.clone());
            self.last_concurrent_accesses.update_box(&b, front);
        }
    }

    /// Replaces instructions older than `epoch` by `epoch`.
    pub fn apply_epoch(&mut self, epoch: InstructionId) {
        self.last_writers.change_values(|f| f.apply_epoch(epoch));
        self.last_concurrent_accesses
            .change_values(|f| f.apply_epoch(epoch));
    }
}

/// The allocations of one memory, boxed: an allocation carries two region maps, so a grown
/// vector or a removed entry moves a pointer instead of the maps.
pub type Allocations = Vec<Box<BufferAllocation>>;

/// The allocations of one buffer on one memory.
#[derive(Debug, Clone, Default)]
pub struct BufferMemory {
    /// Disjoint allocations.
    pub allocations: Allocations,
    /// Boxes `anticipate` saw coming; the next real allocation includes them.
    pub anticipated_contiguous_boxes: BoxVec,
    /// Allocations made over the buffer's lifetime (for the frequent-allocation warning).
    pub total_allocations: usize,
    /// Whether the warning was given.
    pub frequent_allocation_warned: bool,
}

impl BufferMemory {
    /// The allocation with id `aid`.
    pub fn allocation(&self, aid: AllocationId) -> &BufferAllocation {
        self.allocations
            .iter()
            .find(|a| a.aid == aid)
            .expect("unknown allocation")
    }

    /// The allocation with id `aid`, mutably.
    pub fn allocation_mut(&mut self, aid: AllocationId) -> &mut BufferAllocation {
        self.allocations
            .iter_mut()
            .find(|a| a.aid == aid)
            .expect("unknown allocation")
    }

    /// The index of the (unique) allocation covering `b`, if any.
    pub fn find_contiguous(&self, b: &GridBox) -> Option<usize> {
        self.allocations
            .iter()
            .position(|a| a.allocated_box.covers(b))
    }

    /// The allocation covering `b`; it must exist.
    pub fn contiguous(&self, b: &GridBox) -> &BufferAllocation {
        &self.allocations[self
            .find_contiguous(b)
            .expect("box is not allocated contiguously")]
    }

    /// The allocation covering `b`, mutably; it must exist.
    pub fn contiguous_mut(&mut self, b: &GridBox) -> &mut BufferAllocation {
        let i = self
            .find_contiguous(b)
            .expect("box is not allocated contiguously");
        &mut self.allocations[i]
    }

    /// Whether some allocation covers `b`.
    pub fn is_allocated_contiguously(&self, b: &GridBox) -> bool {
        self.find_contiguous(b).is_some()
    }
}

/// A deferred await-push of plain data.
#[derive(Debug, Clone)]
pub struct PendingReceive {
    /// The consumer task (part of the transfer id).
    pub consumer: TaskId,
    /// What will arrive.
    pub region: Region,
    /// Bounding boxes of the region's connected parts: each may arrive in one send, so each
    /// must be backed contiguously.
    pub required_contiguous_boxes: BoxVec,
}

/// A deferred await-push of a reduction's partial results.
#[derive(Debug, Clone)]
pub struct PendingGather {
    /// The consumer task.
    pub consumer: TaskId,
    /// The reduction.
    pub reduction: ReductionId,
    /// The reduced box (the buffer's single element).
    pub gather_box: GridBox,
}

/// Who produced an element's current value, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OriginalWrite {
    /// The producing instruction.
    pub writer: InstructionId,
    /// The memory it wrote.
    pub memory: MemoryId,
}

/// Everything the generator tracks for one buffer.
#[derive(Debug, Clone)]
pub struct BufferState {
    /// Debug name.
    pub name: Option<String>,
    /// Extent.
    pub range: Range,
    /// Bytes per element.
    pub elem_size: usize,
    /// Alignment of elements.
    pub elem_align: usize,
    /// Per memory.
    pub memories: Vec<BufferMemory>,
    /// Memories holding the newest value of each element.
    pub up_to_date: RegionMap<MemoryMask>,
    /// The instruction that produced each element's value (kernel, host task, receive,
    /// await-receive, reduce, or the epoch for host-initialised data; never a copy) and the
    /// memory it wrote to (meaningless where nothing is up to date). One map: an instruction
    /// writes one memory, so the pair fragments no more than the writer alone.
    pub original_writers: RegionMap<OriginalWrite>,
    /// Deferred await-pushes.
    pub pending_receives: Vec<PendingReceive>,
    /// Deferred reduction await-pushes.
    pub pending_gathers: Vec<PendingGather>,
}

impl BufferState {
    /// A buffer nothing has been written to, on a node with `num_memories` memories.
    pub fn new(
        range: Range,
        elem_size: usize,
        elem_align: usize,
        num_memories: usize,
        epoch: InstructionId,
    ) -> Self {
        Self {
            name: None,
            range,
            elem_size,
            elem_align,
            memories: vec![BufferMemory::default(); num_memories],
            up_to_date: RegionMap::new(range, MemoryMask::EMPTY),
            original_writers: RegionMap::new(
                range,
                OriginalWrite {
                    writer: epoch,
                    memory: MemoryId::USER,
                },
            ),
            pending_receives: Vec::new(),
            pending_gathers: Vec::new(),
        }
    }

    /// Records that `instruction` produced `region` in `memory`, which now holds the only
    /// up-to-date copy.
    pub fn track_original_write(
        &mut self,
        region: &Region,
        instruction: InstructionId,
        memory: MemoryId,
    ) {
        if region.is_empty() {
            return;
        }
        // `instruction` is new: no entry holds it, so its entry has no equal neighbour
        self.original_writers.update_region_unique(
            region,
            OriginalWrite {
                writer: instruction,
                memory,
            },
        );
        self.up_to_date
            .update_region(region, MemoryMask::single(memory));
    }

    /// Replaces instructions older than `epoch` by `epoch`.
    pub fn apply_epoch(&mut self, epoch: InstructionId) {
        for memory in &mut self.memories {
            for allocation in &mut memory.allocations {
                allocation.apply_epoch(epoch);
            }
        }
        self.original_writers.change_values(|w| {
            let older = w.writer < epoch;
            if older {
                w.writer = epoch;
            }
            older
        });
        debug_assert!(
            self.pending_receives.is_empty() && self.pending_gathers.is_empty(),
            "an await-push was not consumed before the next horizon"
        );
    }
}

/// A staging allocation in a memory's pool.
#[derive(Debug, Clone)]
pub struct StagingAllocation {
    /// Its id.
    pub aid: AllocationId,
    /// Bytes.
    pub size_bytes: usize,
    /// Alignment.
    pub align_bytes: usize,
    /// Its last accesses; reusable once collapsed into the current epoch.
    pub last_accesses: AccessFront,
}

/// Generator state per memory.
#[derive(Debug, Clone)]
pub struct MemoryState {
    /// The next raw allocation id (0 is the null allocation).
    pub next_raw_aid: u64,
    /// Staging allocations.
    pub staging_pool: Vec<StagingAllocation>,
}

impl Default for MemoryState {
    fn default() -> Self {
        Self {
            next_raw_aid: 1,
            staging_pool: Vec::new(),
        }
    }
}

/// Generator state per host object.
#[derive(Debug, Clone, Copy)]
pub struct HostObjectState {
    /// Whether destroying the object emits a destroy instruction.
    pub owns_instance: bool,
    /// The last instruction with a side effect on it.
    pub last_side_effect: InstructionId,
}
