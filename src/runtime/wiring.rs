//! How the runtime wires its threads together: the state the executor thread shares with the
//! application thread (its delegate), the sink that hands the scheduler's batches to the
//! executor, the task manager's delegate that forwards tasks to the scheduler, and the start of
//! the executor and scheduler threads over this node's generators.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::config::Config;
use super::{clock_sync, devices};
use crate::backend::system_info::SystemInfo;
use crate::comm::Communicator;
use crate::command::{CommandGraphGenerator, CommandPolicies};
use crate::debug::trace::TraceLog;
use crate::error::{Error, Result};
use crate::executor::{ExecutorConfig, ExecutorDelegate, ExecutorHandle, ExecutorMessage};
use crate::instruction::{Batch, InstructionGraphGenerator, InstructionRecorder, Policies};
use crate::policy::ErrorPolicy;
use crate::scheduler::{
    SchedulerEvent, SchedulerHandle, SchedulerOptions, SchedulerSink, SchedulerThreads,
};
use crate::task::{EpochTracker, Task, TaskDelegate};
use crate::types::{BufferId, IdMap, NodeId, TaskId};

/// State shared with the executor thread (its delegate) and the scheduler's sink.
pub(super) struct Shared {
    pub(super) errors: Mutex<AsyncErrors>,
    pub(super) epochs: Mutex<EpochTracker>,
    pub(super) scheduler: Mutex<Option<crossbeam_channel::Sender<SchedulerEvent>>>,
    pub(super) stall_reports: Mutex<Vec<String>>,
    pub(super) trace: Mutex<Option<TraceLog>>,
    /// Buffer debug names, for the executor's messages.
    pub(super) buffer_names: Mutex<IdMap<BufferId, String>>,
}

impl ExecutorDelegate for Shared {
    fn horizon_reached(&self, task: TaskId) {
        if let Some(epoch) = self.epochs.lock().horizon_reached(task) {
            self.notify_epoch(epoch);
        }
    }

    fn epoch_reached(&self, task: TaskId) {
        let epoch = self.epochs.lock().epoch_reached(task);
        self.notify_epoch(epoch);
    }

    fn async_error(&self, error: Error) {
        tracing::error!("{error}");
        self.push_error(error);
    }

    fn record_error(&self, error: Error) {
        tracing::debug!("{error}");
        self.push_error(error);
    }

    fn buffer_name(&self, bid: BufferId) -> Option<String> {
        self.buffer_names.lock().get(&bid).cloned()
    }

    fn stall_detected(&self, report: &str) {
        self.stall_reports.lock().push(report.to_owned());
    }

    fn trace_finished(&self, trace: TraceLog) {
        *self.trace.lock() = Some(trace);
    }
}

impl Shared {
    fn push_error(&self, error: Error) {
        // Read before the push: the executor reports an epoch reached before it fulfils the
        // epoch's promise, so an error stamped with that epoch (or a later one) was recorded
        // after the wait on it could have returned.
        let reached = self.epochs.lock().latest_epoch_reached();
        self.errors.lock().push(reached, error);
    }

    pub(super) fn notify_epoch(&self, epoch: TaskId) {
        if let Some(scheduler) = self.scheduler.lock().as_ref() {
            let _ = scheduler.send(SchedulerEvent::EpochReached(epoch));
        }
    }
}

/// The errors the executor and scheduler threads reported and no call has returned yet, each
/// stamped with the newest epoch reached when it was recorded. A wait whose epoch completed
/// returns only what was recorded before that epoch was reached: what came later (a peer that
/// left right after a barrier both passed) belongs to the next call.
#[derive(Default)]
pub(super) struct AsyncErrors {
    entries: Vec<(TaskId, Error)>,
}

impl AsyncErrors {
    fn push(&mut self, reached: TaskId, error: Error) {
        self.entries.push((reached, error));
    }

    pub(super) fn first(&self) -> Option<&Error> {
        self.entries.first().map(|(_, error)| error)
    }

    pub(super) fn clear(&mut self) {
        self.entries.clear();
    }

