//! Records of generated instructions and outbound pilots, for tests and graph printing (C++
//! Celerity: `recorders.h`).
//!
//! With a recorder attached, the generator records every instruction it flushes together with
//! the origin of each dependency edge and a few debug details (which buffer an allocation or copy
//! serves, why it exists). Records are never consulted by the generator itself.

use std::sync::Arc;

use crate::comm::OutboundPilot;
use crate::grid::{GridBox, Region};
use crate::types::{BufferId, CommandId, HostObjectId, InstructionId, TaskId, TransferId};

use super::instruction::{Instruction, InstructionKind};

/// Why a dependency edge exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DependencyOrigin {
    /// On an alloc (use after allocation) or of a free on the last accesses.
    AllocationLifetime,
    /// Write after read or write.
    WriteToAllocation,
    /// Read after write.
    ReadFromAllocation,
    /// Serialisation on a host object.
    SideEffect,
    /// Serialisation within a collective group.
    CollectiveGroupOrder,
    /// Anchoring on the last epoch or applied horizon.
    LastEpoch,
    /// A horizon or epoch collecting the execution front.
    ExecutionFront,
    /// An await-receive on its split receive.
    SplitReceive,
}

/// Why an allocation exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllocOrigin {
    /// Backs a box of a buffer.
    Buffer,
    /// A staging allocation for host-staged or linearised copies.
    Staging,
    /// A gather allocation of a reduction.
    Gather,
}

/// Why a copy exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyOrigin {
    /// Preserves live data when an allocation is resized.
    Resize,
    /// Makes a memory coherent for a reader.
    Coherence,
    /// Moves data into a host staging allocation.
    Staging,
    /// Linearises a strided box in device memory.
    Linearizing,
    /// De-linearises into a strided box in device memory.
    Delinearizing,
    /// Collects a partial result into a gather allocation.
    Gather,
    /// Copies a fenced region to the user's allocation.
    Fence,
}

/// Whether a reduce combines chunks of one node or partial results of all nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReductionScope {
    /// Device chunks of this node.
    Local,
    /// All nodes.
    Global,
}

/// Debug details of one instruction, beyond what the instruction itself holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordDetail {
    /// Nothing to add.
    None,
    /// An alloc.
    Alloc {
        /// Why.
        origin: AllocOrigin,
        /// The buffer and box it backs (buffer and gather allocations).
        buffer: Option<(BufferId, GridBox)>,
        /// Number of gather slots.
        num_chunks: Option<usize>,
    },
    /// A free.
    Free {
        /// Bytes released.
        size_bytes: usize,
        /// The buffer and box it backed.
        buffer: Option<(BufferId, GridBox)>,
    },
    /// A copy.
    Copy {
        /// Why.
        origin: CopyOrigin,
        /// The buffer copied.
        buffer: BufferId,
    },
    /// A kernel or host task.
    Kernel {
        /// The execution command.
        command: CommandId,
        /// Per access: buffer and accessed region.
        accesses: Vec<(BufferId, Region)>,
    },
    /// A send.
    Send {
        /// The push command.
        command: CommandId,
        /// The transfer.
        transfer: TransferId,
        /// The sent box in buffer coordinates.
        send_box: GridBox,
    },
    /// A receive of any kind, or a fill-identity.
    Buffer {
        /// The buffer.
        buffer: BufferId,
    },
    /// A reduce.
    Reduce {
        /// The reduction command (global scope only).
        command: Option<CommandId>,
        /// The buffer.
        buffer: BufferId,
        /// Local or global.
        scope: ReductionScope,
    },
    /// A buffer fence.
    BufferFence {
        /// The fence command.
        command: CommandId,
        /// The buffer.
        buffer: BufferId,
        /// The fenced box.
        fence_box: GridBox,
    },
    /// A host-object fence.
    HostObjectFence {
        /// The fence command.
        command: CommandId,
        /// The host object.
        host_object: HostObjectId,
    },
    /// A horizon or epoch.
    Command {
        /// Its command.
        command: CommandId,
    },
}

