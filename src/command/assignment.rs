//! Splitting a task into chunks, assigning them to nodes, and the buffer requirements of every
//! chunk (C++ Celerity: `command_graph_generator.cc`). Every node computes the same split and
//! assignment, and what the chunks of the other nodes read of its data: that is how it knows
//! what to push without asking. C++ Celerity evaluates every remote chunk; here only the remote
//! chunks whose reads can meet pushable data are (see `compute_pushable_requirements`).

use std::sync::Arc;

use smallvec::SmallVec;

use super::buffer_state::SCALAR_BOX;
use crate::grid::{GridBox, Range, Region, RegionBuilder, split_1d, split_2d};
use crate::task::{RangeMapper, Task, TaskType};
use crate::types::{BufferId, NodeId};

/// The node that includes a reduction buffer's previous value (when the reduction does not
/// initialise to the identity).
pub const REDUCTION_INITIALIZER: NodeId = NodeId(0);

/// One chunk of a task and the node that runs it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AssignedChunk {
    /// The node that runs the chunk.
    pub node: NodeId,
    /// The chunk of the task's iteration space.
    pub chunk: GridBox,
}

/// Splits `task` into chunks and assigns them to nodes.
///
/// * Collective tasks: chunk `[i, i+1)` on node `i`. Fences: `[0,1)` on every node.
/// * Tasks with a variable split: `split_2d` (with the hint) or `split_1d` into
///   `num_nodes * multiplier` chunks (fewer when the granularity leaves no room); neighbouring
///   chunks go to the same node: chunk `i` runs on node `(i / max(1, chunks / nodes)) % nodes`.
/// * Everything else (master-node tasks): one chunk spanning the task, on node 0.
pub fn split_and_assign(task: &Task, num_nodes: usize, multiplier: usize) -> Vec<AssignedChunk> {
    let geometry = task.geometry();
    let full = geometry.global_box();
    match task.task_type() {
        TaskType::Collective | TaskType::Fence => (0..num_nodes)
            .map(|n| {
                let lo = if task.task_type() == TaskType::Collective {
                    n
                } else {
                    0
                };
                AssignedChunk {
                    node: NodeId(n as u64),
                    chunk: GridBox::from_arrays([lo, 0, 0], [lo + 1, 1, 1]),
                }
            })
            .collect(),
        _ if task.has_variable_split() => {
            let num_chunks = num_nodes * multiplier;
            let chunks = if task.hints().split_2d {
                split_2d(&full, &geometry.granularity, num_chunks)
            } else {
                split_1d(&full, &geometry.granularity, num_chunks)
            };
            let per_node = (chunks.len() / num_nodes).max(1);
            chunks
                .into_iter()
                .enumerate()
                .map(|(i, chunk)| AssignedChunk {
                    node: NodeId(((i / per_node) % num_nodes) as u64),
                    chunk,
                })
                .collect()
        }
        _ => vec![AssignedChunk {
            node: NodeId(0),
            chunk: full,
        }],
    }
}

/// A task's chunks with what the generator derives from them, computed once per task shape.
pub(super) struct Assignment {
    /// Every chunk of the task, in split order.
    pub chunks: Vec<AssignedChunk>,
    /// Indices of the local node's chunks.
    local: SmallVec<[usize; 1]>,
    /// The local node has one chunk, and it spans the task.
    local_spans_task: bool,
    /// The chunks follow each other along dimension 0 with equal extents in the others (a 1-D
    /// split), so the box from the first to the last chunk of a run covers exactly the run.
    sequence_along_dim0: bool,
    /// No chunk is empty: a built-in mapper's readers can then be found from coordinates alone
    /// ([`RangeMapper::chunks_reaching`]).
    chunks_nonempty: bool,
    /// The task's iteration space less the local chunks (what the overlapping-write check tests
    /// the local writes against), once per task shape instead of a region difference per task.
    pub remote_space: Region,
}

impl Assignment {
    fn new(chunks: Vec<AssignedChunk>, local: NodeId, task: &GridBox) -> Self {
        let local_chunks: SmallVec<[usize; 1]> = (0..chunks.len())
            .filter(|&i| chunks[i].node == local)
            .collect();
        let local_space = Region::from_boxes(local_chunks.iter().map(|&i| chunks[i].chunk));
        Assignment {
            local_spans_task: matches!(local_chunks[..], [i] if chunks[i].chunk == *task),
            remote_space: Region::from_box(*task).difference(&local_space),
            local: local_chunks,
            sequence_along_dim0: !chunks.is_empty() && is_sequence_along_dim0(&chunks),
            chunks_nonempty: chunks.iter().all(|c| !c.chunk.is_empty()),
            chunks,
        }
    }

