//! Instruction graph benchmarks: Celerity's "generating large instruction graphs for N devices"
//! (1, 4, 16; with and without device-to-device copies) on the six topologies of
//! `test/dag_benchmarks.cc`, built and timed as `shared/reference/dag-benchmarks.md` describes:
//! 2 nodes, host tasks, node 0's graphs.
//!
//! Each timed run covers: creating the task manager (with the init epoch), node 0's command and
//! instruction graph generators on a system of N devices, creating the buffers (all three are
//! notified; host-initialised buffers get a user allocation), submitting every task (mappers,
//! task dependencies, horizons), building node 0's commands for every task, horizon and epoch and
//! compiling each into instructions, the shutdown epoch, and freeing everything. No recorders;
//! policies `ignore`.
//!
//! A second group, "instruction graph (device tasks)", submits device kernels instead, so the
//! instruction graph generator splits every task across the devices (no Celerity figure exists).

mod common;

use std::hint::black_box;
use std::sync::Arc;

use celerity::backend::system_info::SystemInfo;
use celerity::command::CommandGraphGenerator;
use celerity::grid::Range;
use celerity::instruction::{InstructionGraphGenerator, Policies};
use celerity::task::{CommandGroup, EpochAction, Task, TaskManager, TaskSpec};
use celerity::types::{AllocationId, BufferId, MemoryId, NodeId};
use common::contexts::{ignore_policies, task_manager};
use common::digest::sorted_dependency_lists;
use common::direct_run::DirectRun;
use common::topologies::{self, TopologyContext};
use criterion::{Criterion, criterion_group, criterion_main};
use parking_lot::Mutex;

const NUM_NODES: usize = 2;

/// Node 0's generators, fed by the task manager's delegate.
struct Pipeline {
    cggen: CommandGraphGenerator,
    iggen: InstructionGraphGenerator,
    /// `IDAG_SKIP=1`: build commands but compile nothing (the share of the upstream layers).
    skip_idag: bool,
    /// `IG_DIGEST=1` (with `IG_RUN`): a hash of every command and instruction (debug form, each
    /// dependency list sorted: see [`sorted_dependency_lists`]), printed at the end, to check that a
    /// performance change leaves the graphs identical.
    digest: Option<std::collections::hash_map::DefaultHasher>,
}

impl Pipeline {
    fn task_created(&mut self, task: &Arc<Task>) {
        for command in self.cggen.build_task(task).expect("build_task") {
            if let Some(h) = &mut self.digest {
                std::hash::Hash::hash(&sorted_dependency_lists(&format!("{command:?}")), h);
            }
            if !self.skip_idag {
                let batch = self.iggen.compile(&command).expect("compile");
                if let Some(h) = &mut self.digest {
                    let text = sorted_dependency_lists(&format!("{batch:?}"));
                    if std::env::var_os("IG_DIGEST").is_some_and(|v| v == "print") {
                        println!("{text}");
                    }
                    std::hash::Hash::hash(&text, h);
                }
                black_box(batch);
            }
        }
    }
}

struct Ctx {
    tm: TaskManager,
    pipeline: Arc<Mutex<Pipeline>>,
    device_tasks: bool,
    next_bid: u64,
    next_user_aid: u64,
}

impl Ctx {
    fn new(num_devices: usize, peer_copies: bool, device_tasks: bool) -> Self {
        let system = SystemInfo::with_devices(num_devices, peer_copies).expect("system");
        let cdag_policies = ignore_policies();
        let pipeline = Arc::new(Mutex::new(Pipeline {
            cggen: CommandGraphGenerator::new(NUM_NODES, NodeId(0), cdag_policies).expect("cggen"),
            skip_idag: std::env::var_os("IDAG_SKIP").is_some(),
            digest: std::env::var_os("IG_DIGEST").map(|_| Default::default()),
            iggen: InstructionGraphGenerator::new(
                system,
                NodeId(0),
                NUM_NODES,
                Policies::ignore_all(),
                None,
            ),
        }));
        let sink = Arc::clone(&pipeline);
        let delegate = move |task: &Arc<Task>| sink.lock().task_created(task);
        Ctx {
            tm: task_manager(NUM_NODES, Some(Box::new(delegate))),
            pipeline,
            device_tasks,
            next_bid: 0,
            next_user_aid: 1,
        }
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        self.tm
            .epoch(EpochAction::Shutdown, None)
            .expect("shutdown");
    }
}

impl TopologyContext for Ctx {
    fn num_nodes(&self) -> usize {
        NUM_NODES
    }

    fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        let bid = BufferId(self.next_bid);
        self.next_bid += 1;
        let r = Range::from_slice(range);
        self.tm
            .notify_buffer_created(bid, range.len(), r, host_initialized);
        let user = host_initialized.then(|| {
            self.next_user_aid += 1;
            AllocationId::new(MemoryId::USER, self.next_user_aid - 1)
        });
        let mut p = self.pipeline.lock();
        p.cggen.notify_buffer_created(bid, r, host_initialized);
        p.iggen.notify_buffer_created(bid, r, 4, 4, user);
        bid
    }

    fn submit(&mut self, range: &[usize], cg: CommandGroup) {
        let r = Range::from_slice(range);
        let spec = if self.device_tasks {
            TaskSpec::device(range.len(), r)
        } else {
            TaskSpec::host(range.len(), r)
        };
        self.tm.submit(spec, cg).expect("submit");
    }
}

fn run_group(c: &mut Criterion, title: &str, device_tasks: bool) {
    for (peer_copies, suffix) in [(true, ""), (false, " without d2d copy support")] {
        for devices in [1usize, 4, 16] {
            let mut group = c.benchmark_group(format!("{title}/{devices} devices{suffix}"));
            for (name, build) in topologies::all::<Ctx>() {
                group.bench_function(name, |b| {
                    b.iter(|| {
                        let mut ctx = Ctx::new(devices, peer_copies, device_tasks);
                        build(&mut ctx);
                        drop(black_box(ctx));
                    })
                });
            }
            group.finish();
        }
    }
}

/// `IG_RUN="<devices> <topology prefix> <iterations> [device]"` runs one topology that often without
/// criterion (for `perf stat` instruction counts, which a loaded machine does not distort). The
/// topology `empty` submits nothing: the fixed part of a run (context, epochs, freeing).
fn direct_run() -> bool {
    let empty: topologies::Topology<Ctx> = ("empty", |_| {});
    let Some(run) = DirectRun::<Ctx>::from_env("IG_RUN", &[empty]) else {
        return false;
    };
    let (devices, build, iterations) = (run.count, run.topology.1, run.iterations);
    let device_tasks = run.flag.as_deref() == Some("device");
    for _ in 0..iterations {
        let mut ctx = Ctx::new(devices, true, device_tasks);
        build(&mut ctx);
        let pipeline = Arc::clone(&ctx.pipeline);
        drop(black_box(ctx));
        if let Some(h) = pipeline.lock().digest.take() {
            println!("digest {:016x}", std::hash::Hasher::finish(&h));
        }
    }
    true
}

fn instruction_graph(c: &mut Criterion) {
    if direct_run() {
        std::process::exit(0);
    }
    run_group(c, "instruction graph", false);
    run_group(c, "instruction graph (device tasks)", true);
}

criterion_group!(benches, instruction_graph);
criterion_main!(benches);
