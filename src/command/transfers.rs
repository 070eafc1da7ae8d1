//! Pushes, await-pushes and the freshness update of a distributed task (C++ Celerity:
//! `command_graph_generator.cc`, `generate_distributed_commands`). Only the original producer of
//! data pushes it, each region at most once per target, and every node awaits exactly what the
//! others push to it.

use smallvec::SmallVec;

use super::assignment::ChunkRequirements;
use super::buffer_state::{BufferState, WriteState};
use super::command::CommandKind;
use super::generator::CommandGraphGenerator;
use crate::grid::{GridBox, Region, RegionBuilder};
use crate::policy::ErrorPolicy;
use crate::task::{DependencyKind, DependencyOrigin, Task};
use crate::types::{BufferId, CommandId, NodeId, ReductionId, TransferId};

/// The pushes of one buffer under construction.
struct PushScratch {
    bid: BufferId,
    /// The push's own target list, built in place: a target's only piece is its region (no
    /// builder, no second list to convert).
    targets: Vec<(NodeId, Region)>,
    /// All pieces of the last target once it has more than one, united when the target is done.
    last_pieces: RegionBuilder,
    sources: SmallVec<[CommandId; 4]>,
}

impl PushScratch {
    /// Adds `piece` to target `nid`, which is the last target or a new one (targets come in
    /// ascending node order, each node's pieces in a run).
    fn add_piece(&mut self, nid: NodeId, piece: Region) {
        match self.targets.last() {
            Some((last, region)) if *last == nid => {
                if self.last_pieces.is_empty() {
                    self.last_pieces.add_region(region);
                }
                self.last_pieces.add_region(&piece);
            }
            _ => {
                self.finish_last_target();
                self.targets.push((nid, piece));
            }
        }
    }

    /// Unites the pieces of the last target, if it has several.
    fn finish_last_target(&mut self) {
        if !self.last_pieces.is_empty() {
            let pieces = std::mem::take(&mut self.last_pieces);
            self.targets.last_mut().expect("pieces of a target").1 = pieces.into_region();
        }
    }
}

/// Pieces of a buffer's last-writer map: a box and its writer.
type Pieces = SmallVec<[(GridBox, WriteState); 4]>;

/// The pushable pieces (fresh, produced here) of one buffer within the bounds of all remote
/// reads of it, found with one last-writer query for all targets: each target then only clips
/// them to its read. `None` when there are too many pieces for clipping to be cheaper than a
/// query per target.
struct SharedPieces {
    bid: BufferId,
    pieces: Option<Pieces>,
}

impl SharedPieces {
    /// More pieces than this are looked up per target.
    const MAX_PIECES: usize = 8;

    fn query(bid: BufferId, reqs: &ChunkRequirements, buffer: &BufferState) -> Self {
        let mut bounds = GridBox::EMPTY;
        for read in reqs.remote_reads.iter().filter(|r| r.bid == bid) {
            bounds = bounds.bounding_box(&read.region.bounding_box());
        }
        let bounds = bounds.intersection(&buffer.pushable_bounds);
        let mut pieces: Option<Pieces> = Some(SmallVec::new());
        buffer.last_writers.query_box(&bounds, |b, ws| {
            if let Some(list) = &mut pieces
                && ws.is_fresh()
                && !ws.is_replicated()
            {
                if list.len() == Self::MAX_PIECES {
                    pieces = None;
                } else {
                    list.push((b, *ws));
                }
            }
        });
        SharedPieces { bid, pieces }
    }
}

/// Position of `key` in a small association list, inserting `make()` at the end if absent. The
/// last entry is tried first: callers visit keys in runs.
pub(super) fn slot<K: PartialEq + Copy, V>(
    list: &mut SmallVec<[(K, V); 2]>,
    key: K,
    make: impl FnOnce() -> V,
) -> usize {
    if let Some((k, _)) = list.last()
        && *k == key
    {
        return list.len() - 1;
    }
    match list.iter().position(|(k, _)| *k == key) {
        Some(pos) => pos,
        None => {
            list.push((key, make()));
            list.len() - 1
        }
    }
}

/// Adds `written` to a buffer's initialised region; after its first writes a buffer is usually
/// initialised where it is written again, and the coverage test is cheaper than the union.
fn extend_initialized(initialized: &mut Region, written: &Region) {
    if !initialized.covers(written) {
        *initialized = initialized.union(written);
    }
}

