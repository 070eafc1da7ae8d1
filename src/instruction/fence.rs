//! Buffer fences straight out of device memory.
//!
//! A fence copies its box into the program's (user) memory. By default the generator makes host
//! memory coherent first and copies from there (device → pinned host allocation → user memory:
//! two hops, a full-size host allocation, and the DMA and the host copy one after the other).
//! Where the backend copies between user memory and a device memory itself (the CUDA backend
//! stages pageable memory through pinned chunks, overlapping DMA and host copy, and DMAs pinned
//! user memory as is: `SystemInfo::connect_user_memory_to_devices`), a box that is up to date in
//! one device allocation is copied from there in one hop instead.

use crate::grid::GridBox;
use crate::types::{AllocationId, BufferId, InstructionId, MemoryId};

use super::generator::InstructionGraphGenerator;
use super::instruction::{CopyLayout, InstructionKind};
use super::recorder::{CopyOrigin, RecordDetail};

impl InstructionGraphGenerator {
    /// Emits the fence's copy of `fence_box` from a device allocation straight into
    /// `user_allocation`, if one device memory holds the whole box up to date in one allocation
    /// and can copy to user memory; `None` leaves the fence to the host-memory path (also where
    /// host memory is already up to date, or await-pushes are still pending).
    pub(super) fn emit_direct_fence_copy(
        &mut self,
        bid: BufferId,
        fence_box: &GridBox,
        user_allocation: AllocationId,
    ) -> Option<InstructionId> {
        let buffer = self.buffers.get(bid).expect("unknown buffer");
        if !buffer.pending_receives.is_empty() || !buffer.pending_gathers.is_empty() {
            return None;
        }
        let mut holders = None;
        buffer.up_to_date.query_box(fence_box, |_, mask| {
            holders = Some(
                holders.map_or(*mask, |h: crate::backend::system_info::MemoryMask| {
                    h.intersection(*mask)
                }),
            );
        });
        let holders = holders?;
        if holders.contains(MemoryId::HOST) || holders.contains(MemoryId::USER) {
            return None;
        }
        let (memory, index) = holders.iter().find_map(|memory| {
            let usable =
                memory >= MemoryId::FIRST_DEVICE && self.system.can_copy(memory, MemoryId::USER);
            usable
                .then(|| buffer.memories[memory.0 as usize].find_contiguous(fence_box))
                .flatten()
                .map(|index| (memory, index))
        })?;
        let elem_size = buffer.elem_size;
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        let source = &mut buffer.memories[memory.0 as usize].allocations[index];
        let copy = self.em.create(
            InstructionKind::Copy {
                source: source.aid,
                dest: user_allocation,
                source_layout: CopyLayout::Strided {
                    allocation: source.allocated_box,
                },
                dest_layout: CopyLayout::Strided {
                    allocation: *fence_box,
                },
                region: (*fence_box).into(),
                elem_size,
            },
            || RecordDetail::Copy {
                origin: CopyOrigin::Fence,
                buffer: bid,
            },
        );
        self.em
            .read_from_allocation(copy, source, &(*fence_box).into());
        Some(copy)
    }
}
