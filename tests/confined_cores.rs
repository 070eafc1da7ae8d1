//! A process confined to fewer cores than the runtime's threads (an MPI launcher's default
//! binding, a job step with one CPU) is told so at start-up, with the launcher options that lift
//! it. The test re-launches itself under `taskset -c 0` (one core) and on the whole host, and
//! checks the warning on stderr against the host's online cores.

use std::process::Command;

use celerity::runtime::Runtime;
use celerity::runtime::config::{Config, DeviceSelection};

const CHILD: &str = "CELERITY_CONFINED_CORES_CHILD";

/// The host's online cores, read as the runtime reads them.
fn host_cores() -> usize {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .expect("/sys/devices/system/cpu/online (Linux)");
    list.trim()
        .split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

/// Starts and shuts down a runtime on one emulated device, its log on stderr at the level of
/// `CELERITY_LOG_LEVEL` (as the C API installs it).
fn child() {
    let config = Config {
        devices: DeviceSelection::Host(1),
        ..Config::from_environment().unwrap()
    };
    celerity::debug::logging::install(config.log_level);
    Runtime::start(config).unwrap().shutdown().unwrap();
}

/// The child's stderr, run under `launcher` (a command and its arguments) or directly.
fn run_child(launcher: &[&str]) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut command = match launcher.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    let output = command
        .env(CHILD, "1")
        .env("CELERITY_LOG_LEVEL", "warn")
        .output()
        .unwrap_or_else(|e| panic!("{launcher:?} could not start: {e} (taskset: util-linux)"));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{launcher:?} failed:\n{stderr}");
    stderr
}

fn main() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let host = host_cores();
    let confined = run_child(&["taskset", "-c", "0"]);
    let expected = format!("may run on 1 of the host's {host} cores");
    if host >= 2 {
        assert!(
            confined.contains(&expected),
            "no warning on 1 core of {host}:\n{confined}"
        );
        assert!(confined.contains("mpirun --bind-to none"), "{confined}");
        assert_eq!(
            confined.matches(&expected).count(),
            1,
            "one report:\n{confined}"
        );
    } else {
        assert!(
            !confined.contains("may run on"),
            "a 1-core host has nothing to lift:\n{confined}"
        );
    }
    let whole = run_child(&[]);
    assert!(
        !whole.contains("may run on"),
        "the whole host is not confined:\n{whole}"
    );
    println!("confined_cores: a process on 1 of {host} cores is warned, one on all of them is not");
}
