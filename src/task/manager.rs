//! [`TaskManager`]: turns submissions into tasks with their dependencies, inserts horizons and
//! epochs, and prunes what the executor has finished.

mod dependencies;
mod validation;

use dependencies::DepsBuilder;

use std::sync::Arc;

use super::access::BufferAccess;
use super::command_group::{CommandGroup, TaskSpec};
use super::geometry::TaskGeometry;
use super::graph::{NewTask, TaskGraph};
use super::last_writers::LastWriterMap;
use super::range_mapper::{BufferLabel, RangeMapper};
use super::recorder::{TaskRecord, TaskRecorder};
use super::task::{
    Dependency, DependencyKind, DependencyOrigin, EpochAction, Task, TaskPayload, TaskType,
};
use crate::error::{Error, Result};
use crate::grid::{GridBox, Range, Subrange};
use crate::id_table::IdTable;
use crate::policy::ErrorPolicy;
use crate::types::{BufferId, CollectiveGroupId, HostObjectId, IdMap, TaskId};

/// Settings of the task manager.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TaskManagerConfig {
    /// Number of nodes: the iteration space of collective host tasks.
    pub num_collective_nodes: usize,
    /// A horizon follows once the critical path has grown by this much since the last one.
    pub horizon_step: u32,
    /// A horizon follows once the execution front holds this many tasks.
    pub horizon_max_parallelism: u32,
    /// What to do on a read of uninitialised buffer data. The default, `Error`, is Celerity's
    /// class default that its tests rely on; the runtime passes its configured policy.
    pub uninitialized_read: ErrorPolicy,
    /// Keep a [`TaskRecord`] of every task.
    pub record: bool,
}

impl Default for TaskManagerConfig {
    fn default() -> Self {
        TaskManagerConfig {
            num_collective_nodes: 1,
            horizon_step: 4,
            horizon_max_parallelism: 64,
            uninitialized_read: ErrorPolicy::Error,
            record: false,
        }
    }
}

/// Receives every task right after it was created, in creation order (the command graph
/// generator's input).
pub trait TaskDelegate {
    /// Called once per created task, including horizons and epochs.
    fn task_created(&mut self, task: &Arc<Task>);
}

impl<F: FnMut(&Arc<Task>)> TaskDelegate for F {
    fn task_created(&mut self, task: &Arc<Task>) {
        self(task)
    }
}

struct BufferState {
    dims: usize,
    range: Range,
    name: Option<String>,
    last_writers: LastWriterMap,
    readers: ReaderScan,
}

/// The dependents of one last writer of a buffer that consume some of it, with the bounding boxes
/// of what they consume, gathered by the last anti-dependency scan of that writer's dependents.
///
/// A writer with many dependents (the init epoch or a horizon, on which every task of an
/// interval depends) is scanned again for every task that overwrites part of its data, and
/// looking into each dependent's access map costs far more than testing a box. So a long scan
/// keeps what it found: the next scan of the same writer reads the list and looks only at the
/// dependents added since (dependents are only ever appended). Same dependents, same order, same
/// tests: the same edges.
#[derive(Default)]
struct ReaderScan {
    writer: Option<TaskId>,
    /// How many of the writer's dependents the list covers.
    scanned: usize,
    readers: Vec<(TaskId, GridBox)>,
}

/// A writer with at most this many dependents is scanned directly, without [`ReaderScan`].
const DIRECT_SCAN_MAX: usize = 2;

/// The point `[0,1)³` that reductions write (and read, when they include the old value).
const SCALAR_BOX: GridBox = GridBox::UNIT;

/// Builds the task graph on the application thread.
///
/// Protocol: construction creates the init epoch (task 0). Buffers and host objects are announced
/// before use ([`TaskManager::notify_buffer_created`], ...). Each [`TaskManager::submit`],
/// [`TaskManager::epoch`] or fence creates one task, hands it to the delegate and may add a
/// horizon after a command-group task. When the executor reports a horizon or epoch reached, the
/// runtime calls [`TaskManager::prune_before_epoch`] with the effective epoch (see
/// [`EpochTracker`](super::EpochTracker)), which frees older tasks. After the shutdown epoch every
/// submission is refused.
pub struct TaskManager {
    config: TaskManagerConfig,
    delegate: Option<Box<dyn TaskDelegate + Send>>,
    recorder: Option<TaskRecorder>,
    graph: TaskGraph,
    next_tid: u64,
    buffers: IdTable<BufferId, BufferState>,
    /// One past the highest buffer / host object id announced: an absent id below it was
    /// released (INVALID_STATE), one at or above it never existed (INVALID_ARGUMENT).
    buffer_ids_issued: u64,
    host_object_ids_issued: u64,
    /// Last task with a side effect on each host object.
    host_objects: IdMap<HostObjectId, Option<TaskId>>,
    /// Last task of each collective group.
    last_collective: IdMap<CollectiveGroupId, TaskId>,
    /// Tasks without dependents, ascending.
    execution_front: Vec<TaskId>,
    /// Anchor for tasks without other true dependencies; last writer of host-initialised data.
    epoch_for_new_tasks: TaskId,
    /// The newest horizon; it becomes the epoch for new tasks when the next horizon is created.
    current_horizon: Option<TaskId>,
    max_critical_path_length: u32,
    current_horizon_critical_path_length: u32,
    num_user_command_groups: usize,
    num_user_epochs: usize,
    shut_down: bool,
}

