//! Compiling an execution command and anticipating its allocations (C++
//! Celerity: `instruction_graph_generator.cc`, `compile_execution_command` and `anticipate`).
//!
//! 1. The first host task of a collective group clones the root group's communicator, ordered
//!    after the root group's previous collective operation.
//! 2. The local execution range is split: device tasks into one coarse chunk per device (on its
//!    native memory), host tasks into one chunk in host memory; an oversubscription hint splits
//!    every coarse chunk again (refused for reductions, side effects, collective groups and
//!    tasks without a variable split).
//! 3. Overlapping writes between local chunks are reported.
//! 4. Per accessed buffer (`buffer_requirements.rs`): pending receives the task reads are
//!    applied, discarded data is dropped from `up_to_date` (so resizes do not copy it),
//!    allocations are made, receives committed and coherence copies emitted (all chunks at once).
//! 5. Local reductions get a gather allocation; one kernel or host-task instruction per chunk.
//! 6. All dependencies of all chunks are added before any tracking state changes, so sibling
//!    chunks never depend on each other; then fronts, original writers, side effects and
//!    collective groups are updated, local reductions finished, and any instruction still
//!    without a dependency is anchored on the last epoch.

use std::borrow::Cow;
use std::sync::Arc;

use smallvec::{SmallVec, smallvec};

use crate::command::Command;
use crate::grid::{
    BoxVec, GridBox, Region, merge_connected_boxes, merge_overlapping_bounding_boxes, split_1d,
    split_2d,
};
use crate::policy::ErrorPolicy;
use crate::task::{BufferLabel, ExecutionTarget, Task, fmt_region};
use crate::types::{AllocationId, BufferId, CollectiveGroupId, DeviceId, InstructionId, MemoryId};

use super::buffer_requirements::Backing;
use super::buffer_state::clip;
use super::generator::{InstructionGraphGenerator, LocalChunk, SCALAR_BOX, SchedulingHint};
use super::instruction::{AccessAllocations, BufferAccessAllocation, InstructionKind};
use super::recorder::{DependencyOrigin, RecordDetail};
use super::requirements::ChunkRequirements;

/// The buffers a task touches (accesses and reductions), in id order.
fn touched_buffers(task: &Task) -> SmallVec<[BufferId; 4]> {
    // pushed one by one: a collect cost more than the work for the usual zero to two buffers
    let mut bids: SmallVec<[BufferId; 4]> = SmallVec::new();
    for bid in task.access_map().accessed_buffers() {
        bids.push(bid);
    }
    for r in task.reductions() {
        bids.push(r.bid);
    }
    if bids.len() > 1 {
        bids.sort_unstable();
        bids.dedup();
    }
    bids
}

/// Per buffer of a chunk: buffer, reads, writes (reduction outputs included), bounds of both.
/// Borrowed from the chunk's requirements (writes are owned only where a reduction adds its
/// scalar).
type AccessSets<'a> = (BufferId, &'a Region, Cow<'a, Region>, GridBox);

/// The allocations of `memory` that intersect `bounds`.
fn touched_mut<'a>(
    memory: &'a mut super::buffer_state::BufferMemory,
    bounds: &'a GridBox,
) -> impl Iterator<Item = &'a mut super::buffer_state::BufferAllocation> {
    memory
        .allocations
        .iter_mut()
        .filter(move |a| a.allocated_box.intersects(bounds))
        .map(|a| &mut **a)
}

/// Whether the writes of two chunks to the `b`-th buffer of their requirements can overlap:
/// their bounding boxes intersect. The usual split of a kernel over the devices writes disjoint
/// boxes, which box tests show without building the union of all writes.
fn writes_may_overlap(requirements: &[ChunkRequirements], b: usize) -> bool {
    let mut bounds: SmallVec<[GridBox; 4]> = SmallVec::new();
    for r in requirements {
        let bounding_box = r.buffers[b].writes.bounding_box();
        if bounds.iter().any(|other| other.intersects(&bounding_box)) {
            return true;
        }
        bounds.push(bounding_box);
    }
    false
}

