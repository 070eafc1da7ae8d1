//! The runtime: owns the task manager, the scheduler thread and the executor thread, and is used
//! from the application thread only (the C ABI checks the thread).
//!
//! Protocol (C++ Celerity: `runtime.cc`, its data flow and shutdown):
//! * Every submission builds its task on the application thread; the task manager hands each
//!   created task (with horizons and epochs) to the scheduler thread, which builds commands and
//!   instructions and passes them to the executor thread.
//! * Memory the program lends or gives (a host-initialised buffer's contents, a fence's
//!   destination) is registered with the executor as a user allocation before the task that
//!   refers to it is created, so the executor knows it before any instruction uses it.
//! * The executor reports horizons and epochs; with the one-horizon lag they become the
//!   effective epoch, which prunes the task graph (on the next submission) and the instruction
//!   graph (on the scheduler thread).
//! * Asynchronous failures are collected and returned by the next synchronising call (`wait`,
//!   `barrier`, a fence's wait, shutdown) with the failing task's name and id; afterwards
//!   submissions are refused.
//! * Shutdown submits the shutdown epoch, waits for it, then joins the executor and the
//!   scheduler (in that order) and finalises MPI if the runtime initialised it.

mod clock_sync;
pub mod config;
mod devices;
mod observability;
mod wiring;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::backend::interface::Launcher;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::executor::{ExecutorHandle, ExecutorMessage};
use crate::grid::{Range, Subrange};
use crate::scheduler::{SchedulerEvent, SchedulerHandle, SchedulerOutput};
use crate::task::{
    CommandGroup, EpochAction, EpochTracker, TaskManager, TaskManagerConfig, TaskPayload, TaskSpec,
};
use crate::types::{
    AllocationId, BufferId, CollectiveGroupId, HostObjectId, IdMap, MemoryId, ReductionId, TaskId,
};
use crate::user_objects::{HostObjectInstance, Promise, Reducer, UserMemory};
use config::{Config, Lookahead};
pub use devices::BackendKind;
use wiring::{
    AsyncErrors, ForwardTasks, Shared, SpmdWindows, StartedExecutor, start_executor,
    start_scheduler,
};

/// What `celerity_runtime_get_info` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// This process's node id.
    pub node: u32,
    /// Number of nodes (processes, or simulated nodes in a dry run).
    pub num_nodes: u32,
    /// Local devices in use.
    pub num_devices: u32,
    /// Which backend runs kernels.
    pub backend: BackendKind,
    /// Whether this is a dry run.
    pub dry_run: bool,
}

/// A buffer as the runtime knows it.
#[derive(Debug, Clone)]
pub struct BufferInfo {
    /// Dimensionality.
    pub dims: usize,
    /// Extent.
    pub range: Range,
    /// Bytes per element.
    pub elem_size: usize,
    /// Debug name.
    pub name: Option<String>,
}

/// The runtime of one process.
pub struct Runtime {
    config: Config,
    info: RuntimeInfo,
    task_manager: TaskManager,
    scheduler: SchedulerHandle,
    executor: ExecutorHandle,
    shared: Arc<Shared>,
    buffers: IdMap<BufferId, BufferInfo>,
    next_buffer: u64,
    next_host_object: u64,
    next_collective_group: u64,
    next_reduction: u64,
    /// Operators of `register_reduction` not yet named by a submission.
    registered_reducers: IdMap<ReductionId, Arc<dyn Reducer>>,
    next_user_allocation: u64,
    pruned_up_to: TaskId,
    live_host_objects: Vec<HostObjectId>,
    failed: Option<Error>,
    shut_down: bool,
    /// Page-locks the runtime's copies of host-initialised buffers (CUDA backends).
    host_pinner: Option<Arc<dyn crate::backend::host_copy::HostPinner>>,
    /// The trace's time origin: when the runtime started, or with several nodes the moment all
    /// of them left the init barrier (so that their timelines line up).
    started: Instant,
    /// A clone of the communicator for gathering graphs (`print_graphs=on`) and, with several
    /// nodes, traces (`trace_file`) at shutdown.
    observability_comm: Option<Box<dyn Communicator>>,
    /// On node 0 of a traced multi-node run: every node's clock against node 0's at init (the
    /// merged trace interpolates between this and a second measurement at shutdown).
    clock_at_init: Option<Vec<clock_sync::ClockSample>>,
    /// Keeps MPI initialised (and finalises it last) when the runtime initialised it.
    _mpi: Option<devices::MpiGuard>,
    /// Armed by a shutdown that may block on a failed or departed peer; declared after `_mpi` so
    /// that it also guards MPI finalisation.
    shutdown_watchdog: Option<ShutdownWatchdog>,
}