impl TaskManager {
    /// A task manager holding only the init epoch, which `delegate` (if any) receives at once.
    pub fn new(config: TaskManagerConfig, delegate: Option<Box<dyn TaskDelegate + Send>>) -> Self {
        let mut tm = TaskManager {
            config,
            delegate,
            recorder: config.record.then(TaskRecorder::new),
            graph: TaskGraph::new(),
            next_tid: 0,
            buffers: IdTable::default(),
            host_objects: IdMap::default(),
            buffer_ids_issued: 0,
            host_object_ids_issued: 0,
            last_collective: IdMap::default(),
            execution_front: Vec::new(),
            epoch_for_new_tasks: TaskId::INIT_EPOCH,
            current_horizon: None,
            max_critical_path_length: 0,
            current_horizon_critical_path_length: 0,
            num_user_command_groups: 0,
            num_user_epochs: 0,
            shut_down: false,
        };
        let init = tm
            .graph
            .allocate_filled(TaskId::INIT_EPOCH, TaskType::Epoch, |t| {
                t.epoch_action = Some(EpochAction::Init)
            });
        tm.register_on_front(init);
        tm
    }

    // ===== configuration and announcements =====

    /// The settings in use.
    pub fn config(&self) -> &TaskManagerConfig {
        &self.config
    }

    /// Sets the critical-path growth that triggers a horizon (0: a horizon after every task).
    pub fn set_horizon_step(&mut self, step: u32) {
        self.config.horizon_step = step;
    }

    /// Sets the execution-front size that triggers a horizon (at least 1).
    pub fn set_horizon_max_parallelism(&mut self, max_parallelism: u32) {
        self.config.horizon_max_parallelism = max_parallelism.max(1);
    }

    /// Announces a buffer. A host-initialised buffer counts as written by the current epoch, so
    /// reading it never trips the uninitialised-read check.
    pub fn notify_buffer_created(
        &mut self,
        bid: BufferId,
        dims: usize,
        range: Range,
        host_initialized: bool,
    ) {
        self.buffer_ids_issued = self.buffer_ids_issued.max(bid.0 + 1);
        let initial = host_initialized.then_some(self.epoch_for_new_tasks);
        let previous = self.buffers.insert(
            bid,
            BufferState {
                dims,
                range,
                name: None,
                last_writers: LastWriterMap::new(range, initial),
                readers: ReaderScan::default(),
            },
        );
        debug_assert!(previous.is_none(), "{bid} announced twice");
    }

    /// Sets a buffer's debug name (used in messages and records).
    pub fn notify_buffer_name_changed(&mut self, bid: BufferId, name: &str) {
        if let Some(buffer) = self.buffers.get_mut(bid) {
            buffer.name = Some(name.to_owned());
        }
    }

    /// Forgets a buffer; later submissions naming it are refused.
    pub fn notify_buffer_destroyed(&mut self, bid: BufferId) {
        self.buffers.remove(bid);
    }

    /// Announces a host object.
    pub fn notify_host_object_created(&mut self, hoid: HostObjectId) {
        self.host_object_ids_issued = self.host_object_ids_issued.max(hoid.0 + 1);
        self.host_objects.insert(hoid, None);
    }

    /// Forgets a host object.
    pub fn notify_host_object_destroyed(&mut self, hoid: HostObjectId) {
        self.host_objects.remove(&hoid);
    }

    // ===== queries =====

    /// The live task `tid` (not yet pruned).
    pub fn task(&self, tid: TaskId) -> Option<&Arc<Task>> {
        self.graph.get(tid)
    }

