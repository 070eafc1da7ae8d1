//! Coherence copies between the memories of one buffer (C++ Celerity:
//! `instruction_graph_generator.cc`, `establish_coherence_between_buffer_memories`).
//!
//! Input: per destination memory, the regions its concurrent readers need (one region per
//! reader, possibly overlapping). Protocol:
//!
//! 1. For every reader region, the elements not up to date on the destination (but somewhere)
//!    are grouped by *(original-write memory, original writer)* and split by source and
//!    destination allocation. Grouping by writer means a copy waits only for its own producer,
//!    so copies of several producer chains overlap with computation.
//! 2. Copy regions are split symmetrically so each element is copied once.
//! 3. A plan tree per region: a direct copy between peers is one hop; otherwise the data is
//!    staged through (linearised) host memory, optionally linearised in the source device memory
//!    first and de-linearised in the destination device memory last (small-pitch copies are slow
//!    on real devices). A staged piece fans out to every destination whose need contains it, so
//!    a broadcast costs one device-to-host copy.
//! 4. The staging space of each memory is sized in one pass and taken from the staging pool.
//! 5. The tree is emitted hop by hop, each hop depending on the previous one.
//! 6. Every destination memory becomes up to date for all of its reader regions.

use std::collections::BTreeMap;

use crate::backend::nd_memory::layout_nd_copy;
use crate::backend::system_info::{MemoryMask, SystemInfo};
use crate::grid::{GridBox, Region, RegionMap, symmetrically_split_overlapping_regions};
use crate::types::{AllocationId, BufferId, InstructionId, MemoryId};

use super::buffer_state::{AccessFront, BoxGroups, BufferState, FrontMode, ReadsByMemory, clip};
use super::generator::InstructionGraphGenerator;
use super::instruction::{CopyLayout, InstructionKind};
use super::recorder::{CopyOrigin, DependencyOrigin, RecordDetail};

/// Staging space is aligned to a cache line (or the element alignment if larger).
const STAGING_ALIGNMENT: usize = 128;
/// Device-side linearisation is used for regions up to this size...
const MAX_LINEARIZED_REGION_BYTES: usize = 64 << 20;
/// ...whose smallest contiguous run is shorter than this.
const MAX_CHUNK_BYTES_TO_LINEARIZE: usize = 64;

/// Where one hop of a copy plan puts the data.
#[derive(Debug, Clone, Copy)]
enum Location {
    /// Strided in a buffer allocation.
    InBuffer(AllocationId),
    /// Linearised in the staging space of a memory, at a byte offset.
    Staged { memory: MemoryId, offset: usize },
}

#[derive(Debug)]
struct Hop {
    location: Location,
    next: Vec<Hop>,
}

impl Hop {
    fn new(location: Location) -> Self {
        Self {
            location,
            next: Vec::new(),
        }
    }

    fn chain(&mut self, location: Location) -> &mut Hop {
        self.next.push(Hop::new(location));
        self.next.last_mut().expect("just pushed")
    }
}

/// Whether copying `region` out of (or into) an allocation of `allocated_box` in `memory` should
/// be linearised on the device first.
pub(crate) fn should_linearize_copy_region(
    memory: MemoryId,
    allocated_box: &GridBox,
    region: &Region,
    elem_size: usize,
) -> bool {
    if memory < MemoryId::FIRST_DEVICE || region.area() * elem_size > MAX_LINEARIZED_REGION_BYTES {
        return false;
    }
    let mut min_chunk = usize::MAX;
    for b in region.boxes() {
        let offset = (b.min() - allocated_box.min()).0;
        let layout = layout_nd_copy(
            allocated_box.range().0,
            b.range().0,
            offset,
            [0; 3],
            b.range().0,
            elem_size,
        );
        if layout.num_complex_strides > 0 {
            min_chunk = min_chunk.min(layout.contiguous_size);
        }
    }
    min_chunk < MAX_CHUNK_BYTES_TO_LINEARIZE
}

fn lcm(a: usize, b: usize) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    a / gcd(a, b) * b
}

/// What a coherence step copies: peer-to-peer copies by (source, destination) memory, and the
/// pieces each source must stage through the host, with the destination that needs each.
#[derive(Default)]
struct CopyNeeds {
    direct: BTreeMap<(MemoryId, MemoryId), Vec<Region>>,
    staged: BTreeMap<MemoryId, Vec<(MemoryId, Region)>>,
}

