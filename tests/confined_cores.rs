//! A process confined to fewer cores than the runtime's threads (an MPI launcher's default
//! binding, a job step with one CPU) is told so at start-up, with the launcher options that lift
//! it, where the host has a core for each thread. The test re-launches itself under `taskset`
//! (one core) and with its own affinity, and checks the startup line's core counts and the
//! warning on stderr: warned on one core of a host with four or more, never on a host with fewer
//! (one process on two cores would take turns with or without the confinement).

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
        .env("CELERITY_LOG_LEVEL", "info")
        .output()
        .unwrap_or_else(|e| panic!("{launcher:?} could not start: {e} (taskset: util-linux)"));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{launcher:?} failed:\n{stderr}");
    stderr
}

/// The `cores: P of H` of the startup line: the cores the process may use and the host's.
fn startup_cores(stderr: &str) -> (usize, usize) {
    let line = stderr
        .lines()
        .find(|l| l.contains("(Rust runtime)"))
        .unwrap_or_else(|| panic!("no startup line:\n{stderr}"));
    let counts = line
        .rsplit_once("cores: ")
        .expect("cores in the startup line")
        .1;
    let (process, host) = counts.split_once(" of ").expect("P of H");
    (
        process.trim().parse().unwrap(),
        host.trim().parse().unwrap(),
    )
}

/// Whether a run of one device on `process` of `host` cores is warned: 4 busy threads (the
/// second scheduler stage comes only with 6 cores or more, where 5 threads have a core each).
fn expect_warning(process: usize, host: usize) -> bool {
    process < 4 && host >= 4
}

fn check(stderr: &str, process: usize, host: usize) {
    let warning = format!("may run on {process} of the host's {host} cores");
    let warned = expect_warning(process, host);
    assert_eq!(
        stderr.matches(&warning).count(),
        usize::from(warned),
        "{process} of {host} cores: warned once iff {warned}:\n{stderr}"
    );
    assert_eq!(stderr.contains("may run on"), warned, "{stderr}");
    if warned {
        assert!(stderr.contains("mpirun --bind-to none"), "{stderr}");
    }
}

fn main() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let host = host_cpus().len();
    // one core this process may use, so that taskset may give it to the child
    let core = allowed_cpus()[0].to_string();
    let confined = run_child(&["taskset", "-c", &core]);
    assert_eq!(startup_cores(&confined), (1, host), "{confined}");
    check(&confined, 1, host);
    let unconfined = run_child(&[]);
    let (process, reported_host) = startup_cores(&unconfined);
    assert_eq!(reported_host, host, "{unconfined}");
    assert!(process <= allowed_cpus().len(), "{unconfined}");
    check(&unconfined, process, host);
    println!(
        "confined_cores: on 1 of {host} cores {}, on {process} {}",
        if expect_warning(1, host) {
            "warned"
        } else {
            "not warned (too few cores to lift)"
        },
        if expect_warning(process, host) {
            "warned"
        } else {
            "not warned"
        }
    );
}
