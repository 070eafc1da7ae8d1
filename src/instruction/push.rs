//! Push commands: pilots and sends (C++ Celerity: `instruction_graph_generator.cc`).
//!
//! Everything generated for a push gets [`priority::PUSH_BASE_PRIORITY`] on top of its kind's
//! priority, so the local coherence work of a send is done early. Per target node:
//!
//! * an empty region is a reduction notification: an empty pilot, no send;
//! * otherwise the pushed boxes are grouped by original writer (one send region per producer,
//!   so each send starts when its producer finishes), allocated in host memory and made coherent
//!   there; each box is split into communicator-compatible boxes (by the *buffer* range, so the
//!   split also suits the receiver's allocation) and each gets a pilot and a `send` reading the
//!   host allocation.

use smallvec::SmallVec;

use crate::grid::{BoxVec, GridBox, Region, split_into_communicator_compatible_boxes};
use crate::types::{CommandId, InstructionId, MemoryId, NodeId, ReductionId, TransferId};

use super::buffer_state::{BoxGroups, PerMemory};
use super::generator::InstructionGraphGenerator;
use super::instruction::{InstructionKind, priority};
use super::recorder::RecordDetail;

impl InstructionGraphGenerator {
    pub(super) fn compile_push(
        &mut self,
        command: CommandId,
        transfer: TransferId,
        targets: &[(NodeId, Region)],
    ) {
        let bid = transfer.buffer;
        for (target, region) in targets {
            if region.is_empty() {
                debug_assert_ne!(transfer.reduction, ReductionId::NONE);
                self.em.create_pilot(*target, transfer, GridBox::EMPTY);
                continue;
            }
            self.em.base_priority = priority::PUSH_BASE_PRIORITY;

            let buffer = &self.buffers[bid];
            let mut by_writer: BoxGroups<InstructionId> = BoxGroups::new();
            let mut required = BoxVec::new();
            for (b, w) in buffer.original_writers.get_region_values(region) {
                by_writer.add(w.writer, b);
                required.push(b);
            }
            let send_regions: SmallVec<[Region; 1]> =
                by_writer.into_regions().map(|(_, r)| r).collect();
            self.allocate_contiguously(bid, MemoryId::HOST, required);
            let mut reads = PerMemory::new();
            *reads.entry(MemoryId::HOST) = send_regions;
            self.establish_coherence(bid, &reads);
            let send_regions = std::mem::take(reads.entry(MemoryId::HOST));

            let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
            let (range, elem_size) = (buffer.range, buffer.elem_size);
            let host = &mut buffer.memories[MemoryId::HOST.0 as usize];
            for send_region in &send_regions {
                for full in send_region.boxes() {
                    for compatible in split_into_communicator_compatible_boxes(&range, full) {
                        // a box normally lies in one allocation; split it along allocations if not
                        for allocation in host.allocations.iter_mut() {
                            let send_box = compatible.intersection(&allocation.allocated_box);
                            if send_box.is_empty() {
                                continue;
                            }
                            let message = self.em.create_pilot(*target, transfer, send_box);
                            let send = self.em.create(
                                InstructionKind::Send {
                                    to: *target,
                                    message,
                                    source: allocation.aid,
                                    allocation_range: allocation.allocated_box.range(),
                                    offset_in_allocation: send_box.min()
                                        - allocation.allocated_box.min(),
                                    send_range: send_box.range(),
                                    elem_size,
                                },
                                || RecordDetail::Send {
                                    command,
                                    transfer,
                                    send_box,
                                },
                            );
                            self.em
                                .read_from_allocation(send, allocation, &send_box.into());
                        }
                    }
                }
            }
        }
    }
}
