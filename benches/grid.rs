//! Geometry benchmarks: the workloads of Celerity's `test/grid_benchmarks.cc`
//! (normalisation of random box sets and tilings, set operations between
//! random regions) plus RegionMap update and query at 10^2..10^5 entries.
//!
//! All geometry is stored 3-wide, so Celerity's "native" and "embedded in 3d"
//! variants are one and the same here.

use std::hint::black_box;

use celerity::grid::{BoxVec, GridBox, Range, Region, RegionMap, normalize};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};

/// Small deterministic generator (no RNG dependency needed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Like Celerity's `create_random_boxes`: uniform offsets in the grid, extents
/// 1 + Binomial(max_box_size - 1, 1/2), boxes that leave the grid rejected.
fn random_boxes(
    dims: usize,
    grid_size: usize,
    max_box_size: usize,
    num_boxes: usize,
    seed: u64,
) -> BoxVec {
    let mut rng = Lcg(seed);
    let mut out = BoxVec::new();
    while out.len() < num_boxes {
        let (mut min, mut max) = ([0; 3], [1; 3]);
        let mut inside = true;
        for d in 0..dims {
            min[d] = rng.below(grid_size);
            let extent = 1
                + (0..max_box_size - 1)
                    .filter(|_| rng.next() & 1 == 1)
                    .count();
            max[d] = min[d] + extent;
            inside &= max[d] <= grid_size;
        }
        if inside {
            out.push(GridBox::from_arrays(min, max));
        }
    }
    out
}

/// `n_per_side^dims` touching cubes of edge 5: normalises to a single box.
fn tiling(dims: usize, n_per_side: usize) -> BoxVec {
    let n: usize = (0..dims).map(|_| n_per_side).product();
    (0..n)
        .map(|i| {
            let (mut min, mut max, mut rest) = ([0; 3], [1; 3], i);
            for d in 0..dims {
                min[d] = 5 * (rest % n_per_side);
                max[d] = min[d] + 5;
                rest /= n_per_side;
            }
            GridBox::from_arrays(min, max)
        })
        .collect()
}

/// Staircase of row and column strips that merge into one triangle-ish tiling.
fn interlocking(n: usize) -> BoxVec {
    let mut out = BoxVec::new();
    for i in 0..n {
        out.push(GridBox::from_arrays([i, i, 0], [i + 1, n, 1]));
        out.push(GridBox::from_arrays([i + 1, i, 0], [n, i + 1, 1]));
    }
    out
}

const RANDOM_CASES: [(&str, usize, usize, usize); 3] = [
    ("small", 10, 5, 4),
    ("medium", 50, 1, 50),
    ("large", 200, 20, 200),
];
const SETOP_CASES: [(&str, usize, usize, usize); 3] = [
    ("small", 10, 5, 4),
    ("medium", 50, 1, 50),
    ("large", 200, 20, 100),
];

/// Times normalising a copy of `input` (the copy is part of every iteration,
/// as in Celerity's benchmark).
fn bench_normalize_input(g: &mut BenchmarkGroup<'_, WallTime>, label: &str, input: &BoxVec) {
    g.bench_function(label, |b| {
        b.iter(|| {
            let mut v = input.clone();
            normalize(&mut v);
            black_box(v)
        })
    });
}

fn bench_normalize(c: &mut Criterion) {
    for dims in [2, 3] {
        let mut g = c.benchmark_group(format!("normalize_random_{dims}d"));
        for (label, grid, max_box, n) in RANDOM_CASES {
            bench_normalize_input(&mut g, label, &random_boxes(dims, grid, max_box, n, 42));
        }
        g.finish();
    }
    for dims in 1..=3 {
        let mut g = c.benchmark_group(format!("normalize_tiling_{dims}d"));
        for (label, n) in [("small", 4.0f64), ("medium", 50.0), ("large", 1000.0)] {
            let input = tiling(dims, n.powf(1.0 / dims as f64).round() as usize);
            let mut check = input.clone();
            normalize(&mut check);
            assert_eq!(check.len(), 1, "a tiling normalises to one box");
            bench_normalize_input(&mut g, label, &input);
        }
        g.finish();
    }
    let mut g = c.benchmark_group("normalize_interlocking_2d");
    for (label, n) in [("small", 10), ("large", 200)] {
        bench_normalize_input(&mut g, label, &interlocking(n));
    }
    g.finish();
}

fn bench_set_operations(c: &mut Criterion) {
    for dims in [2, 3] {
        let mut g = c.benchmark_group(format!("region_ops_{dims}d"));
        for (label, grid, max_box, n) in SETOP_CASES {
            let a = Region::from_box_vec(random_boxes(dims, grid, max_box, n, 13));
            let b = Region::from_box_vec(random_boxes(dims, grid, max_box, n, 37));
            g.bench_function(format!("union_{label}"), |bn| {
                bn.iter(|| black_box(a.union(&b)))
            });
            g.bench_function(format!("intersection_{label}"), |bn| {
                bn.iter(|| black_box(a.intersection(&b)))
            });
            g.bench_function(format!("difference_{label}"), |bn| {
                bn.iter(|| black_box(a.difference(&b)))
            });
        }
        g.finish();
    }
}

const TILE: usize = 4;

