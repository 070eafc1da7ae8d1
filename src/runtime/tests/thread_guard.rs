//! A panic on any thread the runtime starts (scheduler, executor, dry-run executor, backend
//! lanes) comes back from the next `wait` as an internal error naming the thread and the panic,
//! and shutdown still completes. Each case runs under a generous timeout, so that a regression
//! (a `wait` that never returns) fails the test instead of hanging the suite.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use crate::backend::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use crate::error::ErrorKind;
use crate::grid::Range;
use crate::runtime::Runtime;
use crate::runtime::config::{Config, DeviceSelection, SchedulerThreads};
use crate::task::{CommandGroup, TaskSpec};
use crate::thread_guard::INJECT_PANIC_PREFIX;

/// Runs `body` on its own thread and returns its result, failing if it does not return in time.
fn within_timeout<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(body());
    });
    receiver
        .recv_timeout(Duration::from_secs(120))
        .expect("the runtime hung instead of reporting the panic")
}

fn quiet_launcher() -> Launcher {
    Arc::new(|_: &KernelInvocation, _: &LaunchEnvironment| Ok(()))
}

/// Submits one host task named `name` running `launcher`, waits and shuts down; returns what
/// `wait` returned (kind and message).
fn wait_after_task(config: Config, name: &str, launcher: Launcher) -> (ErrorKind, String) {
    let name = name.to_owned();
    within_timeout(move || {
        let mut rt = Runtime::start(config).unwrap();
        let cg = CommandGroup::new().name(name);
        rt.submit(TaskSpec::host(1, Range::new(4, 1, 1)), cg, launcher)
            .unwrap();
        let error = rt.wait().expect_err("wait reports the panic");
        // Shutdown returns (its outcome may repeat the failure).
        let _ = rt.shutdown();
        (error.kind(), error.message().to_owned())
    })
}

fn host_config() -> Config {
    Config {
        devices: DeviceSelection::Host(2),
        ..Config::default()
    }
}

/// Asserts that `wait` returned an internal error whose message holds every one of `needles`.
fn assert_internal((kind, message): (ErrorKind, String), needles: &[&str]) {
    assert_eq!(kind, ErrorKind::Internal, "{message}");
    for needle in needles {
        assert!(message.contains(needle), "no `{needle}` in: {message}");
    }
}

fn injected(role: &str) -> String {
    format!("{INJECT_PANIC_PREFIX}{role}")
}

#[test]
fn a_panic_on_the_executor_thread_is_an_internal_error_at_the_next_wait() {
    assert_internal(
        wait_after_task(host_config(), &injected("executor"), quiet_launcher()),
        &["executor thread panicked", "injected panic"],
    );
}

#[test]
fn a_panic_on_the_dry_run_executor_thread_is_an_internal_error_at_the_next_wait() {
    let config = Config {
        dry_run_nodes: Some(2),
        ..host_config()
    };
    assert_internal(
        wait_after_task(config, &injected("executor"), quiet_launcher()),
        &["executor thread panicked", "injected panic"],
    );
}

#[test]
fn a_panic_on_the_scheduler_thread_is_an_internal_error_at_the_next_wait() {
    assert_internal(
        wait_after_task(host_config(), &injected("scheduler"), quiet_launcher()),
        &["scheduler failed", "injected panic on the scheduler thread"],
    );
}

#[test]
fn a_panic_in_either_scheduler_stage_on_either_thread_count_is_an_internal_error() {
    for threads in [SchedulerThreads::One, SchedulerThreads::Two] {
        for (role, panic) in [
            ("scheduler", "injected panic on the scheduler thread"),
            (
                "instruction stage",
                "injected panic on the instruction stage thread",
            ),
        ] {
            let config = Config {
                scheduler_threads: threads,
                ..host_config()
            };
            assert_internal(
                wait_after_task(config, &injected(role), quiet_launcher()),
                &["scheduler failed", panic],
            );
        }
    }
}

#[test]
fn a_panic_on_a_backend_lane_is_an_internal_error_at_the_next_wait() {
    let panicking: Launcher = Arc::new(|_: &KernelInvocation, _: &LaunchEnvironment| {
        panic!("injected panic on a host lane")
    });
    assert_internal(
        wait_after_task(host_config(), "lane", panicking),
        &["panic on thread", "injected panic on a host lane"],
    );
}
