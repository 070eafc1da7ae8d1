//! [`InstructionGraphGenerator`]: compiles the commands of one node into instructions (C++
//! Celerity: `instruction_graph_generator.cc`).
//!
//! # Protocol
//!
//! 1. Create the generator with the node's [`SystemInfo`], its node id, the node count and the
//!    error [`Policies`]; attach an [`InstructionRecorder`] for tests and graph printing.
//! 2. Compile the init epoch command first. Announce buffers and host objects before the first
//!    command that uses them ([`InstructionGraphGenerator::notify_buffer_created`], ...);
//!    destruction is announced in command order.
//! 3. Optionally [`anticipate`](InstructionGraphGenerator::anticipate) each command as soon as
//!    it exists (lookahead): the boxes it will need are then allocated together with those of
//!    earlier compilations, avoiding resizes.
//! 4. [`compile`](InstructionGraphGenerator::compile) the commands in order. Each call returns
//!    one batch: instructions in topological (= id) order, every one but the init epoch with at
//!    least one dependency, plus the pilots to send as soon as the batch reaches the executor.
//!
//! The generator is deterministic: the same calls produce the same batches. Its state holds
//! instruction ids only and is bounded by horizons: a horizon applies the previous horizon as
//! the epoch of all tracking state, an epoch applies itself.
//!
//! An access-pattern error under policy `Error` (uninitialised read, overlapping write, refused
//! oversubscription) is kept for `take_policy_error`, and `compile` still returns the (racy but
//! complete) batch: the runtime runs it, so that generator and executor agree on every
//! allocation and shutdown stays clean, and fails at the next synchronising call.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::backend::system_info::SystemInfo;
use crate::comm::OutboundPilot;
use crate::command::{Command, CommandKind};
use crate::error::{Error, ErrorKind, Result};
use crate::grid::{GridBox, Range};
use crate::id_table::IdTable;
use crate::policy::ErrorPolicy;
use crate::task::{EpochAction, Task};
use crate::types::{
    AllocationId, BufferId, CollectiveGroupId, HostObjectId, IdMap, InstructionId, MemoryId,
    NodeId, TaskId,
};

use super::buffer_state::{BufferAllocation, BufferState, HostObjectState, MemoryState};
use super::emitter::Emitter;
use super::instruction::{Instruction, InstructionGarbage, InstructionKind};
use super::recorder::{DependencyOrigin, InstructionRecorder, RecordDetail};

/// A batch of instructions (topologically sorted) and the pilots announcing its sends.
pub type Batch = (Vec<Arc<Instruction>>, Vec<OutboundPilot>);

/// The box of a reduction's single output element.
pub(crate) const SCALAR_BOX: GridBox = GridBox::UNIT;

/// How access-pattern problems are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policies {
    /// Reading data no memory holds and no await-push brings.
    pub uninitialized_read: ErrorPolicy,
    /// Local chunks writing the same elements.
    pub overlapping_write: ErrorPolicy,
    /// An oversubscription hint on a task that cannot be oversubscribed.
    pub unsafe_oversubscription: ErrorPolicy,
}

impl Default for Policies {
    fn default() -> Self {
        Self {
            uninitialized_read: ErrorPolicy::Error,
            overlapping_write: ErrorPolicy::Error,
            unsafe_oversubscription: ErrorPolicy::Log,
        }
    }
}

impl Policies {
    /// No checks at all (benchmarks, release builds).
    pub fn ignore_all() -> Self {
        Self {
            uninitialized_read: ErrorPolicy::Ignore,
            overlapping_write: ErrorPolicy::Ignore,
            unsafe_oversubscription: ErrorPolicy::Ignore,
        }
    }
}

/// What [`InstructionGraphGenerator::anticipate`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulingHint {
    /// Compiling the command now costs nothing later commands could save.
    IsSelfContained,
    /// The command allocates; compiling it together with later commands may merge allocations.
    CouldMergeWithFutureCommands,
}

/// A chunk of a task's local execution range on one memory (and device).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalChunk {
    pub memory: MemoryId,
    pub device: Option<crate::types::DeviceId>,
    pub execution_box: GridBox,
}

