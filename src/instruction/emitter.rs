//! The instruction batch under construction: id and message counters, dependency edges, the
//! execution front and recording.
//!
//! Every edge goes from an instruction of the current batch to an older one, so a batch in id
//! order is topologically sorted. Instructions stay mutable (edges are added) until
//! [`Emitter::flush`] turns the batch into shared immutable [`Instruction`]s.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::comm::{OutboundPilot, PilotMessage};
use crate::grid::{GridBox, Region};
use crate::types::{InstructionId, MessageId, NodeId, TransferId};

use super::buffer_state::{AccessFront, BufferAllocation, FrontMode};
use super::execution_front::ExecutionFront;
use super::instruction::{Instruction, InstructionKind};
use super::recorder::{DependencyOrigin, InstructionRecord, InstructionRecorder, RecordDetail};

/// An instruction of the current batch.
pub(crate) struct PendingInstruction {
    /// Built in its shared block at creation and not shared before [`Emitter::flush`], so its
    /// dependencies are still added in place: the kind (a few hundred bytes) is written to the
    /// heap once, instead of moved through the batch and copied into an `Arc` at the flush.
    instruction: Arc<Instruction>,
    /// Why each dependency exists, side by side with the instruction's dependencies (only while
    /// recording).
    origins: SmallVec<[DependencyOrigin; 4]>,
    detail: RecordDetail,
}

impl PendingInstruction {
    fn id(&self) -> InstructionId {
        self.instruction.id
    }

    fn dependencies(&self) -> &SmallVec<[InstructionId; 4]> {
        &self.instruction.dependencies
    }

    fn dependencies_mut(&mut self) -> &mut SmallVec<[InstructionId; 4]> {
        &mut Arc::get_mut(&mut self.instruction)
            .expect("a pending instruction is not shared before the flush")
            .dependencies
    }
}

/// Builds batches of instructions and pilots.
pub(crate) struct Emitter {
    next_instruction: u64,
    next_message: u64,
    batch: Vec<PendingInstruction>,
    pilots: Vec<OutboundPilot>,
    /// Added to every created instruction's kind priority.
    pub base_priority: i32,
    /// Instructions nothing depends on yet.
    execution_front: ExecutionFront,
    /// The current epoch (or applied horizon) new unanchored instructions depend on.
    pub last_epoch: InstructionId,
    recorder: Option<InstructionRecorder>,
}

impl Emitter {
    pub fn new(recorder: Option<InstructionRecorder>) -> Self {
        Self {
            next_instruction: 0,
            next_message: 0,
            batch: Vec::new(),
            pilots: Vec::new(),
            base_priority: 0,
            execution_front: ExecutionFront::default(),
            last_epoch: InstructionId(0),
            recorder,
        }
    }

    #[inline]
    pub fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    pub fn recorder(&self) -> Option<&InstructionRecorder> {
        self.recorder.as_ref()
    }

    pub fn recorder_mut(&mut self) -> Option<&mut InstructionRecorder> {
        self.recorder.as_mut()
    }

    /// Creates an instruction in the current batch and the execution front. `detail` is only
    /// evaluated while recording.
    pub fn create(
        &mut self,
        kind: InstructionKind,
        detail: impl FnOnce() -> RecordDetail,
    ) -> InstructionId {
        let id = InstructionId(self.next_instruction);
        self.next_instruction += 1;
        let priority = self.base_priority + kind.priority_offset();
        let detail = if self.is_recording() {
            detail()
        } else {
            RecordDetail::None
        };
        self.batch.push(PendingInstruction {
            instruction: Arc::new(Instruction {
                id,
                priority,
                dependencies: SmallVec::new(),
                kind,
            }),
            origins: SmallVec::new(),
            detail,
        });
        self.execution_front.insert(id);
        id
    }

    /// Where `id` sits in the current batch (ids of a batch are consecutive).
    fn batch_index(&self, id: InstructionId) -> usize {
        let first = self.batch.first().expect("empty batch").id().0;
        (id.0 - first) as usize
    }

    fn pending_mut(&mut self, id: InstructionId) -> &mut PendingInstruction {
        let index = self.batch_index(id);
        &mut self.batch[index]
    }

    /// The dependencies of an instruction of the current batch so far.
    pub fn has_dependencies(&self, id: InstructionId) -> bool {
        !self.batch[self.batch_index(id)].dependencies().is_empty()
    }

    /// Makes `from` (of the current batch) depend on the older `to`.
    pub fn add_dependency(
        &mut self,
        from: InstructionId,
        to: InstructionId,
        origin: DependencyOrigin,
    ) {
        debug_assert!(to < from, "{from} cannot depend on the newer {to}");
        let recording = self.is_recording();
        let pending = self.pending_mut(from);
        if !pending.dependencies().contains(&to) {
            pending.dependencies_mut().push(to);
            if recording {
                pending.origins.push(origin);
            }
        }
        self.execution_front.remove(to);
    }

