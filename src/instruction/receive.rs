//! Deferred await-pushes and their receive instructions (C++ Celerity:
//! `instruction_graph_generator.cc`).
//!
//! An await-push emits nothing when compiled: it waits in the buffer's pending receives (or
//! pending gathers, for a reduction) until a command reads an intersecting region. Then the
//! receive is committed into host memory, per host allocation covering it:
//!
//! * the received part is intersected with every concurrent reader's region and split
//!   symmetrically, so every element is awaited exactly once;
//! * several independent parts give one `split_receive` (ordered after the allocation's last
//!   accesses) plus one `await_receive` per part, each the last and original writer of its part,
//!   so each reader waits only for its own data;
//!   (What arrives but no current reader needs gets an await of its own, so a later reader has
//!   an instruction to wait for; Celerity leaves its old writer in place.)
//! * a single part gives one `receive`.
//!
//! Afterwards only host memory holds the received data.

use smallvec::SmallVec;

use crate::backend::system_info::MemoryMask;
use crate::grid::{
    Region, connected_subregion_bounding_boxes, symmetrically_split_overlapping_regions,
};
use crate::types::{BufferId, CommandId, MemoryId, ReductionId, TransferId};

use super::buffer_state::{OriginalWrite, PendingGather, PendingReceive, clip};
use super::generator::InstructionGraphGenerator;
use super::instruction::InstructionKind;
use super::recorder::{DependencyOrigin, RecordDetail};

fn host_write(writer: crate::types::InstructionId) -> OriginalWrite {
    OriginalWrite {
        writer,
        memory: MemoryId::HOST,
    }
}

impl InstructionGraphGenerator {
    /// Stores an await-push until a reader needs it.
    pub(super) fn defer_await_push(
        &mut self,
        command: CommandId,
        transfer: TransferId,
        region: &Region,
    ) {
        if let Some(r) = self.em.recorder_mut() {
            r.await_push_commands.push((transfer, command));
        }
        let buffer = self
            .buffers
            .get_mut(transfer.buffer)
            .expect("unknown buffer");
        debug_assert!(
            buffer
                .pending_receives
                .iter()
                .all(|r| !r.region.intersects(region)),
            "await-push into a region already awaited without a read in between"
        );
        if transfer.reduction == ReductionId::NONE {
            buffer.pending_receives.push(PendingReceive {
                consumer: transfer.consumer,
                region: region.clone(),
                required_contiguous_boxes: connected_subregion_bounding_boxes(region),
            });
        } else {
            debug_assert_eq!(region.boxes().len(), 1);
            buffer.pending_gathers.push(PendingGather {
                consumer: transfer.consumer,
                reduction: transfer.reduction,
                gather_box: region.bounding_box(),
            });
        }
    }

    /// Emits the receives of `receive` into host memory, split by the `concurrent_reads`.
    pub(super) fn commit_pending_receive(
        &mut self,
        bid: BufferId,
        receive: &PendingReceive,
        concurrent_reads: &[Region],
    ) {
        let transfer = TransferId {
            consumer: receive.consumer,
            buffer: bid,
            reduction: ReductionId::NONE,
        };
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        let elem_size = buffer.elem_size;
        let host = &mut buffer.memories[MemoryId::HOST.0 as usize];
        let mut allocations: SmallVec<[usize; 2]> = SmallVec::new();
        for b in &receive.required_contiguous_boxes {
            let i = host
                .find_contiguous(b)
                .expect("received boxes are allocated contiguously");
            if !allocations.contains(&i) {
                allocations.push(i);
            }
        }

        for i in allocations {
            let allocation = &mut host.allocations[i];
            let received = clip(&receive.region, &allocation.allocated_box);
            // a single reader leaves at most one part: nothing to split
            let mut parts: Vec<Region> = Vec::new();
            if concurrent_reads.len() > 1 {
                parts.extend(
                    concurrent_reads
                        .iter()
                        .map(|r| r.intersection(&received))
                        .filter(|r| !r.is_empty()),
                );
                symmetrically_split_overlapping_regions(&mut parts);
            }
            if parts.len() > 1 {
                // what no reader needs now still arrives: await it too, so later readers have
                // an instruction to wait for
                let awaited = parts.iter().fold(Region::new(), |acc, p| acc.union(p));
                let rest = received.difference(&awaited);
                if !rest.is_empty() {
                    parts.push(rest);
                }
            }
            let (aid, allocated_box) = (allocation.aid, allocation.allocated_box);

            if parts.len() > 1 {
                let split = self.em.create(
                    InstructionKind::SplitReceive {
                        transfer,
                        region: Region::clone(&received),
                        dest: aid,
                        allocated_box,
                        elem_size,
                    },
                    || RecordDetail::Buffer { buffer: bid },
                );
                // ordered like a write, but only the awaits become writers
                self.em.add_dependencies_on_last_accesses(
                    split,
                    allocation,
                    &received,
                    DependencyOrigin::WriteToAllocation,
                );
                for part in parts {
                    let await_receive = self.em.create(
                        InstructionKind::AwaitReceive {
                            transfer,
                            region: part.clone(),
                        },
                        || RecordDetail::Buffer { buffer: bid },
                    );
                    self.em
                        .add_dependency(await_receive, split, DependencyOrigin::SplitReceive);
                    allocation.track_atomic_write(&part, await_receive);
                    buffer
                        .original_writers
                        .update_region_unique(&part, host_write(await_receive));
                }
            } else {
                let recv = self.em.create(
                    InstructionKind::Receive {
                        transfer,
                        region: Region::clone(&received),
                        dest: aid,
                        allocated_box,
                        elem_size,
                    },
                    || RecordDetail::Buffer { buffer: bid },
                );
                self.em.write_to_allocation(recv, allocation, &received);
                buffer
                    .original_writers
                    .update_region_unique(&received, host_write(recv));
            }
        }
        buffer
            .up_to_date
            .update_region(&receive.region, MemoryMask::single(MemoryId::HOST));
    }
}
