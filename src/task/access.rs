//! Access modes and the buffer access map of a task: which regions of which buffers a task (or
//! any chunk of it) consumes and produces.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};

use smallvec::SmallVec;

use super::geometry::TaskGeometry;
use super::range_mapper::{Chunk, Mapped, RangeMapper, fmt_box_dims, saturating_box};
use crate::grid::{BoxVec, GridBox, Range, Region, RegionBuilder};
use crate::types::{BufferId, TaskId};

/// How a kernel accesses a buffer (API.md, `celerity_access_mode`).
///
/// Producers are all modes but `Read`; consumers are all modes but the two discard modes. A plain
/// `Write` is both: elements it does not write keep their values, so the old contents are needed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AccessMode {
    /// Read only.
    Read,
    /// Write; elements not written keep their values.
    Write,
    /// Read and write.
    ReadWrite,
    /// Write; the previous contents of the accessed region are not needed.
    DiscardWrite,
    /// Read and write; the previous contents of the accessed region are not needed.
    DiscardReadWrite,
}

impl AccessMode {
    /// Every mode, in the C enum's order.
    pub const ALL: [AccessMode; 5] = [
        AccessMode::Read,
        AccessMode::Write,
        AccessMode::ReadWrite,
        AccessMode::DiscardWrite,
        AccessMode::DiscardReadWrite,
    ];

    /// True for every mode that writes.
    #[inline]
    pub fn is_producer(self) -> bool {
        self != AccessMode::Read
    }

    /// True for every mode that needs the previous contents.
    #[inline]
    pub fn is_consumer(self) -> bool {
        !matches!(
            self,
            AccessMode::DiscardWrite | AccessMode::DiscardReadWrite
        )
    }

    /// Lower-case name for labels and records.
    pub fn name(self) -> &'static str {
        match self {
            AccessMode::Read => "read",
            AccessMode::Write => "write",
            AccessMode::ReadWrite => "read_write",
            AccessMode::DiscardWrite => "discard_write",
            AccessMode::DiscardReadWrite => "discard_read_write",
        }
    }
}

/// One access of a task: a buffer (with the extent its mapper is clamped to), a mode and a mapper.
#[derive(Clone, Debug)]
pub struct BufferAccess {
    /// The accessed buffer.
    pub bid: BufferId,
    /// How it is accessed.
    pub mode: AccessMode,
    /// Which part of it each chunk accesses.
    pub mapper: RangeMapper,
    /// The buffer's dimensionality.
    pub buffer_dims: usize,
    /// The buffer's extent.
    pub buffer_range: Range,
}

/// Task-level consumed and produced regions of one buffer.
#[derive(Clone, Debug)]
struct BufferRegions {
    bid: BufferId,
    consumed: Region,
    produced: Region,
}

/// The accesses of a task, with the task-level regions (one chunk spanning the whole iteration
/// space) cached per buffer. Chunk-level queries evaluate the mappers again.
#[derive(Debug)]
pub struct BufferAccessMap {
    task: TaskId,
    /// The geometry (the task's: [`Task::geometry`](super::Task::geometry) reads it here),
    /// accesses and per-buffer regions, inline: a task is built in its `Arc`'s allocation, which
    /// holds everything of the common small task.
    data: AccessData,
    /// Set once a clamped custom mapper result has been reported for this task.
    clamp_warned: AtomicBool,
}

#[derive(Debug)]
struct AccessData {
    geometry: TaskGeometry,
    accesses: SmallVec<[BufferAccess; 2]>,
    /// One entry per accessed buffer, in order of first access.
    buffers: SmallVec<[BufferRegions; 2]>,
}

/// `into ∪= other` with [`Region::union`]'s result, but without its copy where one side is
/// empty or a single box the other covers (the same fast paths, in the same order).
#[inline]
fn unite(into: &mut Region, other: Region) {
    if into.is_empty() {
        *into = other;
    } else if !covers_single(into, &other) {
        if into.boxes().len() == 1 && other.covers(into) {
            *into = other;
        } else {
            *into = into.union(&other);
        }
    }
}