/// The indices (in each chunk's requirements) of the buffers that two local chunks may write
/// the same element of: their write bounds intersect. Computed once per task for the overlap
/// report and the tracking updates; none for a single chunk.
fn possibly_overlapping_writes(requirements: &[ChunkRequirements]) -> SmallVec<[usize; 2]> {
    match requirements {
        [] | [_] => SmallVec::new(),
        [first, ..] => (0..first.buffers.len())
            .filter(|&b| writes_may_overlap(requirements, b))
            .collect(),
    }
}

/// The buffers that two local chunks may write the same element of: those at the indices
/// `overlapping`, and reduction outputs (every chunk writes the scalar).
fn concurrently_written_buffers(
    task: &Task,
    requirements: &[ChunkRequirements],
    overlapping: &[usize],
) -> SmallVec<[BufferId; 2]> {
    let mut concurrent = SmallVec::new();
    for (b, first) in requirements[0].buffers.iter().enumerate() {
        if overlapping.contains(&b) || task.reductions().iter().any(|r| r.bid == first.bid) {
            concurrent.push(first.bid);
        }
    }
    concurrent
}

impl InstructionGraphGenerator {
    pub(super) fn compile_execution(
        &mut self,
        command: &Command,
        task: &Arc<Task>,
        execution_box: GridBox,
        is_reduction_initializer: bool,
    ) -> crate::Result<()> {
        self.create_collective_group(task);
        // looked at in place: moving the slot out on every compilation cost more than a
        // one-chunk split
        let chunks = match &self.anticipated_split {
            Some((tid, b, _)) if *tid == task.id() && *b == execution_box => {
                let (_, _, chunks) = self.anticipated_split.take().expect("matched above");
                chunks
            }
            _ => self.split_task(task, &execution_box, true)?,
        };
        let bids = touched_buffers(task);
        // evaluated into the records of earlier tasks
        let mut requirements = std::mem::take(&mut self.requirements);
        requirements.resize_with(chunks.len(), ChunkRequirements::default);
        for (r, c) in requirements.iter_mut().zip(&chunks) {
            r.evaluate(task, &c.execution_box, &bids);
        }
        let overlapping = possibly_overlapping_writes(&requirements);
        if !overlapping.is_empty() && self.policies.overlapping_write != ErrorPolicy::Ignore {
            self.report_overlapping_writes(task, &requirements, &overlapping);
        }
        for &bid in &bids {
            let backing = match (chunks.as_slice(), requirements.as_slice()) {
                ([c], [r]) => self.satisfy_backed_requirements(bid, task, c, r),
                _ => self.satisfy_backed_requirements_of_chunks(bid, task, &chunks, &requirements),
            };
            let needs_allocation = match backing {
                Backing::Satisfied => continue,
                Backing::NeedsAllocation => true,
                Backing::General => false,
            };
            self.satisfy_buffer_requirements(
                bid,
                task,
                is_reduction_initializer,
                &chunks,
                &requirements,
                needs_allocation,
            );
        }
        let local_reductions: Vec<_> = task
            .reductions()
            .iter()
            .map(|r| self.prepare_local_reduction(r, is_reduction_initializer, chunks.len()))
            .collect();
        let instructions: SmallVec<[InstructionId; 4]> = chunks
            .iter()
            .zip(&requirements)
            .map(|(c, r)| self.launch_chunk(command, task, c, r))
            .collect();
        self.perform_buffer_accesses(task, &chunks, &requirements, &instructions, &overlapping);
        for &hoid in task.side_effects() {
            let object = self
                .host_objects
                .get_mut(&hoid)
                .expect("unknown host object");
            self.em.add_dependency(
                instructions[0],
                object.last_side_effect,
                DependencyOrigin::SideEffect,
            );
            object.last_side_effect = instructions[0];
        }
        let group = task.collective_group();
        if group != CollectiveGroupId::NONE {
            let last = self
                .collective_groups
                .get_mut(&group)
                .expect("group was cloned");
            self.em.add_dependency(
                instructions[0],
                *last,
                DependencyOrigin::CollectiveGroupOrder,
            );
            *last = instructions[0];
        }
        for (reduction, local) in task.reductions().iter().zip(&local_reductions) {
            self.finish_local_reduction(local, reduction, &chunks);
        }
        for &i in &instructions {
            if !self.em.has_dependencies(i) {
                self.em
                    .add_dependency(i, self.em.last_epoch, DependencyOrigin::LastEpoch);
            }
        }
        self.requirements = requirements;
        Ok(())
    }

