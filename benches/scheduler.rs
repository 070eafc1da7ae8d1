//! Celerity's "building command- and instruction graphs in a dedicated scheduler thread for N
//! nodes" (N = 1, 4; 1 device with device-to-device copies), as
//! `shared/reference/dag-benchmarks.md` describes, timing the same work as Celerity's
//! `scheduler_benchmark_context` in `test/dag_benchmarks.cc`:
//!
//! * the task manager runs on the caller's thread (uninitialised-read policy `ignore`, as
//!   Celerity's benchmark task-manager policy) and hands every task to a scheduler that runs on
//!   one thread kept alive across iterations (Celerity's `restartable_scheduler_thread`), so no
//!   iteration pays for starting a thread;
//! * the scheduler's command and instruction graph generators run with their default checks
//!   (`error`, Celerity's `panic`), lookahead `auto`, node 0, host tasks; batches are dropped
//!   (no executor);
//! * the timed region ends when the scheduler has processed the shutdown epoch and the
//!   "epoch reached" notification for it, which Celerity sends at once since nothing executes;
//! * the "throttled" variant busy-waits until 10 µs have passed since the *end* of the previous
//!   submission (the first submission does not wait), as Celerity's
//!   `submission_throttle_benchmark_context`.
//!
//! The scheduling loop is the one [`Scheduler::handle`] implements; the thread only forwards
//! events to it (the runtime's own thread adds a panic guard around each event).

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use celerity::backend::system_info::SystemInfo;
use celerity::command::{CommandGraphGenerator, CommandPolicies};
use celerity::error::Error;
use celerity::grid::Range;
use celerity::instruction::{Batch, InstructionGraphGenerator, Policies};
use celerity::runtime::config::{ErrorPolicy, Lookahead};
use celerity::scheduler::{Scheduler, SchedulerEvent, SchedulerSink};
use celerity::task::{CommandGroup, EpochAction, Task, TaskDelegate, TaskManager, TaskSpec};
use celerity::types::{BufferId, NodeId};
use common::contexts::task_manager;
use common::direct_run::DirectRun;
use common::topologies::{self, TopologyContext};
use criterion::{Criterion, criterion_group, criterion_main};
use crossbeam_channel::{Receiver, Sender, unbounded};

struct DropBatches;

impl SchedulerSink for DropBatches {
    fn batch(&mut self, batch: Batch) {
        black_box(batch);
    }
    fn error(&mut self, error: Error) {
        panic!("{error}");
    }
    fn abort(&mut self) {}
}

struct Forward(Sender<SchedulerEvent>);