/// A planned copy tree per region, and the staging bytes it needs in each memory.
struct CopyPlans {
    plans: Vec<(Region, Hop)>,
    staging_bytes: Vec<usize>,
    stage_align: usize,
}

impl InstructionGraphGenerator {
    /// Copies whatever the readers in `reads_by_memory` lack into their
    /// memories. The destination allocations must exist.
    pub(super) fn establish_coherence(&mut self, bid: BufferId, reads_by_memory: &ReadsByMemory) {
        let buffer = self.buffers.get(bid).expect("unknown buffer");
        if readers_up_to_date(&buffer.up_to_date, reads_by_memory) {
            // the usual case (a task reading what the previous one wrote there): the full
            // collection below, with its groups and maps, would find nothing to copy
            debug_assert!({
                let needs = collect_copy_needs(buffer, &self.system, reads_by_memory);
                needs.direct.is_empty() && needs.staged.is_empty()
            });
            return;
        }
        self.copy_to_readers(bid, reads_by_memory);
    }

    /// Whether the full collection finds nothing to copy for one reader of `read` in `dest`
    /// (a debug check of [`reader_up_to_date`]).
    pub(super) fn finds_nothing_to_copy(
        &self,
        bid: BufferId,
        dest: MemoryId,
        read: &Region,
    ) -> bool {
        let mut reads_by_memory = ReadsByMemory::new();
        reads_by_memory.entry(dest).push(read.clone());
        let needs = collect_copy_needs(&self.buffers[bid], &self.system, &reads_by_memory);
        needs.direct.is_empty() && needs.staged.is_empty()
    }

    /// [`Self::establish_coherence`] without the early-out check, for a caller that made it.
    pub(super) fn copy_to_readers(&mut self, bid: BufferId, reads_by_memory: &ReadsByMemory) {
        let buffer = self.buffers.get(bid).expect("unknown buffer");
        let needs = collect_copy_needs(buffer, &self.system, reads_by_memory);
        if needs.direct.is_empty() && needs.staged.is_empty() {
            return;
        }
        let plans = plan_copy_trees(buffer, needs, self.memories.len());
        self.emit_copy_trees(bid, &plans);
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        mark_up_to_date(buffer, reads_by_memory);
    }

    /// Steps 4 and 5: takes the staging space from the pools, emits every tree hop by hop and
    /// records the staging reads as the pools' last accesses.
    fn emit_copy_trees(&mut self, bid: BufferId, plans: &CopyPlans) {
        let num_memories = self.memories.len();
        let mut staging_index: Vec<Option<usize>> = vec![None; num_memories];
        for (mid, &bytes) in plans.staging_bytes.iter().enumerate() {
            if bytes > 0 {
                staging_index[mid] = Some(self.acquire_staging_allocation(
                    MemoryId(mid as u64),
                    bytes,
                    plans.stage_align,
                ));
            }
        }
        let mut staging_reads: Vec<AccessFront> =
            vec![AccessFront::empty(FrontMode::Read); num_memories];
        let mut emit = Emission {
            generator: self,
            bid,
            staging_index: &staging_index,
            staging_reads: &mut staging_reads,
        };
        for (region, root) in &plans.plans {
            for next in &root.next {
                emit.hop(region, root, next, None);
            }
        }
        for (mid, index) in staging_index.iter().enumerate() {
            if let Some(i) = index {
                self.memories[mid].staging_pool[*i].last_accesses =
                    std::mem::replace(&mut staging_reads[mid], AccessFront::empty(FrontMode::Read));
            }
        }
    }
}

/// Whether no reader lacks an element that some memory holds, i.e. whether step 1 would find
/// nothing to copy. A map of one entry (a buffer written whole, as a chained task writes it)
/// holds one mask for every element, so its readers are checked without a query.
fn readers_up_to_date(up_to_date: &RegionMap<MemoryMask>, reads_by_memory: &ReadsByMemory) -> bool {
    reads_by_memory.iter().all(|(dest, reads)| {
        reads
            .iter()
            .all(|read| reader_up_to_date(up_to_date, dest, read))
    })
}