/// How long a shutdown after a failure may take before the job is aborted.
pub const FAILED_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Aborts the MPI job if it is not dropped within its grace period, so that a shutdown after a
/// failure never blocks forever (on receives from a dead peer, or in `MPI_Finalize` while a
/// peer still runs).
struct ShutdownWatchdog {
    _disarm: crossbeam_channel::Sender<()>,
}

impl ShutdownWatchdog {
    fn arm(node: u32, reason: String) -> Self {
        let (disarm, disarmed) = crossbeam_channel::bounded::<()>(0);
        let _ = std::thread::Builder::new()
            .name("celerity-shutdown-watchdog".into())
            .spawn(move || {
                if disarmed.recv_timeout(FAILED_SHUTDOWN_GRACE)
                    == Err(crossbeam_channel::RecvTimeoutError::Timeout)
                {
                    eprintln!(
                        "celerity: rank {node}: {reason}; the shutdown did not finish within {}s (a peer failed or is gone), aborting the MPI job",
                        FAILED_SHUTDOWN_GRACE.as_secs()
                    );
                    #[cfg(feature = "mpi")]
                    crate::comm::mpi::abort_job(1);
                    #[cfg(not(feature = "mpi"))]
                    std::process::exit(1);
                }
            });
        Self { _disarm: disarm }
    }
}

impl Runtime {
    /// Starts a runtime with `config`: selects devices and communicator, starts the scheduler
    /// and executor threads and creates the init epoch.
    pub fn start(config: Config) -> Result<Self> {
        Self::start_with(config, None)
    }

    /// Like [`Self::start`], on `communicator` instead of the selected one (e.g. one node of an
    /// in-process fabric, to run several nodes in one process).
    pub fn start_with_communicator(
        config: Config,
        communicator: Box<dyn Communicator>,
    ) -> Result<Self> {
        Self::start_with(config, Some(communicator))
    }

    fn start_with(config: Config, communicator: Option<Box<dyn Communicator>>) -> Result<Self> {
        let started = Instant::now();
        let selection = devices::select(&config, communicator)?;
        crate::debug::logging::set_node(selection.node);
        tracing::info!(
            "celerity {} (Rust runtime), node {} of {}; {}",
            env!("CARGO_PKG_VERSION"),
            selection.node.0,
            selection.num_nodes,
            selection.description
        );
        if let Some(warning) = &selection.confined_cores {
            tracing::warn!("{warning}");
        }
        let info = RuntimeInfo {
            node: selection.node.0 as u32,
            num_nodes: selection.num_nodes as u32,
            num_devices: selection.system.devices.len() as u32,
            backend: selection.backend_kind,
            dry_run: config.dry_run_nodes.is_some(),
        };
        let shared = Arc::new(Shared {
            errors: Mutex::new(AsyncErrors::default()),
            epochs: Mutex::new(EpochTracker::new()),
            scheduler: Mutex::new(None),
            stall_reports: Mutex::new(Vec::new()),
            trace: Mutex::new(None),
            buffer_names: Mutex::new(IdMap::default()),
        });
        let tracing_on = config.trace_file.is_some();
        let StartedExecutor {
            executor,
            observability_comm,
            started,
            clock_at_init,
            host_pinner,
        } = start_executor(
            (
                selection.execution,
                selection.poll_when_idle,
                selection.queue_pollers,
            ),
            &config,
            shared.clone(),
            (started, selection.num_nodes),
        )?;
        let scheduler = start_scheduler(
            &config,
            &selection.system,
            (selection.node, selection.num_nodes),
            (
                &executor,
                selection.scheduler_threads,
                selection.poll_when_idle,
            ),
            shared.clone(),
            tracing_on.then_some(started),
        )?;
        *shared.scheduler.lock() = Some(scheduler.sender());
        let task_manager = TaskManager::new(
            TaskManagerConfig {
                num_collective_nodes: selection.num_nodes,
                horizon_step: config.horizon_step,
                horizon_max_parallelism: config.horizon_max_parallelism,
                uninitialized_read: config.uninitialized_read,
                record: config.print_graphs,
            },
            Some(Box::new(ForwardTasks {
                scheduler: scheduler.sender(),
                spmd: (config.check_spmd && selection.num_nodes > 1 && !info.dry_run).then(|| {
                    SpmdWindows {
                        executor: executor.sender(),
                        executor_thread: executor.thread_handle(),
                        window: Vec::new(),
                        next_window: 0,
                    }
                }),
            })),
        );
        Ok(Self {
            config,
            info,
            task_manager,
            scheduler,
            executor,
            shared,
            host_pinner,
            buffers: IdMap::default(),
            next_buffer: 0,
            next_host_object: 0,
            // The first user group id is the default group's, so created groups never share it.
            next_collective_group: CollectiveGroupId::FIRST_USER.0 + 1,
            next_reduction: 1,
            registered_reducers: IdMap::default(),
            next_user_allocation: 1,
            pruned_up_to: TaskId::INIT_EPOCH,
            live_host_objects: Vec::new(),
            failed: None,
            shut_down: false,
            started,
            observability_comm,
            clock_at_init,
            _mpi: selection.mpi,
            shutdown_watchdog: None,
        })
    }

