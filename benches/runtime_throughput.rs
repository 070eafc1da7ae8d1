//! End-to-end task throughput of the whole runtime (task graph, scheduler thread with command
//! and instruction graphs, executor thread, emulated devices): N tasks submitted then waited
//! for, reported per task. "independent": tasks with empty kernels and no accesses; "chain":
//! every task reads and writes the same small buffer, so each depends on the previous one;
//! "paced" (direct runs only): the chain with each submission 10 µs after the end of the
//! previous one, as a program doing a little host work between submissions.
//!
//! `RT_RUN="<devices> independent|chain|paced <rounds>"` runs one workload that many rounds of
//! `TASKS` tasks without criterion and prints µs per task (for callgrind's per-thread counts),
//! then each thread's CPU time per task over those rounds (Linux: which thread paces the run).

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
    time_paced_rounds(rt, iterations, range, kernel, make_cg, None)
}

/// [`time_rounds`], where with `pace` each submission after the first waits (spinning) until
/// that long has passed since the end of the previous one: a program doing a little host work
/// between its submissions (C++ Celerity's throttled scheduler benchmark paces the same way).
fn time_paced_rounds(
    rt: &mut Runtime,
    iterations: u64,
    range: Range,
    kernel: &Launcher,
    make_cg: impl Fn() -> CommandGroup,
    pace: Option<Duration>,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        let start = Instant::now();
        let mut last_submission: Option<Instant> = None;
        for _ in 0..TASKS {
            if let (Some(pace), Some(last)) = (pace, last_submission) {
                while last.elapsed() < pace {
                    std::hint::spin_loop();
                }
            }
            let spec = TaskSpec::DeviceKernel {
                dims: 1,
                range,
                offset: Id::default(),
            };
            rt.submit(spec, make_cg(), kernel.clone()).unwrap();
            last_submission = pace.map(|_| Instant::now());
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
        panic!("RT_RUN=\"<devices> independent|chain|paced <rounds>\"");
    };
    let devices: u32 = devices.parse().expect("devices");
    let rounds: u64 = rounds.parse().expect("rounds");
    let mut rt = host_runtime(devices);
    let range = Range::new(devices as usize, 1, 1);
    let kernel = empty_kernel();
    let cpu_before = thread_cpu_times();
    let elapsed = match workload {
        "independent" => time_rounds(&mut rt, rounds, range, &kernel, CommandGroup::new),
        "chain" => {
            let buffer = chain_buffer(&mut rt, range);
            time_rounds(&mut rt, rounds, range, &kernel, chain_step(buffer))
        }
        "paced" => {
            let buffer = chain_buffer(&mut rt, range);
            let pace = Some(Duration::from_micros(10));
            time_paced_rounds(&mut rt, rounds, range, &kernel, chain_step(buffer), pace)
        }
        other => panic!("unknown workload {other}"),
    };
    let cpu_after = thread_cpu_times();
    rt.shutdown().unwrap();
    let tasks = rounds as f64 * TASKS as f64;
    let per_task = elapsed.as_secs_f64() * 1e6 / tasks;
    println!("{workload}, host:{devices}: {per_task:.2} us per task");
    for after in &cpu_after {
        let before = cpu_before.iter().find(|b| b.tid == after.tid);
        let since = |f: fn(&ThreadCpu) -> u64| f(after) - before.map_or(0, f);
        let busy_us = since(|t| t.on_cpu_ns) as f64 * 1e-3 / tasks;
        if busy_us >= 0.005 {
            let share = 100.0 * busy_us / per_task;
            let (user, system) = (since(|t| t.user_ticks), since(|t| t.system_ticks));
            let name = &after.name;
            println!(
                "  thread {name:<16} {busy_us:6.2} us CPU per task ({share:3.0} % of wall; clock ticks user {user}, system {system})"
            );
        }
    }
    Some(())
}

/// A thread's CPU time so far.
struct ThreadCpu {
    tid: u64,
    name: String,
    /// Time on a CPU (schedstat, nanoseconds).
    on_cpu_ns: u64,
    /// Of that, in user and in system mode (stat, clock ticks: coarse, but it tells how much
    /// of a thread's time went to system calls such as futex wake-ups).
    user_ticks: u64,
    system_ticks: u64,
}

/// Every thread of this process with its CPU time so far (/proc/self/task; empty where
/// unavailable).
fn thread_cpu_times() -> Vec<ThreadCpu> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let tid = path.file_name()?.to_str()?.parse().ok()?;
            let name = std::fs::read_to_string(path.join("comm")).ok()?;
            let schedstat = std::fs::read_to_string(path.join("schedstat")).ok()?;
            let stat = std::fs::read_to_string(path.join("stat")).ok()?;
            // fields after the parenthesised name: state is field 3, utime 14, stime 15
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
            Some(ThreadCpu {
                tid,
                name: name.trim().to_string(),
                on_cpu_ns: schedstat.split_whitespace().next()?.parse().ok()?,
                user_ticks: fields.next()?.parse().ok()?,
                system_ticks: fields.next()?.parse().ok()?,
            })
        })
        .collect()
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