/// One recorded instruction.
#[derive(Debug, Clone)]
pub struct InstructionRecord {
    /// The instruction as flushed.
    pub instruction: Arc<Instruction>,
    /// Every dependency with its origin, in the order the edges were added.
    pub dependencies: Vec<(InstructionId, DependencyOrigin)>,
    /// Debug details.
    pub detail: RecordDetail,
}

impl InstructionRecord {
    /// The instruction's id.
    pub fn id(&self) -> InstructionId {
        self.instruction.id()
    }

    /// What it does.
    pub fn kind(&self) -> &InstructionKind {
        self.instruction.kind()
    }

    /// Whether it depends on `other`.
    pub fn depends_on(&self, other: InstructionId) -> bool {
        self.instruction.dependencies().contains(&other)
    }

    /// The origin of its edge to `other`, if any.
    pub fn origin_of(&self, other: InstructionId) -> Option<DependencyOrigin> {
        self.dependencies
            .iter()
            .find(|(d, _)| *d == other)
            .map(|(_, o)| *o)
    }
}

/// The task an instruction names, if any.
fn task_of(kind: &InstructionKind) -> Option<TaskId> {
    match kind {
        InstructionKind::DeviceKernel { task, .. }
        | InstructionKind::HostTask { task, .. }
        | InstructionKind::Fence { task }
        | InstructionKind::Epoch { task, .. } => Some(task.id()),
        InstructionKind::Horizon { task, .. } => Some(*task),
        _ => None,
    }
}

/// Everything a generator produced, in generation order.
#[derive(Debug, Clone, Default)]
pub struct InstructionRecorder {
    pub(crate) instructions: Vec<InstructionRecord>,
    pub(crate) pilots: Vec<OutboundPilot>,
    pub(crate) await_push_commands: Vec<(TransferId, CommandId)>,
    pub(crate) warnings: Vec<String>,
}

impl InstructionRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The records of the instructions of the tasks `keep` selects, with the edges among them
    /// (`graph_tasks`). Kernels, host tasks, fences, horizons and epochs name their task; an
    /// instruction without one (alloc, copy, send, ...) belongs to the next one that does, as
    /// the generator emits a command's instructions before its kernel or epoch.
    pub fn filtered(&self, keep: impl Fn(TaskId) -> bool) -> Self {
        let mut owner: Option<TaskId> = None;
        let mut kept_rev = Vec::new();
        for record in self.instructions.iter().rev() {
            if let Some(task) = task_of(record.kind()) {
                owner = Some(task);
            }
            if owner.is_some_and(&keep) {
                kept_rev.push(record.clone());
            }
        }
        kept_rev.reverse();
        let ids: std::collections::HashSet<InstructionId> =
            kept_rev.iter().map(InstructionRecord::id).collect();
        for record in &mut kept_rev {
            record.dependencies.retain(|(d, _)| ids.contains(d));
        }
        let pilots = self
            .pilots
            .iter()
            .filter(|p| {
                kept_rev.iter().any(|r| {
                    matches!(r.kind(), InstructionKind::Send { message, .. } if *message == p.message.id)
                })
            })
            .cloned()
            .collect();
        Self {
            instructions: kept_rev,
            pilots,
            await_push_commands: self.await_push_commands.clone(),
            warnings: self.warnings.clone(),
        }
    }

    /// The recorded instructions, in id order.
    pub fn instructions(&self) -> &[InstructionRecord] {
        &self.instructions
    }

    /// The record of `id`.
    pub fn get(&self, id: InstructionId) -> Option<&InstructionRecord> {
        // ids are dense from the first record on
        let first = self.instructions.first()?.id().0;
        self.instructions
            .get(id.0.checked_sub(first)? as usize)
            .filter(|r| r.id() == id)
    }

    /// The recorded outbound pilots.
    pub fn pilots(&self) -> &[OutboundPilot] {
        &self.pilots
    }

    /// The await-push commands seen, with their transfer ids.
    pub fn await_push_commands(&self) -> &[(TransferId, CommandId)] {
        &self.await_push_commands
    }

    /// Warnings the generator logged (frequent allocations, access-pattern reports).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}