    /// Emits the clone of a collective group the first time a task of it runs.
    fn create_collective_group(&mut self, task: &Task) {
        let group = task.collective_group();
        if group == CollectiveGroupId::NONE || self.collective_groups.contains_key(&group) {
            return;
        }
        let clone = self.em.create(
            InstructionKind::CloneCollectiveGroup {
                original: CollectiveGroupId::ROOT,
                new: group,
            },
            || RecordDetail::None,
        );
        let root = self
            .collective_groups
            .get_mut(&CollectiveGroupId::ROOT)
            .expect("init epoch creates the root group");
        self.em
            .add_dependency(clone, *root, DependencyOrigin::CollectiveGroupOrder);
        *root = clone;
        self.collective_groups.insert(group, clone);
    }

    /// Splits the local execution range into chunks per device (and oversubscription).
    pub(super) fn split_task(
        &mut self,
        task: &Task,
        execution_box: &GridBox,
        report: bool,
    ) -> crate::Result<SmallVec<[LocalChunk; 1]>> {
        let on_device = task.execution_target() == ExecutionTarget::Device;
        if on_device && self.system.devices.is_empty() {
            return Err(crate::Error::unsupported(format!(
                "no device to run {} on",
                task.label()
            )));
        }
        let splittable = task.has_variable_split()
            && task.side_effects().is_empty()
            && task.collective_group() == CollectiveGroupId::NONE;
        let hints = task.hints();
        let split = if hints.split_2d { split_2d } else { split_1d };
        let granularity = task.geometry().granularity;
        let coarse: SmallVec<[GridBox; 1]> =
            if splittable && on_device && self.system.devices.len() > 1 {
                split(execution_box, &granularity, self.system.devices.len()).into()
            } else {
                smallvec![*execution_box]
            };
        let mut factor = 1;
        if hints.oversubscribe > 1 {
            if splittable && task.reductions().is_empty() {
                factor = hints.oversubscribe as usize;
            } else if report {
                let reason = if !task.reductions().is_empty() {
                    " because it performs a reduction"
                } else if !task.side_effects().is_empty() {
                    " because it has side effects"
                } else if task.collective_group() != CollectiveGroupId::NONE {
                    " because it participates in a collective group"
                } else if !task.has_variable_split() {
                    " because its iteration space cannot be split"
                } else {
                    ""
                };
                let label = task.label().to_string();
                self.report(self.policies.unsafe_oversubscription, || {
                    format!("Refusing to oversubscribe {label}{reason}.")
                });
            }
        }
        let mut chunks = SmallVec::with_capacity(coarse.len() * factor);
        for (i, c) in coarse.iter().enumerate() {
            let (memory, device) = if on_device {
                (
                    self.system.devices[i].native_memory,
                    Some(DeviceId(i as u64)),
                )
            } else {
                (MemoryId::HOST, None)
            };
            let chunk = |execution_box| LocalChunk {
                memory,
                device,
                execution_box,
            };
            if factor > 1 {
                chunks.extend(split(c, &granularity, factor).into_iter().map(chunk));
            } else {
                chunks.push(chunk(*c));
            }
        }
        Ok(chunks)
    }

    /// Reports elements written by more than one local chunk; only the buffers at the indices
    /// `overlapping` (see [`possibly_overlapping_writes`]) can have any.
    fn report_overlapping_writes(
        &mut self,
        task: &Task,
        requirements: &[ChunkRequirements],
        overlapping: &[usize],
    ) {
        let mut overlaps: Vec<(BufferId, Region)> = Vec::new();
        for &b in overlapping {
            let first = &requirements[0].buffers[b];
            let mut written = first.writes.clone();
            let mut overlap = Region::new();
            for r in &requirements[1..] {
                let w = &r.buffers[b].writes;
                if written.intersects(w) {
                    overlap = overlap.union(&written.intersection(w));
                }
                written = written.union(w);
            }
            if !overlap.is_empty() {
                overlaps.push((first.bid, overlap));
            }
        }
        if overlaps.is_empty() {
            return;
        }
        // The same words as the command level's report of overlaps between nodes.
        let list: Vec<String> = overlaps
            .iter()
            .map(|(bid, overlap)| {
                let label = BufferLabel {
                    id: *bid,
                    name: self.buffers.get(*bid).and_then(|b| b.name.as_deref()),
                };
                format!("{label} {}", fmt_region(overlap))
            })
            .collect();
        let message = format!(
            "{} has overlapping writes between chunks on {} in {}; choose a non-overlapping range \
             mapper for the write or constrain the split",
            task.title(),
            self.local_node,
            list.join(", ")
        );
        self.report(self.policies.overlapping_write, || message);
    }

