//! Buffer allocations and the staging pool (C++ Celerity: `instruction_graph_generator.cc`,
//! `allocate_contiguously` and the staging allocations of its coherence copies).
//!
//! Allocations of a buffer on a memory are disjoint boxes that only ever grow: when a required
//! box is not covered by one allocation, the required boxes (plus everything `anticipate` saw
//! coming) and the existing allocation boxes are merged into non-overlapping bounding boxes. Every
//! new box gets an `alloc` (anchored on the last epoch); each replaced allocation is copied into
//! the new ones where its data is still up to date on that memory (dead data is never copied),
//! then freed after its last accesses.
//!
//! Staging allocations (host staging for copies between non-peer memories, device-side
//! (de)linearisation space) come from a per-memory pool. An entry is reused only for the same
//! size and alignment and only once its last accesses have collapsed into the current epoch, so
//! reuse never adds an edge. The shutdown epoch frees the pool.

use crate::grid::{
    BoxVec, GridBox, Region, RegionBuilder, merge_connected_boxes, merge_overlapping_bounding_boxes,
};
use crate::types::{AllocationId, BufferId, MemoryId};

use super::buffer_state::{
    AccessFront, Allocations, BufferAllocation, BufferMemory, FrontMode, StagingAllocation,
};
use super::generator::InstructionGraphGenerator;
use super::instruction::{CopyLayout, InstructionKind};
use super::recorder::{AllocOrigin, CopyOrigin, DependencyOrigin, RecordDetail};

/// After this many allocations of one buffer on one memory, the generator warns.
pub(crate) const FREQUENT_ALLOCATION_THRESHOLD: usize = 10;

impl InstructionGraphGenerator {
    /// Makes sure every box of `required` lies inside one allocation of `bid` on `mid`: plans
    /// the grown boxes, allocates each (copying the live data of the allocations it replaces),
    /// frees the replaced allocations and records the new ones.
    pub(super) fn allocate_contiguously(&mut self, bid: BufferId, mid: MemoryId, required: BoxVec) {
        if required.is_empty() {
            return;
        }
        let buffer = self.buffers.get(bid).expect("unknown buffer");
        let memory = &buffer.memories[mid.0 as usize];
        debug_assert!(
            required
                .iter()
                .all(|b| !b.is_empty() && GridBox::full_range(buffer.range).covers(b))
        );
        if required.iter().all(|b| memory.is_allocated_contiguously(b)) {
            return;
        }
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        let (mut sources, new_boxes) =
            plan_grown_allocations(&mut buffer.memories[mid.0 as usize], required);
        let new_allocations: Allocations = new_boxes
            .into_iter()
            .map(|new_box| self.allocate_with_resize_copies(bid, mid, new_box, &mut sources))
            .collect();
        self.free_resized_allocations(bid, &sources);
        self.record_new_allocations(bid, mid, new_allocations);
    }

    /// An `alloc` of `new_box` (anchored on the last epoch) and a copy of what is still up to
    /// date on `mid` from every replaced allocation it overlaps.
    #[inline]
    fn allocate_with_resize_copies(
        &mut self,
        bid: BufferId,
        mid: MemoryId,
        new_box: GridBox,
        sources: &mut [Box<BufferAllocation>],
    ) -> Box<BufferAllocation> {
        let aid = self.new_allocation_id(mid);
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        let (elem_size, elem_align) = (buffer.elem_size, buffer.elem_align);
        let alloc = self.em.create(
            InstructionKind::Alloc {
                allocation: aid,
                size_bytes: new_box.area() * elem_size,
                align_bytes: elem_align,
            },
            || RecordDetail::Alloc {
                origin: AllocOrigin::Buffer,
                buffer: Some((bid, new_box)),
                num_chunks: None,
            },
        );
        self.em
            .add_dependency(alloc, self.em.last_epoch, DependencyOrigin::LastEpoch);
        let mut allocation = Box::new(BufferAllocation::new(aid, Some(alloc), new_box));

        for source in sources {
            let overlap = new_box.intersection(&source.allocated_box);
            if overlap.is_empty() {
                continue;
            }
            // only what is still up to date on this memory is worth preserving
            let mut live = RegionBuilder::new();
            buffer.up_to_date.query_box(&overlap, |b, mask| {
                if mask.contains(mid) {
                    live.add_box(b);
                }
            });
            if live.is_empty() {
                continue;
            }
            let live = live.into_region();
            let copy = self.em.create(
                InstructionKind::Copy {
                    source: source.aid,
                    dest: aid,
                    source_layout: CopyLayout::Strided {
                        allocation: source.allocated_box,
                    },
                    dest_layout: CopyLayout::Strided {
                        allocation: new_box,
                    },
                    region: live.clone(),
                    elem_size,
                },
                || RecordDetail::Copy {
                    origin: CopyOrigin::Resize,
                    buffer: bid,
                },
            );
            self.em.read_from_allocation(copy, source, &live);
            self.em.write_to_allocation(copy, &mut allocation, &live);
        }
        allocation
    }

    /// Frees every replaced allocation after its last accesses (the resize copies joined its
    /// read front).
    fn free_resized_allocations(&mut self, bid: BufferId, sources: &[Box<BufferAllocation>]) {
        let elem_size = self.buffers[bid].elem_size;
        for source in sources {
            let b = source.allocated_box;
            let free = self.em.create(
                InstructionKind::Free {
                    allocation: source.aid,
                },
                || RecordDetail::Free {
                    size_bytes: b.area() * elem_size,
                    buffer: Some((bid, b)),
                },
            );
            self.em.add_dependencies_on_last_accesses(
                free,
                source,
                &Region::from(b),
                DependencyOrigin::AllocationLifetime,
            );
        }
    }