/// [`unite`] of a region the caller keeps (copied only where `into` changes).
#[inline]
fn unite_copy(into: &mut Region, other: &Region) {
    if into.is_empty() {
        *into = other.clone();
    } else if !covers_single(into, other) {
        *into = into.union(other);
    }
}

/// True if `other` is empty or a single box that `into` covers; an equal single box (a read
/// and a write of the same box) is recognised without the covering test.
#[inline]
fn covers_single(into: &Region, other: &Region) -> bool {
    match other.boxes() {
        [] => true,
        [b] => into.boxes() == [*b] || into.covers_box(b),
        _ => false,
    }
}

/// Returned for buffers a task does not access.
static EMPTY_REGION: LazyLock<Region> = LazyLock::new(Region::new);

impl BufferAccessMap {
    /// Evaluates every access on the whole iteration space of `geometry` and caches the
    /// task-level regions. A custom mapper result outside its buffer is clamped and logged (once
    /// per task, here or in a later chunk query).
    pub fn new(
        task: TaskId,
        accesses: SmallVec<[BufferAccess; 2]>,
        geometry: TaskGeometry,
    ) -> Self {
        let mut map = BufferAccessMap::empty(task, geometry);
        map.data.accesses = accesses;
        map.finish(geometry);
        map
    }

    /// A map without accesses (horizons, epochs, host-object fences, tasks without buffers).
    pub fn empty(task: TaskId, geometry: TaskGeometry) -> Self {
        BufferAccessMap {
            task,
            data: AccessData {
                geometry,
                accesses: SmallVec::new(),
                buffers: SmallVec::new(),
            },
            clamp_warned: AtomicBool::new(false),
        }
    }

