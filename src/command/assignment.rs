//! Splitting a task into chunks, assigning them to nodes, and the buffer requirements of every
//! chunk (C++ Celerity: `command_graph_generator.cc`). Every node computes the same split and
//! assignment, and the requirements of the chunks of all other nodes too: that is how it knows what
//! to push without asking.

use smallvec::SmallVec;

use super::buffer_state::SCALAR_BOX;
use crate::grid::{GridBox, Region, RegionBuilder, split_1d, split_2d};
use crate::task::{Task, TaskType};
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

/// What one node's chunks consume, per buffer.
pub type BufferReads = SmallVec<[(BufferId, Region); 2]>;

/// The requirements of all chunks of a task as seen from one node.
pub struct ChunkRequirements {
    /// Number of chunks of the whole task.
    pub num_chunks: usize,
    /// This node's chunks with their requirements, in chunk order.
    pub local: SmallVec<[(GridBox, RequirementsList); 1]>,
    /// Per remote node (ascending) that has chunks: the union of what they consume, per buffer.
    pub remote_reads: Vec<(NodeId, BufferReads)>,
}

impl ChunkRequirements {
    /// The nodes other than the local one whose chunks consume `bid`.
    pub fn remote_readers(&self, bid: BufferId) -> impl Iterator<Item = NodeId> + '_ {
        self.remote_reads.iter().filter_map(move |(nid, reads)| {
            reads
                .iter()
                .any(|(b, r)| *b == bid && !r.is_empty())
                .then_some(*nid)
        })
    }

    /// Whether a local chunk consumes `bid`.
    pub fn local_reads(&self, bid: BufferId) -> bool {
        self.local
            .iter()
            .any(|(_, reqs)| reqs.iter().any(|r| r.bid == bid && !r.consumed.is_empty()))
    }
}

impl ChunkRequirements {
    /// The reads of remote node `node`, added (empty) if it has none yet.
    pub(super) fn remote_reads_of(&mut self, node: NodeId) -> &mut BufferReads {
        let pos = match self.remote_reads.iter().position(|(n, _)| *n == node) {
            Some(pos) => pos,
            None => {
                self.remote_reads.push((node, SmallVec::new()));
                self.remote_reads.len() - 1
            }
        };
        &mut self.remote_reads[pos].1
    }
}

/// Unites `region` into the read of `bid` in `reads`.
pub(super) fn add_read(reads: &mut BufferReads, bid: BufferId, region: Region) {
    match reads.iter_mut().find(|(b, _)| *b == bid) {
        Some((_, r)) => *r = r.union(&region),
        None => reads.push((bid, region)),
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
    let map = task.access_map();
    let mut builders: SmallVec<[(BufferId, RegionBuilder, RegionBuilder); 2]> = SmallVec::new();
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
    let mut list: RequirementsList = builders
        .into_iter()
        .map(|(bid, consumed, produced)| BufferRequirements {
            bid,
            consumed: consumed.into_region(),
            produced: produced.into_region(),
        })
        .collect();
    for reduction in task.reductions() {
        let req = entry(&mut list, reduction.bid);
        if !consumers_only {
            req.produced = Region::from_box(SCALAR_BOX);
        }
        if node == REDUCTION_INITIALIZER && reduction.init_from_buffer {
            req.consumed = Region::from_box(SCALAR_BOX);
        }
    }
    list
}

/// Requirements of all chunks, split into this node's chunks and the other nodes' reads.
pub fn compute_requirements(
    task: &Task,
    chunks: &[AssignedChunk],
    local: NodeId,
) -> ChunkRequirements {
    compute_requirements_with(task, chunks, local, |c, out| {
        let reqs = chunk_requirements(task, c.node, &c.chunk, true);
        let reads = out.remote_reads_of(c.node);
        for r in reqs {
            if !r.consumed.is_empty() {
                add_read(reads, r.bid, r.consumed);
            }
        }
    })
}

/// [`compute_requirements`] with the remote reads left to `remote_reads`, which records what a
/// remote chunk reads (through [`ChunkRequirements::remote_reads_of`]); the command graph
/// generator keeps only the reads that can lead to a push.
pub(super) fn compute_requirements_with(
    task: &Task,
    chunks: &[AssignedChunk],
    local: NodeId,
    mut remote_reads: impl FnMut(&AssignedChunk, &mut ChunkRequirements),
) -> ChunkRequirements {
    let mut out = ChunkRequirements {
        num_chunks: chunks.len(),
        local: SmallVec::new(),
        remote_reads: Vec::new(),
    };
    for c in chunks {
        if c.node == local {
            out.local
                .push((c.chunk, chunk_requirements(task, c.node, &c.chunk, false)));
        } else {
            remote_reads(c, &mut out);
        }
    }
    out.remote_reads.sort_by_key(|(n, _)| *n);
    out
}