    /// One kernel or host-task instruction for `chunk`, with its allocation maps.
    fn launch_chunk(
        &mut self,
        command: &Command,
        task: &Arc<Task>,
        chunk: &LocalChunk,
        requirements: &ChunkRequirements,
    ) -> InstructionId {
        let access_map = task.access_map();
        let mem = chunk.memory.0 as usize;
        let mut traffic = 0usize;
        let mut accesses = AccessAllocations::with_capacity(access_map.num_accesses());
        let mut recorded = Vec::new();
        for i in 0..access_map.num_accesses() {
            let (bid, mode) = access_map.nth_access(i);
            let buffer = &self.buffers[bid];
            let region = &requirements.accesses[i];
            let accessed_box = region.bounding_box();
            accesses.push(if accessed_box.is_empty() {
                BufferAccessAllocation {
                    allocation: AllocationId::null(MemoryId::USER),
                    allocated_box: GridBox::EMPTY,
                    accessed_box: GridBox::EMPTY,
                    elem_size: buffer.elem_size,
                }
            } else {
                let allocation = buffer.memories[mem].contiguous(&accessed_box);
                BufferAccessAllocation {
                    allocation: allocation.aid,
                    allocated_box: allocation.allocated_box,
                    accessed_box,
                    elem_size: buffer.elem_size,
                }
            });
            traffic += (usize::from(mode.is_producer()) + usize::from(mode.is_consumer()))
                * region.area()
                * buffer.elem_size;
            if self.em.is_recording() {
                recorded.push((bid, region.clone()));
            }
        }
        let mut reductions = Vec::with_capacity(task.reductions().len());
        for r in task.reductions() {
            let buffer = &self.buffers[r.bid];
            let allocation = buffer.memories[mem].contiguous(&SCALAR_BOX);
            reductions.push(BufferAccessAllocation {
                allocation: allocation.aid,
                allocated_box: allocation.allocated_box,
                accessed_box: SCALAR_BOX,
                elem_size: buffer.elem_size,
            });
            traffic += chunk.execution_box.area() * buffer.elem_size;
        }
        let kind = match chunk.device {
            Some(device) => InstructionKind::DeviceKernel {
                device,
                task: task.clone(),
                execution_box: chunk.execution_box,
                accesses,
                reductions,
                estimated_traffic_bytes: traffic,
            },
            None => {
                debug_assert!(reductions.is_empty(), "host tasks cannot reduce");
                InstructionKind::HostTask {
                    task: task.clone(),
                    execution_box: chunk.execution_box,
                    global_range: task.geometry().global_size,
                    accesses,
                    collective_group: task.collective_group(),
                }
            }
        };
        let command = command.id();
        self.em.create(kind, || RecordDetail::Kernel {
            command,
            accesses: recorded,
        })
    }