/// A 2-D map of `side x side` tiles of TILE x TILE items, each with its own
/// value, so it holds exactly side^2 entries.
fn tiled_map(side: usize) -> RegionMap<usize> {
    let mut rm = RegionMap::new(Range::new(side * TILE, side * TILE, 1), usize::MAX);
    for i in 0..side {
        for j in 0..side {
            rm.update_box(&tile(i, j, 1, 1), i * side + j);
        }
    }
    assert_eq!(rm.len(), side * side);
    rm
}

fn tile(i: usize, j: usize, h: usize, w: usize) -> GridBox {
    GridBox::from_arrays([i * TILE, j * TILE, 0], [(i + h) * TILE, (j + w) * TILE, 1])
}

/// The operations of the `region_map` group, one iteration each, on a map of `side^2` tiles.
#[derive(Clone, Copy)]
enum MapOp {
    /// A 2 x 2-tile query shifted by half a tile: touches 9 entries.
    Query9,
    /// One random point.
    PointQuery,
    /// Overwrites one entry exactly, then restores it (2 updates).
    UpdateInPlace,
    /// A misaligned update splitting 4 entries, then the 4 tiles restored (5 updates, with
    /// remainder insertion and merging).
    SplitAndRestore,
}

const MAP_OPS: [(&str, MapOp); 4] = [
    ("query_9_entries", MapOp::Query9),
    ("point_query", MapOp::PointQuery),
    ("update_in_place_x2", MapOp::UpdateInPlace),
    ("update_split_and_restore_x5", MapOp::SplitAndRestore),
];

fn run_map_op(op: MapOp, rm: &mut RegionMap<usize>, side: usize, rng: &mut Lcg) {
    match op {
        MapOp::Query9 => {
            let (i, j) = (rng.below(side - 2), rng.below(side - 2));
            let q = GridBox::from_arrays(
                [i * TILE + TILE / 2, j * TILE + TILE / 2, 0],
                [(i + 2) * TILE + TILE / 2, (j + 2) * TILE + TILE / 2, 1],
            );
            let r = rm.get_box_values(&q);
            debug_assert_eq!(r.len(), 9);
            black_box(r);
        }
        MapOp::PointQuery => {
            let p = [rng.below(side * TILE), rng.below(side * TILE), 0];
            black_box(rm.get_point(&p).copied());
        }
        MapOp::UpdateInPlace => {
            let (i, j) = (rng.below(side), rng.below(side));
            rm.update_box(&tile(i, j, 1, 1), usize::MAX - 1);
            rm.update_box(&tile(i, j, 1, 1), i * side + j);
        }
        MapOp::SplitAndRestore => {
            let (i, j) = (rng.below(side - 1), rng.below(side - 1));
            let q = GridBox::from_arrays(
                [i * TILE + TILE / 2, j * TILE + TILE / 2, 0],
                [(i + 1) * TILE + TILE / 2, (j + 1) * TILE + TILE / 2, 1],
            );
            rm.update_box(&q, usize::MAX - 1);
            for (a, b) in [(i, j), (i, j + 1), (i + 1, j), (i + 1, j + 1)] {
                rm.update_box(&tile(a, b, 1, 1), a * side + b);
            }
        }
    }
}

fn bench_region_map(c: &mut Criterion) {
    let mut g = c.benchmark_group("region_map");
    for side in [10usize, 32, 100, 316] {
        let entries = side * side;
        let mut rm = tiled_map(side);
        let mut rng = Lcg(7);
        for (name, op) in MAP_OPS {
            g.bench_with_input(BenchmarkId::new(name, entries), &side, |b, &side| {
                b.iter(|| run_map_op(op, &mut rm, side, &mut rng))
            });
        }
        assert_eq!(rm.len(), entries, "benchmark must keep the map size steady");
    }
    g.finish();
}

/// `GRID_RUN="<side> <op> <iterations>"` builds the map of `side^2` tiles and runs one
/// `region_map` operation (its name, or `build` for the map's construction alone) that often
/// without criterion, for instruction counts under callgrind: per operation =
/// (count(n) - count(m)) / (n - m).
fn direct_run() -> bool {
    let Ok(spec) = std::env::var("GRID_RUN") else {
        return false;
    };
    let parts: Vec<&str> = spec.split_whitespace().collect();
    let [side, name, iterations] = parts[..] else {
        panic!("GRID_RUN=\"<side> <op> <iterations>\"");
    };
    let side: usize = side.parse().expect("side");
    let iterations: usize = iterations.parse().expect("iterations");
    if name == "build" {
        for _ in 0..iterations {
            black_box(tiled_map(side));
        }
        return true;
    }
    let (_, op) = MAP_OPS
        .into_iter()
        .find(|(n, _)| *n == name)
        .expect("unknown op");
    let mut rm = tiled_map(side);
    let mut rng = Lcg(7);
    for _ in 0..iterations {
        run_map_op(op, &mut rm, side, &mut rng);
    }
    assert_eq!(rm.len(), side * side);
    true
}

fn bench_grid(c: &mut Criterion) {
    if direct_run() {
        std::process::exit(0);
    }
    bench_normalize(c);
    bench_set_operations(c);
    bench_region_map(c);
}

criterion_group!(benches, bench_grid);
criterion_main!(benches);
