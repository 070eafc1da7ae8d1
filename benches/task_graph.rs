//! Task graph benchmarks: the topologies of Celerity's `test/dag_benchmarks.cc` ("generating large
//! task graphs") and its "generating and deleting tasks" micro-benchmark, built exactly as
//! `shared/reference/dag-benchmarks.md` describes so the figures compare one to one.
//!
//! Each timed run covers everything Celerity's does: creating the task manager (with the init
//! epoch), creating the buffers, submitting every task (with its range mappers), horizons, the
//! shutdown epoch and freeing it all. No recorder, uninitialised-read policy `ignore`, the
//! task-graph context's host tasks over one node.

mod common;

use std::hint::black_box;

use celerity::grid::Range;
use celerity::runtime::config::ErrorPolicy;
use celerity::task::{CommandGroup, EpochAction, TaskManager, TaskManagerConfig, TaskSpec};
use celerity::types::BufferId;
use common::topologies::{self, TopologyContext};
use criterion::{Criterion, criterion_group, criterion_main};

/// Celerity's `task_manager_benchmark_context`: one node, the shutdown epoch on drop.
struct Ctx {
    tm: TaskManager,
    next_bid: u64,
}

impl Ctx {
    fn new() -> Self {
        let config = TaskManagerConfig {
            uninitialized_read: ErrorPolicy::Ignore,
            ..TaskManagerConfig::default()
        };
        Ctx {
            tm: TaskManager::new(config, None),
            next_bid: 0,
        }
    }
}

impl TopologyContext for Ctx {
    fn num_nodes(&self) -> usize {
        1
    }

    fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        let bid = BufferId(self.next_bid);
        self.next_bid += 1;
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

impl Drop for Ctx {
    fn drop(&mut self) {
        self.tm
            .epoch(EpochAction::Shutdown, None)
            .expect("shutdown epoch");
    }
}

fn task_graph(c: &mut Criterion) {
    let mut group = c.benchmark_group("task graph");
    for (name, build) in topologies::all::<Ctx>() {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut ctx = Ctx::new();
                build(&mut ctx);
                drop(black_box(ctx));
            })
        });
    }
    group.finish();
}

/// 10,000 master-node host tasks without buffers, a horizon after each (step 0), pruning every
/// 10 tasks from the 30th on, as Celerity's "benchmark task handling".
fn task_handling(c: &mut Criterion) {
    const N: usize = 10_000;
    const REPORT_INTERVAL: usize = 10;
    let mut group = c.benchmark_group("task handling");
    group.bench_function("generating and deleting tasks", |b| {
        b.iter(|| {
            let mut tm = TaskManager::new(TaskManagerConfig::default(), None);
            tm.set_horizon_step(0);
            for i in 0..N {
                let tid = tm
                    .submit(TaskSpec::MasterNode, CommandGroup::new())
                    .expect("submit");
                if i % REPORT_INTERVAL == 0 && i / REPORT_INTERVAL > 2 {
                    // every other task is a horizon (step 0)
                    tm.prune_before_epoch(celerity::types::TaskId(tid.0 - 1));
                }
            }
            black_box(tm)
        })
    });
    group.finish();
}

/// The graphs must be what Celerity builds: checked once before timing.
fn check_task_counts() {
    let count = |build: fn(&mut Ctx)| {
        let mut ctx = Ctx::new();
        build(&mut ctx);
        ctx.tm.next_task_id().0
    };
    let [soup, chain, expanding, contracting, wave_sim, jacobi] =
        topologies::all::<Ctx>().map(|(_, build)| count(build));
    // tasks + horizons + init epoch (the shutdown epoch comes on drop)
    assert_eq!(soup, 1 + 100 + 1, "soup: exactly one horizon");
    assert!(
        expanding > 31 && contracting > 31,
        "{expanding} {contracting}"
    );
    assert!(wave_sim > 203, "{wave_sim}");
    assert!(jacobi > 51, "{jacobi}");
    assert!(chain > 30, "{chain}");
}

fn benches(c: &mut Criterion) {
    check_task_counts();
    task_graph(c);
    task_handling(c);
}

criterion_group!(task_graph_benches, benches);
criterion_main!(task_graph_benches);
