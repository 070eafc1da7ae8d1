//! [`CommandRecorder`]: immutable records of every command a generator created, for tests and
//! graph printing. Records are copies: they keep no task (and no task payload) alive.

use super::command::{Command, CommandDependency, CommandKind};
use crate::grid::{GridBox, Region};
use crate::task::{DependencyKind, TaskType};
use crate::types::{BufferId, CommandId, NodeId, TaskId, TransferId};

/// A copy of one command with debug information.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandRecord {
    /// The command.
    pub id: CommandId,
    /// The node whose graph holds it.
    pub node: NodeId,
    /// The task whose build created it.
    pub task: TaskId,
    /// That task's type.
    pub task_type: TaskType,
    /// That task's debug name.
    pub task_name: Option<String>,
    /// What the command does (push and await-push regions, execution chunk, ...).
    pub kind: CommandKind,
    /// Debug name of the transferred or reduced buffer, if it has one.
    pub buffer_name: Option<String>,
    /// Edges to older commands, with kind and origin.
    pub dependencies: Vec<CommandDependency>,
}

impl CommandRecord {
    fn new(cmd: &Command, node: NodeId, buffer_name: impl Fn(BufferId) -> Option<String>) -> Self {
        let task = cmd.task();
        let bid = match cmd.kind() {
            CommandKind::Push { transfer, .. } | CommandKind::AwaitPush { transfer, .. } => {
                Some(transfer.buffer)
            }
            CommandKind::Reduction { reduction, .. } => Some(reduction.bid),
            _ => None,
        };
        CommandRecord {
            id: cmd.id(),
            node,
            task: task.id(),
            task_type: task.task_type(),
            task_name: task.name().map(str::to_owned),
            kind: cmd.kind().clone(),
            buffer_name: bid.and_then(buffer_name),
            dependencies: cmd.dependencies().to_vec(),
        }
    }

    /// The execution range of an execution command.
    pub fn execution_range(&self) -> Option<GridBox> {
        match &self.kind {
            CommandKind::Execution {
                execution_range, ..
            } => Some(*execution_range),
            _ => None,
        }
    }

    /// The transfer id of a push or await-push.
    pub fn transfer(&self) -> Option<TransferId> {
        self.kind.transfer()
    }

    /// The (target, region) list of a push.
    pub fn push_targets(&self) -> Option<&[(NodeId, Region)]> {
        match &self.kind {
            CommandKind::Push { targets, .. } => Some(targets),
            _ => None,
        }
    }

    /// The awaited region of an await-push.
    pub fn await_region(&self) -> Option<&Region> {
        match &self.kind {
            CommandKind::AwaitPush { region, .. } => Some(region),
            _ => None,
        }
    }

    /// Whether there is an edge to `to` of `kind`.
    pub fn depends_on(&self, to: CommandId, kind: DependencyKind) -> bool {
        self.dependencies
            .iter()
            .any(|d| d.node == to && d.kind == kind)
    }

    /// The edge to `to` (panics if there is none).
    pub fn dependency_on_record(&self, to: CommandId) -> &CommandDependency {
        self.dependencies
            .iter()
            .find(|d| d.node == to)
            .unwrap_or_else(|| panic!("{} has no dependency on {to}", self.id))
    }

    /// Whether there is an edge of any kind to `to`.
    pub fn depends_on_any(&self, to: CommandId) -> bool {
        self.dependencies.iter().any(|d| d.node == to)
    }
}

/// The records of one node's commands, in creation order.
#[derive(Debug)]
pub struct CommandRecorder {
    node: NodeId,
    records: Vec<CommandRecord>,
}

impl CommandRecorder {
    /// An empty recorder for `node`.
    pub fn new(node: NodeId) -> Self {
        CommandRecorder {
            node,
            records: Vec::new(),
        }
    }

    /// Records `cmd`.
    pub fn record(&mut self, cmd: &Command, buffer_name: impl Fn(BufferId) -> Option<String>) {
        self.records
            .push(CommandRecord::new(cmd, self.node, buffer_name));
    }

    /// The records of the commands of the tasks `keep` selects, with the edges among them
    /// (`graph_tasks`).
    pub fn filtered(&self, keep: impl Fn(TaskId) -> bool) -> Self {
        let records: Vec<CommandRecord> = self
            .records
            .iter()
            .filter(|r| keep(r.task))
            .cloned()
            .collect();
        let kept: std::collections::HashSet<CommandId> = records.iter().map(|r| r.id).collect();
        let records = records
            .into_iter()
            .map(|mut r| {
                r.dependencies.retain(|d| kept.contains(&d.node));
                r
            })
            .collect();
        Self {
            node: self.node,
            records,
        }
    }

    /// The node.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// All records, in creation (= id) order.
    pub fn records(&self) -> &[CommandRecord] {
        &self.records
    }

    /// The record of `cid`.
    pub fn get(&self, cid: CommandId) -> Option<&CommandRecord> {
        self.records
            .binary_search_by_key(&cid, |r| r.id)
            .ok()
            .map(|i| &self.records[i])
    }

    /// The records created for `task`.
    pub fn of_task(&self, task: TaskId) -> impl Iterator<Item = &CommandRecord> + '_ {
        self.records.iter().filter(move |r| r.task == task)
    }

    /// The records whose kind has the given [`CommandKind::name`].
    pub fn of_kind<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a CommandRecord> + 'a {
        self.records.iter().filter(move |r| r.kind.name() == name)
    }
}
