//! [`TaskGraph`]: the live part of the task graph, indexed by task id, with forward edges
//! (dependents) kept beside the immutable tasks.
//!
//! Task ids are dense and increasing, so live tasks sit in a deque indexed by `id - first`.
//! Pruning drops a prefix: every task older than an epoch or applied horizon that the executor has
//! reached. Dependents only ever point forward, so pruning never leaves a dangling forward edge.
//!
//! Beside each task its node keeps its critical path length, which the task manager asks of
//! every dependee of every new task (the node, not the task behind its `Arc`). Pruned tasks that
//! nobody else holds leave their allocation to the next tasks (a small pool), which spares a
//! `malloc`/`free` pair per task in a steady stream of tasks and horizons; a reused task keeps
//! the storage of its lists (accesses and dependencies that outgrew their inline space). New
//! tasks are built in their allocation ([`TaskGraph::allocate`] hands out a bare or emptied
//! task), never moved into it. A pruned task is emptied when it becomes spare, where its
//! uniqueness is checked anyway: each uniqueness check of an `Arc` is a locked
//! compare-exchange, which the Xeon hosts pay for far more than this VM's EPYC.

use std::collections::VecDeque;
use std::sync::Arc;

use smallvec::SmallVec;

use super::task::{Task, TaskType};
use crate::types::TaskId;

struct Node {
    task: Arc<Task>,
    critical_path_length: u32,
    dependents: SmallVec<[TaskId; 2]>,
}

/// How many pruned task allocations wait for reuse (a pruning step frees at most the tasks of a
/// horizon interval; more would only hold memory).
const SPARE_TASKS: usize = 64;

/// The live tasks and their dependents.
pub struct TaskGraph {
    first: u64,
    nodes: VecDeque<Node>,
    /// Allocations of pruned or refused tasks, emptied ([`Task::clear_for_reuse`]).
    spare: Vec<Arc<Task>>,
}

/// How many live tasks a new graph has room for: a horizon interval's worth, so a steady stream
/// of tasks does not grow the deque step by step at start.
const INITIAL_LIVE_TASKS: usize = 64;

impl Default for TaskGraph {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskGraph {
    /// An empty graph with room for `INITIAL_LIVE_TASKS` live tasks.
    pub fn new() -> Self {
        Self {
            first: 0,
            nodes: VecDeque::with_capacity(INITIAL_LIVE_TASKS),
            spare: Vec::new(),
        }
    }

    fn index(&self, tid: TaskId) -> Option<usize> {
        let i = usize::try_from(tid.0.checked_sub(self.first)?).ok()?;
        (i < self.nodes.len()).then_some(i)
    }

    /// The live task `tid`, if it exists and was not pruned.
    #[inline]
    pub fn get(&self, tid: TaskId) -> Option<&Arc<Task>> {
        self.index(tid).map(|i| &self.nodes[i].task)
    }

    /// The live tasks that depend on `tid` (empty if it is not live).
    pub fn dependents(&self, tid: TaskId) -> &[TaskId] {
        self.index(tid)
            .map_or(&[], |i| self.nodes[i].dependents.as_slice())
    }

    /// Number of live tasks.
    #[inline]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True before the init epoch.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The live tasks, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Arc<Task>> + '_ {
        self.nodes.iter().map(|n| &n.task)
    }

    /// The critical path length of the live task `tid`.
    #[inline]
    pub(crate) fn critical_path_length(&self, tid: TaskId) -> Option<u32> {
        self.index(tid).map(|i| self.nodes[i].critical_path_length)
    }

    /// An allocation for task `tid` of type `ty`, to be filled in place through
    /// [`NewTask::fill`]: a pruned task's, emptied, if one is spare, or a bare task's.
    #[inline]
    pub(crate) fn allocate(&mut self, tid: TaskId, ty: TaskType) -> NewTask {
        let task = match self.spare.pop() {
            Some(arc) => arc,
            None => new_task(tid, ty),
        };
        NewTask { task, id: tid, ty }
    }

    /// [`Self::allocate`], then `fill` sets the task's fields in place.
    pub(crate) fn allocate_filled(
        &mut self,
        tid: TaskId,
        ty: TaskType,
        fill: impl FnOnce(&mut Task),
    ) -> NewTask {
        let mut task = self.allocate(tid, ty);
        fill(task.fill());
        task
    }

    /// Takes back the allocation of a task that was refused before it was registered.
    pub(crate) fn recycle(&mut self, mut task: Arc<Task>) {
        if self.spare.len() < SPARE_TASKS
            && let Some(t) = Arc::get_mut(&mut task)
        {
            t.clear_for_reuse();
            self.spare.push(task);
        }
    }

    /// Adds the next task and records it as a dependent of each of its dependees.
    // Inlined into the task manager's one call: out of line it costs about 15 instructions per
    // task, and LLVM's choice flips with unrelated changes to this module.
    #[inline]
    pub(crate) fn push(&mut self, task: Arc<Task>) {
        if self.nodes.is_empty() {
            self.first = task.id().0;
        }
        debug_assert_eq!(task.id().0, self.first + self.nodes.len() as u64);
        for dep in task.dependencies() {
            let i = self
                .index(dep.task)
                .expect("a new task depends on a pruned task");
            self.nodes[i].dependents.push(task.id());
        }
        self.nodes.push_back(Node {
            critical_path_length: task.critical_path_length(),
            task,
            dependents: SmallVec::new(),
        });
    }

    /// Drops every task older than `tid`. A task nobody else holds gives up what the program
    /// gave it at once (payload and accesses go now, as they would with the task; plain memory
    /// goes when the allocation is reused) and its allocation is kept spare.
    pub(crate) fn erase_before(&mut self, tid: TaskId) {
        // ids are dense: the count follows from the ids, without looking into each task
        let older = usize::try_from(tid.0.saturating_sub(self.first))
            .map_or(self.nodes.len(), |n| n.min(self.nodes.len()));
        self.first += older as u64;
        for mut node in self.nodes.drain(..older) {
            if self.spare.len() < SPARE_TASKS
                && let Some(task) = Arc::get_mut(&mut node.task)
            {
                task.clear_for_reuse();
                self.spare.push(node.task);
            }
        }
    }
}

/// A task allocation that nobody else holds yet ([`TaskGraph::allocate`]).
pub(crate) struct NewTask {
    task: Arc<Task>,
    id: TaskId,
    ty: TaskType,
}

impl NewTask {
    /// The task, with its id and type, to fill in place. Each call checks that the `Arc` is
    /// unique (a locked compare-exchange): a caller fills the task through one call.
    #[inline]
    pub(crate) fn fill(&mut self) -> &mut Task {
        let task = Arc::get_mut(&mut self.task).expect("a new task is not shared yet");
        task.renumber(self.id, self.ty);
        task
    }

    /// The task, to be shared.
    #[inline]
    pub(crate) fn into_task(self) -> Arc<Task> {
        self.task
    }
}

/// A bare task in a new allocation. `Arc::new` builds the ~950-byte task on the stack and copies
/// it into the block it allocates afterwards; `new_cyclic` allocates first and runs the
/// constructor with the block known, which lets the compiler build the task in place (no
/// `unsafe`; the weak reference it offers is not kept). Out of line, so that the reuse path of
/// [`TaskGraph::allocate`] stays small.
#[inline(never)]
fn new_task(tid: TaskId, ty: TaskType) -> Arc<Task> {
    Arc::new_cyclic(|_| Task::bare(tid, ty, None))
}
