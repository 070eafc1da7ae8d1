//! [`TaskRecorder`]: immutable records of every created task, for tests and graph printing.
//!
//! Records survive pruning and carry everything a printer needs without looking anything up:
//! ids, names (of tasks and buffers), kinds, geometry, accesses with their task-level regions,
//! side effects, reductions and dependencies with kind and origin.

use super::access::AccessMode;
use super::geometry::TaskGeometry;
use super::task::{Dependency, DependencyKind, EpochAction, Hints, ReductionInfo, Task, TaskType};
use crate::grid::Region;
use crate::types::{BufferId, CollectiveGroupId, HostObjectId, TaskId};

/// One access of a recorded task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRecord {
    /// The buffer.
    pub bid: BufferId,
    /// Its debug name at the time of recording.
    pub buffer_name: Option<String>,
    /// The mode.
    pub mode: AccessMode,
    /// What the access touches over the whole task.
    pub region: Region,
}

/// One reduction of a recorded task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReductionRecord {
    /// The reduction, its buffer and whether the old value is included.
    pub info: ReductionInfo,
    /// The buffer's debug name at the time of recording.
    pub buffer_name: Option<String>,
}

/// A copy of a task's data, with buffer names resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    /// The task's id.
    pub id: TaskId,
    /// Its debug name.
    pub name: Option<String>,
    /// Its type.
    pub ty: TaskType,
    /// The action of an epoch.
    pub epoch_action: Option<EpochAction>,
    /// The collective group (NONE unless collective).
    pub collective_group: CollectiveGroupId,
    /// The iteration space.
    pub geometry: TaskGeometry,
    /// The accesses, in submission order.
    pub accesses: Vec<AccessRecord>,
    /// Host objects with side effects.
    pub side_effects: Vec<HostObjectId>,
    /// Reductions.
    pub reductions: Vec<ReductionRecord>,
    /// Hints.
    pub hints: Hints,
    /// Backward edges with kind and origin.
    pub dependencies: Vec<Dependency>,
}

impl TaskRecord {
    /// Records `task`, resolving buffer names with `buffer_name`.
    pub fn new(task: &Task, buffer_name: impl Fn(BufferId) -> Option<String>) -> Self {
        let bam = task.access_map();
        let whole = task.geometry().global_box();
        let accesses = bam
            .accesses()
            .iter()
            .enumerate()
            .map(|(i, acc)| AccessRecord {
                bid: acc.bid,
                buffer_name: buffer_name(acc.bid),
                mode: acc.mode,
                region: bam.requirements_for_nth_access(i, &whole),
            })
            .collect();
        let reductions = task
            .reductions()
            .iter()
            .map(|&info| ReductionRecord {
                info,
                buffer_name: buffer_name(info.bid),
            })
            .collect();
        TaskRecord {
            id: task.id(),
            name: task.name().map(str::to_owned),
            ty: task.task_type(),
            epoch_action: task.epoch_action(),
            collective_group: task.collective_group(),
            geometry: *task.geometry(),
            accesses,
            side_effects: task.side_effects().to_vec(),
            reductions,
            hints: *task.hints(),
            dependencies: task.dependencies().to_vec(),
        }
    }

    /// The edge to `dependee`, if any.
    pub fn dependency_on(&self, dependee: TaskId) -> Option<&Dependency> {
        self.dependencies.iter().find(|d| d.task == dependee)
    }
}

/// Keeps a record of every task, in creation order.
#[derive(Default, Debug)]
pub struct TaskRecorder {
    records: Vec<TaskRecord>,
}

impl TaskRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn record(&mut self, record: TaskRecord) {
        debug_assert!(self.records.last().is_none_or(|r| r.id < record.id));
        self.records.push(record);
    }

    /// The records of the tasks `keep` selects, with the edges among them (`graph_tasks`).
    pub fn filtered(&self, keep: impl Fn(TaskId) -> bool) -> Self {
        let records = self
            .records
            .iter()
            .filter(|r| keep(r.id))
            .map(|r| {
                let mut r = r.clone();
                r.dependencies.retain(|d| keep(d.task));
                r
            })
            .collect();
        Self { records }
    }

    /// All records, oldest first.
    pub fn records(&self) -> &[TaskRecord] {
        &self.records
    }

    /// The record of `tid`.
    pub fn get(&self, tid: TaskId) -> Option<&TaskRecord> {
        self.records
            .binary_search_by_key(&tid, |r| r.id)
            .ok()
            .map(|i| &self.records[i])
    }

    /// Records of the given type.
    pub fn of_type(&self, ty: TaskType) -> impl Iterator<Item = &TaskRecord> + '_ {
        self.records.iter().filter(move |r| r.ty == ty)
    }

    /// True if `from` depends on `to` with `kind`.
    pub fn has_dependency(&self, from: TaskId, to: TaskId, kind: DependencyKind) -> bool {
        self.get(from)
            .and_then(|r| r.dependency_on(to))
            .is_some_and(|d| d.kind == kind)
    }

    /// True if `from` depends on `to` in any way.
    pub fn has_any_dependency(&self, from: TaskId, to: TaskId) -> bool {
        self.get(from).and_then(|r| r.dependency_on(to)).is_some()
    }
}
