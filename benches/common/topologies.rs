//! The six topologies of Celerity's `test/dag_benchmarks.cc` (soup, chain, expanding tree,
//! contracting tree, wave_sim, jacobi), built as `shared/reference/dag-benchmarks.md` describes,
//! over any context that can create buffers and submit command groups. Shared by the graph
//! benchmarks so every stage times the same task sequences.

#![allow(dead_code)]

use std::sync::Arc;

use celerity::grid::{Id, Range, Subrange};
use celerity::task::{AccessMode, Chunk, CommandGroup, RangeMapper};
use celerity::types::BufferId;

/// What a topology needs from a benchmark context.
pub trait TopologyContext {
    /// Number of nodes (sizes of the soup, chain and tree buffers).
    fn num_nodes(&self) -> usize;
    /// A buffer of `range` (its length is the dimensionality).
    fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId;
    /// Submits a command group over the iteration space `range`.
    fn submit(&mut self, range: &[usize], cg: CommandGroup);
}

pub fn custom(f: impl Fn(&Chunk) -> Subrange + Send + Sync + 'static) -> RangeMapper {
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

/// 100 independent tasks, each reading and writing column `t` of its rows.
pub fn soup<C: TopologyContext>(ctx: &mut C) {
    const NUM_TASKS: usize = 100;
    let n = ctx.num_nodes();
    let buf = ctx.buffer(&[n, NUM_TASKS], true);
    for t in 0..NUM_TASKS {
        let column = custom(move |ck| sr2([ck.offset[0], t], [ck.range[0], 1]));
        ctx.submit(&[n], CommandGroup::new().read_write(buf, column));
    }
}

/// 30 tasks in a chain: read transposed, write one-to-one (all-to-all traffic).
pub fn chain<C: TopologyContext>(ctx: &mut C) {
    const NUM_TASKS: usize = 30;
    let n = ctx.num_nodes();
    let buf = ctx.buffer(&[n, n], true);
    for _ in 0..NUM_TASKS {
        let transposed = custom(|ck| sr2([ck.offset[1], ck.offset[0]], [ck.range[1], ck.range[0]]));
        let cg = CommandGroup::new().read(buf, transposed).access(
            buf,
            AccessMode::Write,
            RangeMapper::OneToOne,
        );
        ctx.submit(&[n, n], cg);
    }
}

/// 31 tasks in an expanding (fan-out) or contracting (fan-in) tree of gathers.
pub fn tree<C: TopologyContext>(ctx: &mut C, expanding: bool) {
    const TARGET_NUM_TASKS: usize = 30;
    let n = ctx.num_nodes();
    let levels = ((TARGET_NUM_TASKS + 1) as f64).log2().ceil() as u32;
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
            ctx.submit(&[n], cg);
        }
        exp_step *= 2;
    }
}

/// wave_sim: 203 tasks of 5-point stencil steps over two swapped 512x512 buffers.
pub fn wave_sim<C: TopologyContext>(ctx: &mut C) {
    const N: usize = 512;
    const DT: f64 = 0.25;
    const T_END: f64 = 50.0;
    let mut up = ctx.buffer(&[N, N], false);
    let mut u = ctx.buffer(&[N, N], false);
    let step = |ctx: &mut C, up, u| {
        let cg = CommandGroup::new()
            .read_write(up, RangeMapper::OneToOne)
            .read(u, RangeMapper::NeighborhoodAlongAxes([1, 1, 0]));
        ctx.submit(&[N, N], cg);
    };
    for b in [u, up] {
        ctx.submit(
            &[N, N],
            CommandGroup::new().discard_write(b, RangeMapper::OneToOne),
        );
    }
    step(ctx, up, u);
    let mut t = 0.0;
    while t < T_END {
        step(ctx, up, u);
        std::mem::swap(&mut u, &mut up);
        t += DT;
    }
}

/// jacobi: 51 tasks of a 1024x1024 matrix-vector iteration with swapped vectors.
pub fn jacobi<C: TopologyContext>(ctx: &mut C) {
    const N: usize = 1024;
    const STEPS: usize = 50;
    let a = ctx.buffer(&[N, N], true);
    let b = ctx.buffer(&[N], true);
    let mut x = ctx.buffer(&[N], false);
    let mut x_new = ctx.buffer(&[N], false);
    ctx.submit(
        &[N],
        CommandGroup::new().discard_write(x, RangeMapper::OneToOne),
    );
    for _ in 0..STEPS {
        let rows = || custom(|ck| sr1(ck.offset[0], ck.range[0]));
        let columns = custom(|ck| sr1(ck.offset[1], ck.range[1]));
        let cg = CommandGroup::new()
            .read(a, RangeMapper::OneToOne)
            .read(b, rows())
            .read(x, columns)
            .discard_write(x_new, rows());
        ctx.submit(&[N, N], cg);
        std::mem::swap(&mut x, &mut x_new);
    }
}

/// A named topology builder.
pub type Topology<C> = (&'static str, fn(&mut C));

/// The topologies by name, in Celerity's order.
pub fn all<C: TopologyContext>() -> [Topology<C>; 6] {
    [
        ("soup topology", soup::<C>),
        ("chain topology", chain::<C>),
        ("expanding tree topology", |c| tree(c, true)),
        ("contracting tree topology", |c| tree(c, false)),
        ("wave_sim topology", wave_sim::<C>),
        ("jacobi topology", jacobi::<C>),
    ]
}