    /// The local node's chunks.
    pub fn local_chunks(&self) -> impl Iterator<Item = &GridBox> + '_ {
        self.local.iter().map(|&i| &self.chunks[i].chunk)
    }

    /// Whether the local node has one chunk, and it spans the task.
    pub fn local_spans_task(&self) -> bool {
        self.local_spans_task
    }

    /// Whether some chunk runs on another node.
    pub fn has_remote(&self) -> bool {
        self.local.len() < self.chunks.len()
    }
}

/// What [`split_and_assign`] depends on besides the generator's node count and multiplier.
#[derive(Copy, Clone, PartialEq, Eq)]
struct SplitKey {
    task_type: TaskType,
    full: GridBox,
    granularity: Range,
    split_2d: bool,
}

/// The assignments of the last few task shapes: programs repeat a few shapes, and splitting
/// anew for every task would cost every node time in proportion to the number of nodes.
#[derive(Default)]
pub(super) struct SplitCache {
    entries: SmallVec<[(SplitKey, Arc<Assignment>); 4]>,
    /// The entry to replace next once the cache is full.
    next: usize,
}

impl SplitCache {
    const CAPACITY: usize = 4;

    /// The (cached) split and assignment of `task` as seen by node `local`.
    pub fn assignment(
        &mut self,
        task: &Task,
        num_nodes: usize,
        multiplier: usize,
        local: NodeId,
    ) -> Arc<Assignment> {
        let geometry = task.geometry();
        let key = SplitKey {
            task_type: task.task_type(),
            full: geometry.global_box(),
            granularity: geometry.granularity,
            split_2d: task.hints().split_2d,
        };
        if let Some((_, a)) = self.entries.iter().find(|(k, _)| *k == key) {
            return Arc::clone(a);
        }
        let chunks = split_and_assign(task, num_nodes, multiplier);
        let assignment = Arc::new(Assignment::new(chunks, local, &key.full));
        if self.entries.len() < Self::CAPACITY {
            self.entries.push((key, Arc::clone(&assignment)));
        } else {
            self.entries[self.next] = (key, Arc::clone(&assignment));
            self.next = (self.next + 1) % Self::CAPACITY;
        }
        assignment
    }

    /// Forgets every split (the multiplier changed).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.next = 0;
    }
}

/// The buffers whose pending reductions `task` may resolve: the accessed buffers, then the
/// reduction outputs (a reduction into a pending buffer chains onto it).
pub(super) fn touched_buffers(task: &Task) -> SmallVec<[BufferId; 4]> {
    let mut out: SmallVec<[BufferId; 4]> = SmallVec::new();
    for bid in task.access_map().accessed_buffers() {
        out.push(bid);
    }
    for r in task.reductions() {
        if !out.contains(&r.bid) {
            out.push(r.bid);
        }
    }
    out
}

/// What one chunk consumes and produces of one buffer.
#[derive(Clone, Debug)]
pub struct BufferRequirements {
    /// The buffer.
    pub bid: BufferId,
    /// Elements whose previous contents the chunk needs.
    pub consumed: Region,
    /// Elements the chunk writes.
    pub produced: Region,
}

/// Requirements of one chunk, one entry per accessed buffer (accessed buffers in order of first
/// access, then reduction outputs not otherwise accessed).
pub type RequirementsList = SmallVec<[BufferRequirements; 2]>;

/// What the chunks of one remote node consume of one buffer.
pub struct RemoteRead {
    /// The reading node.
    pub node: NodeId,
    /// The buffer read.
    pub bid: BufferId,
    /// The union of what the node's chunks consume of it.
    pub region: Region,
}

/// The requirements of all chunks of a task as seen from one node.
#[derive(Default)]
pub struct ChunkRequirements {
    /// Number of chunks of the whole task.
    pub num_chunks: usize,
    /// This node's chunks with their requirements, in chunk order; read the requirements through
    /// [`ChunkRequirements::local_chunks`] (the list is left empty for a whole task).
    local: SmallVec<[(GridBox, RequirementsList); 1]>,
    /// The only local chunk spans the task, which has no reductions: its requirements are the
    /// task-level regions of the access map, read there instead of copied (one node, master-node
    /// tasks).
    whole_task: bool,
    /// What remote nodes consume: one entry per node and buffer read, in ascending node order,
    /// a node's buffers in the order they were first read. One flat list rather than a list per
    /// node: all-to-all patterns add an entry per peer and task, and a nested list per node
    /// cost a copy of several hundred bytes each.
    pub remote_reads: Vec<RemoteRead>,
}