    /// The live tasks that depend on `tid`.
    pub fn dependents(&self, tid: TaskId) -> &[TaskId] {
        self.graph.dependents(tid)
    }

    /// The live part of the task graph.
    pub fn graph(&self) -> &TaskGraph {
        &self.graph
    }

    /// Number of live tasks (what pruning bounds).
    pub fn num_live_tasks(&self) -> usize {
        self.graph.len()
    }

    /// Tasks without dependents, ascending.
    pub fn execution_front(&self) -> &[TaskId] {
        &self.execution_front
    }

    /// The longest critical path of any task created so far.
    pub fn max_critical_path_length(&self) -> u32 {
        self.max_critical_path_length
    }

    /// The newest horizon, until an epoch supersedes it.
    pub fn current_horizon(&self) -> Option<TaskId> {
        self.current_horizon
    }

    /// The epoch or applied horizon that new tasks without true dependencies depend on.
    pub fn epoch_for_new_tasks(&self) -> TaskId {
        self.epoch_for_new_tasks
    }

    /// The id the next task will get.
    pub fn next_task_id(&self) -> TaskId {
        TaskId(self.next_tid)
    }

    /// The last writers of a buffer (`None`: uninitialised). The shutdown epoch leaves them as
    /// they were (no task can follow it).
    pub fn last_writers(&self, bid: BufferId) -> Option<&LastWriterMap> {
        self.buffers.get(bid).map(|b| &b.last_writers)
    }

    /// Total number of last-writer entries over all buffers (tracking state that horizons bound).
    pub fn num_last_writer_entries(&self) -> usize {
        self.buffers.values().map(|b| b.last_writers.len()).sum()
    }

    /// The recorder, when `config.record` is set.
    pub fn recorder(&self) -> Option<&TaskRecorder> {
        self.recorder.as_ref()
    }

