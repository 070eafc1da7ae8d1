//! Instruction graph generation (IDAG): allocations, copies, kernels, transfers and reductions per node.
//!
//! The [`InstructionGraphGenerator`] compiles the commands of one node (from the command graph)
//! into [`Instruction`]s on concrete memories and devices, which the executor runs out of order.
//! See [`generator`] for the protocol, [`buffer_state`] for the tracking state, and the other
//! modules for each stage: [`allocation`] (grow-only allocations, staging pool), [`coherence`]
//! (copies between memories), `fence` (fences straight out of device memory), [`receive`]
//! (deferred await-pushes), [`push`] (sends and pilots),
//! [`reduction`] (local and global reductions) and [`execution`] (kernels, host tasks, lookahead).

pub mod allocation;
mod buffer_requirements;
pub mod buffer_state;
pub mod coherence;
mod emitter;
pub mod execution;
mod execution_front;
mod fence;
pub mod generator;
#[expect(clippy::module_inception)]
pub mod instruction;
pub mod push;
pub mod receive;
pub mod recorder;
pub mod reduction;
mod requirements;

#[cfg(test)]
pub(crate) mod tests;

pub use generator::{Batch, InstructionGraphGenerator, Policies, SchedulingHint};
pub use instruction::{
    AccessAllocations, BufferAccessAllocation, CopyLayout, Instruction, InstructionGarbage,
    InstructionKind, Placement, priority,
};
pub use recorder::{
    AllocOrigin, CopyOrigin, DependencyOrigin, InstructionRecord, InstructionRecorder,
    RecordDetail, ReductionScope,
};
