//! Resolving pending reductions across nodes (C++ Celerity: `command_graph_generator.cc`,
//! `resolve_pending_reductions`).
//!
//! A reduction split over several nodes leaves a partial result on every participating node.
//! When a later task reads the buffer (or reduces into it again), each node that holds a partial
//! result pushes it to every reading node; a node without one pushes an empty region, which only
//! tells the reader not to wait for it. Every reading node awaits the partials and combines them
//! with a reduction command (in node order, so all nodes compute bit-identical results).

use super::assignment::ChunkRequirements;
use super::buffer_state::{BufferState, SCALAR_BOX, WriteState};
use super::command::CommandKind;
use super::generator::CommandGraphGenerator;
use super::node_bitset::NodeBitset;
use super::replication::Replication;
use crate::grid::Region;
use crate::policy::ErrorPolicy;
use crate::task::{DependencyKind, DependencyOrigin, ReductionInfo, Task};
use crate::types::{BufferId, CommandId, TransferId};

impl CommandGraphGenerator {
    /// Pushes, awaits and reduces the pending reductions among `touched` (the task's
    /// [`touched_buffers`](super::assignment::touched_buffers)) that the task reads.
    pub(super) fn resolve_pending_reductions(
        &mut self,
        task: &Task,
        reqs: &ChunkRequirements,
        touched: &[BufferId],
    ) {
        for &bid in touched {
            let Some(buffer) = self.buffers.get(bid) else {
                continue;
            };
            let Some(reduction) = buffer.pending_reduction else {
                continue;
            };
            let writer = *buffer
                .last_writers
                .get_point(SCALAR_BOX.min_arr())
                .expect("reduction buffers hold the scalar point");
            let mut post = BufferState::new(
                buffer.range,
                writer.stale(),
                Replication::nowhere(),
                if self.policies.uninitialized_read != ErrorPolicy::Ignore {
                    Region::from_box(SCALAR_BOX)
                } else {
                    Region::new()
                },
            );
            post.name = buffer.name.clone();
            self.may_hold_stale |= post.may_hold_stale;
            // the local reduction result (if any) is the only data this node may push later
            post.pushable_bounds = SCALAR_BOX;
            let transfer = TransferId {
                consumer: task.id(),
                buffer: bid,
                reduction: reduction.rid,
            };

            // remote readers first: the local reduction command overwrites our partial result
            let mut participants = NodeBitset::EMPTY;
            for nid in reqs.remote_readers(bid) {
                participants.insert(nid);
            }
            if !participants.is_empty() {
                self.push_partial_result(task, transfer, writer, participants);
                let scalar = Region::from_box(SCALAR_BOX);
                for nid in participants.iter() {
                    post.replicated.add(nid, &scalar);
                }
            }

            debug_assert!(
                reqs.num_local_chunks() <= 1,
                "several local chunks of a reduction"
            );
            if reqs.local_reads(task, bid) {
                let reduce = self.await_and_reduce(task, transfer, reduction, writer);
                post.last_writers
                    .update_box(&SCALAR_BOX, WriteState::new(reduce, false));
                participants.insert(self.local_nid);
            }

            if !participants.is_empty() {
                self.completed_reductions.push(reduction.rid);
                self.buffers.insert(bid, post);
            }
        }
    }

    /// Pushes this node's partial result (written by `writer`) to the remote readers, or an
    /// empty notification if this node holds none.
    fn push_partial_result(
        &mut self,
        task: &Task,
        transfer: TransferId,
        writer: WriteState,
        readers: NodeBitset,
    ) {
        let notification_only = !writer.is_fresh();
        let region = if notification_only {
            Region::new()
        } else {
            Region::from_box(SCALAR_BOX)
        };
        let targets = readers.iter().map(|n| (n, region.clone())).collect();
        let push = self.create(task.id(), CommandKind::Push { transfer, targets });
        if notification_only {
            self.add_epoch_dependency(push);
        } else {
            let bid = transfer.buffer;
            self.table.add_read(push, bid, &[SCALAR_BOX]);
            self.add_dependency(
                push,
                writer.command(),
                DependencyKind::True,
                DependencyOrigin::Dataflow,
            );
        }
    }

    /// Awaits the other nodes' partial results and combines them (with the local one, if this
    /// node holds one) in a reduction command, which is returned.
    fn await_and_reduce(
        &mut self,
        task: &Task,
        transfer: TransferId,
        reduction: ReductionInfo,
        writer: WriteState,
    ) -> CommandId {
        let await_push = self.create(
            task.id(),
            CommandKind::AwaitPush {
                transfer,
                region: Region::from_box(SCALAR_BOX),
            },
        );
        self.add_epoch_dependency(await_push);
        let reduce = self.create(
            task.id(),
            CommandKind::Reduction {
                reduction,
                has_local_contribution: writer.is_fresh(),
            },
        );
        if writer.is_fresh() {
            self.add_dependency(
                reduce,
                writer.command(),
                DependencyKind::True,
                DependencyOrigin::Dataflow,
            );
        }
        self.add_dependency(
            reduce,
            await_push,
            DependencyKind::True,
            DependencyOrigin::Dataflow,
        );
        let scalar = Region::from_box(SCALAR_BOX);
        self.add_anti_dependencies(task.id(), transfer.buffer, &scalar, reduce);
        reduce
    }
}