impl CommandGraphGenerator {
    /// One push per buffer: for every remote chunk's consumed region, the parts this node
    /// produced (fresh, not replicated) that the target does not hold yet.
    pub(super) fn generate_pushes(&mut self, task: &Task, reqs: &ChunkRequirements) {
        if reqs.remote_reads.is_empty() {
            return;
        }
        let mut per_buffer: SmallVec<[PushScratch; 2]> = SmallVec::new();
        let mut shared: SmallVec<[SharedPieces; 2]> = SmallVec::new();
        let mut pushable: Pieces = SmallVec::new();
        for read in &reqs.remote_reads {
            let (nid, bid, consumed) = (read.node, read.bid, &read.region);
            let buffer = &self.buffers[bid];
            if !consumed.bounding_box().intersects(&buffer.pushable_bounds) {
                continue;
            }
            let pos = match shared.iter().position(|s| s.bid == bid) {
                Some(pos) => pos,
                None => {
                    shared.push(SharedPieces::query(bid, reqs, buffer));
                    shared.len() - 1
                }
            };
            pushable.clear();
            match &shared[pos].pieces {
                Some(pieces) => {
                    for &(p, ws) in pieces {
                        for c in consumed.boxes() {
                            let b = p.intersection(c);
                            if !b.is_empty() {
                                pushable.push((b, ws));
                            }
                        }
                    }
                }
                None => buffer.last_writers.query_region(consumed, |b, ws| {
                    if ws.is_fresh() && !ws.is_replicated() {
                        pushable.push((b, *ws));
                    }
                }),
            }
            // the pieces are disjoint, so what one of them sends does not change what the
            // others miss: the target's whole region is added to the replication once the
            // push is built (one union per target instead of one per piece)
            for &(b, ws) in &pushable {
                let missing = buffer.replicated.missing_on(nid, &b);
                if missing.is_empty() {
                    continue;
                }
                let pos = match per_buffer.iter().position(|p| p.bid == bid) {
                    Some(pos) => pos,
                    None => {
                        per_buffer.push(PushScratch {
                            bid,
                            // at most one target per remote read
                            targets: Vec::with_capacity(reqs.remote_reads.len()),
                            last_pieces: RegionBuilder::new(),
                            sources: SmallVec::new(),
                        });
                        per_buffer.len() - 1
                    }
                };
                let scratch = &mut per_buffer[pos];
                scratch.add_piece(nid, missing);
                if !scratch.sources.contains(&ws.command()) {
                    scratch.sources.push(ws.command());
                }
            }
        }

        // buffers in the task's access order, for determinism independent of node order
        per_buffer.sort_by_key(|p| {
            task.access_map()
                .accessed_buffers()
                .position(|b| b == p.bid)
                .unwrap_or(usize::MAX)
        });
        // drained, not moved: a by-value loop first copies the whole inline list
        for mut scratch in per_buffer.drain(..) {
            scratch.finish_last_target();
            let targets = std::mem::take(&mut scratch.targets);
            let replicated = &mut self
                .buffers
                .get_mut(scratch.bid)
                .expect("validated")
                .replicated;
            for (nid, region) in &targets {
                replicated.add(*nid, region);
            }
            let transfer = TransferId {
                consumer: task.id(),
                buffer: scratch.bid,
                reduction: ReductionId::NONE,
            };
            let cmd = self.create_push(task.id(), transfer, targets);
            scratch.sources.sort_unstable();
            for &source in &scratch.sources {
                self.add_dependency(
                    cmd,
                    source,
                    DependencyKind::True,
                    DependencyOrigin::Dataflow,
                );
            }
        }
    }

