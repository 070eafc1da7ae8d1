//! [`CommandGraphGenerator`]: builds one node's command graph, task by task.

use std::sync::Arc;

use smallvec::SmallVec;

use super::assignment::{
    self, Assignment, ChunkRequirements, PushCandidate, REDUCTION_INITIALIZER, SplitCache,
    touched_buffers,
};
use super::buffer_state::{BufferState, WriteState};
use super::command::{Command, CommandBatch, CommandDependencies, CommandDependency, CommandKind};
use super::graph::CommandTable;
use super::node_bitset::NodeBitset;
use super::recorder::CommandRecorder;
use super::replication::Replication;
use crate::error::{Error, Result};
use crate::grid::{GridBox, Range, Region};
use crate::id_table::IdTable;
use crate::policy::ErrorPolicy;
use crate::task::{BufferLabel, DependencyKind, DependencyOrigin, Task, TaskType};
use crate::types::{
    BufferId, CollectiveGroupId, CommandId, HostObjectId, IdMap, NodeId, ReductionId, TaskId,
    TransferId,
};

/// What the generator does on suspicious access patterns.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CommandPolicies {
    /// A chunk reads data no node has written (and that was not host-initialised).
    pub uninitialized_read: ErrorPolicy,
    /// Two chunks (of any nodes) write the same element.
    pub overlapping_write: ErrorPolicy,
}

impl Default for CommandPolicies {
    /// `Error` for both, as Celerity's generator defaults (its tests rely on it). The runtime
    /// passes its configured policies (uninitialised reads are already reported by the task layer).
    fn default() -> Self {
        CommandPolicies {
            uninitialized_read: ErrorPolicy::Error,
            overlapping_write: ErrorPolicy::Error,
        }
    }
}

/// Builds the command graph of one node (`local_nid` of `num_nodes`) from the task graph.
///
/// Protocol: feed every task in creation order, the init epoch first, to
/// [`CommandGraphGenerator::build_task`]; announce buffers and host objects before the first task
/// that uses them and after the init epoch. The generator is deterministic: every node builds its
/// own graph from the same tasks and they agree on all transfers. Its tracking state is pruned
/// whenever a horizon or epoch becomes the effective epoch, so memory stays bounded.
pub struct CommandGraphGenerator {
    pub(super) num_nodes: usize,
    pub(super) local_nid: NodeId,
    pub(super) policies: CommandPolicies,
    chunk_multiplier: usize,
    /// Splits of recent task shapes.
    splits: SplitCache,
    next_cid: u64,
    pub(super) table: CommandTable,
    pub(super) buffers: IdTable<BufferId, BufferState>,
    host_objects: IdMap<HostObjectId, CommandId>,
    collective_groups: IdMap<CollectiveGroupId, CommandId>,
    pub(super) epoch_for_new_commands: CommandId,
    current_horizon: Option<CommandId>,
    pub(super) completed_reductions: Vec<ReductionId>,
    /// Some buffer [may hold stale data](BufferState::may_hold_stale) (never cleared): while
    /// false, no task awaits anything.
    pub(super) may_hold_stale: bool,
    recorder: Option<CommandRecorder>,
    /// Commands of the current `build_task`, not shared until it returns them.
    batch: CommandBatch,
    /// The task of the current `build_task`.
    batch_task: Option<Arc<Task>>,
    /// The chunk requirements of the last task built, whose storage the next reuses (boxed: the
    /// record is several hundred bytes to move in and out).
    requirements: Option<Box<ChunkRequirements>>,
}

