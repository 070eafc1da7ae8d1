//! Not a criterion benchmark: a small driver that runs the graph benchmark bodies a fixed number
//! of times, for instruction counting under callgrind (deterministic on a noisy machine).
//!
//! `graph_profile <task|command> <topology|handling|all> <nodes> <iterations>`; the topology
//! bodies are those of `benches/common/topologies.rs`, built in the same contexts as
//! `benches/task_graph.rs` (host tasks, one node) and `benches/command_graph.rs` (device
//! kernels, node 0 of `nodes`). Per-run instructions: (count(k) - count(1)) / (k - 1).

mod common;

use std::hint::black_box;
use std::sync::Arc;

use celerity::command::{CommandGraphGenerator, CommandPolicies};
use celerity::grid::Range;
use celerity::runtime::config::ErrorPolicy;
use celerity::task::{CommandGroup, EpochAction, TaskManager, TaskManagerConfig, TaskSpec};
use celerity::types::{BufferId, NodeId, TaskId};
use common::topologies::{self, TopologyContext};
use parking_lot::Mutex;

struct Ctx {
    tm: TaskManager,
    cggen: Option<Arc<Mutex<CommandGraphGenerator>>>,
    num_nodes: usize,
    next_bid: u64,
}

impl Ctx {
    fn task_graph() -> Self {
        let config = TaskManagerConfig {
            uninitialized_read: ErrorPolicy::Ignore,
            ..TaskManagerConfig::default()
        };
        Ctx {
            tm: TaskManager::new(config, None),
            cggen: None,
            num_nodes: 1,
            next_bid: 0,
        }
    }

    fn command_graph(num_nodes: usize) -> Self {
        let policies = CommandPolicies {
            uninitialized_read: ErrorPolicy::Ignore,
            overlapping_write: ErrorPolicy::Ignore,
        };
        let cggen = Arc::new(Mutex::new(
            CommandGraphGenerator::new(num_nodes, NodeId(0), policies).expect("generator"),
        ));
        let sink = Arc::clone(&cggen);
        let delegate = move |task: &Arc<celerity::task::Task>| {
            black_box(sink.lock().build_task(task).expect("build_task"));
        };
        let config = TaskManagerConfig {
            num_collective_nodes: num_nodes,
            uninitialized_read: ErrorPolicy::Ignore,
            ..TaskManagerConfig::default()
        };
        Ctx {
            tm: TaskManager::new(config, Some(Box::new(delegate))),
            cggen: Some(cggen),
            num_nodes,
            next_bid: 0,
        }
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        self.tm
            .epoch(EpochAction::Shutdown, None)
            .expect("shutdown");
    }
}

impl TopologyContext for Ctx {
    fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        let bid = BufferId(self.next_bid);
        self.next_bid += 1;
        let r = Range::from_slice(range);
        self.tm
            .notify_buffer_created(bid, range.len(), r, host_initialized);
        if let Some(g) = &self.cggen {
            g.lock().notify_buffer_created(bid, r, host_initialized);
        }
        bid
    }

    fn submit(&mut self, range: &[usize], cg: CommandGroup) {
        let spec = if self.cggen.is_some() {
            TaskSpec::device(range.len(), Range::from_slice(range))
        } else {
            TaskSpec::host(range.len(), Range::from_slice(range))
        };
        self.tm.submit(spec, cg).expect("submit");
    }
}

fn task_handling() {
    let mut tm = TaskManager::new(TaskManagerConfig::default(), None);
    tm.set_horizon_step(0);
    for i in 0..10_000 {
        let tid = tm
            .submit(TaskSpec::MasterNode, CommandGroup::new())
            .expect("submit");
        if i % 10 == 0 && i / 10 > 2 {
            tm.prune_before_epoch(TaskId(tid.0 - 1));
        }
    }
    black_box(tm);
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.len() < 4 {
        eprintln!(
            "usage: graph_profile <task|command> <topology|handling|all> <nodes> <iterations>"
        );
        return;
    }
    let command = args[0] == "command";
    let nodes: usize = args[2].parse().expect("nodes");
    let iterations: usize = args[3].parse().expect("iterations");
    for _ in 0..iterations {
        if args[1] == "handling" {
            task_handling();
            continue;
        }
        for (name, build) in topologies::all::<Ctx>() {
            if args[1] != "all" && !name.starts_with(args[1].as_str()) {
                continue;
            }
            let mut ctx = if command {
                Ctx::command_graph(nodes)
            } else {
                Ctx::task_graph()
            };
            build(&mut ctx);
            drop(black_box(ctx));
        }
    }
}
