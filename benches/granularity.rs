//! Task granularity in the method of Task Bench (Slaughter et al., SC20): a stencil task graph of
//! width W (one point per device: W emulated host devices on one node, or one device per rank
//! under `mpirun`), each task a compute-bound host kernel of a chosen duration, swept from 1 ms
//! down to 1 µs. Every step reads its left and right neighbours' values of the previous step
//! (neighbourhood 1) and writes its own, so steps form a chain and neighbouring devices (or
//! ranks) exchange one element per step.
//!
//! Efficiency = achieved / peak kernel throughput: (steps × kernel duration) / wall time, where the
//! kernel duration is the loop's time on one core (calibrated first, by the thread's CPU time, so
//! that a loaded machine does not shorten the kernels; it does lower the efficiency). The task
//! granularity of a point is wall time / steps (the time one device spends per task, runtime
//! included); METG(50 %) is the smallest granularity at which efficiency is still ≥ 50 %
//! (interpolated between the two sweep points around 50 %).
//!
//! `cargo bench --bench granularity` (GRANULARITY_DEVICES=N: emulated host devices, default 1;
//! under `mpirun -n 2` each rank uses one; GRANULARITY_MAX_STEPS caps the steps per point,
//! default 20,000; GRANULARITY_KERNELS=1000,10 sweeps only those durations in µs;
//! GRANULARITY_TRACE=path writes the runtime's trace). Prints a table for docs/benchmarks.md on
//! node 0.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use celerity::backend::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use celerity::grid::{Id, Range};
use celerity::runtime::Runtime;
use celerity::runtime::config::{Config, DeviceSelection};
use celerity::task::{AccessMode, CommandGroup, RangeMapper, TaskSpec};
use common::programs::env_count;

/// Kernel durations of the sweep, in µs.
const DURATIONS_US: [f64; 11] = [
    1000.0, 500.0, 200.0, 100.0, 50.0, 20.0, 10.0, 5.0, 3.0, 2.0, 1.0,
];

/// The compute-bound body: `iterations` dependent multiply-adds (not vectorisable, no memory).
#[inline(never)]
fn spin(iterations: u64, seed: f64) -> f64 {
    let mut x = seed;
    for _ in 0..iterations {
        x = black_box(x * 0.999_999_9 + 1e-9);
    }
    x
}

/// Time this thread has spent on a CPU, from /proc/thread-self/schedstat (nanoseconds; Linux):
/// unlike wall time it does not grow while the thread waits for a core on a loaded machine.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Loop iterations per µs of one core, the best of a few runs, timed by the thread's CPU time
/// where available (else wall time).
fn calibrate() -> f64 {
    let iterations = 20_000_000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let (cpu, wall) = (thread_cpu_ns(), Instant::now());
        black_box(spin(iterations, 1.0));
        let seconds = match (cpu, thread_cpu_ns()) {
            (Some(before), Some(after)) => (after - before) as f64 * 1e-9,
            _ => wall.elapsed().as_secs_f64(),
        };
        best = best.min(seconds);
    }
    iterations as f64 / (best * 1e6)
}

/// The kernel of one stencil point: reads its neighbourhood in `source`, spins, writes `dest`.
fn stencil_kernel(iterations: u64) -> Launcher {
    Arc::new(move |inv: &KernelInvocation, _: &LaunchEnvironment| {
        let (source, dest) = (inv.accessors[0], inv.accessors[1]);
        for i in inv.chunk.min().0[0]..inv.chunk.max().0[0] {
            let read = |j: usize| {
                let offset = j - source.allocated_box.min().0[0];
                // SAFETY: j lies in the accessed neighbourhood, inside the allocation.
                unsafe { *(source.base.0 as *const f64).add(offset) }
            };
            let lo = source.accessed_box.min().0[0];
            let hi = source.accessed_box.max().0[0] - 1;
            let sum = read(i.saturating_sub(1).max(lo)) + read(i) + read((i + 1).min(hi));
            let offset = i - dest.allocated_box.min().0[0];
            // SAFETY: i lies in the chunk, which the one-to-one accessor covers.
            unsafe { *(dest.base.0 as *mut f64).add(offset) = spin(iterations, sum / 3.0) };
        }
        Ok(())
    })
}