/// Per buffer of a local chunk: the buffer, what the chunk consumes and what it produces of it.
pub type RequirementRefs<'a> = (BufferId, &'a Region, &'a Region);

/// One of two iterators of the same items.
enum Either<A, B> {
    Left(A),
    Right(B),
}

impl<T, A: Iterator<Item = T>, B: Iterator<Item = T>> Iterator for Either<A, B> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        match self {
            Either::Left(a) => a.next(),
            Either::Right(b) => b.next(),
        }
    }
}

impl ChunkRequirements {
    /// This node's chunks of `task` (the task whose requirements these are), in chunk order, each
    /// with its requirements per buffer (accessed buffers in order of first access, then
    /// reduction outputs not otherwise accessed).
    pub fn local_chunks<'a>(
        &'a self,
        task: &'a Task,
    ) -> impl Iterator<Item = (&'a GridBox, impl Iterator<Item = RequirementRefs<'a>> + 'a)> + 'a
    {
        let whole_task = self.whole_task;
        self.local.iter().map(move |(chunk, list)| {
            let reqs = if whole_task {
                Either::Left(task.access_map().task_regions())
            } else {
                Either::Right(list.iter().map(|r| (r.bid, &r.consumed, &r.produced)))
            };
            (chunk, reqs)
        })
    }

    /// Number of local chunks.
    pub fn num_local_chunks(&self) -> usize {
        self.local.len()
    }

    /// Whether the only local chunk spans the task, which has no reductions: what it writes is
    /// what the task writes, so no other node writes anything.
    pub fn is_whole_task(&self) -> bool {
        self.whole_task
    }

    /// The nodes other than the local one whose chunks consume `bid`.
    pub fn remote_readers(&self, bid: BufferId) -> impl Iterator<Item = NodeId> + '_ {
        self.remote_reads
            .iter()
            .filter(move |r| r.bid == bid && !r.region.is_empty())
            .map(|r| r.node)
    }

    /// Whether a local chunk of `task` consumes `bid`.
    pub fn local_reads(&self, task: &Task, bid: BufferId) -> bool {
        self.local_chunks(task)
            .any(|(_, mut reqs)| reqs.any(|(b, consumed, _)| b == bid && !consumed.is_empty()))
    }
}

impl ChunkRequirements {
    /// Unites `region` into what remote node `node` reads of `bid`.
    // Inlined into both push searches: left to LLVM, the custom mappers' search (soup, jacobi)
    // measured 1.8 % more instructions once the built-in mappers' search called it too.
    #[inline(always)]
    pub(super) fn add_remote_read(&mut self, node: NodeId, bid: BufferId, region: Region) {
        // chunks are visited in node order and neighbouring chunks share a node, so a read
        // extends the last entry or follows it
        match self.remote_reads.last_mut() {
            Some(last) if last.node == node && last.bid == bid => {
                last.region = last.region.union(&region);
                return;
            }
            Some(last) if last.node < node => {
                if self.remote_reads.len() == 1 {
                    // a second reader: all-to-all patterns reach every remote chunk's node
                    let remote_chunks = self.num_chunks - self.local.len();
                    self.remote_reads.reserve(remote_chunks.saturating_sub(1));
                }
                self.remote_reads.push(RemoteRead { node, bid, region });
                return;
            }
            None => {
                self.remote_reads.push(RemoteRead { node, bid, region });
                return;
            }
            _ => {}
        }
        // another buffer of the last node, or a later access visiting the nodes again
        let start = self.remote_reads.partition_point(|r| r.node < node);
        let run = self.remote_reads[start..].partition_point(|r| r.node == node);
        let node_reads = &mut self.remote_reads[start..start + run];
        match node_reads.iter_mut().find(|r| r.bid == bid) {
            Some(r) => r.region = r.region.union(&region),
            None => (self.remote_reads).insert(start + run, RemoteRead { node, bid, region }),
        }
    }
}

