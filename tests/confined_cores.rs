//! A process confined to fewer cores than the runtime's threads (an MPI launcher's default
//! binding, a job step with one CPU) is told so at start-up, with the launcher options that lift
//! it. The test re-launches itself under `taskset -c 0` (one core) and on the whole host, and
//! checks the warning on stderr against the host's online cores.

use std::process::Command;

use celerity::runtime::Runtime;
use celerity::runtime::config::{Config, DeviceSelection};

const CHILD: &str = "CELERITY_CONFINED_CORES_CHILD";

/// The CPUs of a Linux CPU list (`0-15`, `0-3,8-11`, `5`).
fn cpus(list: &str) -> Vec<usize> {
    list.trim()
        .split(',')
        .flat_map(|part| match part.split_once('-') {
            Some((a, b)) => a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap(),
            None => {
                let cpu = part.parse::<usize>().unwrap();
                cpu..=cpu
            }
        })
        .collect()
}

/// The host's online CPUs, read as the runtime reads them.
fn host_cpus() -> Vec<usize> {
    cpus(&std::fs::read_to_string("/sys/devices/system/cpu/online").expect("Linux /sys"))
}

/// The CPUs this process may run on (its affinity mask, which children inherit).
fn allowed_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux /proc");
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list");
    cpus(list)
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
    let host = host_cpus().len();
    let allowed = allowed_cpus();
    // one core this process may use, so that taskset may give it to the child
    let core = allowed[0].to_string();
    let confined = run_child(&["taskset", "-c", &core]);
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
    // Unconfined (this process's own mask): one device keeps 4 threads busy (5 with the second
    // scheduler stage, which it takes only with 6 cores or more), so it is warned only where
    // this process itself runs on fewer than 4 of more cores.
    let unconfined = run_child(&[]);
    let warned = allowed.len() < 4 && host > allowed.len();
    assert_eq!(
        unconfined.contains("may run on"),
        warned,
        "{} of {host} cores:\n{unconfined}",
        allowed.len()
    );
    println!(
        "confined_cores: a process on 1 of {host} cores is warned; on {} of them {}",
        allowed.len(),
        if warned { "too" } else { "not" }
    );
}
