//! The scheduler alone, on one thread against its two stages on a thread each
//! (`scheduler_threads`): the events of a program of empty device kernels (half independent,
//! half a chain of `read_write` on one buffer, one node, one device, as `million_tasks`) are
//! recorded first, then fed through a scheduler started as the runtime starts it, with batches
//! dropped by the sink; the time from the first event to the end of the shutdown epoch's batch,
//! per task. Nothing else runs meanwhile, so two stages need only two cores.
//!
//! `cargo bench --bench scheduler_stages` (STAGES_TASKS=N tasks per run, default 200,000;
//! STAGES_ROUNDS=R alternating rounds, default 3; STAGES_ONLY=1 or 2 runs one variant only, for
//! per-thread instruction counts under callgrind).

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use celerity::backend::system_info::SystemInfo;
use celerity::command::{CommandGraphGenerator, CommandPolicies};
use celerity::error::Error;
use celerity::grid::Range;
use celerity::instruction::{Batch, InstructionGraphGenerator, Policies};
use celerity::runtime::config::{ErrorPolicy, Lookahead};
use celerity::scheduler::{
    SchedulerEvent, SchedulerHandle, SchedulerOptions, SchedulerSink, SchedulerThreads,
};
use celerity::task::{EpochAction, Task, TaskDelegate};
use celerity::types::{AllocationId, BufferId, MemoryId, NodeId};
use common::contexts::task_manager;
use common::programs::{empty_kernel, env_count};
use crossbeam_channel::{Sender, unbounded};

struct Forward(Sender<SchedulerEvent>);

impl TaskDelegate for Forward {
    fn task_created(&mut self, task: &Arc<Task>) {
        let _ = self.0.send(SchedulerEvent::Task(task.clone()));
    }
}

/// Counts the instructions it is handed and drops them.
struct CountInstructions(usize);

impl SchedulerSink for CountInstructions {
    fn batch(&mut self, batch: Batch) {
        self.0 += batch.0.len();
        black_box(batch);
    }
    fn error(&mut self, error: Error) {
        panic!("{error}");
    }
    fn abort(&mut self) {}
}

/// The scheduler events of `tasks` empty device kernels and the shutdown epoch.
fn program(tasks: usize) -> Vec<SchedulerEvent> {
    let (sender, receiver) = unbounded();
    let mut tm = task_manager(1, Some(Box::new(Forward(sender.clone()))));
    let bid = BufferId(0);
    let range = Range::new(1, 1, 1);
    tm.notify_buffer_created(bid, 1, range, true);
    sender
        .send(SchedulerEvent::BufferCreated {
            bid,
            range,
            elem_size: 8,
            elem_align: 8,
            user_allocation: Some(AllocationId::new(MemoryId::USER, 1)),
        })
        .expect("send");
    for i in 0..tasks {
        let (spec, cg) = empty_kernel(range, bid, i % 2 == 0);
        tm.submit(spec, cg).expect("submit");
    }
    tm.epoch(EpochAction::Shutdown, None).expect("shutdown");
    drop(tm);
    receiver.try_iter().collect()
}

/// Feeds `events` through a scheduler on `threads` thread(s); returns µs per task.
fn run(events: Vec<SchedulerEvent>, tasks: usize, threads: SchedulerThreads) -> f64 {
    // The runtime's generator settings (start_scheduler): uninitialised reads are the task
    // manager's to report, overlapping writes are logged.
    let cdag = CommandGraphGenerator::new(
        1,
        NodeId(0),
        CommandPolicies {
            uninitialized_read: ErrorPolicy::Ignore,
            overlapping_write: ErrorPolicy::Log,
        },
    )
    .expect("cdag");
    let policies = Policies {
        uninitialized_read: ErrorPolicy::Ignore,
        overlapping_write: ErrorPolicy::Log,
        ..Policies::default()
    };
    let system = SystemInfo::with_devices(1, true).expect("system");
    let idag = InstructionGraphGenerator::new(system, NodeId(0), 1, policies, None);
    let start = Instant::now();
    let mut handle = SchedulerHandle::start(
        cdag,
        idag,
        SchedulerOptions {
            lookahead: Lookahead::Auto,
            threads,
            // The runtime's choice on a machine with a core for each of its threads.
            poll_before_parking: true,
        },
        Box::new(CountInstructions(0)),
        None,
    )
    .expect("scheduler");
    for event in events {
        handle.send(event);
    }
    let output = handle.join().expect("the scheduler ended");
    let elapsed = start.elapsed();
    black_box(output);
    elapsed.as_secs_f64() * 1e6 / tasks as f64
}

fn main() {
    let tasks = env_count("STAGES_TASKS", 200_000);
    let rounds = env_count("STAGES_ROUNDS", 3);
    println!("| round | one thread (µs per task) | two threads (µs per task) | ratio |");
    println!("|---:|---:|---:|---:|");
    let only = std::env::var("STAGES_ONLY").ok();
    let variant = |threads: SchedulerThreads, name: &str| {
        (only.is_none() || only.as_deref() == Some(name))
            .then(|| run(program(tasks), tasks, threads))
    };
    for round in 1..=rounds {
        match (
            variant(SchedulerThreads::One, "1"),
            variant(SchedulerThreads::Two, "2"),
        ) {
            (Some(one), Some(two)) => {
                println!("| {round} | {one:.3} | {two:.3} | {:.2}× |", one / two)
            }
            (one, two) => println!("| {round} | {one:.3?} | {two:.3?} | |"),
        }
    }
}