    /// Adds the new allocations to the memory's, warning once when a buffer is allocated or
    /// resized often.
    fn record_new_allocations(
        &mut self,
        bid: BufferId,
        mid: MemoryId,
        new_allocations: Allocations,
    ) {
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        let memory = &mut buffer.memories[mid.0 as usize];
        memory.total_allocations += new_allocations.len();
        memory.allocations.extend(new_allocations);
        if !memory.frequent_allocation_warned
            && memory.total_allocations >= FREQUENT_ALLOCATION_THRESHOLD
        {
            memory.frequent_allocation_warned = true;
            let label = match &buffer.name {
                Some(n) => format!("{bid} \"{n}\""),
                None => bid.to_string(),
            };
            self.em.warn(format!(
                "Your program triggers frequent allocations or resizes for buffer {label}, which may degrade performance. \
                 If possible, avoid fences, waits and flushes between command groups of growing access patterns, \
                 or increase the scheduler lookahead."
            ));
        }
    }

    /// A staging allocation of exactly `size_bytes` / `align_bytes` on `mid`: a pooled one whose
    /// last use lies behind the current epoch, or a new one.
    pub(super) fn acquire_staging_allocation(
        &mut self,
        mid: MemoryId,
        size_bytes: usize,
        align_bytes: usize,
    ) -> usize {
        debug_assert_eq!(size_bytes % align_bytes, 0);
        let last_epoch = self.em.last_epoch;
        let pool = &self.memories[mid.0 as usize].staging_pool;
        if let Some(i) = pool.iter().position(|s| {
            s.size_bytes == size_bytes
                && s.align_bytes == align_bytes
                && s.last_accesses.is_only(last_epoch)
        }) {
            return i;
        }
        let aid = self.new_allocation_id(mid);
        let alloc = self.em.create(
            InstructionKind::Alloc {
                allocation: aid,
                size_bytes,
                align_bytes,
            },
            || RecordDetail::Alloc {
                origin: AllocOrigin::Staging,
                buffer: None,
                num_chunks: None,
            },
        );
        self.em
            .add_dependency(alloc, last_epoch, DependencyOrigin::LastEpoch);
        let pool = &mut self.memories[mid.0 as usize].staging_pool;
        pool.push(StagingAllocation {
            aid,
            size_bytes,
            align_bytes,
            last_accesses: AccessFront::single(alloc, FrontMode::Allocate),
        });
        pool.len() - 1
    }

    /// Frees the whole staging pool (at shutdown).
    pub(super) fn free_all_staging_allocations(&mut self) {
        for mid in 0..self.memories.len() {
            for staging in std::mem::take(&mut self.memories[mid].staging_pool) {
                let size_bytes = staging.size_bytes;
                let free = self.em.create(
                    InstructionKind::Free {
                        allocation: staging.aid,
                    },
                    || RecordDetail::Free {
                        size_bytes,
                        buffer: None,
                    },
                );
                self.em.add_dependencies_on_front(
                    free,
                    &staging.last_accesses,
                    DependencyOrigin::AllocationLifetime,
                );
            }
        }
    }

    /// The id of the staging allocation at `index` of `mid`'s pool.
    pub(super) fn staging_aid(&self, mid: MemoryId, index: usize) -> AllocationId {
        self.memories[mid.0 as usize].staging_pool[index].aid
    }
}

/// Grows the required boxes (plus everything `anticipate` saw coming) by every existing
/// allocation they overlap, transitively, into disjoint bounding boxes. Returns the allocations
/// this replaces (removed from `memory`; their data is copied over, then they are freed) and the
/// boxes to allocate. Untouched allocations are disjoint from the result and stay verbatim.
#[inline]
fn plan_grown_allocations(
    memory: &mut BufferMemory,
    mut required: BoxVec,
) -> (Allocations, BoxVec) {
    required.extend(memory.anticipated_contiguous_boxes.drain(..));
    let mut merged = required;
    merge_overlapping_bounding_boxes(&mut merged);
    let mut absorbed = vec![false; memory.allocations.len()];
    loop {
        let mut grew = false;
        for (a, done) in memory.allocations.iter().zip(absorbed.iter_mut()) {
            if *done {
                continue;
            }
            if let Some(m) = merged.iter_mut().find(|m| m.intersects(&a.allocated_box)) {
                *m = m.bounding_box(&a.allocated_box);
                *done = true;
                grew = true;
            }
        }
        if !grew {
            break;
        }
        merge_overlapping_bounding_boxes(&mut merged);
    }
    // absorbed allocations whose box survives verbatim stay; the others are resize sources
    let mut sources = Vec::new();
    let (mut i, mut k) = (0, 0);
    while i < memory.allocations.len() {
        let resized = absorbed[k] && !merged.contains(&memory.allocations[i].allocated_box);
        k += 1;
        if resized {
            sources.push(memory.allocations.remove(i));
        } else {
            i += 1;
        }
    }
    let mut new_boxes: BoxVec = merged
        .into_iter()
        .filter(|b| !memory.allocations.iter().any(|a| a.allocated_box == *b))
        .collect();
    debug_assert!(!new_boxes.is_empty());
    merge_connected_boxes(&mut new_boxes);
    (sources, new_boxes)
}