    /// Drops the accesses (with their range mappers) and regions of a pruned task's map, keeping
    /// their storage for the next task built in the same allocation.
    // Inline: out of line (as whole-program optimisation chose) a pruned task without accesses
    // paid a call with its register saves for one test.
    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        if !self.data.accesses.is_empty() {
            self.data.accesses.clear();
            self.data.buffers.clear();
        }
    }

    /// The task these accesses belong to, for a map reused by another task.
    #[inline]
    pub(crate) fn set_task(&mut self, task: TaskId) {
        self.task = task;
    }

    /// Makes a cleared map the (empty) map of task `task`, of the default geometry.
    pub(crate) fn reset(&mut self, task: TaskId) {
        debug_assert!(self.data.accesses.is_empty() && self.data.buffers.is_empty());
        self.task = task;
        self.data.geometry = TaskGeometry::default();
        *self.clamp_warned.get_mut() = false;
    }

    /// Appends an access to a map built in place; [`BufferAccessMap::finish`] completes it.
    // Inline: out of line, each access paid a call and a copy of itself into the callee's frame.
    #[inline]
    pub(crate) fn push(&mut self, access: BufferAccess) {
        self.data.accesses.push(access);
    }

    /// Completes a map built with [`BufferAccessMap::push`]: sets the task's geometry and
    /// evaluates every access on the whole iteration space, as [`BufferAccessMap::new`] does.
    // Inline: a task without accesses (horizon-heavy programs, host tasks) then pays neither a
    // call nor the copy of the geometry into its frame.
    #[inline]
    pub(crate) fn finish(&mut self, geometry: TaskGeometry) {
        let data = &mut self.data;
        data.geometry = geometry;
        if data.accesses.is_empty() {
            return;
        }
        compute_task_regions(self.task, &self.clamp_warned, data);
    }

    #[inline]
    fn accesses_slice(&self) -> &[BufferAccess] {
        &self.data.accesses
    }

    #[inline]
    fn buffers_slice(&self) -> &[BufferRegions] {
        &self.data.buffers
    }

    /// The chunk `execution_range` of the task.
    fn chunk_of(&self, execution_range: &GridBox) -> Chunk {
        let g = &self.data.geometry;
        Chunk::new(
            g.dims,
            execution_range.min(),
            execution_range.range(),
            g.global_size,
        )
    }

    /// Runs the mapper of access `i` and reports a clamped custom result once per task.
    fn evaluate(&self, i: usize, chunk: &Chunk) -> Region {
        self.evaluate_access(i, &self.accesses_slice()[i], chunk)
    }

    fn evaluate_access(&self, i: usize, acc: &BufferAccess, chunk: &Chunk) -> Region {
        evaluate_access(self.task, &self.clamp_warned, i, acc, chunk)
    }

    /// The iteration space the accesses are evaluated on (the task's geometry).
    #[inline]
    pub fn geometry(&self) -> &TaskGeometry {
        &self.data.geometry
    }

    /// The task these accesses belong to.
    pub fn task(&self) -> TaskId {
        self.task
    }

    /// The accesses, in submission order (the accessor index of the C ABI).
    pub fn accesses(&self) -> &[BufferAccess] {
        self.accesses_slice()
    }

    /// Number of accesses.
    pub fn num_accesses(&self) -> usize {
        self.accesses_slice().len()
    }

    /// Buffer and mode of access `n`.
    pub fn nth_access(&self, n: usize) -> (BufferId, AccessMode) {
        let acc = &self.accesses_slice()[n];
        (acc.bid, acc.mode)
    }

    /// The accessed buffers, each once, in order of first access.
    pub fn accessed_buffers(&self) -> impl ExactSizeIterator<Item = BufferId> + '_ {
        self.buffers_slice().iter().map(|b| b.bid)
    }

    /// True if some access targets `bid`.
    pub fn accesses_buffer(&self, bid: BufferId) -> bool {
        self.buffers_slice().iter().any(|b| b.bid == bid)
    }

    /// Per accessed buffer, each once in order of first access: its task-level consumed and
    /// produced regions.
    pub(crate) fn task_regions(
        &self,
    ) -> impl Iterator<Item = (BufferId, &Region, &Region)> + Clone + '_ {
        self.buffers_slice()
            .iter()
            .map(|b| (b.bid, &b.consumed, &b.produced))
    }

    fn regions_of(&self, bid: BufferId) -> Option<&BufferRegions> {
        self.buffers_slice().iter().find(|b| b.bid == bid)
    }

    /// Union of the consuming accesses to `bid` over the whole task (empty if none).
    pub fn task_consumed_region(&self, bid: BufferId) -> &Region {
        self.regions_of(bid).map_or(&EMPTY_REGION, |b| &b.consumed)
    }

    /// Bounding box of [`BufferAccessMap::task_consumed_region`].
    #[inline]
    pub fn task_consumed_bounds(&self, bid: BufferId) -> GridBox {
        self.regions_of(bid)
            .map_or(GridBox::EMPTY, |b| b.consumed.bounding_box())
    }

    /// Union of the producing accesses to `bid` over the whole task (empty if none).
    pub fn task_produced_region(&self, bid: BufferId) -> &Region {
        self.regions_of(bid).map_or(&EMPTY_REGION, |b| &b.produced)
    }

    /// The region access `n` touches when the task runs `execution_range`.
    pub fn requirements_for_nth_access(&self, n: usize, execution_range: &GridBox) -> Region {
        self.evaluate(n, &self.chunk_of(execution_range))
    }

    /// The bounding box of [`BufferAccessMap::requirements_for_nth_access`], without building
    /// the region for built-in mappers (a custom mapper is evaluated as there, clamp warning
    /// included).
    pub fn bounds_for_nth_access(&self, n: usize, execution_range: &GridBox) -> GridBox {
        let acc = &self.accesses_slice()[n];
        let chunk = self.chunk_of(execution_range);
        match acc.mapper.bounds(&chunk, acc.buffer_range) {
            Some(bounds) => bounds,
            None => self.evaluate_access(n, acc, &chunk).bounding_box(),
        }
    }

    fn union_of_accesses(
        &self,
        bid: BufferId,
        execution_range: &GridBox,
        keep: impl Fn(AccessMode) -> bool,
    ) -> Region {
        let chunk = self.chunk_of(execution_range);
        let mut builder = RegionBuilder::new();
        for (i, acc) in self.accesses_slice().iter().enumerate() {
            if acc.bid == bid && keep(acc.mode) {
                builder.add_region(&self.evaluate(i, &chunk));
            }
        }
        builder.into_region()
    }

    /// Union of the consuming accesses to `bid` for the chunk `execution_range`.
    pub fn compute_consumed_region(&self, bid: BufferId, execution_range: &GridBox) -> Region {
        self.union_of_accesses(bid, execution_range, AccessMode::is_consumer)
    }

    /// Union of the producing accesses to `bid` for the chunk `execution_range`.
    pub fn compute_produced_region(&self, bid: BufferId, execution_range: &GridBox) -> Region {
        self.union_of_accesses(bid, execution_range, AccessMode::is_producer)
    }

    /// One bounding box per non-empty access to `bid` for the chunk: the boxes that must be
    /// allocated contiguously.
    pub fn compute_required_contiguous_boxes(
        &self,
        bid: BufferId,
        execution_range: &GridBox,
    ) -> BoxVec {
        let chunk = self.chunk_of(execution_range);
        self.accesses_slice()
            .iter()
            .enumerate()
            .filter(|(_, acc)| acc.bid == bid)
            .map(|(i, _)| self.evaluate(i, &chunk).bounding_box())
            .filter(|b| !b.is_empty())
            .collect()
    }
}

