//! Local and global reductions (C++ Celerity: `instruction_graph_generator.cc`).
//!
//! *Local*: the inputs are the task's local chunks plus, when this node is the reduction
//! initialiser and the reduction keeps the buffer's value, that current value. With one input the
//! kernel's write is final. Otherwise a host gather allocation gets one slot per input; the
//! current value is copied into slot 0 before the kernels run, each chunk's partial result into
//! its slot after, and a `reduce` writes the result into the host allocation of the buffer (host
//! memory becomes the original writer). The gather allocation is freed after the reduce.
//!
//! *Global* (reduction command, more than one node): a gather allocation of one slot per node is
//! filled with the identity, the local partial result (if the command graph says there is one)
//! is copied into slot `local_node`, a `gather_receive` collects the peers' slots (an empty pilot
//! leaves the identity in place), and a `reduce` over all slots writes the host allocation.

use smallvec::SmallVec;

use crate::grid::Region;
use crate::task::ReductionInfo;
use crate::types::{
    AllocationId, BufferId, CommandId, InstructionId, MemoryId, ReductionId, TransferId,
};

use super::buffer_state::{BufferAllocation, BufferState};
use super::emitter::Emitter;
use super::generator::{InstructionGraphGenerator, LocalChunk, SCALAR_BOX};
use super::instruction::{CopyLayout, InstructionKind};
use super::recorder::{AllocOrigin, CopyOrigin, DependencyOrigin, RecordDetail, ReductionScope};

/// A local reduction between `prepare_local_reduction` and `finish_local_reduction`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalReduction {
    /// 1 when slot 0 holds the buffer's current value, else 0.
    first_chunk_slot: usize,
    num_inputs: usize,
    chunk_bytes: usize,
    gather: Option<(AllocationId, InstructionId)>,
}

impl InstructionGraphGenerator {
    /// Allocates the gather space (and saves the current value) when there is more than one input.
    pub(super) fn prepare_local_reduction(
        &mut self,
        reduction: &ReductionInfo,
        is_initializer: bool,
        num_chunks: usize,
    ) -> LocalReduction {
        let bid = reduction.bid;
        let include_value = reduction.init_from_buffer && is_initializer;
        let (elem_size, elem_align) = {
            let b = &self.buffers[bid];
            (b.elem_size, b.elem_align)
        };
        let mut local = LocalReduction {
            first_chunk_slot: usize::from(include_value),
            num_inputs: usize::from(include_value) + num_chunks,
            chunk_bytes: SCALAR_BOX.area() * elem_size,
            gather: None,
        };
        if local.num_inputs == 1 {
            return local;
        }
        let gather_aid = self.new_allocation_id(MemoryId::HOST);
        let alloc = create_gather_allocation(
            &mut self.em,
            bid,
            gather_aid,
            local.num_inputs,
            local.chunk_bytes,
            elem_align,
        );
        local.gather = Some((gather_aid, alloc));
        if include_value {
            let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
            let source = buffer.memories[MemoryId::HOST.0 as usize].contiguous_mut(&SCALAR_BOX);
            let after = (alloc, DependencyOrigin::AllocationLifetime);
            create_gather_copy(&mut self.em, bid, source, gather_aid, 0, elem_size, after);
        }
        local
    }

    /// Gathers the partial results and reduces them into host memory.
    pub(super) fn finish_local_reduction(
        &mut self,
        local: &LocalReduction,
        reduction: &ReductionInfo,
        chunks: &[LocalChunk],
    ) {
        let Some((gather_aid, gather_alloc)) = local.gather else {
            return;
        };
        let bid = reduction.bid;
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        let elem_size = buffer.elem_size;
        let mut copies = Vec::with_capacity(chunks.len());
        for (j, c) in chunks.iter().enumerate() {
            let source = buffer.memories[c.memory.0 as usize].contiguous_mut(&SCALAR_BOX);
            let offset = (local.first_chunk_slot + j) * elem_size;
            let after = (gather_alloc, DependencyOrigin::AllocationLifetime);
            copies.push(create_gather_copy(
                &mut self.em,
                bid,
                source,
                gather_aid,
                offset,
                elem_size,
                after,
            ));
        }
        create_reduce_and_free(
            &mut self.em,
            buffer,
            bid,
            reduction.rid,
            gather_aid,
            local.num_inputs,
            &copies,
            None,
        );
    }