    /// Dependencies of all chunks first, then the tracking updates.
    fn perform_buffer_accesses(
        &mut self,
        task: &Task,
        chunks: &[LocalChunk],
        requirements: &[ChunkRequirements],
        instructions: &[InstructionId],
        overlapping: &[usize],
    ) {
        // per chunk (its index), per buffer: reads, writes (including reduction outputs) and
        // their bounds; pushed one by one (a collected list of lists was copied whole). Room for
        // four on the stack: a stencil step touches four buffers, and spilling moved the first two.
        let mut sets: SmallVec<[(usize, AccessSets); 4]> = SmallVec::new();
        for (i, r) in requirements.iter().enumerate() {
            for b in &r.buffers {
                let writes = if task.reductions().iter().any(|r| r.bid == b.bid) {
                    Cow::Owned(b.writes.union_box(&SCALAR_BOX))
                } else {
                    Cow::Borrowed(&b.writes)
                };
                if b.reads.is_empty() && writes.is_empty() {
                    continue;
                }
                let bounds = b.reads.bounding_box().bounding_box(&writes.bounding_box());
                sets.push((i, (b.bid, &b.reads, writes, bounds)));
            }
        }

        for (i, (bid, reads, writes, bounds)) in &sets {
            let (c, instruction) = (&chunks[*i], instructions[*i]);
            let buffer = &self.buffers[*bid];
            let touched = buffer.memories[c.memory.0 as usize]
                .allocations
                .iter()
                .filter(|a| a.allocated_box.intersects(bounds));
            for allocation in touched {
                let b = &allocation.allocated_box;
                self.em
                    .add_dependencies_on_last_writers(instruction, allocation, &clip(reads, b));
                self.em.add_dependencies_on_last_accesses(
                    instruction,
                    allocation,
                    &clip(writes, b),
                    DependencyOrigin::WriteToAllocation,
                );
            }
        }
        if let ([c], [instruction]) = (chunks, instructions) {
            for (_, (bid, reads, writes, bounds)) in &sets {
                self.track_sole_writer(c, *instruction, *bid, reads, writes, bounds);
            }
            return;
        }
        self.track_several_chunks(task, chunks, requirements, instructions, overlapping, &sets);
    }

    /// The tracking updates of a task of several chunks (out of line: the one-chunk path above
    /// is the hot one).
    #[inline(never)]
    fn track_several_chunks(
        &mut self,
        task: &Task,
        chunks: &[LocalChunk],
        requirements: &[ChunkRequirements],
        instructions: &[InstructionId],
        overlapping: &[usize],
        sets: &[(usize, AccessSets)],
    ) {
        // A buffer no two chunks write the same element of (the usual split over devices) takes
        // each chunk's write as a single writer's. Concurrent write fronts (a reset of every
        // written region, then each writer added) are for the rest.
        let concurrent = concurrently_written_buffers(task, requirements, overlapping);
        for (i, (bid, reads, writes, bounds)) in sets {
            if !concurrent.contains(bid) {
                self.track_sole_writer(&chunks[*i], instructions[*i], *bid, reads, writes, bounds);
            }
        }
        if concurrent.is_empty() {
            return;
        }
        for (i, (bid, _, writes, bounds)) in sets {
            if !concurrent.contains(bid) {
                continue;
            }
            let c = &chunks[*i];
            let buffer = self.buffers.get_mut(*bid).expect("unknown buffer");
            for allocation in touched_mut(&mut buffer.memories[c.memory.0 as usize], bounds) {
                allocation.begin_concurrent_writes(&clip(writes, &allocation.allocated_box));
            }
        }
        for (i, (bid, reads, writes, bounds)) in sets {
            if !concurrent.contains(bid) {
                continue;
            }
            let (c, instruction) = (&chunks[*i], instructions[*i]);
            let buffer = self.buffers.get_mut(*bid).expect("unknown buffer");
            for allocation in touched_mut(&mut buffer.memories[c.memory.0 as usize], bounds) {
                let b = allocation.allocated_box;
                allocation.track_concurrent_read(&clip(reads, &b), instruction);
                allocation.track_concurrent_write(&clip(writes, &b), instruction);
            }
            buffer.track_original_write(writes, instruction, c.memory);
        }
    }

    /// The tracking updates of chunk `c`'s accesses `set` where `instruction` is the only writer
    /// of what it writes: reads of written elements are superseded by the write, and the write
    /// is atomic, which needs half the updates of concurrent writes. Inlined into both callers,
    /// so that the one-chunk path stays as it was written.
    #[inline(always)]
    fn track_sole_writer(
        &mut self,
        c: &LocalChunk,
        instruction: InstructionId,
        bid: BufferId,
        reads: &Region,
        writes: &Region,
        bounds: &GridBox,
    ) {
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        let read_only = if writes.is_empty() {
            Cow::Borrowed(reads)
        } else if writes == reads {
            // a chained task rewrites what it reads: nothing is only read
            Cow::Owned(Region::new())
        } else {
            Cow::Owned(reads.difference(writes))
        };
        for allocation in touched_mut(&mut buffer.memories[c.memory.0 as usize], bounds) {
            let b = allocation.allocated_box;
            allocation.track_concurrent_read(&clip(&read_only, &b), instruction);
            allocation.track_atomic_write(&clip(writes, &b), instruction);
        }
        buffer.track_original_write(writes, instruction, c.memory);
    }

