//! Step 4 of compiling an execution command: satisfying each buffer's requirements before the
//! chunks launch. The footprint of the local chunks (what they access, consume and discard),
//! receives that land in it, allocations and resizes, coherence copies into the memories that
//! read, and the uninitialised-read report; with a shortcut for a buffer that one chunk accesses
//! in memory that already backs it.

use std::borrow::Cow;

use crate::backend::system_info::MemoryMask;
use crate::grid::{BoxVec, Region, RegionBuilder};
use crate::policy::ErrorPolicy;
use crate::task::{BufferLabel, Task, fmt_region};
use crate::types::{BufferId, MemoryId};

use super::buffer_state::{PendingReceive, PerMemory, ReadsByMemory};
use super::coherence::{ReadState, read_state, reader_up_to_date};
use super::generator::{InstructionGraphGenerator, LocalChunk, SCALAR_BOX};
use super::requirements::ChunkRequirements;

/// What the local chunks of a task do with one buffer (step 4).
struct BufferFootprint {
    /// Everything read or written, with a reduction's scalar.
    accessed: Region,
    /// Everything read (with the reduction's scalar if its current value is included).
    consumed: Region,
    /// A reduction that starts from the buffer's current value (on this node).
    include_current_value: bool,
    /// Boxes each memory must back contiguously (so far: the reduction's scalar).
    required: PerMemory<BoxVec>,
}

impl BufferFootprint {
    fn of(
        bid: BufferId,
        task: &Task,
        is_reduction_initializer: bool,
        chunks: &[LocalChunk],
        requirements: &[ChunkRequirements],
    ) -> Self {
        let mut required: PerMemory<BoxVec> = PerMemory::new();
        let reduction = task.reductions().iter().find(|r| r.bid == bid);
        if let ([r], None) = (requirements, reduction) {
            // one chunk, no reduction: the chunk's own (canonical) regions, no re-normalising
            let b = r.buffer(bid);
            let accessed = match (b.reads.is_empty(), b.writes.is_empty()) {
                (_, true) => b.reads.clone(),
                (true, false) => b.writes.clone(),
                // a task reading and writing the same elements (a chained task): no union
                (false, false) if b.reads == b.writes => b.reads.clone(),
                (false, false) => b.reads.union(&b.writes),
            };
            return Self {
                accessed,
                consumed: b.reads.clone(),
                include_current_value: false,
                required,
            };
        }
        let mut accessed = RegionBuilder::new();
        let mut consumed = RegionBuilder::new();
        for r in requirements {
            let b = r.buffer(bid);
            accessed.add_region(&b.writes);
            accessed.add_region(&b.reads);
            consumed.add_region(&b.reads);
        }
        let include_current_value =
            reduction.is_some_and(|r| r.init_from_buffer && is_reduction_initializer);
        if reduction.is_some() {
            for c in chunks {
                required.entry(c.memory).push(SCALAR_BOX);
            }
            if chunks.len() > 1 || include_current_value {
                required.entry(MemoryId::HOST).push(SCALAR_BOX);
            }
            accessed.add_box(SCALAR_BOX);
            if include_current_value {
                consumed.add_box(SCALAR_BOX);
            }
        }
        Self {
            accessed: accessed.into_region(),
            consumed: consumed.into_region(),
            include_current_value,
            required,
        }
    }
}

/// The chunks' non-empty reads of `bid`, grouped by the memory each chunk runs in (chunk order
/// within a memory): what coherence makes up to date. The general step groups them the same way
/// in its own loop over the chunks.
fn group_reads_by_memory(
    bid: BufferId,
    chunks: &[LocalChunk],
    requirements: &[ChunkRequirements],
) -> ReadsByMemory {
    let mut reads_by_memory: ReadsByMemory = PerMemory::new();
    for (c, r) in chunks.iter().zip(requirements) {
        let reads = &r.buffer(bid).reads;
        if !reads.is_empty() {
            reads_by_memory.entry(c.memory).push(reads.clone());
        }
    }
    reads_by_memory
}

/// What [`InstructionGraphGenerator::satisfy_backed_requirements`] did for one buffer.
pub(super) enum Backing {
    /// Everything: the buffer needs no other step.
    Satisfied,
    /// Nothing: a box the chunk needs is not backed yet (the general step allocates it).
    NeedsAllocation,
    /// Nothing: receives or a reduction need the general step.
    General,
}