fn entry(list: &mut RequirementsList, bid: BufferId) -> &mut BufferRequirements {
    let pos = match list.iter().position(|r| r.bid == bid) {
        Some(pos) => pos,
        None => {
            list.push(BufferRequirements {
                bid,
                consumed: Region::new(),
                produced: Region::new(),
            });
            list.len() - 1
        }
    };
    &mut list[pos]
}

/// The consumed and produced regions of every buffer `task` accesses when running `chunk` on
/// `node`, plus the scalar box of its reductions (produced everywhere, consumed on the
/// initializer node when the previous value is included). With `consumers_only`, produced regions
/// are left empty and producing-only accesses are not evaluated.
pub fn chunk_requirements(
    task: &Task,
    node: NodeId,
    chunk: &GridBox,
    consumers_only: bool,
) -> RequirementsList {
    let mut list = RequirementsList::new();
    chunk_requirements_into(task, node, chunk, consumers_only, &mut list);
    list
}

/// [`chunk_requirements`] into `list` (emptied first), which lives where its caller keeps it: the
/// list is several hundred bytes, and an empty kernel cost more in copies of it than in work.
fn chunk_requirements_into(
    task: &Task,
    node: NodeId,
    chunk: &GridBox,
    consumers_only: bool,
    list: &mut RequirementsList,
) {
    let map = task.access_map();
    list.clear();
    if *chunk == task.geometry().global_box() {
        // one chunk spanning the task (one node, master-node tasks): the access map holds its
        // regions already
        for bid in map.accessed_buffers() {
            list.push(BufferRequirements {
                bid,
                consumed: map.task_consumed_region(bid).clone(),
                produced: if consumers_only {
                    Region::new()
                } else {
                    map.task_produced_region(bid).clone()
                },
            });
        }
    } else {
        evaluate_chunk(task, chunk, consumers_only, list);
    }
    for reduction in task.reductions() {
        let req = entry(list, reduction.bid);
        if !consumers_only {
            req.produced = Region::from_box(SCALAR_BOX);
        }
        if node == REDUCTION_INITIALIZER && reduction.init_from_buffer {
            req.consumed = Region::from_box(SCALAR_BOX);
        }
    }
}

/// The per-buffer regions of `chunk`, by evaluating every access's mapper on it, into `list`.
fn evaluate_chunk(task: &Task, chunk: &GridBox, consumers_only: bool, list: &mut RequirementsList) {
    let map = task.access_map();
    // on the stack for up to four buffers (a stencil step's), as the instruction stage's lists
    let mut builders: SmallVec<[(BufferId, RegionBuilder, RegionBuilder); 4]> = SmallVec::new();
    for (i, access) in map.accesses().iter().enumerate() {
        let pos = match builders.iter().position(|(b, _, _)| *b == access.bid) {
            Some(pos) => pos,
            None => {
                builders.push((access.bid, RegionBuilder::new(), RegionBuilder::new()));
                builders.len() - 1
            }
        };
        let consumer = access.mode.is_consumer();
        let producer = access.mode.is_producer() && !consumers_only;
        if !consumer && !producer {
            continue;
        }
        let region = map.requirements_for_nth_access(i, chunk);
        let (_, consumed, produced) = &mut builders[pos];
        if consumer {
            consumed.add_region(&region);
        }
        if producer {
            produced.add_region(&region);
        }
    }
    for (bid, consumed, produced) in builders.drain(..) {
        list.push(BufferRequirements {
            bid,
            consumed: consumed.into_region(),
            produced: produced.into_region(),
        });
    }
}

/// Requirements of all chunks, split into this node's chunks and the other nodes' reads.
pub fn compute_requirements(
    task: &Task,
    chunks: &[AssignedChunk],
    local: NodeId,
    out: &mut ChunkRequirements,
) {
    out.reset(chunks.len());
    let local_chunks = chunks.iter().filter(|c| c.node == local);
    let full = task.geometry().global_box();
    let spans_task = matches!(local_chunks.clone().next(), Some(c) if c.chunk == full)
        && local_chunks.clone().count() == 1;
    out.set_local(task, local_chunks, spans_task);
    for c in chunks.iter().filter(|c| c.node != local) {
        for r in chunk_requirements(task, c.node, &c.chunk, true) {
            if !r.consumed.is_empty() {
                out.add_remote_read(c.node, r.bid, r.consumed);
            }
        }
    }
}