    /// Node, node count, devices and backend.
    pub fn info(&self) -> RuntimeInfo {
        self.info
    }

    /// The configuration in effect.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Refuses work after a failure or after shutdown.
    fn check_usable(&self) -> Result<()> {
        if self.shut_down {
            return Err(Error::invalid_state("the runtime has been shut down"));
        }
        if let Some(error) = &self.failed {
            return Err(Error::invalid_state(format!(
                "the runtime stopped accepting work after an earlier failure: {}",
                error.message()
            )));
        }
        Ok(())
    }

    /// Takes the asynchronous errors reported so far; the first one makes the runtime failed.
    /// Once a call has returned the job's failure, later errors are its follow-ons (another
    /// node's report of the same failed job arriving after this node's own, say): they were
    /// logged where they happened and are not returned again.
    ///
    /// After a wait on an epoch that completed (`completed_epoch`), errors recorded once it was
    /// reached are left for the next call: the epoch, and everything before it, succeeded here.
    fn take_async_error(&mut self, completed_epoch: Option<TaskId>) -> Result<()> {
        let mut errors = self.shared.errors.lock();
        if self.failed.is_some() {
            errors.clear();
            return Ok(());
        }
        let mut taken = errors.take_recorded_before(completed_epoch).into_iter();
        drop(errors);
        let Some(first) = taken.next() else {
            return Ok(());
        };
        let more = taken.len();
        let error = if more > 0 {
            first.context(format!("{more} more error(s) were logged; the first"))
        } else {
            first
        };
        self.failed = Some(error.clone());
        Err(error)
    }

    fn prune(&mut self) {
        let epoch = self.shared.epochs.lock().latest_epoch_reached();
        if epoch > self.pruned_up_to {
            self.task_manager.prune_before_epoch(epoch);
            self.pruned_up_to = epoch;
        }
    }

    fn user_allocation(&mut self) -> AllocationId {
        let id = AllocationId::new(MemoryId::USER, self.next_user_allocation);
        self.next_user_allocation += 1;
        id
    }

    /// Creates a buffer of `dims` dimensions; `host_init` (exactly range × elem_size bytes) is
    /// copied before this returns.
    pub fn create_buffer(
        &mut self,
        dims: usize,
        range: Range,
        elem_size: usize,
        elem_align: usize,
        host_init: Option<&[u8]>,
    ) -> Result<BufferId> {
        self.check_usable()?;
        let bid = BufferId(self.next_buffer);
        let user_allocation = match host_init {
            Some(bytes) => {
                let copy = crate::backend::host_copy::HostCopy::new(
                    bytes,
                    "host_init",
                    self.host_pinner.as_ref(),
                )?;
                let allocation = self.user_allocation();
                self.executor.send(ExecutorMessage::TrackUserAllocation(
                    allocation,
                    UserMemory::Owned(Box::new(copy)),
                ));
                Some(allocation)
            }
            None => None,
        };
        self.next_buffer += 1;
        self.task_manager
            .notify_buffer_created(bid, dims, range, host_init.is_some());
        self.scheduler.send(SchedulerEvent::BufferCreated {
            bid,
            range,
            elem_size,
            elem_align,
            user_allocation,
        });
        self.buffers.insert(
            bid,
            BufferInfo {
                dims,
                range,
                elem_size,
                name: None,
            },
        );
        Ok(bid)
    }