/// [`readers_up_to_date`] for one reader of `read` in memory `dest`.
pub(super) fn reader_up_to_date(
    up_to_date: &RegionMap<MemoryMask>,
    dest: MemoryId,
    read: &Region,
) -> bool {
    let lacks_nothing = |mask: &MemoryMask| mask.is_empty() || mask.contains(dest);
    if let Some(only) = up_to_date.single_value() {
        return lacks_nothing(only);
    }
    let mut up_to_date_here = true;
    up_to_date.query_region(read, |_, mask| {
        up_to_date_here &= lacks_nothing(mask);
    });
    up_to_date_here
}

/// What a reader in one memory finds of the region it reads (see [`read_state`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum ReadState {
    /// Every element is up to date in the reader's memory.
    UpToDate,
    /// Some element is up to date only elsewhere (a copy is due); none is uninitialised.
    Lacking,
    /// Some element is up to date nowhere.
    Uninitialized,
}

/// [`reader_up_to_date`] that also tells uninitialised elements apart (one query for both).
pub(super) fn read_state(
    up_to_date: &RegionMap<MemoryMask>,
    dest: MemoryId,
    read: &Region,
) -> ReadState {
    let state_of = |mask: &MemoryMask| {
        if mask.is_empty() {
            ReadState::Uninitialized
        } else if mask.contains(dest) {
            ReadState::UpToDate
        } else {
            ReadState::Lacking
        }
    };
    if let Some(only) = up_to_date.single_value() {
        return state_of(only);
    }
    let mut state = ReadState::UpToDate;
    up_to_date.query_region(read, |_, mask| match (state, state_of(mask)) {
        (ReadState::Uninitialized, _) | (_, ReadState::UpToDate) => {}
        (_, found) => state = found,
    });
    state
}

/// Step 1: the elements each reader lacks, grouped by original writer and split by source and
/// destination allocation, as direct or staged copies.
fn collect_copy_needs(
    buffer: &BufferState,
    system: &SystemInfo,
    reads_by_memory: &ReadsByMemory,
) -> CopyNeeds {
    let mut needs = CopyNeeds::default();
    for (dest, reads) in reads_by_memory.iter() {
        for read in reads {
            let mut by_writer: BoxGroups<(MemoryId, InstructionId)> = BoxGroups::new();
            buffer.up_to_date.query_region(read, |b, mask| {
                if mask.is_empty() || mask.contains(dest) {
                    return; // up to date, or uninitialised (reported elsewhere)
                }
                buffer.original_writers.query_box(&b, |wb, w| {
                    by_writer.add((w.memory, w.writer), wb);
                });
            });
            for ((source, _), source_region) in by_writer.into_regions() {
                split_by_allocations(buffer, system, source, dest, &source_region, &mut needs);
            }
        }
    }
    needs
}

/// Splits what `dest` needs from `source` by the allocations of both memories.
fn split_by_allocations(
    buffer: &BufferState,
    system: &SystemInfo,
    source: MemoryId,
    dest: MemoryId,
    source_region: &Region,
    needs: &mut CopyNeeds,
) {
    let source_bounds = source_region.bounding_box();
    for source_alloc in &buffer.memories[source.0 as usize].allocations {
        if !source_alloc.allocated_box.intersects(&source_bounds) {
            continue;
        }
        let in_source = clip(source_region, &source_alloc.allocated_box);
        if in_source.is_empty() {
            continue;
        }
        let in_source_bounds = in_source.bounding_box();
        for dest_alloc in &buffer.memories[dest.0 as usize].allocations {
            if !dest_alloc.allocated_box.intersects(&in_source_bounds) {
                continue;
            }
            let copy = clip(&in_source, &dest_alloc.allocated_box);
            if copy.is_empty() {
                continue;
            }
            if system.can_copy(source, dest) {
                needs
                    .direct
                    .entry((source, dest))
                    .or_default()
                    .push(copy.into_owned());
            } else {
                needs
                    .staged
                    .entry(source)
                    .or_default()
                    .push((dest, copy.into_owned()));
            }
        }
    }
}

