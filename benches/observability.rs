//! Cost of the instruction trace (`trace_file`): the same program of many small kernels with the
//! trace off and on, on one node with two emulated devices. Prints the median wall time of each
//! and the overhead per executed instruction (recorded in docs/benchmarks.md, "Observability").
//!
//! `cargo bench --bench observability`

use std::sync::Arc;
use std::time::{Duration, Instant};

use celerity::backend::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use celerity::grid::{Id, Range};
use celerity::runtime::Runtime;
use celerity::runtime::config::{Config, DeviceSelection};
use celerity::task::{CommandGroup, RangeMapper, TaskSpec};

const TASKS: usize = 2000;
const RUNS: usize = 7;

fn nothing() -> Launcher {
    Arc::new(|_: &KernelInvocation, _: &LaunchEnvironment| Ok(()))
}

/// Runs the program; returns the wall time and the number of slices traced (0 when off).
fn run(trace: Option<&std::path::Path>) -> (Duration, usize) {
    let config = Config {
        devices: DeviceSelection::Host(2),
        trace_file: trace.map(|p| p.to_owned()),
        ..Config::default()
    };
    let mut rt = Runtime::start(config).unwrap();
    let b = rt
        .create_buffer(1, Range::new(4096, 1, 1), 4, 4, None)
        .unwrap();
    let start = Instant::now();
    for i in 0..TASKS {
        let cg = if i == 0 {
            CommandGroup::new().discard_write(b, RangeMapper::OneToOne)
        } else {
            CommandGroup::new().read_write(b, RangeMapper::OneToOne)
        };
        rt.submit(
            TaskSpec::DeviceKernel {
                dims: 1,
                range: Range::new(4096, 1, 1),
                offset: Id::default(),
            },
            cg,
            nothing(),
        )
        .unwrap();
    }
    rt.wait().unwrap();
    let elapsed = start.elapsed();
    rt.shutdown().unwrap();
    let slices = trace.map_or(0, |p| {
        let text = std::fs::read_to_string(p).unwrap();
        text.matches("\"ph\":\"X\"").count() + text.matches("\"ph\":\"b\"").count()
    });
    (elapsed, slices)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let path =
        std::env::temp_dir().join(format!("celerity-bench-trace-{}.json", std::process::id()));
    run(None);
    let (mut off, mut on) = (Vec::new(), Vec::new());
    let mut slices = 0;
    for _ in 0..RUNS {
        off.push(run(None).0);
        let (time, n) = run(Some(&path));
        on.push(time);
        slices = n;
    }
    let _ = std::fs::remove_file(&path);
    let (off, on) = (median(off), median(on));
    let per_instruction_ns = (on.as_secs_f64() - off.as_secs_f64()) * 1e9 / slices.max(1) as f64;
    println!(
        "observability: {TASKS} kernels on 2 devices: trace off {off:.2?}, trace on {on:.2?} ({:+.1}%), {slices} instructions traced, {per_instruction_ns:.0} ns per instruction",
        (on.as_secs_f64() / off.as_secs_f64() - 1.0) * 100.0
    );
}