    /// The buffer's metadata.
    pub fn buffer(&self, bid: BufferId) -> Result<&BufferInfo> {
        self.buffers
            .get(&bid)
            .ok_or_else(|| Error::invalid_state(format!("buffer {bid} does not exist")))
    }

    /// Sets a buffer's debug name.
    pub fn set_buffer_name(&mut self, bid: BufferId, name: &str) -> Result<()> {
        self.check_usable()?;
        let info = self
            .buffers
            .get_mut(&bid)
            .ok_or_else(|| Error::invalid_state(format!("buffer {bid} does not exist")))?;
        info.name = Some(name.to_owned());
        self.shared.buffer_names.lock().insert(bid, name.to_owned());
        self.task_manager.notify_buffer_name_changed(bid, name);
        self.scheduler
            .send(SchedulerEvent::BufferNameChanged(bid, name.to_owned()));
        Ok(())
    }

    /// Releases a buffer: it is freed after all work submitted on it.
    pub fn release_buffer(&mut self, bid: BufferId) -> Result<()> {
        self.buffers
            .remove(&bid)
            .ok_or_else(|| Error::invalid_state(format!("buffer {bid} does not exist")))?;
        if self.shut_down {
            return Ok(());
        }
        self.task_manager.notify_buffer_destroyed(bid);
        self.scheduler.send(SchedulerEvent::BufferDestroyed(bid));
        Ok(())
    }

    /// Registers a host object; `destroy` (if any) runs after its last side effect.
    pub fn create_host_object(
        &mut self,
        instance: usize,
        destroy: Option<Box<dyn FnOnce() + Send>>,
    ) -> Result<HostObjectId> {
        self.check_usable()?;
        let id = HostObjectId(self.next_host_object);
        self.next_host_object += 1;
        self.executor.send(ExecutorMessage::TrackHostObject(
            id,
            HostObjectInstance { instance, destroy },
        ));
        self.task_manager.notify_host_object_created(id);
        self.scheduler
            .send(SchedulerEvent::HostObjectCreated(id, true));
        self.live_host_objects.push(id);
        Ok(id)
    }

    /// Releases a host object: its instance is destroyed after its last side effect.
    pub fn release_host_object(&mut self, id: HostObjectId) -> Result<()> {
        self.live_host_objects.retain(|h| *h != id);
        if self.shut_down {
            return Ok(());
        }
        self.task_manager.notify_host_object_destroyed(id);
        self.scheduler.send(SchedulerEvent::HostObjectDestroyed(id));
        Ok(())
    }

    /// A new collective group id (groups are cloned lazily by their first task).
    pub fn create_collective_group(&mut self) -> Result<CollectiveGroupId> {
        self.check_usable()?;
        let id = CollectiveGroupId(self.next_collective_group);
        self.next_collective_group += 1;
        Ok(id)
    }

    /// The default collective group (used by collective host tasks without a group). It is
    /// distinct from every group `create_collective_group` returns.
    pub fn default_collective_group(&self) -> CollectiveGroupId {
        CollectiveGroupId::FIRST_USER
    }

    /// Registers a reduction operator and returns its id for `CommandGroup::reduction`. The
    /// operator belongs to the next submission that names the id: it reaches the executor once
    /// the task manager accepted that task, and is dropped if the submission is refused.
    pub fn register_reduction(&mut self, reducer: Arc<dyn Reducer>) -> Result<ReductionId> {
        self.check_usable()?;
        let id = self.reserve_reduction_id();
        self.registered_reducers.insert(id, reducer);
        Ok(id)
    }