    /// Takes the errors recorded before `completed_epoch` was reached, in order; every error
    /// when there is no completed epoch.
    pub(super) fn take_recorded_before(&mut self, completed_epoch: Option<TaskId>) -> Vec<Error> {
        let (taken, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|(reached, _)| completed_epoch.is_none_or(|epoch| *reached < epoch));
        self.entries = later;
        taken.into_iter().map(|(_, error)| error).collect()
    }
}

/// Forwards the scheduler's batches to the executor and its errors to the runtime. Batches are
/// held back and handed over together at the scheduler's flush, or once
/// [`MAX_HELD_INSTRUCTIONS`] are held, so that the executor is woken once for several.
struct ExecutorSink {
    executor: crossbeam_channel::Sender<ExecutorMessage>,
    executor_thread: std::thread::Thread,
    shared: Arc<Shared>,
    /// Instructions and pilots not yet handed over, in order.
    held: Batch,
}

/// Most instructions the sink holds back before it hands them over anyway: bounds the delay a
/// long burst of submissions adds before the first of them starts.
const MAX_HELD_INSTRUCTIONS: usize = 64;

impl SchedulerSink for ExecutorSink {
    fn batch(&mut self, (instructions, pilots): Batch) {
        if self.held.0.is_empty() && self.held.1.is_empty() {
            self.held = (instructions, pilots);
        } else {
            self.held.0.extend(instructions);
            self.held.1.extend(pilots);
        }
        if self.held.0.len() >= MAX_HELD_INSTRUCTIONS {
            self.flush();
        }
    }

    fn error(&mut self, error: Error) {
        self.shared.async_error(error);
    }

    fn abort(&mut self) {
        self.flush();
        let _ = self.executor.send(ExecutorMessage::Abort);
        self.executor_thread.unpark();
    }

    fn flush(&mut self) {
        if self.held.0.is_empty() && self.held.1.is_empty() {
            return;
        }
        let (instructions, pilots) = std::mem::take(&mut self.held);
        let _ = self
            .executor
            .send(ExecutorMessage::Submit(instructions, pilots));
        self.executor_thread.unpark();
    }
}

/// Forwards every created task to the scheduler thread.
pub(super) struct ForwardTasks {
    pub(super) scheduler: crossbeam_channel::Sender<SchedulerEvent>,
    pub(super) spmd: Option<SpmdWindows>,
}

/// Collects the digests of created tasks and hands each comparison window (closed by a horizon
/// or epoch) to the executor, which compares it with the other nodes' (`check_spmd`).
pub(super) struct SpmdWindows {
    pub(super) executor: crossbeam_channel::Sender<ExecutorMessage>,
    pub(super) executor_thread: std::thread::Thread,
    pub(super) window: Vec<crate::task::spmd::TaskDigest>,
    pub(super) next_window: u64,
}

impl TaskDelegate for ForwardTasks {
    fn task_created(&mut self, task: &Arc<Task>) {
        if let Some(spmd) = &mut self.spmd {
            spmd.window.push(crate::task::spmd::digest(task));
            if crate::task::spmd::is_sync_point(task) {
                let window = std::mem::take(&mut spmd.window);
                let _ = spmd
                    .executor
                    .send(ExecutorMessage::SpmdWindow(spmd.next_window, window));
                spmd.executor_thread.unpark();
                spmd.next_window += 1;
            }
        }
        let _ = self.scheduler.send(SchedulerEvent::Task(task.clone()));
    }
}