impl ChunkRequirements {
    /// Empties the remote reads for a task of `num_chunks` chunks, keeping the storage.
    fn reset(&mut self, num_chunks: usize) {
        self.num_chunks = num_chunks;
        self.remote_reads.clear();
    }

    /// Evaluates the local chunks `local` into the entries of the previous task (a new entry is
    /// a copy of several hundred bytes); a single chunk spanning a task without reductions
    /// (`spans_task`: `local` is that chunk) is not evaluated: its requirements are the task's
    /// (see [`ChunkRequirements::local_chunks`]).
    fn set_local<'a>(
        &mut self,
        task: &Task,
        local: impl Iterator<Item = &'a AssignedChunk> + Clone,
        spans_task: bool,
    ) {
        let n = local.clone().count();
        self.local.truncate(n);
        while self.local.len() < n {
            self.local.push((GridBox::EMPTY, RequirementsList::new()));
        }
        self.whole_task = spans_task && task.reductions().is_empty();
        if self.whole_task {
            let (chunk, list) = &mut self.local[0];
            *chunk = local.clone().next().expect("one local chunk").chunk;
            list.clear();
            return;
        }
        for ((chunk, list), c) in self.local.iter_mut().zip(local) {
            *chunk = c.chunk;
            chunk_requirements_into(task, c.node, &c.chunk, false, list);
        }
    }
}

/// A consuming access whose remote reads may meet data this node could push.
pub(super) struct PushCandidate {
    /// Index of the access in the task's access map.
    pub access: usize,
    /// Its buffer.
    pub bid: BufferId,
    /// A box containing everything of `bid` this node may have to push.
    pub pushable: GridBox,
}

/// [`compute_requirements`] (into `out`) with the remote reads limited to what can lead to a
/// push: the reads of the candidate accesses by remote chunks whose read bounds meet the
/// candidate's pushable box. Range mappers are monotonic (Celerity's contract for custom mappers, which the task
/// graph relies on as well: a chunk reads at most what a larger chunk containing it reads), so a
/// run of neighbouring chunks can be ruled out at once by evaluating the mapper on the box that
/// spans the run; the chunks are bisected down to the ones that read pushable data. A node thus
/// evaluates mappers for the chunks it exchanges data with, not for every remote chunk.
pub(super) fn compute_pushable_requirements(
    task: &Task,
    assignment: &Assignment,
    local: NodeId,
    candidates: &[PushCandidate],
    out: &mut ChunkRequirements,
) {
    let chunks = &assignment.chunks;
    out.reset(chunks.len());
    out.set_local(
        task,
        assignment.local.iter().map(|&i| &chunks[i]),
        assignment.local_spans_task,
    );
    if candidates.is_empty() || !assignment.has_remote() {
        return;
    }
    let map = task.access_map();
    for cand in candidates {
        let access = &map.accesses()[cand.access];
        let reaching = if assignment.chunks_nonempty {
            access
                .mapper
                .chunks_reaching(&cand.pushable, access.buffer_range)
        } else {
            None
        };
        if let Some(reaching) = reaching {
            add_reads_of_chunks_reaching(task, assignment, local, cand, &reaching, out);
            continue;
        }
        let reads = |b: &GridBox| {
            map.bounds_for_nth_access(cand.access, b)
                .intersects(&cand.pushable)
        };
        // a custom mapper yields its bounds only by building the region: evaluate it once per
        // chunk and keep the region of a hit
        let custom = matches!(map.accesses()[cand.access].mapper, RangeMapper::Custom(_));
        let mut visit = |i: usize, known_hit: bool| {
            let c = &chunks[i];
            let region = if custom || known_hit || reads(&c.chunk) {
                map.requirements_for_nth_access(cand.access, &c.chunk)
            } else {
                return;
            };
            if (custom && !known_hit) && !region.bounding_box().intersects(&cand.pushable) {
                return;
            }
            out.add_remote_read(c.node, cand.bid, region);
        };
        if assignment.sequence_along_dim0 {
            // the span of all chunks is the task: the candidate filter has looked at it. A custom
            // mapper builds its region for a span test as for a chunk, so once both halves of
            // all chunks read pushable data (all-to-all patterns: gathers, transposes) the chunks
            // are visited one by one instead of bisected further; a built-in mapper's bounds are
            // cheap, and only both halves of a half that read make it visit them all.
            let all = (0, chunks.len());
            bisect_readers(chunks, all, local, &reads, &mut visit, (false, custom));
        } else {
            for (i, c) in chunks.iter().enumerate() {
                if c.node != local {
                    visit(i, false);
                }
            }
        }
    }
}