impl InstructionGraphGenerator {
    /// Step 4 for buffer `bid`: applies the pending receives the task reads, drops discarded data
    /// from `up_to_date`, allocates, commits the receives and makes every chunk's memory coherent.
    /// `needs_allocation`: the caller found a box not backed yet (so a resize follows).
    pub(super) fn satisfy_buffer_requirements(
        &mut self,
        bid: BufferId,
        task: &Task,
        is_reduction_initializer: bool,
        chunks: &[LocalChunk],
        requirements: &[ChunkRequirements],
        needs_allocation: bool,
    ) {
        let mut footprint =
            BufferFootprint::of(bid, task, is_reduction_initializer, chunks, requirements);
        let mut applied = std::mem::take(&mut self.applied_receives);
        let discarded = self.take_consumed_receives(bid, &mut footprint, &mut applied);
        if self.policies.uninitialized_read != ErrorPolicy::Ignore {
            self.report_uninitialized_reads(bid, task, &footprint.consumed.difference(&discarded));
        }

        let host = MemoryId::HOST;
        let mut required = footprint.required;
        // one pass for both (not `group_reads_by_memory` after a pass of its own: the second
        // pass and its buffer lookups cost idag1 jacobi +0.3 %)
        let mut reads_by_memory: ReadsByMemory = PerMemory::new();
        for (c, r) in chunks.iter().zip(requirements) {
            let b = r.buffer(bid);
            required
                .entry(c.memory)
                .extend(b.contiguous.iter().copied());
            if !b.reads.is_empty() {
                reads_by_memory.entry(c.memory).push(b.reads.clone());
            }
        }
        if footprint.include_current_value {
            reads_by_memory.entry(host).push(SCALAR_BOX.into());
        }
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        // Discarded data is marked as up to date nowhere, so that resizes do not copy it. Without a
        // reduction, the discarded region is what the chunks write without reading plus the
        // receives applied now, and the receives and the chunks' writes overwrite all of it before
        // anything but a resize looks at it: without a resize the marking is skipped.
        let resizes = needs_allocation
            || required.iter().any(|(mid, boxes)| {
                let memory = &buffer.memories[mid.0 as usize];
                boxes.iter().any(|b| !memory.is_allocated_contiguously(b))
            });
        if resizes || task.reductions().iter().any(|r| r.bid == bid) {
            buffer
                .up_to_date
                .update_region(&discarded, MemoryMask::EMPTY);
        }
        if resizes {
            // without a resize every required box is backed already: allocating would find
            // nothing to do, at the cost of the same check again per memory
            for (mid, boxes) in required.into_entries() {
                self.allocate_contiguously(bid, mid, boxes);
            }
        }
        if !applied.is_empty() {
            // the readers of one memory (the usual case) are passed as they are
            let all_reads: Cow<[Region]> = match reads_by_memory.only() {
                Some(reads) => Cow::Borrowed(reads.as_slice()),
                None => Cow::Owned(
                    reads_by_memory
                        .iter()
                        .flat_map(|(_, r)| r.iter().cloned())
                        .collect(),
                ),
            };
            for receive in &applied {
                self.commit_pending_receive(bid, receive, &all_reads);
            }
            applied.clear();
        }
        self.applied_receives = applied;
        self.establish_coherence(bid, &reads_by_memory);
    }

    /// Step 4 for buffer `bid` of a task of one chunk (its requirements `r`), when nothing needs
    /// allocating or receiving: no reduction of `bid`, no pending receive, and every box the
    /// chunk needs is backed by one allocation of its memory (a chained task after the first).
    /// Then nothing is discarded but what the chunk writes without reading, which no resize
    /// will copy, and what it consumes is what it reads, so only the uninitialised-read report
    /// and the coherence of what the chunk reads remain, without the footprint of
    /// [`Self::satisfy_buffer_requirements`]. Otherwise does nothing and says why.
    pub(super) fn satisfy_backed_requirements(
        &mut self,
        bid: BufferId,
        task: &Task,
        chunk: &LocalChunk,
        r: &ChunkRequirements,
    ) -> Backing {
        let buffer = &self.buffers[bid];
        if !buffer.pending_receives.is_empty() || task.reductions().iter().any(|r| r.bid == bid) {
            return Backing::General;
        }
        let b = r.buffer(bid);
        let memory = &buffer.memories[chunk.memory.0 as usize];
        if !b
            .contiguous
            .iter()
            .all(|c| memory.is_allocated_contiguously(c))
        {
            return Backing::NeedsAllocation;
        }
        if self.policies.uninitialized_read != ErrorPolicy::Ignore {
            self.report_uninitialized_reads(bid, task, &b.reads);
        }
        if b.reads.is_empty() {
            return Backing::Satisfied;
        }
        let buffer = &self.buffers[bid];
        if reader_up_to_date(&buffer.up_to_date, chunk.memory, &b.reads) {
            debug_assert!(self.finds_nothing_to_copy(bid, chunk.memory, &b.reads));
        } else {
            let mut reads_by_memory: ReadsByMemory = PerMemory::new();
            reads_by_memory.entry(chunk.memory).push(b.reads.clone());
            self.copy_to_readers(bid, &reads_by_memory);
        }
        Backing::Satisfied
    }