/// Compiles one node's commands into instruction batches.
pub struct InstructionGraphGenerator {
    pub(super) em: Emitter,
    pub(super) system: SystemInfo,
    pub(super) local_node: NodeId,
    pub(super) num_nodes: usize,
    pub(super) policies: Policies,
    pub(super) last_horizon: Option<InstructionId>,
    pub(super) memories: Vec<MemoryState>,
    pub(super) buffers: IdTable<BufferId, BufferState>,
    pub(super) host_objects: IdMap<HostObjectId, HostObjectState>,
    pub(super) collective_groups: IdMap<CollectiveGroupId, InstructionId>,
    pub(super) unreferenced_user_allocations: Vec<AllocationId>,
    pub(super) error: Option<Error>,
    /// The chunk requirements of the last execution compiled, whose storage the next reuses.
    pub(super) requirements: Vec<super::requirements::ChunkRequirements>,
    /// The await-pushes the execution being compiled consumes (empty between compilations),
    /// kept for its storage: a chained task consumes one per task.
    pub(super) applied_receives: Vec<super::buffer_state::PendingReceive>,
    /// The split that [`Self::anticipate`] made of the last task it looked at (task, local
    /// execution box, chunks): the compilation that usually follows at once takes it instead of
    /// splitting again.
    pub(super) anticipated_split: Option<(TaskId, GridBox, SmallVec<[LocalChunk; 1]>)>,
}

impl InstructionGraphGenerator {
    /// A generator for `local_node` of `num_nodes` on `system`. With `recorder`, every
    /// instruction and pilot is recorded as well.
    pub fn new(
        system: SystemInfo,
        local_node: NodeId,
        num_nodes: usize,
        policies: Policies,
        recorder: Option<InstructionRecorder>,
    ) -> Self {
        debug_assert!((0..system.memories.len()).all(|a| {
            (0..system.memories.len()).all(|b| {
                system.can_copy(MemoryId(a as u64), MemoryId(b as u64))
                    == system.can_copy(MemoryId(b as u64), MemoryId(a as u64))
            })
        }));
        let num_memories = system.memories.len();
        Self {
            em: Emitter::new(recorder),
            system,
            local_node,
            num_nodes,
            policies,
            last_horizon: None,
            memories: vec![MemoryState::default(); num_memories],
            buffers: IdTable::default(),
            host_objects: IdMap::default(),
            collective_groups: IdMap::default(),
            unreferenced_user_allocations: Vec::new(),
            error: None,
            requirements: Vec::new(),
            applied_receives: Vec::new(),
            anticipated_split: None,
        }
    }

    /// The recorder, if one is attached.
    pub fn recorder(&self) -> Option<&InstructionRecorder> {
        self.em.recorder()
    }

    /// The system model.
    pub fn system(&self) -> &SystemInfo {
        &self.system
    }

    /// Announces a buffer. A host-initialised buffer passes the user allocation (memory 0)
    /// holding its initial contents, which counts as written by the current epoch.
    pub fn notify_buffer_created(
        &mut self,
        bid: BufferId,
        range: Range,
        elem_size: usize,
        elem_align: usize,
        user_allocation: Option<AllocationId>,
    ) {
        let epoch = self.em.last_epoch;
        let mut buffer = BufferState::new(range, elem_size, elem_align, self.memories.len(), epoch);
        if let Some(aid) = user_allocation {
            debug_assert_eq!(aid.memory(), MemoryId::USER);
            let whole = GridBox::full_range(range);
            let mut allocation = Box::new(BufferAllocation::new(aid, None, whole));
            allocation.track_atomic_write(&whole.into(), epoch);
            buffer.memories[MemoryId::USER.0 as usize]
                .allocations
                .push(allocation);
            buffer.track_original_write(&whole.into(), epoch, MemoryId::USER);
        }
        let previous = self.buffers.insert(bid, buffer);
        debug_assert!(previous.is_none(), "{bid} announced twice");
    }

    /// Sets a buffer's debug name.
    pub fn notify_buffer_name_changed(&mut self, bid: BufferId, name: &str) {
        if let Some(b) = self.buffers.get_mut(bid) {
            b.name = Some(name.to_owned());
        }
    }

    /// Frees every allocation of a buffer once its last accesses are done; its user allocation
    /// becomes garbage of the next horizon or epoch.
    pub fn notify_buffer_destroyed(&mut self, bid: BufferId) -> Batch {
        let buffer = self.buffers.remove(bid).expect("unknown buffer");
        for (mid, memory) in buffer.memories.iter().enumerate() {
            for allocation in &memory.allocations {
                if mid == MemoryId::USER.0 as usize {
                    self.unreferenced_user_allocations.push(allocation.aid);
                    continue;
                }
                let b = allocation.allocated_box;
                let size_bytes = b.area() * buffer.elem_size;
                let free = self.em.create(
                    InstructionKind::Free {
                        allocation: allocation.aid,
                    },
                    || RecordDetail::Free {
                        size_bytes,
                        buffer: Some((bid, b)),
                    },
                );
                self.em.add_dependencies_on_last_accesses(
                    free,
                    allocation,
                    &b.into(),
                    DependencyOrigin::AllocationLifetime,
                );
            }
        }
        self.em.flush()
    }

