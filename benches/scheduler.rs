//! Celerity's "building command- and instruction graphs in a dedicated scheduler thread for N
//! nodes" (N = 1, 4; 1 device with device-to-device copies), as
//! `shared/reference/dag-benchmarks.md` describes: the task manager runs on the caller's thread
//! and hands every task to a real scheduler thread, which builds node 0's command and
//! instruction graphs with lookahead `auto`. The timed region ends when the scheduler thread
//! has processed the shutdown epoch and was joined. The "throttled" variant spaces submissions
//! at least 10 µs apart (busy-waiting). Host tasks; batches are dropped (no executor).

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use celerity::backend::system_info::SystemInfo;
use celerity::command::CommandGraphGenerator;
use celerity::error::Error;
use celerity::grid::Range;
use celerity::instruction::{Batch, InstructionGraphGenerator, Policies};
use celerity::runtime::config::Lookahead;
use celerity::scheduler::{SchedulerEvent, SchedulerHandle, SchedulerSink};
use celerity::task::{CommandGroup, EpochAction, Task, TaskDelegate, TaskManager, TaskSpec};
use celerity::types::{BufferId, NodeId};
use common::contexts::{ignore_policies, task_manager};
use common::topologies::{self, TopologyContext};
use criterion::{Criterion, criterion_group, criterion_main};

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

struct Forward(crossbeam_channel::Sender<SchedulerEvent>);

impl TaskDelegate for Forward {
    fn task_created(&mut self, task: &Arc<Task>) {
        let _ = self.0.send(SchedulerEvent::Task(task.clone()));
    }
}

struct Ctx {
    tm: TaskManager,
    scheduler: SchedulerHandle,
    num_nodes: usize,
    next_bid: u64,
    throttle: Option<Duration>,
    last_submission: Instant,
}

impl Ctx {
    fn new(num_nodes: usize, throttle: Option<Duration>) -> Self {
        let cdag =
            CommandGraphGenerator::new(num_nodes, NodeId(0), ignore_policies()).expect("cdag");
        let system = SystemInfo::with_devices(1, true).expect("system");
        let idag = InstructionGraphGenerator::new(
            system,
            NodeId(0),
            num_nodes,
            Policies::ignore_all(),
            None,
        );
        let scheduler =
            SchedulerHandle::start(cdag, idag, Lookahead::Auto, Box::new(DropBatches), None)
                .expect("scheduler");
        let tm = task_manager(num_nodes, Some(Box::new(Forward(scheduler.sender()))));
        Ctx {
            tm,
            scheduler,
            num_nodes,
            next_bid: 0,
            throttle,
            last_submission: Instant::now(),
        }
    }

    /// The shutdown epoch, then wait until the scheduler has processed it.
    fn finish(mut self) {
        self.tm
            .epoch(EpochAction::Shutdown, None)
            .expect("shutdown");
        black_box(self.scheduler.join());
    }
}

impl TopologyContext for Ctx {
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
        self.scheduler.send(SchedulerEvent::BufferCreated {
            bid,
            range: r,
            elem_size: 4,
            elem_align: 4,
            user_allocation,
        });
        bid
    }

    fn submit(&mut self, range: &[usize], cg: CommandGroup) {
        if let Some(throttle) = self.throttle {
            while self.last_submission.elapsed() < throttle {
                std::hint::spin_loop();
            }
            self.last_submission = Instant::now();
        }
        let spec = TaskSpec::host(range.len(), Range::from_slice(range));
        self.tm.submit(spec, cg).expect("submit");
    }
}

fn scheduler(c: &mut Criterion) {
    for nodes in [1usize, 4] {
        for (variant, throttle) in [
            ("immediate submission", None),
            (
                "throttled submission at 10 us per task",
                Some(Duration::from_micros(10)),
            ),
        ] {
            let mut group = c.benchmark_group(format!("scheduler thread/{nodes} nodes/{variant}"));
            for (name, build) in topologies::all::<Ctx>() {
                group.bench_function(name, |b| {
                    b.iter(|| {
                        let mut ctx = Ctx::new(nodes, throttle);
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