/// Runs the mapper of access `i` of `task` and reports a clamped custom result once per task.
fn evaluate_access(
    task: TaskId,
    clamp_warned: &AtomicBool,
    i: usize,
    acc: &BufferAccess,
    chunk: &Chunk,
) -> Region {
    let Mapped {
        region,
        clamped_from,
    } = acc.mapper.map(chunk, acc.buffer_dims, acc.buffer_range);
    let first_clamp = clamped_from.filter(|_| !clamp_warned.swap(true, Ordering::Relaxed));
    if let Some(raw) = first_clamp {
        let dims = acc.buffer_dims;
        tracing::warn!(
            "{}: custom range mapper of access #{i} returned {} outside buffer {} range {}; clamped to the buffer",
            task,
            fmt_box_dims(&saturating_box(raw), dims),
            acc.bid,
            fmt_box_dims(&GridBox::full_range(acc.buffer_range), dims),
        );
    }
    region
}

/// Fills `data.buffers`: per buffer, the union of its consuming and of its producing accesses.
fn compute_task_regions(task: TaskId, clamp_warned: &AtomicBool, data: &mut AccessData) {
    let g = &data.geometry;
    let whole = Chunk::new(g.dims, g.global_offset, g.global_size, g.global_size);
    let buffers = &mut data.buffers;
    for (i, acc) in data.accesses.iter().enumerate() {
        let region = evaluate_access(task, clamp_warned, i, acc, &whole);
        let modes = (acc.mode.is_consumer(), acc.mode.is_producer());
        match buffers.iter_mut().find(|b| b.bid == acc.bid) {
            // a second access to the buffer (a read and a write of one buffer, as in stencils
            // and gathers): unite, moving or copying only where the result changes
            Some(entry) => match modes {
                (true, true) => {
                    unite_copy(&mut entry.consumed, &region);
                    unite(&mut entry.produced, region);
                }
                (true, false) => unite(&mut entry.consumed, region),
                (false, _) => unite(&mut entry.produced, region),
            },
            None => {
                // an empty entry first, the region moved into its slot: built as a tuple and
                // then an entry, the regions were copied twice more on their way into the list
                buffers.push(BufferRegions {
                    bid: acc.bid,
                    consumed: Region::new(),
                    produced: Region::new(),
                });
                let entry = buffers.last_mut().expect("just pushed");
                match modes {
                    (true, true) => {
                        entry.consumed = region.clone();
                        entry.produced = region;
                    }
                    (true, false) => entry.consumed = region,
                    (false, _) => entry.produced = region,
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "tests/access.rs"]
mod tests;
