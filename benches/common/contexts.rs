//! Benchmark contexts shared by several bench binaries (each binary uses a subset).

#![allow(dead_code)]

use std::hint::black_box;
use std::sync::Arc;

use celerity::command::{CommandBatch, CommandGraphGenerator, CommandPolicies};
use celerity::grid::Range;
use celerity::runtime::config::ErrorPolicy;
use celerity::task::{
    CommandGroup, EpochAction, Task, TaskDelegate, TaskManager, TaskManagerConfig, TaskSpec,
};
use celerity::types::{BufferId, NodeId, TaskId};
use parking_lot::Mutex;

use super::topologies::TopologyContext;

/// Command graph policies with every check off, as in Celerity's benchmarks.
pub fn ignore_policies() -> CommandPolicies {
    CommandPolicies {
        uninitialized_read: ErrorPolicy::Ignore,
        overlapping_write: ErrorPolicy::Ignore,
    }
}

/// A task manager for `num_nodes` nodes without checks, handing tasks to `delegate`.
pub fn task_manager(
    num_nodes: usize,
    delegate: Option<Box<dyn TaskDelegate + Send>>,
) -> TaskManager {
    let config = TaskManagerConfig {
        num_collective_nodes: num_nodes,
        uninitialized_read: ErrorPolicy::Ignore,
        ..TaskManagerConfig::default()
    };
    TaskManager::new(config, delegate)
}

/// Hands out buffer ids in creation order.
#[derive(Default)]
pub struct BufferIds(u64);

impl BufferIds {
    /// The next buffer id.
    pub fn next(&mut self) -> BufferId {
        self.0 += 1;
        BufferId(self.0 - 1)
    }
}

/// Celerity's `task_manager_benchmark_context`: one node, host tasks, the shutdown epoch on drop.
pub struct TaskGraphCtx {
    pub tm: TaskManager,
    ids: BufferIds,
}

impl TaskGraphCtx {
    pub fn new() -> Self {
        TaskGraphCtx {
            tm: task_manager(1, None),
            ids: BufferIds::default(),
        }
    }
}

impl Drop for TaskGraphCtx {
    fn drop(&mut self) {
        self.tm
            .epoch(EpochAction::Shutdown, None)
            .expect("shutdown epoch");
    }
}

impl TopologyContext for TaskGraphCtx {
    fn num_nodes(&self) -> usize {
        1
    }

    fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        let bid = self.ids.next();
        self.tm
            .notify_buffer_created(bid, range.len(), Range::from_slice(range), host_initialized);
        bid
    }

    /// A distributed host task over `range` (`host_task(range, partition)`).
    fn submit(&mut self, range: &[usize], cg: CommandGroup) {
        let spec = TaskSpec::host(range.len(), Range::from_slice(range));
        self.tm.submit(spec, cg).expect("submit");
    }
}

/// Celerity's command graph benchmark context: a task manager whose delegate builds node 0's
/// command graph for every task (device kernels); with `build_commands == false` only the task
/// manager runs (its share of the figure).
pub struct CommandGraphCtx {
    pub tm: TaskManager,
    cggen: Arc<Mutex<CommandGraphGenerator>>,
    num_nodes: usize,
    ids: BufferIds,
}

impl CommandGraphCtx {
    pub fn new(num_nodes: usize, build_commands: bool) -> Self {
        let cggen = Arc::new(Mutex::new(
            CommandGraphGenerator::new(num_nodes, NodeId(0), ignore_policies()).expect("generator"),
        ));
        let sink = Arc::clone(&cggen);
        let delegate = move |task: &Arc<Task>| {
            if build_commands {
                black_box(sink.lock().build_task(task).expect("build_task"));
            }
        };
        Self::with_delegate(num_nodes, cggen, Box::new(delegate))
    }

    /// Builds node `local`'s command graph and hands every batch to `observe` (to compare the
    /// graphs of two builds).
    pub fn observed(
        num_nodes: usize,
        local: NodeId,
        mut observe: impl FnMut(&CommandBatch) + Send + 'static,
    ) -> Self {
        let cggen = Arc::new(Mutex::new(
            CommandGraphGenerator::new(num_nodes, local, ignore_policies()).expect("generator"),
        ));
        let sink = Arc::clone(&cggen);
        let delegate = move |task: &Arc<Task>| {
            observe(&sink.lock().build_task(task).expect("build_task"));
        };
        Self::with_delegate(num_nodes, cggen, Box::new(delegate))
    }

    fn with_delegate(
        num_nodes: usize,
        cggen: Arc<Mutex<CommandGraphGenerator>>,
        delegate: Box<dyn TaskDelegate + Send>,
    ) -> Self {
        CommandGraphCtx {
            tm: task_manager(num_nodes, Some(delegate)),
            cggen,
            num_nodes,
            ids: BufferIds::default(),
        }
    }
}

impl Drop for CommandGraphCtx {
    fn drop(&mut self) {
        self.tm
            .epoch(EpochAction::Shutdown, None)
            .expect("shutdown");
    }
}

impl TopologyContext for CommandGraphCtx {
    fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        let bid = self.ids.next();
        let r = Range::from_slice(range);
        self.tm
            .notify_buffer_created(bid, range.len(), r, host_initialized);
        self.cggen
            .lock()
            .notify_buffer_created(bid, r, host_initialized);
        bid
    }

    fn submit(&mut self, range: &[usize], cg: CommandGroup) {
        let spec = TaskSpec::device(range.len(), Range::from_slice(range));
        self.tm.submit(spec, cg).expect("submit");
    }
}

/// Celerity's "generating and deleting tasks": 10,000 master-node host tasks without buffers, a
/// horizon after each (step 0), pruning every 10 tasks from the 30th on.
pub fn generate_and_delete_tasks() -> TaskManager {
    const N: usize = 10_000;
    const REPORT_INTERVAL: usize = 10;
    let mut tm = TaskManager::new(TaskManagerConfig::default(), None);
    tm.set_horizon_step(0);
    for i in 0..N {
        let tid = tm
            .submit(TaskSpec::MasterNode, CommandGroup::new())
            .expect("submit");
        if i % REPORT_INTERVAL == 0 && i / REPORT_INTERVAL > 2 {
            // every other task is a horizon (step 0)
            tm.prune_before_epoch(TaskId(tid.0 - 1));
        }
    }
    tm
}