    /// Announces a host object; `owns_instance` objects get a destroy instruction at the end.
    pub fn notify_host_object_created(&mut self, hoid: HostObjectId, owns_instance: bool) {
        self.host_objects.insert(
            hoid,
            HostObjectState {
                owns_instance,
                last_side_effect: self.em.last_epoch,
            },
        );
    }

    /// Destroys an owned host object's instance after its last side effect.
    pub fn notify_host_object_destroyed(&mut self, hoid: HostObjectId) -> Batch {
        let state = self
            .host_objects
            .remove(&hoid)
            .expect("unknown host object");
        if state.owns_instance {
            let destroy = self.em.create(
                InstructionKind::DestroyHostObject { host_object: hoid },
                || RecordDetail::None,
            );
            self.em.add_dependency(
                destroy,
                state.last_side_effect,
                DependencyOrigin::SideEffect,
            );
        }
        self.em.flush()
    }

    /// The generator keeps no instructions once a batch is flushed (only ids in its tracking
    /// state, which horizons and epochs bound), so there is nothing to prune; this exists so the
    /// scheduler can treat all three generators alike.
    pub fn prune_before_epoch(&mut self, _epoch: TaskId) {}

    /// Compiles one command into a batch. An access-pattern problem under policy `Error` still
    /// yields the batch (the work runs, so generator and executor stay consistent and nothing
    /// is left half-allocated); [`Self::take_policy_error`] returns it.
    pub fn compile(&mut self, command: &Command) -> Result<Batch> {
        let task = command.task();
        let result = match command.kind() {
            CommandKind::Execution {
                execution_range,
                is_reduction_initializer,
            } => self.compile_execution(command, task, *execution_range, *is_reduction_initializer),
            CommandKind::Push { transfer, targets } => {
                self.compile_push(command.id(), *transfer, targets);
                Ok(())
            }
            CommandKind::AwaitPush { transfer, region } => {
                self.defer_await_push(command.id(), *transfer, region);
                Ok(())
            }
            CommandKind::Reduction {
                reduction,
                has_local_contribution,
            } => {
                self.compile_reduction(command.id(), reduction, *has_local_contribution);
                Ok(())
            }
            CommandKind::Fence => self.compile_fence(command.id(), task),
            CommandKind::Horizon {
                completed_reductions,
            } => {
                self.compile_horizon(command.id(), task.id(), completed_reductions);
                Ok(())
            }
            CommandKind::Epoch {
                action,
                completed_reductions,
            } => {
                self.compile_epoch(command.id(), task, *action, completed_reductions);
                Ok(())
            }
        };
        let batch = self.em.flush();
        result?;
        Ok(batch)
    }

    /// The access-pattern error of the last compiled command under policy `Error`, if any.
    pub fn take_policy_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    /// Reports an access-pattern problem according to `policy`.
    pub(super) fn report(&mut self, policy: ErrorPolicy, message: impl FnOnce() -> String) {
        match policy {
            ErrorPolicy::Ignore => {}
            ErrorPolicy::Log => self.em.warn(message()),
            ErrorPolicy::Error => {
                // Reported once, as the task's failure (the runtime logs it).
                let message = message();
                self.em.record_warning(message.clone());
                if self.error.is_none() {
                    self.error = Some(Error::new(ErrorKind::AccessPattern, message));
                }
            }
        }
    }

    /// A fresh allocation id on `memory` (never user memory).
    pub(super) fn new_allocation_id(&mut self, memory: MemoryId) -> AllocationId {
        debug_assert_ne!(memory, MemoryId::USER);
        let state = &mut self.memories[memory.0 as usize];
        let aid = AllocationId::new(memory, state.next_raw_aid);
        state.next_raw_aid += 1;
        aid
    }

    /// Replaces every tracked instruction older than `epoch` by `epoch`.
    fn apply_epoch(&mut self, epoch: InstructionId) {
        for memory in &mut self.memories {
            for staging in &mut memory.staging_pool {
                staging.last_accesses = staging.last_accesses.with_epoch_applied(epoch);
            }
        }
        for buffer in self.buffers.values_mut() {
            buffer.apply_epoch(epoch);
        }
        for object in self.host_objects.values_mut() {
            object.last_side_effect = object.last_side_effect.max(epoch);
        }
        for last in self.collective_groups.values_mut() {
            *last = (*last).max(epoch);
        }
        self.em.last_epoch = epoch;
    }

