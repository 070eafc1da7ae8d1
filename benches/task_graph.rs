//! Task graph benchmarks: the topologies of Celerity's `test/dag_benchmarks.cc` ("generating large
//! task graphs") and its "generating and deleting tasks" micro-benchmark, built exactly as
//! `shared/reference/dag-benchmarks.md` describes so the figures compare one to one.
//!
//! Each timed run covers everything Celerity's does: creating the task manager (with the init
//! epoch), creating the buffers, submitting every task (with its range mappers), horizons, the
//! shutdown epoch and freeing it all. No recorder, uninitialised-read policy `ignore`, the
//! task-graph context's host tasks over one node.

use std::hint::black_box;
use std::sync::Arc;

use celerity::grid::{Id, Range, Subrange};
use celerity::runtime::config::ErrorPolicy;
use celerity::task::{
    AccessMode, Chunk, CommandGroup, EpochAction, RangeMapper, TaskManager, TaskManagerConfig,
    TaskSpec,
};
use celerity::types::BufferId;
use criterion::{Criterion, criterion_group, criterion_main};

/// Celerity's `task_manager_benchmark_context`: one node, the shutdown epoch on drop.
struct Ctx {
    tm: TaskManager,
    num_nodes: usize,
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
            num_nodes: 1,
            next_bid: 0,
        }
    }

    fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        let bid = BufferId(self.next_bid);
        self.next_bid += 1;
        self.tm
            .notify_buffer_created(bid, range.len(), Range::from_slice(range), host_initialized);
        bid
    }

    /// A distributed host task over `range` (`host_task(range, partition)`).
    fn create_task(&mut self, range: &[usize], cg: CommandGroup) {
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

fn custom(f: impl Fn(&Chunk) -> Subrange + Send + Sync + 'static) -> RangeMapper {
    RangeMapper::Custom(Arc::new(move |ck: &Chunk, _, _| f(ck)))
}

fn sr2(offset: [usize; 2], range: [usize; 2]) -> Subrange {
    Subrange::new(
        Id::new(offset[0], offset[1], 0),
        Range::new(range[0], range[1], 1),
    )
}

fn sr1(offset: usize, range: usize) -> Subrange {
    Subrange::new(Id::new(offset, 0, 0), Range::new(range, 1, 1))
}

/// 100 independent tasks, each reading and writing its own column.
fn soup(mut ctx: Ctx, num_tasks: usize) -> Ctx {
    let n = ctx.num_nodes;
    let buf = ctx.buffer(&[n, num_tasks], true);
    for t in 0..num_tasks {
        let column = custom(move |ck| sr2([ck.offset[0], t], [ck.range[0], 1]));
        ctx.create_task(&[n], CommandGroup::new().read_write(buf, column));
    }
    ctx
}

/// A linear chain: read transposed, write one-to-one.
fn chain(mut ctx: Ctx, num_tasks: usize) -> Ctx {
    let n = ctx.num_nodes;
    let buf = ctx.buffer(&[n, n], true);
    for _ in 0..num_tasks {
        let transposed = custom(|ck| sr2([ck.offset[1], ck.offset[0]], [ck.range[1], ck.range[0]]));
        let cg = CommandGroup::new().read(buf, transposed).access(
            buf,
            AccessMode::Write,
            RangeMapper::OneToOne,
        );
        ctx.create_task(&[n, n], cg);
    }
    ctx
}

/// Expanding (fan-out) or contracting (fan-in) tree with gathers.
fn tree(mut ctx: Ctx, target_num_tasks: usize, expanding: bool) -> Ctx {
    let n = ctx.num_nodes;
    let levels = ((target_num_tasks + 1) as f64).log2().ceil() as u32;
    let breadth = 1usize << (levels - 1);
    let buf = ctx.buffer(&[n, breadth], true);
    let mut exp_step = 1;
    while exp_step <= breadth {
        let width = if expanding {
            breadth / exp_step
        } else {
            exp_step
        };
        for off in (0..breadth).step_by(width) {
            let gather = custom(move |ck| sr2([0, off], [ck.global_range[0], width]));
            let own = custom(move |ck| sr2([ck.offset[0], off], [ck.range[0], width]));
            let cg = CommandGroup::new()
                .read(buf, gather)
                .access(buf, AccessMode::Write, own);
            ctx.create_task(&[n], cg);
        }
        exp_step *= 2;
    }
    ctx
}

/// The wave_sim example: 5-point stencil steps on two swapped buffers.
fn wave_sim(mut ctx: Ctx, t_end: f64) -> Ctx {
    const N: usize = 512;
    const DT: f64 = 0.25;
    let mut up = ctx.buffer(&[N, N], false);
    let mut u = ctx.buffer(&[N, N], false);
    let fill = |ctx: &mut Ctx, u| {
        ctx.create_task(
            &[N, N],
            CommandGroup::new().discard_write(u, RangeMapper::OneToOne),
        );
    };
    let step = |ctx: &mut Ctx, up, u| {
        let cg = CommandGroup::new()
            .read_write(up, RangeMapper::OneToOne)
            .read(u, RangeMapper::NeighborhoodAlongAxes([1, 1, 0]));
        ctx.create_task(&[N, N], cg);
    };
    fill(&mut ctx, u);
    fill(&mut ctx, up);
    step(&mut ctx, up, u);
    let mut t = 0.0;
    while t < t_end {
        step(&mut ctx, up, u);
        std::mem::swap(&mut u, &mut up);
        t += DT;
    }
    ctx
}

/// A Jacobi solver: matrix-vector products with swapped vectors.
fn jacobi(mut ctx: Ctx, steps: usize) -> Ctx {
    const N: usize = 1024;
    let a = ctx.buffer(&[N, N], true);
    let b = ctx.buffer(&[N], true);
    let mut x = ctx.buffer(&[N], false);
    let mut x_new = ctx.buffer(&[N], false);
    ctx.create_task(
        &[N],
        CommandGroup::new().discard_write(x, RangeMapper::OneToOne),
    );
    let rows = custom(|ck| sr1(ck.offset[0], ck.range[0]));
    let columns = custom(|ck| sr1(ck.offset[1], ck.range[1]));
    for _ in 0..steps {
        let cg = CommandGroup::new()
            .read(a, RangeMapper::OneToOne)
            .read(b, rows.clone())
            .read(x, columns.clone())
            .discard_write(x_new, rows.clone());
        ctx.create_task(&[N, N], cg);
        std::mem::swap(&mut x, &mut x_new);
    }
    ctx
}

fn task_graph(c: &mut Criterion) {
    let mut group = c.benchmark_group("task graph");
    group.bench_function("soup topology", |b| b.iter(|| soup(Ctx::new(), 100)));
    group.bench_function("chain topology", |b| b.iter(|| chain(Ctx::new(), 30)));
    group.bench_function("expanding tree topology", |b| {
        b.iter(|| tree(Ctx::new(), 30, true))
    });
    group.bench_function("contracting tree topology", |b| {
        b.iter(|| tree(Ctx::new(), 30, false))
    });
    group.bench_function("wave_sim topology", |b| {
        b.iter(|| wave_sim(Ctx::new(), 50.0))
    });
    group.bench_function("jacobi topology", |b| b.iter(|| jacobi(Ctx::new(), 50)));
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
    let count = |ctx: Ctx| ctx.tm.next_task_id().0;
    // tasks + horizons + init epoch (the shutdown epoch comes on drop)
    let soup_tasks = count(soup(Ctx::new(), 100));
    assert_eq!(soup_tasks, 1 + 100 + 1, "soup: exactly one horizon");
    let trees = [
        count(tree(Ctx::new(), 30, true)),
        count(tree(Ctx::new(), 30, false)),
    ];
    assert!(trees.iter().all(|&n| n > 31), "{trees:?}");
    assert!(count(wave_sim(Ctx::new(), 50.0)) > 203);
    assert!(count(jacobi(Ctx::new(), 50)) > 51);
    assert!(count(chain(Ctx::new(), 30)) > 30);
}

fn benches(c: &mut Criterion) {
    check_task_counts();
    task_graph(c);
    task_handling(c);
}

criterion_group!(task_graph_benches, benches);
criterion_main!(task_graph_benches);
