//! Command graph benchmarks: Celerity's "generating large command graphs for N nodes" (1, 4, 16)
//! on the six topologies of `test/dag_benchmarks.cc`, built and timed as
//! `shared/reference/dag-benchmarks.md` describes.
//!
//! Each timed run covers: creating the task manager (with the init epoch) and the generator of
//! node 0, creating the buffers (both are notified), submitting every device kernel (mappers,
//! task dependencies, horizons), building node 0's commands for every task, horizon and epoch,
//! the shutdown epoch, and freeing everything. No recorder; policies `ignore`.
//!
//! With `TM_ONLY=1` in the environment the delegate skips `build_task`, which times the task
//! manager alone (the share of each figure that is not command graph generation).

mod common;

use std::hint::black_box;
use std::sync::Arc;

use celerity::command::{CommandGraphGenerator, CommandPolicies};
use celerity::grid::Range;
use celerity::runtime::config::ErrorPolicy;
use celerity::task::{CommandGroup, EpochAction, TaskManager, TaskManagerConfig, TaskSpec};
use celerity::types::{BufferId, NodeId};
use common::topologies::{self, TopologyContext};
use criterion::{Criterion, criterion_group, criterion_main};
use parking_lot::Mutex;

/// A task manager whose delegate builds node 0's command graph for every task.
struct Ctx {
    tm: TaskManager,
    cggen: Arc<Mutex<CommandGraphGenerator>>,
    num_nodes: usize,
    next_bid: u64,
}

impl Ctx {
    fn new(num_nodes: usize) -> Self {
        let policies = CommandPolicies {
            uninitialized_read: ErrorPolicy::Ignore,
            overlapping_write: ErrorPolicy::Ignore,
        };
        let cggen = Arc::new(Mutex::new(
            CommandGraphGenerator::new(num_nodes, NodeId(0), policies).expect("generator"),
        ));
        let sink = Arc::clone(&cggen);
        let delegate = move |task: &Arc<celerity::task::Task>| {
            if std::env::var_os("TM_ONLY").is_none() {
                black_box(sink.lock().build_task(task).expect("build_task"));
            }
        };
        let config = TaskManagerConfig {
            num_collective_nodes: num_nodes,
            uninitialized_read: ErrorPolicy::Ignore,
            ..TaskManagerConfig::default()
        };
        Ctx {
            tm: TaskManager::new(config, Some(Box::new(delegate))),
            cggen,
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

fn command_graph(c: &mut Criterion) {
    for nodes in [1usize, 4, 16] {
        let mut group = c.benchmark_group(format!("command graph/{nodes} nodes"));
        for (name, build) in topologies::all::<Ctx>() {
            group.bench_function(name, |b| {
                b.iter(|| {
                    let mut ctx = Ctx::new(nodes);
                    build(&mut ctx);
                    drop(black_box(ctx));
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, command_graph);
criterion_main!(benches);