    fn take_garbage(
        &mut self,
        completed_reductions: &[crate::types::ReductionId],
    ) -> InstructionGarbage {
        InstructionGarbage {
            reductions: completed_reductions.to_vec(),
            user_allocations: std::mem::take(&mut self.unreferenced_user_allocations),
        }
    }

    fn compile_horizon(
        &mut self,
        command: crate::types::CommandId,
        task: TaskId,
        completed_reductions: &[crate::types::ReductionId],
    ) {
        let garbage = self.take_garbage(completed_reductions);
        let horizon = self
            .em
            .create(InstructionKind::Horizon { task, garbage }, || {
                RecordDetail::Command { command }
            });
        self.em.collapse_execution_front_to(horizon);
        if let Some(previous) = self.last_horizon {
            self.apply_epoch(previous);
        }
        self.last_horizon = Some(horizon);
    }

    fn compile_epoch(
        &mut self,
        command: crate::types::CommandId,
        task: &Arc<Task>,
        action: EpochAction,
        completed_reductions: &[crate::types::ReductionId],
    ) {
        if action == EpochAction::Shutdown {
            self.free_all_staging_allocations();
        }
        let garbage = self.take_garbage(completed_reductions);
        let epoch = self.em.create(
            InstructionKind::Epoch {
                task: task.clone(),
                action,
                garbage,
            },
            || RecordDetail::Command { command },
        );
        self.em.collapse_execution_front_to(epoch);
        self.apply_epoch(epoch);
        self.last_horizon = None;
        if action == EpochAction::Init {
            self.collective_groups
                .insert(CollectiveGroupId::ROOT, epoch);
        }
    }

    /// Emits the instructions of a host-object or buffer fence.
    fn compile_fence(&mut self, command: crate::types::CommandId, task: &Arc<Task>) -> Result<()> {
        let access_map = task.access_map();
        if access_map.num_accesses() != 0 {
            let (bid, _) = access_map.nth_access(0);
            let unit = task.geometry().global_box();
            let fence_box = access_map
                .compute_consumed_region(bid, &unit)
                .bounding_box();
            let user_allocation = task.fence_user_allocation().ok_or_else(|| {
                Error::internal(format!(
                    "buffer fence {} carries no user allocation",
                    task.id()
                ))
            })?;
            let mut copy = None;
            if !fence_box.is_empty() {
                copy = self.emit_direct_fence_copy(bid, &fence_box, user_allocation);
            }
            if !fence_box.is_empty() && copy.is_none() {
                let chunk = LocalChunk {
                    memory: MemoryId::HOST,
                    device: None,
                    execution_box: unit,
                };
                let requirements = super::requirements::ChunkRequirements::new(task, &unit, &[bid]);
                self.satisfy_buffer_requirements(
                    bid,
                    task,
                    false,
                    &[chunk],
                    &[requirements],
                    false,
                );
                let buffer = self.buffers.get_mut(bid).expect("unknown buffer");
                let host = buffer.memories[MemoryId::HOST.0 as usize].contiguous_mut(&fence_box);
                let c = self.em.create(
                    InstructionKind::Copy {
                        source: host.aid,
                        dest: user_allocation,
                        source_layout: super::instruction::CopyLayout::Strided {
                            allocation: host.allocated_box,
                        },
                        dest_layout: super::instruction::CopyLayout::Strided {
                            allocation: fence_box,
                        },
                        region: fence_box.into(),
                        elem_size: buffer.elem_size,
                    },
                    || RecordDetail::Copy {
                        origin: super::recorder::CopyOrigin::Fence,
                        buffer: bid,
                    },
                );
                self.em.read_from_allocation(c, host, &fence_box.into());
                copy = Some(c);
            }
            let fence = self
                .em
                .create(InstructionKind::Fence { task: task.clone() }, || {
                    RecordDetail::BufferFence {
                        command,
                        buffer: bid,
                        fence_box,
                    }
                });
            match copy {
                Some(c) => self
                    .em
                    .add_dependency(fence, c, DependencyOrigin::ReadFromAllocation),
                None => {
                    self.em
                        .add_dependency(fence, self.em.last_epoch, DependencyOrigin::LastEpoch)
                }
            }
            self.unreferenced_user_allocations.push(user_allocation);
        }
        if let Some(&hoid) = task.side_effects().first() {
            let fence = self
                .em
                .create(InstructionKind::Fence { task: task.clone() }, || {
                    RecordDetail::HostObjectFence {
                        command,
                        host_object: hoid,
                    }
                });
            let object = self
                .host_objects
                .get_mut(&hoid)
                .expect("unknown host object");
            self.em
                .add_dependency(fence, object.last_side_effect, DependencyOrigin::SideEffect);
            object.last_side_effect = fence;
        }
        Ok(())
    }
}