/// Starts the live or dry-run executor thread; with `print_graphs`, or a trace of several
/// nodes, also clones the communicator that gathers graphs and traces at shutdown (collective:
/// every node has the same settings). Returns the trace's time origin: `started`, or with a
/// trace of several nodes the moment all of them left a barrier. With `poll_when_idle` the
/// executor polls briefly before it parks, and `queue_pollers` of the backend's queue threads
/// at once.
pub(super) fn start_executor(
    (execution, poll_when_idle, queue_pollers): (devices::Execution, bool, usize),
    config: &Config,
    shared: Arc<Shared>,
    (started, num_nodes): (Instant, usize),
) -> Result<StartedExecutor> {
    let tracing_on = config.trace_file.is_some();
    let mut observability_comm = None;
    let mut clock_at_init = None;
    let mut started = started;
    let mut host_pinner = None;
    let executor = match execution {
        devices::Execution::Live {
            backend,
            mut communicator,
        } => {
            host_pinner = backend.host_pinner();
            crate::backend::thread_queue::set_idle_pollers(queue_pollers);
            let gather_traces = tracing_on && num_nodes > 1;
            if config.print_graphs || gather_traces {
                // Collective: every node runs with the same `print_graphs` and `trace_file`.
                let mut comm = communicator.collective_clone()?;
                if gather_traces {
                    // Every node's trace counts from about the moment all nodes left this
                    // barrier; node 0 then measures how far each clock is off its own.
                    comm.collective_barrier()?;
                    started = Instant::now();
                    clock_at_init = clock_sync::measure(comm.as_mut(), started)?;
                }
                observability_comm = Some(comm);
            }
            let executor_config = ExecutorConfig {
                stall_timeout: config.stall_timeout,
                trace_epoch: tracing_on.then_some(started),
                accessor_boundary_check: config.accessor_boundary_check,
                poll_when_idle,
            };
            ExecutorHandle::start(backend, communicator, shared, executor_config)?
        }
        devices::Execution::DryRun => ExecutorHandle::start_dry_run(shared)?,
    };
    Ok(StartedExecutor {
        executor,
        observability_comm,
        started,
        clock_at_init,
        host_pinner,
    })
}

/// What `start_executor` hands back.
pub(super) struct StartedExecutor {
    pub(super) executor: ExecutorHandle,
    pub(super) observability_comm: Option<Box<dyn Communicator>>,
    /// The trace's time origin.
    pub(super) started: Instant,
    /// Node 0 of a traced multi-node run: the clocks at init.
    pub(super) clock_at_init: Option<Vec<clock_sync::ClockSample>>,
    /// The backend's pinner of host copies, if it has one.
    pub(super) host_pinner: Option<Arc<dyn crate::backend::host_copy::HostPinner>>,
}

/// Builds this node's command and instruction graph generators and starts the scheduler
/// thread, which hands its batches to `executor`.
pub(super) fn start_scheduler(
    config: &Config,
    system: &SystemInfo,
    (node, num_nodes): (NodeId, usize),
    (executor, scheduler_threads, poll_before_parking): (&ExecutorHandle, SchedulerThreads, bool),
    shared: Arc<Shared>,
    trace_epoch: Option<Instant>,
) -> Result<SchedulerHandle> {
    let mut cdag = CommandGraphGenerator::new(
        num_nodes,
        node,
        // Uninitialised reads are reported once, by the task manager (it sees them first and the
        // command and instruction levels would only repeat them).
        CommandPolicies {
            uninitialized_read: ErrorPolicy::Ignore,
            overlapping_write: config.overlapping_write,
        },
    )?;
    if config.print_graphs {
        cdag.enable_recording();
    }
    let policies = Policies {
        uninitialized_read: ErrorPolicy::Ignore,
        overlapping_write: config.overlapping_write,
        ..Policies::default()
    };
    let idag = InstructionGraphGenerator::new(
        system.clone(),
        node,
        num_nodes,
        policies,
        config.print_graphs.then(InstructionRecorder::new),
    );
    let sink = ExecutorSink {
        executor: executor.sender(),
        executor_thread: executor.thread_handle(),
        shared,
        held: Batch::default(),
    };
    let scheduler_trace = trace_epoch.map(|started| TraceLog::new(node, started));
    tracing::debug!(
        "scheduler: {}",
        if scheduler_threads == SchedulerThreads::Two {
            "two threads (command graph; instruction graph)"
        } else {
            "one thread"
        }
    );
    SchedulerHandle::start(
        cdag,
        idag,
        SchedulerOptions {
            lookahead: config.lookahead,
            threads: scheduler_threads,
            poll_before_parking,
        },
        Box::new(sink),
        scheduler_trace,
    )
}