    /// [`Self::satisfy_backed_requirements`] for a task of several chunks (a device task on
    /// several devices): no reduction of `bid`, no pending receive, and every box each chunk
    /// needs is backed by one allocation of its memory. Chunks that read uninitialised data
    /// leave the report to the general step, which makes one report of their union (one
    /// problem, one report). Otherwise does nothing and says why.
    // Out of line: inlined, it moved the one-chunk path's code (+0.05 % on idag1 jacobi).
    #[inline(never)]
    pub(super) fn satisfy_backed_requirements_of_chunks(
        &mut self,
        bid: BufferId,
        task: &Task,
        chunks: &[LocalChunk],
        requirements: &[ChunkRequirements],
    ) -> Backing {
        let buffer = &self.buffers[bid];
        if !buffer.pending_receives.is_empty() || task.reductions().iter().any(|r| r.bid == bid) {
            return Backing::General;
        }
        let backed = chunks.iter().zip(requirements).all(|(c, r)| {
            let memory = &buffer.memories[c.memory.0 as usize];
            r.buffer(bid)
                .contiguous
                .iter()
                .all(|b| memory.is_allocated_contiguously(b))
        });
        if !backed {
            return Backing::NeedsAllocation;
        }
        let checks_reads = self.policies.uninitialized_read != ErrorPolicy::Ignore;
        let mut all_up_to_date = true;
        for (c, r) in chunks.iter().zip(requirements) {
            let reads = &r.buffer(bid).reads;
            if reads.is_empty() {
                continue;
            }
            match read_state(&buffer.up_to_date, c.memory, reads) {
                ReadState::UpToDate => {}
                ReadState::Lacking => all_up_to_date = false,
                ReadState::Uninitialized if checks_reads => return Backing::General,
                ReadState::Uninitialized => all_up_to_date = false,
            }
        }
        if all_up_to_date {
            debug_assert!(
                chunks
                    .iter()
                    .zip(requirements)
                    .all(|(c, r)| self.finds_nothing_to_copy(bid, c.memory, &r.buffer(bid).reads))
            );
            return Backing::Satisfied;
        }
        // grouped as the general step groups them, so that the copies come out the same
        self.copy_to_readers(bid, &group_reads_by_memory(bid, chunks, requirements));
        Backing::Satisfied
    }

    /// Moves the pending receives of `bid` that the task consumes into `applied` (their boxes
    /// must be backed contiguously in host memory) and returns the discarded region: what is
    /// accessed but not consumed, and whatever arrives now, need not survive resizes.
    fn take_consumed_receives(
        &mut self,
        bid: BufferId,
        footprint: &mut BufferFootprint,
        applied: &mut Vec<PendingReceive>,
    ) -> Region {
        let mut discarded = RegionBuilder::new();
        discarded.add_region(&footprint.accessed.difference(&footprint.consumed));
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        if buffer.pending_receives.is_empty() {
            return discarded.into_region();
        }
        let consumed = &footprint.consumed;
        if buffer
            .pending_receives
            .iter()
            .all(|r| r.region.intersects(consumed))
        {
            // all of them (a chained task's one): both vectors keep their storage
            applied.append(&mut buffer.pending_receives);
        } else {
            for r in std::mem::take(&mut buffer.pending_receives) {
                if r.region.intersects(consumed) {
                    applied.push(r);
                } else {
                    buffer.pending_receives.push(r);
                }
            }
        }
        for r in applied.iter() {
            discarded.add_region(&r.region);
            footprint
                .required
                .entry(MemoryId::HOST)
                .extend(r.required_contiguous_boxes.iter().copied());
        }
        discarded.into_region()
    }

    /// Reports the part of `read` (consumed, not discarded) that no memory holds.
    fn report_uninitialized_reads(&mut self, bid: BufferId, task: &Task, read: &Region) {
        let buffer = &self.buffers[bid];
        if let Some(mask) = buffer.up_to_date.single_value() {
            // one mask for the whole buffer (a buffer written whole): initialised everywhere or
            // nowhere, without a query
            if !mask.is_empty() || read.is_empty() {
                return;
            }
        }
        // a query without collecting: the builder normalises the boxes anyway
        let mut uninitialized = RegionBuilder::new();
        buffer.up_to_date.query_region(read, |b, mask| {
            if mask.is_empty() {
                uninitialized.add_box(b);
            }
        });
        if uninitialized.is_empty() {
            return;
        }
        let region = fmt_region(&uninitialized.into_region());
        let buffer = BufferLabel {
            id: bid,
            name: buffer.name.as_deref(),
        }
        .to_string();
        let label = task.label().to_string();
        self.report(self.policies.uninitialized_read, || {
            format!(
                "Instructions for {label} are trying to read {buffer} {region}, which is neither found locally nor has been await-pushed before."
            )
        });
    }
}