    /// Whether every memory the chunks of `task` can run on (host memory for a host task, every
    /// device's native memory for a device task, as [`Self::split_task`] assigns them) holds
    /// each buffer the task accesses in one allocation of the whole buffer.
    fn backs_accessed_buffers_whole(&self, task: &Task) -> bool {
        let on_device = task.execution_target() == ExecutionTarget::Device;
        if on_device && self.system.devices.is_empty() {
            return false;
        }
        task.access_map().accessed_buffers().all(|bid| {
            let buffer = &self.buffers[bid];
            let whole = GridBox::full_range(buffer.range);
            let backs =
                |mid: MemoryId| buffer.memories[mid.0 as usize].is_allocated_contiguously(&whole);
            if on_device {
                self.system.devices.iter().all(|d| backs(d.native_memory))
            } else {
                backs(MemoryId::HOST)
            }
        })
    }

    /// Records the boxes `command` will need allocated (lookahead).
    pub fn anticipate(&mut self, command: &Command) -> SchedulingHint {
        let crate::command::CommandKind::Execution {
            execution_range, ..
        } = command.kind()
        else {
            return SchedulingHint::IsSelfContained;
        };
        let task = command.task();
        let access_map = task.access_map();
        // half of a typical program's kernels touch no buffer: nothing to allocate
        if access_map.num_accesses() == 0 && task.reductions().is_empty() {
            return SchedulingHint::IsSelfContained;
        }
        if task.reductions().is_empty() && self.backs_accessed_buffers_whole(task) {
            // every memory a chunk can run on backs each accessed buffer in one allocation (a
            // chained task after the first): nothing can be missing, so neither the split nor
            // the range mappers need to run
            return SchedulingHint::IsSelfContained;
        }
        let Ok(chunks) = self.split_task(task, execution_range, false) else {
            return SchedulingHint::IsSelfContained;
        };
        let mut required: SmallVec<[((BufferId, MemoryId), BoxVec); 2]> = SmallVec::new();
        let mut require = |bid: BufferId, mid: MemoryId, boxes: &[GridBox]| match required
            .iter_mut()
            .find(|(k, _)| *k == (bid, mid))
        {
            Some((_, v)) => v.extend_from_slice(boxes),
            None => required.push(((bid, mid), boxes.iter().copied().collect())),
        };
        for bid in access_map.accessed_buffers() {
            let buffer = &self.buffers[bid];
            let whole = GridBox::full_range(buffer.range);
            for c in &chunks {
                if buffer.memories[c.memory.0 as usize].is_allocated_contiguously(&whole) {
                    // one allocation backs the whole buffer (a buffer used on one memory after
                    // its first task): it covers every box the chunk can require, and the range
                    // mappers need not run
                    continue;
                }
                require(
                    bid,
                    c.memory,
                    &access_map.compute_required_contiguous_boxes(bid, &c.execution_box),
                );
            }
        }
        for r in task.reductions() {
            require(r.bid, MemoryId::HOST, &[SCALAR_BOX]);
            for c in &chunks {
                require(r.bid, c.memory, &[SCALAR_BOX]);
            }
        }
        // kept for the compilation only where splitting reports nothing (an oversubscription
        // hint can be refused, which the compilation's split reports)
        if task.hints().oversubscribe <= 1 {
            self.anticipated_split = Some((task.id(), *execution_range, chunks));
        }
        let mut would_allocate = false;
        for ((bid, mid), boxes) in required {
            let memory =
                &mut self.buffers.get_mut(bid).expect("unknown buffer").memories[mid.0 as usize];
            let mut grew = false;
            for b in boxes {
                if memory.is_allocated_contiguously(&b)
                    || memory
                        .anticipated_contiguous_boxes
                        .iter()
                        .any(|a| a.covers(&b))
                {
                    continue;
                }
                memory.anticipated_contiguous_boxes.push(b);
                grew = true;
            }
            if grew {
                merge_overlapping_bounding_boxes(&mut memory.anticipated_contiguous_boxes);
                merge_connected_boxes(&mut memory.anticipated_contiguous_boxes);
                would_allocate = true;
            }
        }
        if would_allocate {
            SchedulingHint::CouldMergeWithFutureCommands
        } else {
            SchedulingHint::IsSelfContained
        }
    }
}