impl TaskDelegate for Forward {
    fn task_created(&mut self, task: &Arc<Task>) {
        let _ = self.0.send(SchedulerEvent::Task(task.clone()));
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// One OS thread that runs a scheduling loop per iteration (Celerity's
/// `restartable_scheduler_thread`): `start` hands it a loop, `join` waits for the loop to end.
struct RestartableThread {
    jobs: Option<Sender<Job>>,
    done: Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RestartableThread {
    fn new() -> Self {
        let (jobs, job_receiver) = unbounded::<Job>();
        let (done_sender, done) = unbounded();
        let thread = std::thread::Builder::new()
            .name("bench-scheduler".into())
            .spawn(move || {
                for job in job_receiver {
                    job();
                    let _ = done_sender.send(());
                }
            })
            .expect("scheduler thread");
        RestartableThread {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
        }
    }

    fn start(&self, job: Job) {
        self.jobs
            .as_ref()
            .expect("running")
            .send(job)
            .expect("start");
    }

    fn join(&self) {
        self.done.recv().expect("the scheduling loop panicked");
    }
}

impl Drop for RestartableThread {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Celerity's default generator checks (`panic` there, `error` here).
fn default_checks() -> (CommandPolicies, Policies) {
    let cdag = CommandPolicies {
        uninitialized_read: ErrorPolicy::Error,
        overlapping_write: ErrorPolicy::Error,
    };
    let idag = Policies {
        uninitialized_read: ErrorPolicy::Error,
        overlapping_write: ErrorPolicy::Error,
        unsafe_oversubscription: ErrorPolicy::Error,
    };
    (cdag, idag)
}

/// Runs `scheduler` on `events` until the shutdown epoch was reached.
fn scheduling_loop(mut scheduler: Scheduler, events: Receiver<SchedulerEvent>) {
    for event in events {
        let last = matches!(event, SchedulerEvent::EpochReached(_));
        scheduler.handle(event);
        if last {
            break;
        }
    }
    black_box(scheduler);
}

struct Ctx<'t> {
    tm: TaskManager,
    sender: Sender<SchedulerEvent>,
    thread: &'t RestartableThread,
    num_nodes: usize,
    next_bid: u64,
    throttle: Option<Duration>,
    last_submission: Option<Instant>,
}

impl<'t> Ctx<'t> {
    fn new(thread: &'t RestartableThread, num_nodes: usize, throttle: Option<Duration>) -> Self {
        let (cdag_policies, idag_policies) = default_checks();
        let cdag = CommandGraphGenerator::new(num_nodes, NodeId(0), cdag_policies).expect("cdag");
        let system = SystemInfo::with_devices(1, true).expect("system");
        let idag =
            InstructionGraphGenerator::new(system, NodeId(0), num_nodes, idag_policies, None);
        let scheduler = Scheduler::new(cdag, idag, Lookahead::Auto, Box::new(DropBatches));
        let (sender, events) = unbounded();
        thread.start(Box::new(move || scheduling_loop(scheduler, events)));
        let tm = task_manager(num_nodes, Some(Box::new(Forward(sender.clone()))));
        Ctx {
            tm,
            sender,
            thread,
            num_nodes,
            next_bid: 0,
            throttle,
            last_submission: None,
        }
    }

    /// The shutdown epoch and its "reached" notification, then wait for the loop to end.
    fn finish(mut self) {
        let shutdown = self
            .tm
            .epoch(EpochAction::Shutdown, None)
            .expect("shutdown");
        let _ = self.sender.send(SchedulerEvent::EpochReached(shutdown));
        self.thread.join();
    }
}

impl TopologyContext for Ctx<'_> {
    fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        let bid = BufferId(self.next_bid);
        self.next_bid += 1;
        let r = Range::from_slice(range);
        self.tm
            .notify_buffer_created(bid, range.len(), r, host_initialized);
        // The user allocation of a host-initialised buffer is never touched: batches are dropped.
        let user_allocation = host_initialized.then(|| {
            celerity::types::AllocationId::new(celerity::types::MemoryId::USER, bid.0 + 1)
        });
        let _ = self.sender.send(SchedulerEvent::BufferCreated {
            bid,
            range: r,
            elem_size: 4,
            elem_align: 4,
            user_allocation,
        });
        bid
    }

    fn submit(&mut self, range: &[usize], cg: CommandGroup) {
        if let (Some(throttle), Some(last)) = (self.throttle, self.last_submission) {
            while last.elapsed() < throttle {
                std::hint::spin_loop();
            }
        }
        let spec = TaskSpec::host(range.len(), Range::from_slice(range));
        self.tm.submit(spec, cg).expect("submit");
        if self.throttle.is_some() {
            self.last_submission = Some(Instant::now());
        }
    }
}

/// `SCHED_RUN="<nodes> <topology prefix> <iterations> [throttled]"` runs one topology that often
/// without criterion (for instruction counts under `callgrind --separate-threads=yes`, which a
/// loaded machine does not distort), then prints the mean wall time per run. The topology
/// `empty` submits nothing: a run is then only the fixed part (context, init and shutdown
/// epochs, the two thread hand-offs of start and join).
fn direct_run() -> bool {
    let empty: topologies::Topology<Ctx> = ("empty", |_| {});
    let Some(run) = DirectRun::<Ctx>::from_env("SCHED_RUN", &[empty]) else {
        return false;
    };
    let throttle = (run.flag.as_deref() == Some("throttled")).then(|| Duration::from_micros(10));
    let thread = RestartableThread::new();
    let start = Instant::now();
    for _ in 0..run.iterations {
        let mut ctx = Ctx::new(&thread, run.count, throttle);
        (run.topology.1)(&mut ctx);
        ctx.finish();
    }
    println!("{:?} per run", start.elapsed() / run.iterations as u32);
    true
}

fn scheduler(c: &mut Criterion) {
    if direct_run() {
        std::process::exit(0);
    }
    for nodes in [1usize, 4] {
        for (variant, throttle) in [
            ("immediate submission", None),
            (
                "throttled submission at 10 us per task",
                Some(Duration::from_micros(10)),
            ),
        ] {
            let thread = RestartableThread::new();
            let mut group = c.benchmark_group(format!("scheduler thread/{nodes} nodes/{variant}"));
            for (name, build) in topologies::all::<Ctx>() {
                group.bench_function(name, |b| {
                    b.iter(|| {
                        let mut ctx = Ctx::new(&thread, nodes, throttle);
                        build(&mut ctx);
                        ctx.finish();
                    })
                });
            }
            group.finish();
        }
    }
}

criterion_group!(benches, scheduler);
criterion_main!(benches);