/// Wall time of `steps` stencil steps of width `width` over the two buffers.
fn run_steps(
    rt: &mut Runtime,
    buffers: [celerity::types::BufferId; 2],
    width: usize,
    steps: usize,
    kernel: &Launcher,
) -> Duration {
    rt.barrier().expect("barrier");
    let start = Instant::now();
    for step in 0..steps {
        let (source, dest) = (buffers[step % 2], buffers[(step + 1) % 2]);
        let cg = CommandGroup::new()
            .access(
                source,
                AccessMode::Read,
                RangeMapper::Neighborhood([1, 0, 0]),
            )
            .access(dest, AccessMode::DiscardWrite, RangeMapper::OneToOne);
        let spec = TaskSpec::DeviceKernel {
            dims: 1,
            range: Range::new(width, 1, 1),
            offset: Id::default(),
        };
        rt.submit(spec, cg, kernel.clone()).expect("submit");
    }
    rt.barrier().expect("barrier");
    start.elapsed()
}

fn main() {
    let per_us = calibrate();
    let devices = env_count("GRANULARITY_DEVICES", 1) as u32;
    let max_steps = env_count("GRANULARITY_MAX_STEPS", 20_000);
    let config = Config {
        devices: DeviceSelection::Host(devices),
        trace_file: std::env::var_os("GRANULARITY_TRACE").map(Into::into),
        // CELERITY_* variables (e.g. CELERITY_SCHEDULER_THREADS) apply
        ..Config::from_environment().expect("CELERITY_* variables")
    };
    let mut rt = Runtime::start(config).expect("runtime");
    let info = rt.info();
    let width = (info.num_nodes * info.num_devices) as usize;
    let init = vec![0u8; 8 * width];
    let buffers = [
        rt.create_buffer(1, Range::new(width, 1, 1), 8, 8, Some(&init))
            .expect("buffer"),
        rt.create_buffer(1, Range::new(width, 1, 1), 8, 8, Some(&init))
            .expect("buffer"),
    ];
    let lead = info.node == 0;
    if lead {
        println!(
            "width {width} ({} node(s) x {} device(s)); loop: {per_us:.0} iterations per µs",
            info.num_nodes, info.num_devices
        );
        println!("| kernel | steps | wall per step | efficiency |");
        println!("|---:|---:|---:|---:|");
    }
    let mut points = Vec::new();
    let durations: Vec<f64> = match std::env::var("GRANULARITY_KERNELS") {
        Ok(list) => list
            .split(',')
            .map(|d| {
                d.trim()
                    .parse()
                    .expect("GRANULARITY_KERNELS: µs, comma-separated")
            })
            .collect(),
        Err(_) => DURATIONS_US.to_vec(),
    };
    for duration in durations {
        let iterations = (duration * per_us).round() as u64;
        let kernel = stencil_kernel(iterations);
        // 100 ms of kernel time, at least 200 steps and at most `max_steps`.
        let steps = ((100_000.0 / duration) as usize).clamp(200, max_steps.max(200));
        run_steps(&mut rt, buffers, width, steps.min(50), &kernel); // warm-up
        let wall = run_steps(&mut rt, buffers, width, steps, &kernel);
        let per_step_us = wall.as_secs_f64() * 1e6 / steps as f64;
        let efficiency = duration / per_step_us;
        points.push((per_step_us, efficiency));
        if lead {
            println!(
                "| {duration} µs | {steps} | {per_step_us:.2} µs | {:.1} % |",
                efficiency * 100.0
            );
        }
    }
    if lead {
        match metg(&points) {
            Some(metg) => println!("\nMETG(50 %) = {metg:.1} µs (width {width})"),
            None if points[0].1 < 0.5 => println!(
                "\nefficiency below 50 % even at the longest kernel (width {width}): the process \
                 got less than a core per device (a loaded machine)"
            ),
            None => println!("\nefficiency never fell below 50 % (width {width})"),
        }
    }
    rt.shutdown().expect("shutdown");
}

/// The granularity at which efficiency crosses 50 %: linear interpolation between the last
/// point at or above 50 % and the first below it (points ordered by decreasing duration); `None`
/// when no point is at or above 50 %, or none below.
fn metg(points: &[(f64, f64)]) -> Option<f64> {
    let below = points.iter().position(|&(_, e)| e < 0.5)?;
    let (g0, e0) = *points[..below].last()?;
    let (g1, e1) = points[below];
    Some(g0 + (0.5 - e0) * (g1 - g0) / (e1 - e0))
}
