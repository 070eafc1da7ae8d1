//! The scheduler end to end: events in, instruction batches out, on one thread and on two (whose
//! instruction stage may poll for input before it parks, and whose command stage stays a few
//! runs ahead of it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::backend::system_info::SystemInfo;
use crate::command::CommandPolicies;
use crate::grid::{Id, Range};
use crate::instruction::{InstructionKind, Policies};
use crate::policy::ErrorPolicy;
use crate::task::{
    AccessMode, CommandGroup, RangeMapper, TaskManager, TaskManagerConfig, TaskSpec,
};
use crate::types::{AllocationId, BufferId, MemoryId, NodeId};

/// What reached the sink: device kernels, and whether the last epoch was the shutdown epoch.
#[derive(Default)]
struct Received {
    kernels: usize,
    last_was_shutdown: bool,
    errors: Vec<String>,
}

struct Collect(Arc<Mutex<Received>>);

impl SchedulerSink for Collect {
    fn batch(&mut self, (instructions, _): Batch) {
        let mut received = self.0.lock().unwrap();
        for instruction in &instructions {
            match instruction.kind() {
                InstructionKind::DeviceKernel { .. } => received.kernels += 1,
                InstructionKind::Epoch { action, .. } => {
                    received.last_was_shutdown = *action == EpochAction::Shutdown
                }
                _ => {}
            }
        }
    }
    fn error(&mut self, error: Error) {
        self.0.lock().unwrap().errors.push(error.to_string());
    }
    fn abort(&mut self) {}
}

/// A one-dimensional device kernel over `range`.
fn kernel(range: Range) -> TaskSpec {
    TaskSpec::DeviceKernel {
        dims: 1,
        range,
        offset: Id::default(),
    }
}

/// Submits `tasks` kernels (every other one chained on a buffer) and the shutdown epoch to a
/// scheduler started with `threads` and `poll`, pausing `pause` after every fourth submission
/// (longer than a poll, so that a polling stage parks and is woken again), and returns what
/// reached the sink once the scheduler ended.
fn run_program(tasks: usize, threads: SchedulerThreads, poll: bool, pause: Duration) -> Received {
    let cdag = CommandGraphGenerator::new(
        1,
        NodeId(0),
        CommandPolicies {
            uninitialized_read: ErrorPolicy::Ignore,
            overlapping_write: ErrorPolicy::Error,
        },
    )
    .unwrap();
    let system = SystemInfo::with_devices(1, true).unwrap();
    let idag = InstructionGraphGenerator::new(system, NodeId(0), 1, Policies::default(), None);
    let received = Arc::new(Mutex::new(Received::default()));
    let options = SchedulerOptions {
        lookahead: Lookahead::Auto,
        threads,
        poll_before_parking: poll,
    };
    let sink = Box::new(Collect(received.clone()));
    let mut handle = SchedulerHandle::start(cdag, idag, options, sink, None).unwrap();
    let config = TaskManagerConfig {
        uninitialized_read: ErrorPolicy::Ignore,
        ..TaskManagerConfig::default()
    };
    let scheduler = handle.sender();
    let forward = move |task: &Arc<Task>| {
        let _ = scheduler.send(SchedulerEvent::Task(task.clone()));
    };
    let mut tm = TaskManager::new(config, Some(Box::new(forward)));
    let (bid, range) = (BufferId(0), Range::new(4, 1, 1));
    tm.notify_buffer_created(bid, 1, range, true);
    handle.send(SchedulerEvent::BufferCreated {
        bid,
        range,
        elem_size: 8,
        elem_align: 8,
        user_allocation: Some(AllocationId::new(MemoryId::USER, 1)),
    });
    for i in 0..tasks {
        let cg = if i % 2 == 0 {
            CommandGroup::new().access(bid, AccessMode::ReadWrite, RangeMapper::OneToOne)
        } else {
            CommandGroup::new()
        };
        tm.submit(kernel(range), cg).unwrap();
        if i % 4 == 3 {
            std::thread::sleep(pause);
        }
    }
    tm.epoch(EpochAction::Shutdown, None).unwrap();
    handle.join().expect("the scheduler ended");
    Arc::try_unwrap(received)
        .ok()
        .expect("the sink was dropped with the scheduler")
        .into_inner()
        .unwrap()
}

