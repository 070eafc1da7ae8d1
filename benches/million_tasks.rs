//! A million tasks through the whole runtime on one emulated device, with the resident set size
//! sampled along the way: memory must stay flat (horizons bound the graphs, the executor retires
//! instructions). Prints a table of (tasks submitted, RSS, tasks per second since the last
//! sample) for docs/benchmarks.md.
//!
//! `cargo bench --bench million_tasks` (MILLION_TASKS=N changes the count, SAMPLE_EVERY the
//! sampling interval). Half the tasks are independent, half read and write one small buffer.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use celerity::backend::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use celerity::grid::Range;
use celerity::runtime::Runtime;
use celerity::runtime::config::{Config, DeviceSelection};
use common::programs::{empty_kernel, env_count};

/// Resident set size in MiB, from /proc/self/statm (pages).
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is expected.
    let tasks = env_count("MILLION_TASKS", 1_000_000);
    let every = env_count("SAMPLE_EVERY", 100_000).max(1);
    let config = Config {
        devices: DeviceSelection::Host(1),
        // CELERITY_* variables (e.g. CELERITY_SCHEDULER_THREADS) apply
        ..Config::from_environment().expect("CELERITY_* variables")
    };
    let mut rt = Runtime::start(config).expect("runtime");
    let range = Range::new(1, 1, 1);
    let buffer = rt
        .create_buffer(1, range, 8, 8, Some(&[0u8; 8]))
        .expect("buffer");
    let kernel: Launcher = Arc::new(|inv: &KernelInvocation, _: &LaunchEnvironment| {
        black_box(inv.chunk);
        Ok(())
    });
    println!("| tasks submitted | RSS (MiB) | tasks/s since the previous row |");
    println!("|---|---|---|");
    println!("| 0 | {:.1} | |", rss_mib());
    let start = Instant::now();
    let mut last = Instant::now();
    for i in 1..=tasks {
        let (spec, cg) = empty_kernel(range, buffer, i % 2 == 0);
        rt.submit(spec, cg, kernel.clone()).expect("submit");
        if i % every == 0 {
            rt.wait().expect("wait");
            let rate = every as f64 / last.elapsed().as_secs_f64();
            println!("| {i} | {:.1} | {rate:.0} |", rss_mib());
            last = Instant::now();
        }
    }
    rt.wait().expect("wait");
    let elapsed = start.elapsed();
    rt.shutdown().expect("shutdown");
    println!(
        "\n{tasks} tasks in {:.2} s: {:.2} µs per task",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / tasks as f64
    );
}