    /// Submits a kernel or host task whose chunks run `launcher`.
    pub fn submit(
        &mut self,
        spec: TaskSpec,
        cg: CommandGroup,
        launcher: Launcher,
    ) -> Result<TaskId> {
        let reducers = if self.registered_reducers.is_empty() {
            Vec::new()
        } else {
            cg.reductions
                .iter()
                .filter_map(|r| Some((r.rid, self.registered_reducers.remove(&r.rid)?)))
                .collect()
        };
        self.submit_with_reducers(spec, cg, launcher, reducers)
    }

    /// Reserves the id of a reduction whose operator is handed over with its submission
    /// ([`submit_with_reducers`](Self::submit_with_reducers)).
    pub fn reserve_reduction_id(&mut self) -> ReductionId {
        let id = ReductionId(self.next_reduction);
        self.next_reduction += 1;
        id
    }

    /// [`submit`](Self::submit) for a command group whose reductions use the reserved ids of
    /// `reducers`: the operators are registered with the executor only once the task manager
    /// accepted the task, so a refused submission leaves nothing behind.
    pub fn submit_with_reducers(
        &mut self,
        spec: TaskSpec,
        mut cg: CommandGroup,
        launcher: Launcher,
        reducers: Vec<(ReductionId, Arc<dyn Reducer>)>,
    ) -> Result<TaskId> {
        self.check_usable()?;
        self.prune();
        cg.payload = Some(TaskPayload::Launcher(launcher));
        let executor = &self.executor;
        self.task_manager.submit_then(spec, cg, |_| {
            for (id, reducer) in reducers {
                executor.send(ExecutorMessage::TrackReducer(id, reducer));
            }
        })
    }

    /// Fences `region` (None: all) of buffer `bid`: once the returned promise is fulfilled,
    /// `dest` holds the region as dense row-major elements.
    ///
    /// # Safety
    /// `dest` must be valid for writes of the region's area × elem_size bytes until the promise
    /// is fulfilled.
    pub unsafe fn fence_buffer(
        &mut self,
        bid: BufferId,
        region: Option<Subrange>,
        dest: *mut u8,
    ) -> Result<Arc<Promise>> {
        self.check_usable()?;
        self.buffer(bid)?;
        let promise = Promise::new();
        let user_allocation = self.user_allocation();
        self.executor.send(ExecutorMessage::TrackUserAllocation(
            user_allocation,
            UserMemory::Borrowed(dest as usize),
        ));
        let payload = TaskPayload::BufferFence {
            user_allocation,
            promise: Some(promise.clone()),
        };
        self.task_manager.fence_buffer(bid, region, Some(payload))?;
        Ok(promise)
    }

    /// Fences a host object: the promise is fulfilled after its last side effect so far.
    pub fn fence_host_object(&mut self, id: HostObjectId) -> Result<Arc<Promise>> {
        self.check_usable()?;
        let promise = Promise::new();
        self.task_manager
            .fence_host_object(id, Some(TaskPayload::Promise(promise.clone())))?;
        Ok(promise)
    }

    fn epoch(&mut self, action: EpochAction) -> Result<()> {
        let (epoch, waited) = self.wait_for_epoch(action)?;
        self.epoch_outcome(epoch, waited)
    }

    /// Submits an epoch and waits for the executor to reach it: its id and the promise's
    /// outcome.
    fn wait_for_epoch(&mut self, action: EpochAction) -> Result<(TaskId, Result<()>)> {
        let promise = Promise::new();
        let epoch = self
            .task_manager
            .epoch(action, Some(TaskPayload::Promise(promise.clone())))?;
        let waited = promise.wait(Duration::from_secs(10), |waited| {
            tracing::warn!(
                "{} is still waiting for the other threads and nodes after {}s",
                action.description(),
                waited.as_secs()
            );
        });
        Ok((epoch, waited))
    }

    /// What a wait on `epoch` returns once the executor reached it.
    fn epoch_outcome(&mut self, epoch: TaskId, waited: Result<()>) -> Result<()> {
        self.prune();
        // The asynchronous error first: it makes the runtime failed (and names the task).
        self.take_async_error(waited.is_ok().then_some(epoch))?;
        waited
    }

