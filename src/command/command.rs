//! The commands of a node's command graph: immutable once their batch is returned, shared as
//! [`CommandRef`] with the instruction graph generator and the recorder.

use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::grid::{GridBox, Region};
use crate::task::{DependencyKind, DependencyOrigin, EpochAction, ReductionInfo, Task};
use crate::types::{CommandId, NodeId, ReductionId, TransferId};

/// What a command does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// A full synchronisation point. Carries the reductions completed since the previous horizon
    /// or epoch, so the executor can drop their reducers.
    Epoch {
        /// Init, none, barrier or shutdown.
        action: EpochAction,
        /// Reductions completed since the previous horizon or epoch, in completion order.
        completed_reductions: Vec<ReductionId>,
    },
    /// A horizon: collects the execution front; the previous horizon becomes the effective epoch.
    Horizon {
        /// Reductions completed since the previous horizon or epoch, in completion order.
        completed_reductions: Vec<ReductionId>,
    },
    /// Runs one chunk of a task on this node.
    Execution {
        /// The chunk of the task's iteration space.
        execution_range: GridBox,
        /// Whether this chunk includes the buffer's previous value in the task's reductions
        /// (node 0 of a reduction that does not initialise to the identity).
        is_reduction_initializer: bool,
    },
    /// Runs a fence on this node (every node runs its own copy).
    Fence,
    /// Sends this node's data to other nodes: one push per buffer and consuming task, listing the
    /// exact region for each target. An empty region is a notification that this node holds no
    /// partial result of a reduction.
    Push {
        /// Consumer task, buffer and reduction.
        transfer: TransferId,
        /// (target node, region) in ascending node order. On the heap: inline, two targets
        /// made every command (the largest variant sets the size) 128 bytes longer to copy.
        targets: Vec<(NodeId, Region)>,
    },
    /// Receives the union of what peers push to this node for a transfer (the senders are not
    /// named: the receive arbiter matches pilots).
    AwaitPush {
        /// Consumer task, buffer and reduction.
        transfer: TransferId,
        /// Everything awaited from all peers together.
        region: Region,
    },
    /// Combines the partial results of a reduction from all nodes (gathered by the preceding
    /// await-push of the same transfer id) in node order.
    Reduction {
        /// The reduction and its buffer.
        reduction: ReductionInfo,
        /// Whether this node's own partial result takes part.
        has_local_contribution: bool,
    },
}

impl CommandKind {
    /// Short lower-case name (`"execution"`, `"push"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            CommandKind::Epoch { .. } => "epoch",
            CommandKind::Horizon { .. } => "horizon",
            CommandKind::Execution { .. } => "execution",
            CommandKind::Fence => "fence",
            CommandKind::Push { .. } => "push",
            CommandKind::AwaitPush { .. } => "await push",
            CommandKind::Reduction { .. } => "reduction",
        }
    }

    /// True for the commands that stand for a task (epoch, horizon, execution, fence), false for
    /// the data movement commands generated on its behalf.
    pub fn is_task_command(&self) -> bool {
        matches!(
            self,
            CommandKind::Epoch { .. }
                | CommandKind::Horizon { .. }
                | CommandKind::Execution { .. }
                | CommandKind::Fence
        )
    }

    /// The transfer id of a push or await-push.
    pub fn transfer(&self) -> Option<TransferId> {
        match self {
            CommandKind::Push { transfer, .. } | CommandKind::AwaitPush { transfer, .. } => {
                Some(*transfer)
            }
            _ => None,
        }
    }
}

/// A backward edge of the command graph.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommandDependency {
    /// The older command depended on.
    pub node: CommandId,
    /// True or anti.
    pub kind: DependencyKind,
    /// Why the edge exists (debug information).
    pub origin: DependencyOrigin,
}

/// The dependency list of a command (inline for the common small case).
pub type CommandDependencies = SmallVec<[CommandDependency; 4]>;

/// One command of this node's command graph.
pub struct Command {
    pub(super) id: CommandId,
    pub(super) task: Arc<Task>,
    pub(super) kind: CommandKind,
    pub(super) dependencies: CommandDependencies,
}

/// A shared, immutable command.
pub type CommandRef = Arc<Command>;

/// The commands of one task in topological order: on one node a task makes one command, so the
/// list usually needs no allocation of its own.
pub type CommandBatch = SmallVec<[CommandRef; 2]>;

impl Command {
    /// The command's id (a per-node counter; ids of different nodes are unrelated).
    #[inline]
    pub fn id(&self) -> CommandId {
        self.id
    }

    /// The task whose [`build_task`](super::CommandGraphGenerator::build_task) created it: the
    /// executed, fenced or synchronising task, or the consumer of a transfer or reduction.
    #[inline]
    pub fn task(&self) -> &Arc<Task> {
        &self.task
    }

    /// What the command does.
    #[inline]
    pub fn kind(&self) -> &CommandKind {
        &self.kind
    }

    /// Edges to older commands (of this or earlier batches), each command at most once.
    #[inline]
    pub fn dependencies(&self) -> &[CommandDependency] {
        &self.dependencies
    }

    /// The edge to `node`, if any.
    pub fn dependency_on(&self, node: CommandId) -> Option<&CommandDependency> {
        self.dependencies.iter().find(|d| d.node == node)
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("id", &self.id)
            .field("task", &self.task.id())
            .field("kind", &self.kind)
            .field("dependencies", &self.dependencies)
            .finish()
    }
}