impl CommandGraphGenerator {
    /// A generator for node `local_nid` of `num_nodes` (at most [`NodeBitset::MAX_NODES`]).
    pub fn new(num_nodes: usize, local_nid: NodeId, policies: CommandPolicies) -> Result<Self> {
        if num_nodes == 0 || num_nodes > NodeBitset::MAX_NODES {
            return Err(Error::invalid_argument(format!(
                "number of nodes {num_nodes} is outside the supported range [1,{}]",
                NodeBitset::MAX_NODES
            )));
        }
        if local_nid.0 as usize >= num_nodes {
            return Err(Error::invalid_argument(format!(
                "local node {local_nid} is not one of the {num_nodes} nodes"
            )));
        }
        Ok(CommandGraphGenerator {
            num_nodes,
            local_nid,
            policies,
            chunk_multiplier: 1,
            splits: SplitCache::default(),
            next_cid: 0,
            table: CommandTable::default(),
            buffers: IdTable::default(),
            host_objects: IdMap::default(),
            collective_groups: IdMap::default(),
            // the init epoch will be command 0
            epoch_for_new_commands: CommandId(0),
            current_horizon: None,
            completed_reductions: Vec::new(),
            may_hold_stale: false,
            recorder: None,
            batch: CommandBatch::new(),
            batch_task: None,
            requirements: None,
        })
    }

    /// Keeps a [`CommandRecorder`] of every command created from now on.
    pub fn enable_recording(&mut self) {
        if self.recorder.is_none() {
            self.recorder = Some(CommandRecorder::new(self.local_nid));
        }
    }

    /// The recorder, if recording is enabled.
    pub fn recorder(&self) -> Option<&CommandRecorder> {
        self.recorder.as_ref()
    }

    /// Splits variable-split tasks into `multiplier` chunks per node instead of one (tests use it
    /// to exercise several chunks per node; reductions then become unsupported).
    pub fn set_chunk_multiplier(&mut self, multiplier: usize) {
        self.chunk_multiplier = multiplier.max(1);
        self.splits.clear();
    }

