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

use common::contexts::{TaskGraphCtx as Ctx, generate_and_delete_tasks};
use common::topologies;
use criterion::{Criterion, criterion_group, criterion_main};

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

/// Celerity's "benchmark task handling" (see `generate_and_delete_tasks`).
fn task_handling(c: &mut Criterion) {
    let mut group = c.benchmark_group("task handling");
    group.bench_function("generating and deleting tasks", |b| {
        b.iter(|| black_box(generate_and_delete_tasks()))
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