    /// Makes `from` depend on every instruction of `front` (an alloc front counts as allocation
    /// lifetime).
    pub fn add_dependencies_on_front(
        &mut self,
        from: InstructionId,
        front: &AccessFront,
        origin: DependencyOrigin,
    ) {
        let origin = if front.mode() == FrontMode::Allocate {
            DependencyOrigin::AllocationLifetime
        } else {
            origin
        };
        for &to in front.instructions() {
            self.add_dependency(from, to, origin);
        }
    }

    /// `from` reads `region` of `allocation`: depend on the last writers.
    pub fn add_dependencies_on_last_writers(
        &mut self,
        from: InstructionId,
        allocation: &BufferAllocation,
        region: &Region,
    ) {
        if region.is_empty() {
            return;
        }
        allocation.last_writers.query_region(region, |_, front| {
            self.add_dependencies_on_front(from, front, DependencyOrigin::ReadFromAllocation)
        });
    }

    /// `from` overwrites or frees `region` of `allocation`: depend on its last accesses.
    pub fn add_dependencies_on_last_accesses(
        &mut self,
        from: InstructionId,
        allocation: &BufferAllocation,
        region: &Region,
        origin: DependencyOrigin,
    ) {
        if region.is_empty() {
            return;
        }
        allocation
            .last_concurrent_accesses
            .query_region(region, |_, front| {
                self.add_dependencies_on_front(from, front, origin)
            });
    }

    /// A read of `region` by `from`: dependencies, then tracking.
    pub fn read_from_allocation(
        &mut self,
        from: InstructionId,
        allocation: &mut BufferAllocation,
        region: &Region,
    ) {
        self.add_dependencies_on_last_writers(from, allocation, region);
        allocation.track_concurrent_read(region, from);
    }

    /// An atomic write of `region` by `from`: dependencies, then tracking.
    pub fn write_to_allocation(
        &mut self,
        from: InstructionId,
        allocation: &mut BufferAllocation,
        region: &Region,
    ) {
        self.add_dependencies_on_last_accesses(
            from,
            allocation,
            region,
            DependencyOrigin::WriteToAllocation,
        );
        allocation.track_atomic_write(region, from);
    }

    /// Queues a pilot for `to` and returns its fresh message id.
    pub fn create_pilot(
        &mut self,
        to: NodeId,
        transfer: TransferId,
        region_box: GridBox,
    ) -> MessageId {
        let id = MessageId(self.next_message);
        self.next_message += 1;
        let pilot = OutboundPilot {
            to,
            message: PilotMessage {
                id,
                transfer,
                region_box,
            },
        };
        self.pilots.push(pilot);
        if let Some(r) = &mut self.recorder {
            r.pilots.push(pilot);
        }
        id
    }

    /// Makes `horizon_or_epoch` depend on the whole execution front, which becomes just it.
    pub fn collapse_execution_front_to(&mut self, horizon_or_epoch: InstructionId) {
        let front = self.execution_front.collapse_to(horizon_or_epoch);
        let recording = self.is_recording();
        let pending = self.pending_mut(horizon_or_epoch);
        if recording {
            pending
                .origins
                .extend(front.iter().map(|_| DependencyOrigin::ExecutionFront));
        }
        pending.dependencies_mut().extend(front);
    }

    /// Hands out the batch: instructions in id (= topological) order and pilots.
    pub fn flush(&mut self) -> (Vec<Arc<Instruction>>, Vec<OutboundPilot>) {
        let pilots = std::mem::take(&mut self.pilots);
        let mut out = Vec::with_capacity(self.batch.len());
        for pending in self.batch.drain(..) {
            let instruction = pending.instruction;
            debug_assert!(
                instruction.id.0 == 0 || !instruction.dependencies.is_empty(),
                "{} ({}) has no dependency",
                instruction.id,
                instruction.kind.name()
            );
            if let Some(r) = &mut self.recorder {
                let dependencies = instruction
                    .dependencies
                    .iter()
                    .copied()
                    .zip(pending.origins)
                    .collect();
                r.instructions.push(InstructionRecord {
                    instruction: instruction.clone(),
                    dependencies,
                    detail: pending.detail,
                });
            }
            out.push(instruction);
        }
        self.base_priority = 0;
        (out, pilots)
    }

    /// Logs a warning (and records it).
    pub fn warn(&mut self, message: String) {
        tracing::warn!("{message}");
        self.record_warning(message);
    }

    /// Records a warning for the graph output without logging it.
    pub fn record_warning(&mut self, message: String) {
        if let Some(r) = &mut self.recorder {
            r.warnings.push(message);
        }
    }
}