/// Steps 2 and 3: splits the copy regions symmetrically and plans a tree per region (one hop
/// between peers; otherwise staged through the host, linearised where that pays).
fn plan_copy_trees(buffer: &BufferState, needs: CopyNeeds, num_memories: usize) -> CopyPlans {
    let mut out = CopyPlans {
        plans: Vec::new(),
        staging_bytes: vec![0usize; num_memories],
        stage_align: lcm(buffer.elem_align.max(1), STAGING_ALIGNMENT),
    };
    for ((source, dest), mut regions) in needs.direct {
        symmetrically_split_overlapping_regions(&mut regions);
        for region in regions {
            let bbox = region.bounding_box();
            let from = buffer.memories[source.0 as usize].contiguous(&bbox).aid;
            let to = buffer.memories[dest.0 as usize].contiguous(&bbox).aid;
            let mut root = Hop::new(Location::InBuffer(from));
            root.chain(Location::InBuffer(to));
            out.plans.push((region, root));
        }
    }
    for (source, needs) in &needs.staged {
        let mut regions: Vec<Region> = needs.iter().map(|(_, need)| need.clone()).collect();
        symmetrically_split_overlapping_regions(&mut regions);
        for region in regions {
            let root = plan_staged_copy(buffer, *source, needs, &region, &mut out);
            out.plans.push((region, root));
        }
    }
    out
}

/// The tree of one staged piece: source (linearised there if that pays), host staging, then a
/// fan-out to every destination that needs the piece (de-linearised there if that pays).
fn plan_staged_copy(
    buffer: &BufferState,
    source: MemoryId,
    needs: &[(MemoryId, Region)],
    region: &Region,
    out: &mut CopyPlans,
) -> Hop {
    let stage_align = out.stage_align;
    let region_bytes = (region.area() * buffer.elem_size).div_ceil(stage_align) * stage_align;
    let staging_bytes = &mut out.staging_bytes;
    let bbox = region.bounding_box();
    let source_alloc = buffer.memories[source.0 as usize].contiguous(&bbox);
    let mut root = Hop::new(Location::InBuffer(source_alloc.aid));
    let mut stage_source = &mut root;
    if should_linearize_copy_region(
        source,
        &source_alloc.allocated_box,
        region,
        buffer.elem_size,
    ) {
        let offset = staging_bytes[source.0 as usize];
        staging_bytes[source.0 as usize] += region_bytes;
        stage_source = stage_source.chain(Location::Staged {
            memory: source,
            offset,
        });
    }
    let host_offset = staging_bytes[MemoryId::HOST.0 as usize];
    staging_bytes[MemoryId::HOST.0 as usize] += region_bytes;
    let host_hop = stage_source.chain(Location::Staged {
        memory: MemoryId::HOST,
        offset: host_offset,
    });
    // Destinations in memory order, each once (a broadcast).
    let mut destinations: Vec<MemoryId> = needs
        .iter()
        .filter(|(_, need)| need.intersects(region))
        .map(|(d, _)| *d)
        .collect();
    destinations.sort();
    destinations.dedup();
    for dest in destinations {
        let dest_index = dest.0 as usize;
        let dest_alloc = buffer.memories[dest_index].contiguous(&bbox);
        let mut unstage_source = &mut *host_hop;
        if should_linearize_copy_region(dest, &dest_alloc.allocated_box, region, buffer.elem_size) {
            let offset = staging_bytes[dest_index];
            staging_bytes[dest_index] += region_bytes;
            unstage_source = unstage_source.chain(Location::Staged {
                memory: dest,
                offset,
            });
        }
        unstage_source.chain(Location::InBuffer(dest_alloc.aid));
    }
    root
}

/// Step 6: every destination is now up to date for all of its readers.
fn mark_up_to_date(buffer: &mut BufferState, reads_by_memory: &ReadsByMemory) {
    for (mid, reads) in reads_by_memory.iter() {
        for read in reads {
            buffer.up_to_date.change_region_values(read, |mask| {
                let changed = !mask.contains(mid);
                mask.insert(mid);
                changed
            });
        }
    }
}

/// Emission state of one coherence step.
struct Emission<'a> {
    generator: &'a mut InstructionGraphGenerator,
    bid: BufferId,
    staging_index: &'a [Option<usize>],
    staging_reads: &'a mut [AccessFront],
}

