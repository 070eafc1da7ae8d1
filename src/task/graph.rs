//! [`TaskGraph`]: the live part of the task graph, indexed by task id, with forward edges
//! (dependents) kept beside the immutable tasks.
//!
//! Task ids are dense and increasing, so live tasks sit in a deque indexed by `id - first`.
//! Pruning drops a prefix: every task older than an epoch or applied horizon that the executor has
//! reached. Dependents only ever point forward, so pruning never leaves a dangling forward edge.

use std::collections::VecDeque;
use std::sync::Arc;

use smallvec::SmallVec;

use super::task::Task;
use crate::types::TaskId;

struct Node {
    task: Arc<Task>,
    dependents: SmallVec<[TaskId; 2]>,
}

/// The live tasks and their dependents.
#[derive(Default)]
pub struct TaskGraph {
    first: u64,
    nodes: VecDeque<Node>,
}

impl TaskGraph {
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

    /// Adds the next task and records it as a dependent of each of its dependees.
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
            task,
            dependents: SmallVec::new(),
        });
    }

    /// Drops every task older than `tid`.
    pub(crate) fn erase_before(&mut self, tid: TaskId) {
        while self.nodes.front().is_some_and(|n| n.task.id() < tid) {
            self.nodes.pop_front();
            self.first += 1;
        }
    }
}