/// The reads of candidate `cand` (a built-in mapper) by the remote chunks that meet `reaching`
/// ([`RangeMapper::chunks_reaching`]), which are those whose reads meet the pushable box: found by
/// comparing coordinates, where evaluating the mapper on spans and chunks was most of a stencil
/// task's cost with many nodes. Out of line, so that the custom mappers' path stays as it was.
#[inline(never)]
fn add_reads_of_chunks_reaching(
    task: &Task,
    assignment: &Assignment,
    local: NodeId,
    cand: &PushCandidate,
    reaching: &GridBox,
    out: &mut ChunkRequirements,
) {
    let chunks = &assignment.chunks;
    let run = if assignment.sequence_along_dim0 {
        run_meeting(chunks, reaching)
    } else {
        0..chunks.len()
    };
    for c in &chunks[run] {
        if c.node != local && c.chunk.intersects(reaching) {
            let region = task
                .access_map()
                .requirements_for_nth_access(cand.access, &c.chunk);
            out.add_remote_read(c.node, cand.bid, region);
        }
    }
}

/// The indices of the chunks of a sequence along dimension 0 (see [`is_sequence_along_dim0`])
/// that can meet `target`: those whose extent along dimension 0 meets target's, or none when the
/// other dimensions, which all chunks share, miss it.
fn run_meeting(chunks: &[AssignedChunk], target: &GridBox) -> std::ops::Range<usize> {
    let (first, t_min, t_max) = (&chunks[0].chunk, target.min_arr(), target.max_arr());
    let (c_min, c_max) = (first.min_arr(), first.max_arr());
    if (1..3).any(|d| c_max[d] <= t_min[d] || t_max[d] <= c_min[d]) {
        return 0..0;
    }
    let lo = chunks.partition_point(|c| c.chunk.max_arr()[0] <= t_min[0]);
    let hi = chunks.partition_point(|c| c.chunk.min_arr()[0] < t_max[0]);
    lo..hi.max(lo)
}

/// Whether the chunks follow each other along dimension 0 with equal extents in the others.
fn is_sequence_along_dim0(chunks: &[AssignedChunk]) -> bool {
    chunks.windows(2).all(|w| {
        let (a, b) = (&w[0].chunk, &w[1].chunk);
        let (a_min, a_max, b_min, b_max) = (a.min_arr(), a.max_arr(), b.min_arr(), b.max_arr());
        a_max[0] == b_min[0] && a_min[1..] == b_min[1..] && a_max[1..] == b_max[1..]
    })
}

/// Visits the remote chunks of `chunks[lo..hi]` whose read may meet the pushable data, skipping
/// every run of chunks whose spanning box reads none of it; `visit(i, known_hit)` tests chunk `i`
/// itself unless `known_hit` (its own box was found to read pushable data). `checked`: the span
/// of `lo..hi` was found to read pushable data. `dense`: so were both halves of the parent
/// run; when both halves of this run read it too, the chunks are visited one by one without
/// testing smaller spans (all-to-all patterns, where every chunk reads).
fn bisect_readers(
    chunks: &[AssignedChunk],
    (lo, hi): (usize, usize),
    local: NodeId,
    reads: &impl Fn(&GridBox) -> bool,
    visit: &mut impl FnMut(usize, bool),
    (checked, dense): (bool, bool),
) {
    /// Runs this short are tested chunk by chunk.
    const LEAF_RUN: usize = 4;
    let span =
        |lo: usize, hi: usize| GridBox::new(chunks[lo].chunk.min(), chunks[hi - 1].chunk.max());
    if hi - lo <= LEAF_RUN {
        for (i, c) in chunks.iter().enumerate().take(hi).skip(lo) {
            if c.node != local {
                visit(i, checked && hi - lo == 1);
            }
        }
        return;
    }
    let mid = lo + (hi - lo) / 2;
    let (left, right) = (reads(&span(lo, mid)), reads(&span(mid, hi)));
    if left && right && dense {
        for (i, c) in chunks.iter().enumerate().take(hi).skip(lo) {
            if c.node != local {
                visit(i, false);
            }
        }
        return;
    }
    if left {
        bisect_readers(chunks, (lo, mid), local, reads, visit, (true, right));
    }
    if right {
        bisect_readers(chunks, (mid, hi), local, reads, visit, (true, left));
    }
}