impl Emission<'_> {
    fn resolve(&self, location: Location) -> (AllocationId, CopyLayout, bool) {
        match location {
            Location::InBuffer(aid) => {
                let buffer = &self.generator.buffers[self.bid];
                let b = buffer.memories[aid.memory().0 as usize]
                    .allocation(aid)
                    .allocated_box;
                (aid, CopyLayout::Strided { allocation: b }, true)
            }
            Location::Staged { memory, offset } => {
                let index = self.staging_index[memory.0 as usize].expect("staging space was sized");
                (
                    self.generator.staging_aid(memory, index),
                    CopyLayout::Linearized {
                        offset_bytes: offset,
                    },
                    false,
                )
            }
        }
    }

    /// One copy from `source` to `dest`, then the subtree below `dest`.
    fn hop(&mut self, region: &Region, source: &Hop, dest: &Hop, previous: Option<InstructionId>) {
        let (source_aid, source_layout, source_in_buffer) = self.resolve(source.location);
        let (dest_aid, dest_layout, dest_in_buffer) = self.resolve(dest.location);
        let g = &mut *self.generator;
        let bid = self.bid;
        let origin = if source_aid.memory() == dest_aid.memory() {
            if source_in_buffer {
                CopyOrigin::Linearizing
            } else {
                CopyOrigin::Delinearizing
            }
        } else if dest_in_buffer {
            CopyOrigin::Coherence
        } else {
            CopyOrigin::Staging
        };
        let buffer = g.buffers.get_mut(bid).expect("unknown buffer");
        let copy = g.em.create(
            InstructionKind::Copy {
                source: source_aid,
                dest: dest_aid,
                source_layout,
                dest_layout,
                region: region.clone(),
                elem_size: buffer.elem_size,
            },
            || RecordDetail::Copy {
                origin,
                buffer: bid,
            },
        );
        if source_in_buffer {
            let allocation =
                buffer.memories[source_aid.memory().0 as usize].allocation_mut(source_aid);
            g.em.read_from_allocation(copy, allocation, region);
        } else {
            self.staging_reads[source_aid.memory().0 as usize].add(copy);
        }
        if let Some(p) = previous {
            g.em.add_dependency(copy, p, DependencyOrigin::ReadFromAllocation);
        }
        if dest_in_buffer {
            let allocation = buffer.memories[dest_aid.memory().0 as usize].allocation_mut(dest_aid);
            g.em.write_to_allocation(copy, allocation, region);
        } else {
            let mid = dest_aid.memory().0 as usize;
            let index = self.staging_index[mid].expect("staging space was sized");
            let front = g.memories[mid].staging_pool[index].last_accesses.clone();
            g.em.add_dependencies_on_front(copy, &front, DependencyOrigin::WriteToAllocation);
        }
        for next in &dest.next {
            self.hop(region, dest, next, Some(copy));
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::grid::Range;

    const SIDE: usize = 6;

    fn arb_box() -> impl Strategy<Value = GridBox> {
        (0..SIDE, 1..=SIDE, 0..SIDE, 1..=SIDE).prop_map(|(x, w, y, h)| {
            GridBox::from_arrays([x, y, 0], [(x + w).min(SIDE), (y + h).min(SIDE), 1])
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// The fast check against a point-by-point oracle, on maps of one entry (a single
        /// write of the whole buffer) and of many.
        #[test]
        fn readers_up_to_date_matches_points(
            whole in prop::option::of(0u64..4),
            writes in prop::collection::vec((arb_box(), 0u64..4), 0..5),
            reads in prop::collection::vec((0u64..3, prop::collection::vec(arb_box(), 1..3)), 1..4),
        ) {
            let mut map = RegionMap::new(Range::new(SIDE, SIDE, 1), MemoryMask::EMPTY);
            let all = GridBox::from_arrays([0, 0, 0], [SIDE, SIDE, 1]);
            for (b, memories) in whole.iter().map(|m| (&all, m)).chain(writes.iter().map(|(b, m)| (b, m))) {
                let mut mask = MemoryMask::EMPTY;
                (0..*memories).for_each(|m| mask.insert(MemoryId(m)));
                map.update_box(b, mask);
            }
            let mut reads_by_memory = ReadsByMemory::new();
            for (dest, boxes) in &reads {
                let read = Region::from_boxes(boxes.iter().copied());
                reads_by_memory.entry(MemoryId(*dest)).push(read);
            }
            let mut oracle = true;
            for (dest, reads) in reads_by_memory.iter() {
                for read in reads {
                    for b in read.boxes() {
                        for x in b.min_arr()[0]..b.max_arr()[0] {
                            for y in b.min_arr()[1]..b.max_arr()[1] {
                                let mask = *map.get_point(&[x, y, 0]).expect("in the extent");
                                oracle &= mask.is_empty() || mask.contains(dest);
                            }
                        }
                    }
                }
            }
            prop_assert_eq!(readers_up_to_date(&map, &reads_by_memory), oracle);
        }
    }
}