    /// This node.
    pub fn local_node(&self) -> NodeId {
        self.local_nid
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// A new buffer of `range`. Its contents count as present and fresh on every node, so
    /// neither host-initialised nor uninitialised data is ever transferred.
    pub fn notify_buffer_created(&mut self, bid: BufferId, range: Range, host_initialized: bool) {
        let initialized =
            if host_initialized && self.policies.uninitialized_read != ErrorPolicy::Ignore {
                Region::from_box(GridBox::full_range(range))
            } else {
                Region::new()
            };
        // replicated: every node holds the initial contents, none pushes them
        let state = BufferState::new(
            range,
            WriteState::new(self.epoch_for_new_commands, true),
            Replication::nowhere(),
            initialized,
        );
        self.buffers.insert(bid, state);
    }

    /// Sets the debug name used in messages and records.
    pub fn notify_buffer_name_changed(&mut self, bid: BufferId, name: &str) {
        if let Some(b) = self.buffers.get_mut(bid) {
            b.name = Some(name.to_owned());
        }
    }

    /// Forgets a buffer.
    pub fn notify_buffer_destroyed(&mut self, bid: BufferId) {
        self.buffers.remove(bid);
    }

    /// A new host object; side effects on it are serialised from now on.
    pub fn notify_host_object_created(&mut self, hoid: HostObjectId) {
        self.host_objects.insert(hoid, self.epoch_for_new_commands);
    }

    /// Forgets a host object.
    pub fn notify_host_object_destroyed(&mut self, hoid: HostObjectId) {
        self.host_objects.remove(&hoid);
    }

    /// Number of buffers tracked.
    pub fn num_buffers(&self) -> usize {
        self.buffers.len()
    }

    /// Number of commands whose bookkeeping is still kept (bounded by the horizons).
    pub fn num_tracked_commands(&self) -> usize {
        self.table.len()
    }

    /// Number of entries of all per-buffer last-writer maps (bounded by the horizons).
    pub fn num_last_writer_entries(&self) -> usize {
        self.buffers.values().map(|b| b.last_writers.len()).sum()
    }

    /// The distinct commands that are local last writers of some buffer element.
    pub fn distinct_last_writers(&self) -> Vec<CommandId> {
        let mut out = Vec::new();
        for b in self.buffers.values() {
            b.last_writers.for_each(|_, ws| out.push(ws.command()));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The effective epoch: the command that commands without other true dependencies anchor on.
    pub fn epoch_for_new_commands(&self) -> CommandId {
        self.epoch_for_new_commands
    }

    pub(super) fn buffer_label(&self, bid: BufferId) -> BufferLabel<'_> {
        BufferLabel {
            id: bid,
            name: self.buffers.get(bid).and_then(|b| b.name.as_deref()),
        }
    }

    /// Generates the commands of `task` for this node and returns them in topological order.
    /// On error (an access-pattern violation under policy `Error`, or an unsupported reduction
    /// pattern) nothing has changed.
    pub fn build_task(&mut self, task: &Arc<Task>) -> Result<CommandBatch> {
        let prune_before = self.epoch_for_new_commands;
        debug_assert!(self.batch.is_empty());
        let first_cid = self.next_cid;
        self.batch_task = Some(Arc::clone(task));
        let outcome = match task.task_type() {
            TaskType::Epoch => {
                self.generate_epoch(task);
                Ok(())
            }
            TaskType::Horizon => {
                self.generate_horizon(task);
                Ok(())
            }
            TaskType::DeviceCompute
            | TaskType::HostCompute
            | TaskType::MasterNode
            | TaskType::Collective
            | TaskType::Fence => self.generate_distributed(task),
        };
        self.batch_task = None;
        if let Err(e) = outcome {
            debug_assert_eq!(self.next_cid, first_cid, "failed after creating commands");
            self.batch.clear();
            return Err(e);
        }
        self.table.prune_before(prune_before);
        let commands = std::mem::take(&mut self.batch);
        if let Some(recorder) = &mut self.recorder {
            let buffers = &self.buffers;
            for cmd in &commands {
                recorder.record(cmd, |bid| buffers.get(bid).and_then(|b| b.name.clone()));
            }
        }
        Ok(commands)
    }

    /// Creates a command in the batch and returns its id. Inlined: the kind is then built in
    /// place instead of copied into the command (the command is copied into its `Arc` anyway).
    #[inline(always)]
    pub(super) fn create(&mut self, tid: TaskId, kind: CommandKind) -> CommandId {
        let id = CommandId(self.next_cid);
        self.next_cid += 1;
        self.table.push(id, tid, kind.is_task_command());
        let task = self.batch_task.as_ref().expect("inside build_task");
        debug_assert_eq!(task.id(), tid);
        self.batch.push(Arc::new(Command {
            id,
            task: Arc::clone(task),
            kind,
            dependencies: SmallVec::new(),
        }));
        id
    }

    /// A push of `transfer` to `targets`, recorded as reading what it sends (the boxes of its
    /// targets, read in place in the new command rather than kept in a list of their own).
    pub(super) fn create_push(
        &mut self,
        tid: TaskId,
        transfer: TransferId,
        targets: Vec<(NodeId, Region)>,
    ) -> CommandId {
        let cmd = self.create(tid, CommandKind::Push { transfer, targets });
        let CommandKind::Push { targets, .. } = &self.batch.last().expect("just created").kind
        else {
            unreachable!("a push was just created");
        };
        let regions = targets.iter().map(|(_, region)| region);
        self.table.add_read_regions(cmd, transfer.buffer, regions);
        cmd
    }

    /// The dependencies of `cid`, a command of the current batch.
    fn pending_deps(&mut self, cid: CommandId) -> &mut CommandDependencies {
        let first = self.batch[0].id.0;
        let cmd = &mut self.batch[(cid.0 - first) as usize];
        &mut Arc::get_mut(cmd)
            .expect("batch commands are not shared yet")
            .dependencies
    }

    /// Adds the edge `from -> to`; `from` belongs to the current batch. An existing edge is
    /// upgraded from anti to true, never duplicated.
    pub(super) fn add_dependency(
        &mut self,
        from: CommandId,
        to: CommandId,
        kind: DependencyKind,
        origin: DependencyOrigin,
    ) {
        debug_assert!(from != to && to < from);
        let deps = self.pending_deps(from);
        let becomes_true = match deps.iter_mut().find(|d| d.node == to) {
            Some(d) => {
                let upgrade = kind == DependencyKind::True && d.kind == DependencyKind::Anti;
                if upgrade {
                    d.kind = DependencyKind::True;
                    d.origin = origin;
                }
                upgrade
            }
            None => {
                deps.push(CommandDependency {
                    node: to,
                    kind,
                    origin,
                });
                kind == DependencyKind::True
            }
        };
        let entry = self.table.get_mut(to);
        entry.in_front = false;
        if becomes_true {
            entry.true_dependents.push(from);
        }
    }

    /// Anchors `cmd` on the effective epoch unless it already has a true dependency.
    pub(super) fn add_epoch_dependency(&mut self, cmd: CommandId) {
        let has_true = self
            .pending_deps(cmd)
            .iter()
            .any(|d| d.kind == DependencyKind::True);
        if !has_true {
            let epoch = self.epoch_for_new_commands;
            self.add_dependency(
                cmd,
                epoch,
                DependencyKind::True,
                DependencyOrigin::LastEpoch,
            );
        }
    }

    /// Adds anti-dependencies from `write_cmd`, which overwrites `region` of `bid`, onto the
    /// commands that read the old contents: the true dependents of each last writer that read
    /// part of the region (except task commands of `task`), or the last writer itself when no
    /// such reader exists.
    pub(super) fn add_anti_dependencies(
        &mut self,
        task: TaskId,
        bid: BufferId,
        region: &Region,
        write_cmd: CommandId,
    ) {
        let buffer = &self.buffers[bid];
        let mut targets: SmallVec<[CommandId; 8]> = SmallVec::new();
        let mut writers: SmallVec<[CommandId; 4]> = SmallVec::new();
        buffer.last_writers.query_region(region, |_, ws| {
            if !writers.contains(&ws.command()) {
                writers.push(ws.command());
            }
        });
        // by reference: a by-value loop first copies the whole inline list
        for &writer in &writers {
            let entry = self.table.get(writer);
            let before = targets.len();
            for &dependent in &entry.true_dependents {
                if dependent == write_cmd {
                    continue;
                }
                // one look-up of the dependent's entry for both tests
                let d = self.table.get(dependent);
                if d.is_task_command && d.task == task {
                    continue;
                }
                if d.reads_intersect(bid, region) {
                    targets.push(dependent);
                }
            }
            if targets.len() == before {
                targets.push(writer);
            }
        }
        for &t in &targets {
            if t != write_cmd {
                self.add_dependency(
                    write_cmd,
                    t,
                    DependencyKind::Anti,
                    DependencyOrigin::Dataflow,
                );
            }
        }
    }

    fn reduce_execution_front_to(&mut self, cmd: CommandId) {
        // by id, not collected first: an edge only changes the entry of its target
        for id in self.table.front_candidates() {
            let front = CommandId(id);
            if front != cmd && self.table.get(front).in_front {
                self.add_dependency(
                    cmd,
                    front,
                    DependencyKind::True,
                    DependencyOrigin::ExecutionFront,
                );
            }
        }
        self.table.set_front_start(cmd);
    }

    /// Makes `epoch` (an epoch or an applied horizon) the anchor of new commands and replaces
    /// every older last writer, side effect and collective command by it.
    fn set_epoch_for_new_commands(&mut self, epoch: CommandId) {
        for buffer in self.buffers.values_mut() {
            buffer.last_writers.apply_to_values(|ws| {
                if ws.command() < epoch {
                    ws.with_command(epoch)
                } else {
                    *ws
                }
            });
        }
        for last in self
            .host_objects
            .values_mut()
            .chain(self.collective_groups.values_mut())
        {
            if *last < epoch {
                *last = epoch;
            }
        }
        self.epoch_for_new_commands = epoch;
    }

    fn generate_epoch(&mut self, task: &Task) {
        let completed_reductions = std::mem::take(&mut self.completed_reductions);
        let action = task
            .epoch_action()
            .unwrap_or(crate::task::EpochAction::None);
        let cmd = self.create(
            task.id(),
            CommandKind::Epoch {
                action,
                completed_reductions,
            },
        );
        self.set_epoch_for_new_commands(cmd);
        self.current_horizon = None;
        self.reduce_execution_front_to(cmd);
    }

    fn generate_horizon(&mut self, task: &Task) {
        let completed_reductions = std::mem::take(&mut self.completed_reductions);
        let cmd = self.create(
            task.id(),
            CommandKind::Horizon {
                completed_reductions,
            },
        );
        if let Some(previous) = self.current_horizon.replace(cmd) {
            self.set_epoch_for_new_commands(previous);
        }
        self.reduce_execution_front_to(cmd);
    }

    fn generate_distributed(&mut self, task: &Task) -> Result<()> {
        let assignment =
            self.splits
                .assignment(task, self.num_nodes, self.chunk_multiplier, self.local_nid);
        // an unknown buffer counts too: the full path reports it
        let pending = (task.access_map().accessed_buffers())
            .chain(task.reductions().iter().map(|r| r.bid))
            .any(|bid| {
                self.buffers
                    .get(bid)
                    .is_none_or(|b| b.pending_reduction.is_some())
            });
        // listed only when needed
        let touched = if pending {
            touched_buffers(task)
        } else {
            SmallVec::new()
        };
        // reductions need every remote reader of the buffers involved (to count readers and to
        // push partial results), so their tasks take the full requirements
        // evaluated into the record of the previous task
        let mut reqs = self.requirements.take().unwrap_or_default();
        if pending || !task.reductions().is_empty() {
            assignment::compute_requirements(task, &assignment.chunks, self.local_nid, &mut reqs);
        } else {
            self.compute_pushable_requirements(task, &assignment, &mut reqs);
        }
        self.validate(task, &assignment, &reqs, pending.then_some(&touched[..]))?;

        if pending {
            self.resolve_pending_reductions(task, &reqs, &touched);
        }
        self.generate_pushes(task, &reqs);
        self.generate_await_pushes(task, &reqs);
        // the local chunks' commands are the last ones of the batch: a last writer from this id
        // on is a local write of this task
        let first_chunk_cmd = CommandId(self.next_cid);
        self.generate_task_commands(task, &reqs);

        for reduction in task.reductions() {
            if reqs.num_chunks > 1 {
                if let Some(b) = self.buffers.get_mut(reduction.bid) {
                    b.pending_reduction = Some(*reduction);
                }
            } else {
                self.completed_reductions.push(reduction.rid);
            }
        }
        self.update_fresh_regions(task, first_chunk_cmd, reqs.is_whole_task());
        self.requirements = Some(reqs);
        Ok(())
    }

    /// Like [`assignment::compute_requirements`], but the remote reads only keep what can lead to
    /// a push: only consuming accesses of buffers with pushable data whose task-level region
    /// meets the buffer's [`pushable_bounds`](BufferState::pushable_bounds) are candidates (a
    /// chunk's region lies inside the task-level one: mappers are monotonic), and of those only
    /// the remote chunks whose read bounds meet it are evaluated
    /// ([`assignment::compute_pushable_requirements`]). Everything dropped would have produced no
    /// push, so the commands are the same; remote chunks cost nothing when nothing is to be sent.
    fn compute_pushable_requirements(
        &self,
        task: &Task,
        assignment: &Assignment,
        out: &mut ChunkRequirements,
    ) {
        let map = task.access_map();
        let mut candidates: SmallVec<[PushCandidate; 4]> = SmallVec::new();
        // without remote chunks there is nothing to push
        let accesses = if assignment.has_remote() {
            map.accesses()
        } else {
            &[]
        };
        for (access, acc) in accesses.iter().enumerate() {
            if !acc.mode.is_consumer() {
                continue;
            }
            let pushable = self.buffers[acc.bid].pushable_bounds;
            if !map.task_consumed_bounds(acc.bid).intersects(&pushable) {
                continue;
            }
            candidates.push(PushCandidate {
                access,
                bid: acc.bid,
                pushable,
            });
        }
        assignment::compute_pushable_requirements(
            task,
            assignment,
            self.local_nid,
            &candidates,
            out,
        );
    }

    /// Execution or fence commands for the local chunks (created one after the other, nothing
    /// after them: [`CommandGraphGenerator::update_fresh_regions`] tells the local writes of the
    /// task by their writers' ids).
    fn generate_task_commands(&mut self, task: &Task, reqs: &ChunkRequirements) {
        for (chunk, requirements) in reqs.local_chunks(task) {
            let cmd = self.create_chunk_command(task, chunk);
            for (bid, consumed, produced) in requirements {
                if !consumed.is_empty() {
                    self.add_read_dependencies(cmd, bid, consumed);
                }
                if !produced.is_empty() {
                    self.record_local_write(task.id(), cmd, bid, produced);
                }
            }
            self.add_side_effect_dependencies(task, cmd);
            self.add_epoch_dependency(cmd);
        }
    }

    /// The execution (or fence) command of one local chunk, serialised after the previous
    /// command of its collective group.
    fn create_chunk_command(&mut self, task: &Task, chunk: &GridBox) -> CommandId {
        let kind = if task.task_type() == TaskType::Fence {
            CommandKind::Fence
        } else {
            let is_reduction_initializer = self.local_nid == REDUCTION_INITIALIZER
                && task.reductions().iter().any(|r| r.init_from_buffer);
            CommandKind::Execution {
                execution_range: *chunk,
                is_reduction_initializer,
            }
        };
        let cmd = self.create(task.id(), kind);
        if task.task_type() == TaskType::Collective {
            let group = task.collective_group();
            if let Some(last) = self.collective_groups.insert(group, cmd) {
                self.add_dependency(
                    cmd,
                    last,
                    DependencyKind::True,
                    DependencyOrigin::CollectiveGroupSerialization,
                );
            }
        }
        cmd
    }

    /// True dependencies of `cmd` on the local last writers of what it consumes of `bid`.
    fn add_read_dependencies(&mut self, cmd: CommandId, bid: BufferId, consumed: &Region) {
        let mut writers: SmallVec<[WriteState; 4]> = SmallVec::new();
        self.buffers[bid]
            .last_writers
            .query_region(consumed, |_, ws| {
                if !writers.contains(ws) {
                    writers.push(*ws);
                }
            });
        for &ws in &writers {
            // stale data here was received for this task (which overwrites it elsewhere)
            debug_assert!(
                ws.is_fresh() || (ws.is_replicated() && ws.command() >= self.batch[0].id),
                "unresolved remote data dependency"
            );
            self.add_dependency(
                cmd,
                ws.command(),
                DependencyKind::True,
                DependencyOrigin::Dataflow,
            );
        }
        self.table.add_read(cmd, bid, consumed.boxes());
    }

    /// `cmd` overwrites `produced` of `bid` here: anti-dependencies on the old readers, and it
    /// becomes the fresh, unreplicated last writer (a pending reduction is discarded).
    fn record_local_write(
        &mut self,
        tid: TaskId,
        cmd: CommandId,
        bid: BufferId,
        produced: &Region,
    ) {
        self.add_anti_dependencies(tid, bid, produced, cmd);
        let buffer = self.buffers.get_mut(bid).expect("validated");
        if self.num_nodes > 1 {
            // a single node never pushes: neither bounds nor replication are ever read
            buffer.pushable_bounds = buffer
                .pushable_bounds
                .bounding_box(&produced.bounding_box());
            buffer.replicated.overwritten(produced);
        }
        // `cmd` is new: no entry holds it, so its entry has no equal neighbour to merge with
        buffer
            .last_writers
            .update_region_unique(produced, WriteState::new(cmd, false));
        if let Some(discarded) = buffer.pending_reduction.take() {
            self.completed_reductions.push(discarded.rid);
        }
    }

    /// Serialises `cmd` after the previous command with a side effect on each host object.
    fn add_side_effect_dependencies(&mut self, task: &Task, cmd: CommandId) {
        for &hoid in task.side_effects() {
            let epoch = self.epoch_for_new_commands;
            let last = self.host_objects.entry(hoid).or_insert(epoch);
            let previous = std::mem::replace(last, cmd);
            self.add_dependency(
                cmd,
                previous,
                DependencyKind::True,
                DependencyOrigin::SideEffect,
            );
        }
    }
}