    /// Compiles a reduction command: gathers all nodes' partial results and reduces them.
    pub(super) fn compile_reduction(
        &mut self,
        command: CommandId,
        reduction: &ReductionInfo,
        has_local_contribution: bool,
    ) {
        debug_assert!(self.num_nodes > 1, "reduction command on a single node");
        let bid = reduction.bid;
        let num_nodes = self.num_nodes;
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        let gather = buffer
            .pending_gathers
            .iter()
            .find(|g| g.reduction == reduction.rid)
            .expect("reduction command without a preceding await-push")
            .clone();
        debug_assert_eq!(gather.gather_box, SCALAR_BOX);
        let (elem_size, elem_align) = (buffer.elem_size, buffer.elem_align);
        let node_chunk_bytes = gather.gather_box.area() * elem_size;

        let gather_aid = self.new_allocation_id(MemoryId::HOST);
        let alloc = create_gather_allocation(
            &mut self.em,
            bid,
            gather_aid,
            num_nodes,
            node_chunk_bytes,
            elem_align,
        );
        let fill = self.em.create(
            InstructionKind::FillIdentity {
                reduction: reduction.rid,
                allocation: gather_aid,
                num_values: num_nodes,
            },
            || RecordDetail::Buffer { buffer: bid },
        );
        self.em
            .add_dependency(fill, alloc, DependencyOrigin::AllocationLifetime);

        let mut inputs = SmallVec::<[InstructionId; 2]>::new();
        if has_local_contribution {
            let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
            let location = buffer.up_to_date.get_box_values(&SCALAR_BOX)[0].1;
            // prefer host memory, then the next memory holding it
            let num_memories = buffer.memories.len() as u64;
            let source_mid = (0..num_memories)
                .map(|i| MemoryId((MemoryId::HOST.0 + i) % num_memories))
                .find(|&m| location.contains(m))
                .expect("the local contribution is up to date somewhere");
            let source = buffer.memories[source_mid.0 as usize].contiguous_mut(&SCALAR_BOX);
            let offset = self.local_node.0 as usize * elem_size;
            let after = (fill, DependencyOrigin::WriteToAllocation);
            inputs.push(create_gather_copy(
                &mut self.em,
                bid,
                source,
                gather_aid,
                offset,
                elem_size,
                after,
            ));
        }

        let transfer = TransferId {
            consumer: gather.consumer,
            buffer: bid,
            reduction: gather.reduction,
        };
        let gather_receive = self.em.create(
            InstructionKind::GatherReceive {
                transfer,
                dest: gather_aid,
                node_chunk_bytes,
            },
            || RecordDetail::Buffer { buffer: bid },
        );
        self.em
            .add_dependency(gather_receive, fill, DependencyOrigin::WriteToAllocation);
        inputs.insert(0, gather_receive);

        self.allocate_contiguously(bid, MemoryId::HOST, std::iter::once(SCALAR_BOX).collect());
        let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
        create_reduce_and_free(
            &mut self.em,
            buffer,
            bid,
            reduction.rid,
            gather_aid,
            num_nodes,
            &inputs,
            Some(command),
        );
        buffer.pending_gathers.clear();
    }
}

/// Emits a gather allocation of `num_slots` slots of `slot_bytes` for buffer `bid`.
fn create_gather_allocation(
    em: &mut Emitter,
    bid: BufferId,
    aid: AllocationId,
    num_slots: usize,
    slot_bytes: usize,
    align_bytes: usize,
) -> InstructionId {
    let alloc = em.create(
        InstructionKind::Alloc {
            allocation: aid,
            size_bytes: num_slots * slot_bytes,
            align_bytes,
        },
        || RecordDetail::Alloc {
            origin: AllocOrigin::Gather,
            buffer: Some((bid, SCALAR_BOX)),
            num_chunks: Some(num_slots),
        },
    );
    em.add_dependency(alloc, em.last_epoch, DependencyOrigin::LastEpoch);
    alloc
}

/// Copies the scalar of `source` into the gather allocation at `offset_bytes`, after `after`.
fn create_gather_copy(
    em: &mut Emitter,
    bid: BufferId,
    source: &mut BufferAllocation,
    gather: AllocationId,
    offset_bytes: usize,
    elem_size: usize,
    after: (InstructionId, DependencyOrigin),
) -> InstructionId {
    let scalar: Region = SCALAR_BOX.into();
    let copy = em.create(
        InstructionKind::Copy {
            source: source.aid,
            dest: gather,
            source_layout: CopyLayout::Strided {
                allocation: source.allocated_box,
            },
            dest_layout: CopyLayout::Linearized { offset_bytes },
            region: scalar.clone(),
            elem_size,
        },
        || RecordDetail::Copy {
            origin: CopyOrigin::Gather,
            buffer: bid,
        },
    );
    em.add_dependency(copy, after.0, after.1);
    em.read_from_allocation(copy, source, &scalar);
    copy
}

/// Reduces `num_values` gathered values into the host allocation of the buffer's scalar (the
/// new original writer), then frees the gather allocation.
#[expect(clippy::too_many_arguments)]
fn create_reduce_and_free(
    em: &mut Emitter,
    buffer: &mut BufferState,
    bid: BufferId,
    reduction: ReductionId,
    gather: AllocationId,
    num_values: usize,
    inputs: &[InstructionId],
    command: Option<CommandId>,
) {
    let scalar: Region = SCALAR_BOX.into();
    let dest = buffer.memories[MemoryId::HOST.0 as usize].contiguous_mut(&SCALAR_BOX);
    let scope = if command.is_some() {
        ReductionScope::Global
    } else {
        ReductionScope::Local
    };
    let reduce = em.create(
        InstructionKind::Reduce {
            reduction,
            source: gather,
            num_source_values: num_values,
            dest: dest.aid,
        },
        || RecordDetail::Reduce {
            command,
            buffer: bid,
            scope,
        },
    );
    for &input in inputs {
        em.add_dependency(reduce, input, DependencyOrigin::ReadFromAllocation);
    }
    em.write_to_allocation(reduce, dest, &scalar);
    buffer.track_original_write(&scalar, reduce, MemoryId::HOST);
    let size_bytes = num_values * buffer.elem_size * SCALAR_BOX.area();
    let free = em.create(InstructionKind::Free { allocation: gather }, || {
        RecordDetail::Free {
            size_bytes,
            buffer: None,
        }
    });
    em.add_dependency(free, reduce, DependencyOrigin::AllocationLifetime);
}