#[test]
fn every_task_reaches_the_executor_on_one_thread_or_two_polling_or_parking() {
    // longer than the poll, so that a polling stage gives up and parks between bursts
    let pause = STAGE_SPIN * 5;
    for (threads, poll) in [
        (SchedulerThreads::One, false),
        (SchedulerThreads::Two, false),
        (SchedulerThreads::Two, true),
    ] {
        let received = run_program(40, threads, poll, pause);
        let case = format!("{threads:?}, poll {poll}");
        assert!(received.errors.is_empty(), "{case}: {:?}", received.errors);
        assert_eq!(received.kernels, 40, "{case}: one kernel per task");
        assert!(
            received.last_was_shutdown,
            "{case}: the shutdown epoch last"
        );
    }
}

/// A [`Collect`] sink whose first batch waits until the test opens the gate: the instruction
/// stage stalls inside its first run.
struct Gated {
    gate: Receiver<()>,
    open: bool,
    collect: Collect,
}

impl SchedulerSink for Gated {
    fn batch(&mut self, batch: Batch) {
        if !self.open {
            let _ = self.gate.recv();
            self.open = true;
        }
        self.collect.batch(batch);
    }
    fn error(&mut self, error: Error) {
        self.collect.error(error);
    }
    fn abort(&mut self) {}
}

#[test]
fn the_command_stage_stays_a_few_runs_ahead_of_a_stalled_instruction_stage() {
    const TASKS: usize = 4000;
    let cdag = CommandGraphGenerator::new(1, NodeId(0), CommandPolicies::default()).unwrap();
    let system = SystemInfo::with_devices(1, true).unwrap();
    let idag = InstructionGraphGenerator::new(system, NodeId(0), 1, Policies::default(), None);
    let (open_gate, gate) = crossbeam_channel::bounded(1);
    let received = Arc::new(Mutex::new(Received::default()));
    let sink = Box::new(Gated {
        gate,
        open: false,
        collect: Collect(received.clone()),
    });
    let options = SchedulerOptions {
        lookahead: Lookahead::None,
        threads: SchedulerThreads::Two,
        poll_before_parking: false,
    };
    let mut handle = SchedulerHandle::start(cdag, idag, options, sink, None).unwrap();
    let scheduler = handle.sender();
    // tasks and the horizons between them
    let sent = Arc::new(AtomicUsize::new(0));
    let counted = sent.clone();
    let forward = move |task: &Arc<Task>| {
        counted.fetch_add(1, Ordering::Relaxed);
        let _ = scheduler.send(SchedulerEvent::Task(task.clone()));
    };
    let mut tm = TaskManager::new(TaskManagerConfig::default(), Some(Box::new(forward)));
    let range = Range::new(4, 1, 1);
    for _ in 0..TASKS {
        tm.submit(kernel(range), CommandGroup::new()).unwrap();
    }
    // The command stage takes events until the hand-off is full; wait until the application's
    // queue stops shrinking.
    let queued = handle.sender();
    let mut last = usize::MAX;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while queued.len() != last && std::time::Instant::now() < deadline {
        last = queued.len();
        std::thread::sleep(Duration::from_millis(200));
    }
    let sent = sent.load(Ordering::Relaxed);
    let taken = sent - queued.len();
    // one run stalled in the instruction stage, the bounded hand-off, one run the command
    // stage holds and one it waits to hand over
    let most = (MAX_RUNS_IN_FLIGHT + 3) * MAX_HELD_RECORDS;
    assert!(
        taken <= most,
        "the command stage took {taken} of {sent} events while the instruction stage stalled (at most {most})"
    );
    open_gate.send(()).unwrap();
    tm.epoch(EpochAction::Shutdown, None).unwrap();
    handle.join().expect("the scheduler ended");
    let received = received.lock().unwrap();
    assert!(received.errors.is_empty(), "{:?}", received.errors);
    assert_eq!(
        received.kernels, TASKS,
        "every kernel once the stage resumed"
    );
    assert!(received.last_was_shutdown);
}