    /// `B3 "name"` for messages.
    pub fn buffer_label(&self, bid: BufferId) -> BufferLabel<'_> {
        BufferLabel {
            id: bid,
            name: self.buffers.get(bid).and_then(|b| b.name.as_deref()),
        }
    }

    // ===== task creation =====

    fn check_running(&self, what: &str) -> Result<()> {
        if self.shut_down {
            return Err(Error::invalid_state(format!(
                "{what}: the task graph has already received its shutdown epoch"
            )));
        }
        Ok(())
    }

    /// Creates the task of a command group, computes its dependencies and hands it to the
    /// delegate; a horizon may follow. On error nothing changes (no task id is used up).
    ///
    /// Errors: `InvalidArgument` for bad geometry, hints, accesses, side effects or reductions
    /// (see API.md's bad-input list); `AccessPattern` for an uninitialised read under policy
    /// `Error`; `InvalidState` after shutdown.
    pub fn submit(&mut self, spec: TaskSpec, cg: CommandGroup) -> Result<TaskId> {
        self.submit_then(spec, cg, |_| {})
    }

    /// [`submit`](Self::submit), calling `validated` once every check has passed and before the
    /// task is announced to the delegate: the runtime registers what the task's instructions
    /// will need (reduction operators) there, so that a refused submission registers nothing.
    pub fn submit_then(
        &mut self,
        spec: TaskSpec,
        mut cg: CommandGroup,
        validated: impl FnOnce(&Task),
    ) -> Result<TaskId> {
        self.check_running("submit")?;
        let tid = TaskId(self.next_tid);
        let task = self.build_command_group_task(tid, spec, &mut cg)?;
        self.add_task(task, validated)?;
        self.num_user_command_groups += 1;
        if self.need_new_horizon() {
            self.generate_horizon();
        }
        Ok(tid)
    }

    /// Creates an epoch that depends on the whole execution front and becomes the epoch for new
    /// tasks at once. After [`EpochAction::Shutdown`] nothing more is accepted.
    pub fn epoch(&mut self, action: EpochAction, payload: Option<TaskPayload>) -> Result<TaskId> {
        self.check_running("epoch")?;
        if action == EpochAction::Init {
            return Err(Error::invalid_argument(
                "epoch: the init epoch is created with the task manager",
            ));
        }
        let tid = TaskId(self.next_tid);
        let epoch = self.graph.allocate_filled(tid, TaskType::Epoch, |t| {
            t.epoch_action = Some(action);
            t.payload = payload;
        });
        self.register_on_front(epoch);
        if action == EpochAction::Shutdown {
            // nothing reads the tracking state after the last task: skip its compaction
            self.epoch_for_new_tasks = tid;
        } else {
            self.set_epoch_for_new_tasks(tid);
        }
        self.current_horizon = None;
        self.current_horizon_critical_path_length = self.max_critical_path_length;

        if action == EpochAction::Shutdown {
            self.shut_down = true;
            if self.num_user_command_groups > 100
                && self.num_user_epochs * 10 >= self.num_user_command_groups
            {
                tracing::warn!(
                    "Your program appears to call celerity_wait() excessively, which may lead to performance degradation. \
                     Consider using fences for data-dependent branching and waiting only on a very coarse granularity."
                );
            }
        } else {
            self.num_user_epochs += 1;
        }
        Ok(tid)
    }

    /// Creates a fence that reads `region` of a buffer (`None`: all of it).
    pub fn fence_buffer(
        &mut self,
        bid: BufferId,
        region: Option<Subrange>,
        payload: Option<TaskPayload>,
    ) -> Result<TaskId> {
        self.check_running("fence")?;
        let buffer = self.buffer("fence", bid)?;
        let mapper = match region {
            Some(sr) => RangeMapper::Fixed(sr),
            None => RangeMapper::All,
        };
        let label = BufferLabel {
            id: bid,
            name: buffer.name.as_deref(),
        };
        mapper.validate_for_buffer(label, buffer.dims, buffer.range)?;
        let access = BufferAccess {
            bid,
            mode: super::AccessMode::Read,
            mapper,
            buffer_dims: buffer.dims,
            buffer_range: buffer.range,
        };
        let tid = TaskId(self.next_tid);
        let fence = self.graph.allocate_filled(tid, TaskType::Fence, |t| {
            t.access_map.push(access);
            t.access_map.finish(TaskGeometry::default());
            t.payload = payload;
        });
        self.add_task(fence.into_task(), |_| {})
    }

    /// Creates a fence that waits for every side effect on a host object submitted before it.
    pub fn fence_host_object(
        &mut self,
        hoid: HostObjectId,
        payload: Option<TaskPayload>,
    ) -> Result<TaskId> {
        self.check_running("fence")?;
        self.check_host_object("fence", hoid)?;
        let tid = TaskId(self.next_tid);
        let fence = self.graph.allocate_filled(tid, TaskType::Fence, |t| {
            t.side_effects.push(hoid);
            t.payload = payload;
        });
        self.add_task(fence.into_task(), |_| {})
    }

    /// Frees every live task older than `epoch`, an epoch or horizon the executor has reached
    /// that is at most the current epoch for new tasks (see [`EpochTracker`](super::EpochTracker)).
    /// Older bounds are harmless; newer ones are clamped, as the tracking state still refers to
    /// tasks up to the epoch for new tasks.
    pub fn prune_before_epoch(&mut self, epoch: TaskId) {
        self.graph.erase_before(epoch.min(self.epoch_for_new_tasks));
    }

    // ===== internals =====

    fn buffer(&self, what: &str, bid: BufferId) -> Result<&BufferState> {
        self.buffers.get(bid).ok_or_else(|| {
            if bid.0 < self.buffer_ids_issued {
                Error::invalid_state(format!(
                    "{what}: buffer {bid} was released before the command group was submitted"
                ))
            } else {
                Error::invalid_argument(format!("{what}: unknown buffer {bid}"))
            }
        })
    }

    fn check_host_object(&self, what: &str, hoid: HostObjectId) -> Result<()> {
        if self.host_objects.contains_key(&hoid) {
            Ok(())
        } else if hoid.0 < self.host_object_ids_issued {
            Err(Error::invalid_state(format!(
                "{what}: host object {hoid} was released before the command group was submitted"
            )))
        } else {
            Err(Error::invalid_argument(format!(
                "{what}: unknown host object {hoid}"
            )))
        }
    }

    /// Computes the dependencies of the new task `task`, calls `validated` and registers it. A
    /// refused task (an uninitialised read) leaves its allocation to the next one.
    fn add_task(&mut self, task: Arc<Task>, validated: impl FnOnce(&Task)) -> Result<TaskId> {
        // filled in place: returned in a `Result`, the builder was copied twice
        let mut deps = DepsBuilder::new();
        if let Err(e) = self.compute_dependencies(&task, &mut deps) {
            self.graph.recycle(task);
            return Err(e);
        }
        validated(&task);
        let tid = task.id;
        self.register(task, deps);
        Ok(tid)
    }

    /// Creates a horizon or epoch on the whole execution front: true dependencies on every task
    /// of the front, which then holds only the new task. The front holds each task once,
    /// ascending: the edges go into the task as they are, without `DepsBuilder::add`'s duplicate
    /// search and in the order `register` sorts to. The longest critical path in the front is the
    /// graph's longest (a task of that length has no dependents: one would be longer), so no
    /// front task is looked up.
    fn register_on_front(&mut self, mut task: NewTask) {
        let critical_path_length = if self.execution_front.is_empty() {
            0
        } else {
            self.max_critical_path_length + 1
        };
        debug_assert_eq!(
            Some(critical_path_length),
            self.execution_front
                .iter()
                .map(|&t| self.graph.critical_path_length(t).map(|l| l + 1))
                .try_fold(0, |max, l| l.map(|l| l.max(max)))
        );
        {
            let t = task.fill();
            // a plain loop: `SmallVec::extend` is a call of about 70 instructions for two edges
            for &front in &self.execution_front {
                t.dependencies.push(Dependency {
                    task: front,
                    kind: DependencyKind::True,
                    origin: DependencyOrigin::ExecutionFront,
                });
            }
            t.critical_path_length = critical_path_length;
        }
        self.execution_front.clear();
        self.link(task.into_task());
    }

    /// Creates the task with the dependencies `deps`, links it into the graph and the execution
    /// front, and announces it.
    fn register(&mut self, mut task: Arc<Task>, mut deps: DepsBuilder) {
        // a canonical order: the same edges print the same on every node
        deps.deps.sort_unstable_by_key(|d| d.task);
        for d in &deps.deps {
            if let Ok(i) = self.execution_front.binary_search(&d.task) {
                self.execution_front.remove(i);
            }
        }
        {
            let t = Arc::get_mut(&mut task).expect("a new task is not shared yet");
            t.dependencies = deps.deps;
            t.critical_path_length = deps.critical_path_length;
        }
        self.link(task);
    }

    /// The common tail of [`Self::register`] and [`Self::register_on_front`]: the task, whose
    /// dependencies are set and gone from the front, joins the graph and the front and is
    /// announced.
    #[inline]
    fn link(&mut self, task: Arc<Task>) {
        let tid = TaskId(self.next_tid);
        debug_assert_eq!(task.id, tid);
        self.next_tid += 1;
        self.execution_front.push(tid);
        self.max_critical_path_length =
            self.max_critical_path_length.max(task.critical_path_length);
        if let Some(recorder) = &mut self.recorder {
            let buffers = &self.buffers;
            recorder.record(TaskRecord::new(&task, |bid| {
                buffers.get(bid).and_then(|b| b.name.clone())
            }));
        }
        if let Some(delegate) = &mut self.delegate {
            delegate.task_created(&task);
        }
        // announced first, then moved into the graph: a clone for the graph and the drop of
        // this reference were two locked read-modify-writes per task
        self.graph.push(task);
    }

    fn need_new_horizon(&self) -> bool {
        let step = self.max_critical_path_length - self.current_horizon_critical_path_length;
        step >= self.config.horizon_step
            || self.execution_front.len() >= self.config.horizon_max_parallelism as usize
    }

    /// Creates a horizon on the execution front and applies the previous horizon (if any) as the
    /// epoch for new tasks: the one-horizon lag.
    fn generate_horizon(&mut self) -> TaskId {
        let tid = TaskId(self.next_tid);
        self.current_horizon_critical_path_length = self.max_critical_path_length;
        let previous = self.current_horizon.replace(tid);
        let horizon = self.graph.allocate(tid, TaskType::Horizon);
        self.register_on_front(horizon);
        if let Some(previous) = previous {
            self.set_epoch_for_new_tasks(previous);
        }
        tid
    }

    /// Makes `epoch` the anchor of new tasks and replaces every older entry of the tracking
    /// state by it, which bounds both the state and the fan-in of later tasks.
    fn set_epoch_for_new_tasks(&mut self, epoch: TaskId) {
        let older = |t: TaskId| if t < epoch { epoch } else { t };
        for buffer in self.buffers.values_mut() {
            buffer.last_writers.apply_to_values(|w| w.map(older));
            if buffer.readers.writer.is_some_and(|w| w < epoch) {
                // no longer a last writer: free the list
                buffer.readers = ReaderScan::default();
            }
        }
        // most programs have neither: an empty hash map's iteration still costs a probe
        if !self.last_collective.is_empty() {
            for last in self.last_collective.values_mut() {
                *last = older(*last);
            }
        }
        if !self.host_objects.is_empty() {
            for last in self.host_objects.values_mut().flatten() {
                *last = older(*last);
            }
        }
        self.epoch_for_new_tasks = epoch;
    }
}