    /// One await-push per buffer for the parts the local chunks consume but do not hold fresh.
    pub(super) fn generate_await_pushes(&mut self, task: &Task, reqs: &ChunkRequirements) {
        if !self.may_hold_stale {
            return;
        }
        let mut per_buffer: SmallVec<[(BufferId, RegionBuilder); 2]> = SmallVec::new();
        for (_, requirements) in reqs.local_chunks(task) {
            for (bid, consumed, _) in requirements {
                if consumed.is_empty() {
                    continue;
                }
                let buffer = &self.buffers[bid];
                if !buffer.may_hold_stale {
                    continue;
                }
                buffer.last_writers.query_region(consumed, |b, ws| {
                    if !ws.is_fresh() {
                        let pos = slot(&mut per_buffer, bid, RegionBuilder::new);
                        per_buffer[pos].1.add_box(b);
                    }
                });
            }
        }
        for (bid, builder) in per_buffer.drain(..) {
            let region = builder.into_region();
            debug_assert!(self.num_nodes > 1, "stale data on a single node");
            let transfer = TransferId {
                consumer: task.id(),
                buffer: bid,
                reduction: ReductionId::NONE,
            };
            let cmd = self.create(
                task.id(),
                CommandKind::AwaitPush {
                    transfer,
                    region: region.clone(),
                },
            );
            self.add_anti_dependencies(task.id(), bid, &region, cmd);
            self.add_epoch_dependency(cmd);
            // Received data that this task overwrites everywhere (a read-modify-write of what the
            // other nodes own) goes in stale at once: the freshness update would mark it so
            // right after the task's writes, one more map update per region. What a local chunk
            // overwrites gets its writer then anyway.
            let mut received = WriteState::new(cmd, true);
            let overwritten = task.access_map().task_produced_region(bid);
            if !overwritten.is_empty()
                && task.reductions().iter().all(|r| r.bid != bid)
                && overwritten.covers(&region)
            {
                received = received.stale();
            }
            self.buffers
                .get_mut(bid)
                .expect("validated")
                .last_writers
                .update_region_unique(&region, received); // `cmd` is new: no entry holds it
        }
    }

    /// Marks what other nodes wrote in this task as stale here (keeping the old writers for
    /// anti-dependencies), and extends the initialised regions. The local chunks' commands are
    /// `first_chunk_cmd` and later, so a last writer older than it within what the task writes
    /// was overwritten by another node (no region difference needed). `whole_task`: the only local
    /// chunk spans the task (which has no reductions), so no other node wrote anything.
    pub(super) fn update_fresh_regions(
        &mut self,
        task: &Task,
        first_chunk_cmd: CommandId,
        whole_task: bool,
    ) {
        let track_init = self.policies.uninitialized_read != ErrorPolicy::Ignore;
        if whole_task {
            if track_init {
                for (bid, _, produced) in task.access_map().task_regions() {
                    if !produced.is_empty() {
                        let buffer = self.buffers.get_mut(bid).expect("validated");
                        extend_initialized(&mut buffer.initialized, produced);
                    }
                }
            }
            return;
        }
        let map = task.access_map();
        let scalar = Region::from_box(super::buffer_state::SCALAR_BOX);
        let reduction_outputs = task
            .reductions()
            .iter()
            .map(|r| r.bid)
            .filter(|bid| !map.accesses_buffer(*bid));
        for bid in map.accessed_buffers().chain(reduction_outputs) {
            let global_writes = if task.reductions().iter().any(|r| r.bid == bid) {
                &scalar
            } else {
                map.task_produced_region(bid)
            };
            if global_writes.is_empty() {
                continue;
            }
            let buffer = self.buffers.get_mut(bid).expect("validated");
            if track_init {
                extend_initialized(&mut buffer.initialized, global_writes);
            }
            // fresh data of older writers: the remote writes (local writes have new writers),
            // marked stale in the query that finds them
            let mut any_stale = false;
            buffer
                .last_writers
                .change_region_values(global_writes, |ws| {
                    let remote = ws.is_fresh() && ws.command() < first_chunk_cmd;
                    if remote {
                        *ws = ws.stale();
                        any_stale = true;
                    }
                    remote
                });
            buffer.may_hold_stale |= any_stale;
            self.may_hold_stale |= any_stale;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(i: usize, j: usize) -> GridBox {
        GridBox::from_arrays([i, j, 0], [i + 1, j + 1, 1])
    }

    /// Targets built piece by piece equal, per node, the union of that node's pieces (the oracle:
    /// one region builder per node); single pieces and runs of several, touching or not.
    #[test]
    fn push_targets_are_the_union_of_their_pieces() {
        let runs: [(u64, &[GridBox]); 4] = [
            (1, &[point(0, 1)]),
            (2, &[point(0, 2), point(0, 3), point(1, 2)]),
            (3, &[point(2, 2)]),
            (5, &[point(3, 0), point(0, 0)]),
        ];
        let mut scratch = PushScratch {
            bid: BufferId(0),
            targets: Vec::new(),
            last_pieces: RegionBuilder::new(),
            sources: SmallVec::new(),
        };
        for (nid, pieces) in runs {
            for &p in pieces {
                scratch.add_piece(NodeId(nid), Region::from_box(p));
            }
        }
        scratch.finish_last_target();
        let expected: Vec<(NodeId, Region)> = runs
            .iter()
            .map(|&(nid, pieces)| (NodeId(nid), Region::from_boxes(pieces.iter().copied())))
            .collect();
        assert_eq!(scratch.targets, expected);
    }
}
