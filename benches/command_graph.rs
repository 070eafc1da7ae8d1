//! Command graph benchmarks: Celerity's "generating large command graphs for N nodes" (1, 4, 16)
//! on the six topologies of `test/dag_benchmarks.cc`, built and timed as
//! `shared/reference/dag-benchmarks.md` describes, and the same for 256 nodes (no Celerity
//! counterpart: it shows how node 0's cost grows with the number of nodes).
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

use common::contexts::CommandGraphCtx;
use common::topologies;
use criterion::{Criterion, criterion_group, criterion_main};

fn command_graph(c: &mut Criterion) {
    for nodes in [1usize, 4, 16, 256] {
        let mut group = c.benchmark_group(format!("command graph/{nodes} nodes"));
        for (name, build) in topologies::all::<CommandGraphCtx>() {
            group.bench_function(name, |b| {
                b.iter(|| {
                    let mut ctx =
                        CommandGraphCtx::new(nodes, std::env::var_os("TM_ONLY").is_none());
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
