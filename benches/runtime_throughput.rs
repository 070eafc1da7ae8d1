//! End-to-end task throughput of the whole runtime (task graph, scheduler thread with command
//! and instruction graphs, executor thread, emulated devices): N tasks submitted then waited
//! for, reported per task. "independent": tasks with empty kernels and no accesses; "chain":
//! every task reads and writes the same small buffer, so each depends on the previous one.
//!
//! `RT_RUN="<devices> independent|chain <rounds>"` runs one workload that many rounds of
//! `TASKS` tasks without criterion and prints µs per task (for callgrind's per-thread counts).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use celerity::backend::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use celerity::grid::{Id, Range};
use celerity::runtime::Runtime;
use celerity::runtime::config::{Config, DeviceSelection};
use celerity::task::{AccessMode, CommandGroup, RangeMapper, TaskSpec};
use celerity::types::BufferId;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const TASKS: usize = 1000;

fn empty_kernel() -> Launcher {
    Arc::new(|inv: &KernelInvocation, _: &LaunchEnvironment| {
        black_box(inv.chunk);
        Ok(())
    })
}

/// Time for `iterations` rounds of: submit `TASKS` kernels over `range` whose command groups
/// `make_cg` builds, then `wait`.
fn time_rounds(
    rt: &mut Runtime,
    iterations: u64,
    range: Range,
    kernel: &Launcher,
    make_cg: impl Fn() -> CommandGroup,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        let start = Instant::now();
        for _ in 0..TASKS {
            let spec = TaskSpec::DeviceKernel {
                dims: 1,
                range,
                offset: Id::default(),
            };
            rt.submit(spec, make_cg(), kernel.clone()).unwrap();
        }
        rt.wait().unwrap();
        total += start.elapsed();
    }
    total
}

/// A runtime on `devices` emulated host devices; CELERITY_* variables (e.g.
/// CELERITY_SCHEDULER_THREADS) apply.
fn host_runtime(devices: u32) -> Runtime {
    let config = Config {
        devices: DeviceSelection::Host(devices),
        ..Config::from_environment().expect("CELERITY_* variables")
    };
    Runtime::start(config).expect("runtime")
}

/// The chain's buffer: one 8-byte element per device, so every chunk reads and writes its own.
fn chain_buffer(rt: &mut Runtime, range: Range) -> BufferId {
    rt.create_buffer(1, range, 8, 8, Some(&vec![0u8; 8 * range.size()]))
        .unwrap()
}

/// A chain task's command group: `read_write` of the whole buffer, so each task depends on the
/// previous one.
fn chain_step(buffer: BufferId) -> impl Fn() -> CommandGroup {
    move || CommandGroup::new().access(buffer, AccessMode::ReadWrite, RangeMapper::OneToOne)
}

/// The `RT_RUN` direct run, if the variable is set.
fn direct_run() -> Option<()> {
    let spec = std::env::var("RT_RUN").ok()?;
    let words: Vec<&str> = spec.split_whitespace().collect();
    let [devices, workload, rounds] = words[..] else {
        panic!("RT_RUN=\"<devices> independent|chain <rounds>\"");
    };
    let devices: u32 = devices.parse().expect("devices");
    let rounds: u64 = rounds.parse().expect("rounds");
    let mut rt = host_runtime(devices);
    let range = Range::new(devices as usize, 1, 1);
    let kernel = empty_kernel();
    let elapsed = match workload {
        "independent" => time_rounds(&mut rt, rounds, range, &kernel, CommandGroup::new),
        "chain" => {
            let buffer = chain_buffer(&mut rt, range);
            time_rounds(&mut rt, rounds, range, &kernel, chain_step(buffer))
        }
        other => panic!("unknown workload {other}"),
    };
    rt.shutdown().unwrap();
    let per_task = elapsed.as_secs_f64() * 1e6 / (rounds as f64 * TASKS as f64);
    println!("{workload}, host:{devices}: {per_task:.2} us per task");
    Some(())
}

fn bench(c: &mut Criterion) {
    if direct_run().is_some() {
        std::process::exit(0);
    }
    let mut group = c.benchmark_group("runtime throughput");
    group.throughput(Throughput::Elements(TASKS as u64));
    group.sample_size(20);
    for devices in [1u32, 4] {
        let mut rt = host_runtime(devices);
        let range = Range::new(devices as usize, 1, 1);
        let kernel = empty_kernel();
        group.bench_function(format!("independent tasks, host:{devices}"), |b| {
            b.iter_custom(|iterations| {
                time_rounds(&mut rt, iterations, range, &kernel, CommandGroup::new)
            })
        });
        let buffer = chain_buffer(&mut rt, range);
        group.bench_function(format!("dependent chain, host:{devices}"), |b| {
            b.iter_custom(|iterations| {
                time_rounds(&mut rt, iterations, range, &kernel, chain_step(buffer))
            })
        });
        rt.shutdown().unwrap();
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