    /// Waits until all work submitted on this node has finished.
    pub fn wait(&mut self) -> Result<()> {
        self.check_usable()?;
        self.epoch(EpochAction::None)
    }

    /// `wait` plus all nodes reached this point.
    pub fn barrier(&mut self) -> Result<()> {
        self.check_usable()?;
        self.epoch(EpochAction::Barrier)
    }

    /// Hands all queued commands to the executor now.
    pub fn flush(&mut self) -> Result<()> {
        self.check_usable()?;
        self.scheduler.send(SchedulerEvent::Flush);
        Ok(())
    }

    /// Changes the scheduler's lookahead.
    pub fn set_lookahead(&mut self, lookahead: Lookahead) -> Result<()> {
        self.check_usable()?;
        self.scheduler.send(SchedulerEvent::SetLookahead(lookahead));
        Ok(())
    }

    /// Errors reported asynchronously so far (for a fence's wait).
    pub fn check_async_errors(&mut self) -> Result<()> {
        self.take_async_error(None)
    }

    /// The task graph (for printing).
    pub fn task_manager(&self) -> &TaskManager {
        &self.task_manager
    }

    /// Shuts down: the shutdown epoch, then the threads. Idempotent. Returns the first
    /// asynchronous failure that no earlier call reported, or a problem found at shutdown.
    pub fn shutdown(&mut self) -> Result<()> {
        if self.shut_down {
            return Ok(());
        }
        self.arm_watchdog_after_failure();
        // Buffers and host objects the program did not release are released now, so the
        // instruction graph frees every allocation before the shutdown epoch.
        let buffers: Vec<BufferId> = self.buffers.keys().copied().collect();
        for bid in buffers {
            self.release_buffer(bid)?;
        }
        let host_objects: Vec<HostObjectId> = std::mem::take(&mut self.live_host_objects);
        for id in host_objects {
            self.release_host_object(id)?;
        }
        self.shut_down = true;
        let epoch = self
            .task_manager
            .epoch(EpochAction::Shutdown, None)
            .map(|_| ());
        let executor_outcome = self.executor.join();
        let scheduler_output = self.scheduler.join();
        *self.shared.scheduler.lock() = None;
        let observability = self.write_observability(scheduler_output);
        epoch?;
        // An error that no earlier call reported (one that happened during shutdown, e.g. a
        // failed free after a device fault, included) is reported now; one already reported is
        // not reported again (the executor reports each task's failure once).
        self.take_async_error(None)?;
        executor_outcome.and(observability)
    }

    /// In a distributed MPI run with a failure known, arms the watchdog that aborts the job if
    /// this shutdown (or MPI finalisation) blocks on a failed or departed peer.
    fn arm_watchdog_after_failure(&mut self) {
        if self._mpi.is_none() || self.info.num_nodes < 2 || self.shutdown_watchdog.is_some() {
            return;
        }
        let first = self
            .failed
            .clone()
            .or_else(|| self.shared.errors.lock().first().cloned());
        if let Some(error) = first {
            self.shutdown_watchdog = Some(ShutdownWatchdog::arm(
                self.info.node,
                format!("shutting down after a failure ({error})"),
            ));
        }
    }

    /// The program is leaving without shutdown (its process exits) while this is a distributed
    /// run: the other nodes are told, so that their next wait, fence or shutdown fails naming
    /// this node instead of waiting for it.
    pub fn depart_without_shutdown(&mut self) {
        if self.info.num_nodes < 2 || self.shut_down {
            return;
        }
        let error = Error::new(
            crate::ErrorKind::Communication,
            "the process exited without calling celerity_runtime_shutdown",
        );
        self.executor.send(ExecutorMessage::Fail(error));
        if self._mpi.is_some() && self.shutdown_watchdog.is_none() {
            self.shutdown_watchdog = Some(ShutdownWatchdog::arm(
                self.info.node,
                "the process exited without calling celerity_runtime_shutdown".to_owned(),
            ));
        }
    }

    /// The stall reports of this runtime's executor so far (see `docs/stall-detector.md`).
    pub fn stall_reports(&self) -> Vec<String> {
        self.shared.stall_reports.lock().clone()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Err(error) = self.shutdown() {
            tracing::error!("shutdown: {error}");
        }
    }
}

#[cfg(test)]
mod tests;
