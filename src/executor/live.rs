//! The live executor: runs a node's instruction graph on a backend and a communicator
//! (C++ Celerity: `live_executor.cc`).
//!
//! Protocol: the scheduler thread hands over topologically sorted instruction batches with their
//! pilots ([`ExecutorMessage::Submit`]); the runtime registers user memory, host-object
//! instances and reducers *before* submitting instructions that refer to them (the channel keeps
//! the order). Pilots are sent as soon as a batch arrives. The executor thread loops:
//!
//! 1. advance the communicator and the receive arbiter, and poll the backend;
//! 2. retire instructions whose events completed (recording new allocations), which may make
//!    successors ready;
//! 3. take new messages;
//! 4. hand every assignable instruction (out-of-order engine) to its target, holding the
//!    backend's lane wake-ups until the pass is over (one wake-up per lane per pass).
//!
//! With nothing to do it parks; completions and submissions unpark it. Horizons and epochs are
//! reported to the [`ExecutorDelegate`] on this thread (epochs before their promise is fulfilled,
//! so pruning is visible when `wait` returns). A failing instruction is reported through
//! [`ExecutorDelegate::async_error`] with its task's name and id; the graph keeps draining so
//! that shutdown stays clean. The thread ends once the shutdown epoch has run and every
//! instruction has completed; it then checks that every allocation was freed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};
use smallvec::SmallVec;

mod reports;
mod start;

use super::bounds_check::{ArmedCheck, SpareRecords};
use super::control::{ControlMessage, SpmdChecker};
use super::engine::{Assignment, EngineInstruction, OutOfOrderEngine};
use super::interface::{ExecutorConfig, ExecutorDelegate, ExecutorMessage};
use super::receive_arbiter::ReceiveArbiter;
use crate::backend::SendPtr;
use crate::backend::event::{AsyncEvent, Completion};
use crate::backend::interface::{AccessorInfo, Backend, KernelInvocation, Launcher};
use crate::backend::thread_queue::PeerWaitAnnouncement;
use crate::comm::Communicator;
use crate::debug::trace::{EXECUTOR_BUSY_TRACK, SUBMISSION_TRACK, TraceLog};
use crate::error::{Error, Result};
use crate::grid::GridBox;
use crate::instruction::{
    BufferAccessAllocation, Instruction, InstructionGarbage, InstructionKind,
};
use crate::task::spmd::TaskDigest;
use crate::task::{EpochAction, Task};
use crate::types::{
    AllocationId, CollectiveGroupId, HostObjectId, IdMap, IdSet, InstructionId, MemoryId,
    ReductionId, TaskId,
};
use crate::user_objects::{HostObjectInstance, Reducer, UserMemory};

/// An instruction waiting for asynchronous work.
struct InFlight {
    id: InstructionId,
    events: SmallVec<[AsyncEvent; 1]>,
    /// Alloc instructions record their allocation once complete.
    allocation: Option<AllocationId>,
    /// A send or receive: it completes only when the communicator is polled.
    communication: bool,
}

pub(super) struct Executor {
    // Fields drop in declaration order: the bounds records (possibly the backend's pinned
    // memory) go back to the backend before it is dropped.
    /// The bounds records of running kernel and host-task chunks.
    bounds_checks: IdMap<InstructionId, ArmedCheck>,
    /// Record blocks of completed chunks, for the next chunks to arm.
    spare_records: SpareRecords,
    backend: Box<dyn Backend>,
    comm: Box<dyn Communicator>,
    delegate: Arc<dyn ExecutorDelegate>,
    receiver: Receiver<ExecutorMessage>,
    config: ExecutorConfig,
    engine: OutOfOrderEngine,
    arbiter: ReceiveArbiter,
    instructions: IdMap<InstructionId, Arc<Instruction>>,
    allocations: IdMap<AllocationId, usize>,
    user_memory: IdMap<AllocationId, UserMemory>,
    host_objects: IdMap<HostObjectId, HostObjectInstance>,
    reducers: IdMap<ReductionId, Arc<dyn Reducer>>,
    collective_comms: IdMap<CollectiveGroupId, Box<dyn Communicator>>,
    in_flight: Vec<InFlight>,
    shutdown_reached: bool,
    /// After a failure, the outstanding transfers were given up (once).
    transfers_abandoned: bool,
    aborted: bool,
    /// The first failure of the job, local or announced by a peer: from then on no fence or
    /// epoch reports success (fail-stop, API.md "Faults across ranks").
    failure: Option<Error>,
    /// Compares SPMD digests once the first window or peer digest arrives (`check_spmd`).
    spmd: Option<SpmdChecker>,
    disconnected: bool,
    last_progress: Instant,
    /// Sends and receives among `in_flight`.
    communication_in_flight: usize,
    /// Whether this executor told the queue threads it waits for a peer's data.
    peer_wait: PeerWaitAnnouncement,
    stall_reported: bool,
    /// Present only with `trace_file`: one check per dispatch and retirement otherwise.
    trace: Option<Box<TraceLog>>,
    /// Tasks whose failure was reported (further failures of their chunks are not).
    failed_tasks: IdSet<TaskId>,
    /// Allocations whose alloc failed: work needing them is dropped, their free skipped.
    failed_allocations: IdSet<AllocationId>,
}

/// How long a shutdown after a failure waits without progress before it gives up the transfers
/// still outstanding.
const FAILED_SHUTDOWN_STALL: Duration = Duration::from_millis(250);

/// How long the executor keeps polling (yielding its core between polls) for a peer's data
/// after its last progress, before it falls back to sleeping between polls. Nothing wakes the
/// thread when a message arrives, and a sleep of 50 µs lasts up to 100 µs with Linux's timer
/// slack: in a halo exchange every step would wait that long (C++ Celerity polls without ever
/// sleeping while work is in flight).
const PEER_WAIT_SPIN: Duration = Duration::from_millis(1);

/// How long the executor keeps polling for a lane's completion after its last progress before
/// it parks until a lane unparks it (where `poll_when_idle` allows): in a chain of short
/// instructions on different lanes the next completion follows within microseconds, and waking
/// a parked thread takes several (tens on a VM's idle vCPU).
const COMPLETION_SPIN: Duration = Duration::from_micros(50);

/// How many incomplete instructions the executor holds before it leaves the scheduler's next
/// batches in the channel, as long as it has local work that completes without peers. Without a
/// limit, a program that submits far ahead moved its whole backlog into the executor's tables as
/// soon as the scheduler built it (37-79 k instructions in `million_tasks` on an H100 host,
/// docs/benchmarks.md); a few thousand instructions keep every lane and device busy.
pub(crate) const MAX_INCOMPLETE_INSTRUCTIONS: usize = 4096;

/// The launcher a kernel or host task carries.
fn launcher_of(task: &Task) -> Result<Launcher> {
    task.launcher()
        .cloned()
        .ok_or_else(|| Error::internal(format!("task {} carries no kernel launcher", task.id())))
}

/// Fulfils the promise of a fence or epoch instruction with `error` (fail-stop: the instruction
/// may wait for data a failed node never sends); true for the shutdown epoch.
pub(super) fn fail_fence_or_epoch(instruction: &Instruction, error: &Error) -> bool {
    let (task, shutdown) = match instruction.kind() {
        InstructionKind::Epoch { task, action, .. } => (task, *action == EpochAction::Shutdown),
        InstructionKind::Fence { task } => (task, false),
        _ => return false,
    };
    if let Some(promise) = task.promise() {
        promise.fulfill(Err(error.clone()));
    }
    shutdown
}

fn task_context(task: &Task) -> String {
    format!("task {}", task.label())
}

impl Executor {
    pub(super) fn new(
        backend: Box<dyn Backend>,
        comm: Box<dyn Communicator>,
        delegate: Arc<dyn ExecutorDelegate>,
        receiver: Receiver<ExecutorMessage>,
        config: ExecutorConfig,
    ) -> Self {
        let num_devices = backend.system_info().devices.len();
        let mut backend = backend;
        let trace = config.trace_epoch.map(|epoch| {
            backend.record_submissions(epoch);
            Box::new(TraceLog::new(comm.local_node(), epoch))
        });
        Self {
            backend,
            comm,
            delegate,
            receiver,
            config,
            engine: OutOfOrderEngine::new(num_devices),
            arbiter: ReceiveArbiter::new(),
            instructions: IdMap::default(),
            allocations: IdMap::default(),
            user_memory: IdMap::default(),
            host_objects: IdMap::default(),
            reducers: IdMap::default(),
            collective_comms: IdMap::default(),
            in_flight: Vec::new(),
            shutdown_reached: false,
            transfers_abandoned: false,
            aborted: false,
            failure: None,
            spmd: None,
            disconnected: false,
            last_progress: Instant::now(),
            communication_in_flight: 0,
            peer_wait: PeerWaitAnnouncement::default(),
            stall_reported: false,
            trace,
            bounds_checks: IdMap::default(),
            spare_records: SpareRecords::default(),
            failed_tasks: IdSet::default(),
            failed_allocations: IdSet::default(),
        }
    }

    pub(super) fn run(&mut self) -> Result<()> {
        loop {
            let mut progressed = false;
            let iteration_start = self.trace.as_ref().map(|trace| trace.now_us());
            if let Err(error) = self.arbiter.poll_communicator(self.comm.as_mut()) {
                self.fail(error);
            }
            for (node, message) in self.comm.take_control_messages() {
                self.control_message(node, &message);
            }
            if let Err(error) = self.backend.poll() {
                self.fail(error);
            }
            progressed |= self.retire_completed();
            progressed |= self.take_messages();
            self.backend.begin_submissions();
            while let Some(assignment) = self.engine.assign_one() {
                self.dispatch(assignment);
                progressed = true;
            }
            self.backend.end_submissions();
            if self.shutdown_reached && self.engine.is_idle() {
                break;
            }
            if self.failed_shutdown_can_end() {
                break;
            }
            if self.aborted && self.in_flight.is_empty() {
                return Err(Error::internal(
                    "the executor stopped early because the scheduler failed",
                ));
            }
            if progressed {
                if let (Some(trace), Some(start)) = (&mut self.trace, iteration_start) {
                    let end = trace.now_us();
                    trace.busy(EXECUTOR_BUSY_TRACK, start, end);
                }
                self.last_progress = Instant::now();
                self.stall_reported = false;
                continue;
            }
            if self.disconnected && self.engine.is_idle() {
                // The runtime went away without a shutdown epoch (e.g. a failed init).
                break;
            }
            self.check_stall();
            // Completions and submissions unpark this thread; communication needs polling.
            let idle = self.last_progress.elapsed();
            let waiting_for_peers = self.waiting_for_peers();
            self.peer_wait.set(waiting_for_peers);
            if (waiting_for_peers && idle < PEER_WAIT_SPIN)
                || (self.config.poll_when_idle
                    && !self.in_flight.is_empty()
                    && idle < COMPLETION_SPIN)
            {
                std::thread::yield_now();
                continue;
            }
            let timeout = if self.in_flight.is_empty() && self.arbiter.is_idle() {
                Duration::from_millis(5)
            } else {
                Duration::from_micros(50)
            };
            std::thread::park_timeout(timeout);
        }
        if let Some(mut trace) = self.trace.take() {
            trace.name_track(EXECUTOR_BUSY_TRACK, "executor (busy)");
            for slice in self.backend.take_submissions() {
                let tid = SUBMISSION_TRACK + slice.device.0;
                trace.name_track(tid, &format!("D{} submission thread", slice.device.0));
                trace.work(tid, slice.what, "submission", slice.start_us, slice.end_us);
            }
            self.delegate.trace_finished(*trace);
        }
        self.finish()
    }

    /// After a panic: fails the promise of every fence and epoch the executor holds; true if the
    /// shutdown epoch is among them.
    pub(super) fn fail_pending(&self, error: &Error) -> bool {
        let mut shutdown_held = false;
        for instruction in self.instructions.values() {
            shutdown_held |= fail_fence_or_epoch(instruction, error);
        }
        shutdown_held
    }

    /// After a failure, once the shutdown epoch is submitted, nothing but transfers is left in
    /// flight and nothing progressed for [`FAILED_SHUTDOWN_STALL`], what remains waits for peers
    /// that failed or stopped (transfers between live peers finish well within that time, and
    /// giving them up early could strand a peer's send): the outstanding transfers are
    /// given up and the executor ends, so that every rank reaches `MPI_Finalize` instead of its
    /// shutdown watchdog. Only when the communicator confirms that no transfer can still touch an
    /// allocation; otherwise the executor keeps waiting and the watchdog ends the process.
    fn failed_shutdown_can_end(&mut self) -> bool {
        if self.failure.is_none()
            || self.transfers_abandoned
            || self.last_progress.elapsed() < FAILED_SHUTDOWN_STALL
        {
            return false;
        }
        let shutdown_submitted = self.instructions.values().any(|i| {
            matches!(
                i.kind(),
                InstructionKind::Epoch {
                    action: EpochAction::Shutdown,
                    ..
                }
            )
        });
        let only_transfers = self.communication_in_flight == self.in_flight.len();
        if !shutdown_submitted || !only_transfers {
            return false;
        }
        self.transfers_abandoned = true;
        let abandoned = self.comm.abandon_transfers();
        tracing::debug!(
            "shutdown after a failure: {} instruction(s) left waiting for peers; {}",
            self.instructions.len(),
            if abandoned {
                "their transfers were given up"
            } else {
                "some transfer could not be given up, waiting on"
            }
        );
        abandoned
    }

    /// At shutdown everything the executor allocated must have been freed (unless the job
    /// failed, when work that waited for a failed peer never ran its frees).
    fn finish(&mut self) -> Result<()> {
        self.user_memory.clear();
        self.host_objects.clear();
        if self.failure.is_some() {
            return Ok(());
        }
        let leaked: Vec<_> = self
            .allocations
            .keys()
            .filter(|a| a.memory() != MemoryId::USER)
            .copied()
            .collect();
        if leaked.is_empty() {
            Ok(())
        } else {
            Err(Error::internal(format!(
                "allocations still live at shutdown: {leaked:?}"
            )))
        }
    }

    fn take_messages(&mut self) -> bool {
        let mut any = false;
        while !self.holds_enough() {
            match self.receiver.try_recv() {
                Ok(message) => {
                    any = true;
                    self.handle_message(message);
                }
                Err(TryRecvError::Empty) => return any,
                Err(TryRecvError::Disconnected) => {
                    self.disconnected = true;
                    return any;
                }
            }
        }
        any
    }

    /// Whether the executor holds [`MAX_INCOMPLETE_INSTRUCTIONS`] and has local work that completes
    /// without peers (an instruction running that is not a transfer, or one ready to run), so
    /// that it will look at the channel again once that work is done. A node whose held work
    /// waits only for peers always takes the next batches: their pilots and sends may be what
    /// the peers wait for.
    fn holds_enough(&self) -> bool {
        self.instructions.len() >= MAX_INCOMPLETE_INSTRUCTIONS
            && (self.in_flight.len() > self.communication_in_flight
                || self.engine.assignment_queue_len() > 0)
    }

    fn handle_message(&mut self, message: ExecutorMessage) {
        match message {
            ExecutorMessage::Submit(instructions, pilots) => {
                for pilot in &pilots {
                    if let Err(error) = self.comm.send_outbound_pilot(pilot) {
                        self.fail(error);
                    }
                }
                let system = self.backend.system_info();
                for instruction in instructions {
                    if let Some(failure) = &self.failure {
                        fail_fence_or_epoch(&instruction, failure);
                    }
                    self.engine
                        .submit(EngineInstruction::of(&instruction, system));
                    self.instructions.insert(instruction.id(), instruction);
                }
            }
            ExecutorMessage::TrackUserAllocation(allocation, mut memory) => {
                self.allocations.insert(allocation, memory.address());
                self.user_memory.insert(allocation, memory);
            }
            ExecutorMessage::TrackHostObject(id, instance) => {
                self.host_objects.insert(id, instance);
            }
            ExecutorMessage::TrackReducer(id, reducer) => {
                self.reducers.insert(id, reducer);
            }
            ExecutorMessage::Abort => self.aborted = true,
            ExecutorMessage::Fail(error) => self.fail(error),
            ExecutorMessage::SpmdWindow(window, digests) => self.spmd_window(window, digests),
        }
    }

    /// Whether a send or receive is outstanding: only polling the communicator advances it.
    fn waiting_for_peers(&self) -> bool {
        self.communication_in_flight > 0 || !self.arbiter.is_idle()
    }

    fn retire_completed(&mut self) -> bool {
        let mut any = false;
        let mut index = 0;
        while index < self.in_flight.len() {
            if !self.in_flight[index]
                .events
                .iter()
                .all(AsyncEvent::is_complete)
            {
                index += 1;
                continue;
            }
            any = true;
            let flight = self.in_flight.swap_remove(index);
            self.communication_in_flight -= usize::from(flight.communication);
            for event in &flight.events {
                match event.take_outcome() {
                    Some(Ok(Completion::Allocation(address))) => {
                        if let Some(allocation) = flight.allocation {
                            self.allocations.insert(allocation, address);
                        }
                    }
                    Some(Ok(Completion::Done)) | None => {}
                    Some(Err(error)) => match flight.allocation {
                        Some(allocation) => self.allocation_failed(flight.id, allocation, error),
                        None => self.report(flight.id, error),
                    },
                }
            }
            self.complete(flight.id);
        }
        any
    }

    fn complete(&mut self, id: InstructionId) {
        if let Some(check) = self.bounds_checks.remove(&id) {
            self.report_bounds_violations(id, &check);
            self.spare_records.give_back(check);
        }
        if let Some(trace) = &mut self.trace {
            trace.instruction_retired(id);
        }
        self.engine.complete_assigned(id);
        self.instructions.remove(&id);
    }

    /// Records a failure of this node: reports it, and on the first one tells the other nodes
    /// (so that their next wait, fence or shutdown fails too) and fails pending fences and epochs.
    fn fail(&mut self, error: Error) {
        if self.comm.num_nodes() == 1 {
            // One node: every problem is reported (once per task, upstream), and nothing waits
            // for a peer, so pending fences and epochs complete as the work drains.
            self.delegate.async_error(error);
            return;
        }
        let node = self.comm.local_node();
        if self.failure.is_none() {
            let notice = ControlMessage::Failure(error.clone()).encode();
            if let Err(announce) = self.comm.broadcast_control(&notice) {
                tracing::error!("could not tell the other nodes that {node} failed: {announce}");
            }
        }
        // The log line is prefixed with the node already; the error the calls return names it.
        tracing::error!("{error}");
        let error = error.context(format!("rank {}", node.0));
        self.delegate.record_error(error.clone());
        if self.failure.is_none() {
            self.fail_stop(error);
        }
    }

    /// Handles a control message from `node`: a failure notice or SPMD digests.
    fn control_message(&mut self, node: crate::types::NodeId, bytes: &[u8]) {
        match ControlMessage::decode(bytes) {
            Some(ControlMessage::Failure(error)) => self.peer_failed(node, error),
            // Once the job has failed, digests are not compared: a failed or departed node's
            // submissions differ for that reason, and the first failure is what to report.
            Some(ControlMessage::SpmdDigests { .. }) if self.failure.is_some() => {}
            Some(ControlMessage::SpmdDigests { window, hashes }) => {
                let divergence = self.spmd_checker().record_theirs(window, node, hashes);
                if let Some(error) = divergence {
                    self.fail(error);
                }
            }
            None => tracing::warn!(
                "ignored a malformed control message of {} bytes from {node}",
                bytes.len()
            ),
        }
    }

    /// The SPMD checker, created by the first window or peer digest (whichever comes first).
    fn spmd_checker(&mut self) -> &mut SpmdChecker {
        let (node, num_nodes) = (self.comm.local_node(), self.comm.num_nodes());
        self.spmd
            .get_or_insert_with(|| SpmdChecker::new(node, num_nodes))
    }

    /// Sends this node's digests of comparison window `window` and compares them.
    fn spmd_window(&mut self, window: u64, digests: Vec<TaskDigest>) {
        if self.failure.is_some() {
            return;
        }
        let hashes = digests.iter().map(|d| d.hash).collect();
        let message = ControlMessage::SpmdDigests { window, hashes }.encode();
        if let Err(error) = self.comm.broadcast_control(&message) {
            self.fail(error);
        }
        if let Some(error) = self.spmd_checker().record_mine(window, digests) {
            self.fail(error);
        }
    }

    /// Blocks until the SPMD window that epoch `epoch` closes has been compared with every peer
    /// (or the job failed), so that a wait never returns before a divergence is reported. Peers
    /// that are merely slower are waited for (with a warning each stall timeout), never failed.
    pub(super) fn await_spmd_comparison(&mut self, epoch: crate::types::TaskId) {
        let started = Instant::now();
        let mut warned = Duration::ZERO;
        while self.failure.is_none()
            && self
                .spmd
                .as_ref()
                .is_some_and(|spmd| !spmd.is_settled(epoch))
        {
            if let Err(error) = self.arbiter.poll_communicator(self.comm.as_mut()) {
                self.fail(error);
            }
            for (node, message) in self.comm.take_control_messages() {
                self.control_message(node, &message);
            }
            if started.elapsed() >= warned + self.config.stall_timeout {
                warned += self.config.stall_timeout;
                tracing::warn!(
                    "epoch {epoch}: still waiting after {warned:.0?} for the other ranks' SPMD digests (check_spmd)"
                );
            }
            std::thread::park_timeout(Duration::from_micros(100));
        }
    }

    /// Records a failure announced by `node`.
    fn peer_failed(&mut self, node: crate::types::NodeId, error: Error) {
        let error = Error::new(
            error.kind(),
            format!("rank {} failed: {}", node.0, error.message()),
        );
        // One problem, one report: the failing rank logged it; here it only fails the calls.
        self.delegate.record_error(error.clone());
        if self.failure.is_none() {
            self.fail_stop(error);
        }
    }

    /// From now on fences and epochs report `error`; those pending report it at once, so that
    /// no caller waits for data a failed node may never send.
    fn fail_stop(&mut self, error: Error) {
        for instruction in self.instructions.values() {
            fail_fence_or_epoch(instruction, &error);
        }
        self.failure = Some(error);
    }

    /// The outcome a fence or epoch reports: success unless the job has failed.
    pub(super) fn outcome(&self) -> Result<()> {
        self.failure.clone().map_or(Ok(()), Err)
    }

    fn pointer(&self, allocation: AllocationId) -> Result<usize> {
        if allocation.is_null() {
            return Ok(0);
        }
        if self.failed_allocations.contains(&allocation) {
            return Err(reports::dropped());
        }
        self.allocations
            .get(&allocation)
            .copied()
            .ok_or_else(|| Error::internal(format!("allocation {allocation} is not live")))
    }

    fn dispatch(&mut self, assignment: Assignment) {
        let instruction = self.instructions[&assignment.id].clone();
        let assignment = self.placed(&instruction, assignment);
        #[cfg(test)]
        crate::thread_guard::inject_panic(
            "executor",
            instruction.kind().task().and_then(|t| t.name()),
        );
        if let Some(trace) = &mut self.trace {
            trace.instruction_dispatched(&instruction, &assignment.dispatch());
        }
        match self.start(&instruction, assignment) {
            Ok((events, allocation)) if !events.is_empty() => {
                if let Some(trace) = &mut self.trace {
                    // Done while it was issued (an in-process send deposits its payload at
                    // once): its slice ends now, not when this loop next polls it, by which
                    // time the receiver may already have finished.
                    if events.iter().all(|e| e.is_complete()) {
                        trace.instruction_retired(assignment.id);
                    }
                }
                let communication = matches!(
                    instruction.kind(),
                    InstructionKind::Send { .. }
                        | InstructionKind::Receive { .. }
                        | InstructionKind::SplitReceive { .. }
                        | InstructionKind::AwaitReceive { .. }
                        | InstructionKind::GatherReceive { .. }
                );
                self.communication_in_flight += usize::from(communication);
                self.in_flight.push(InFlight {
                    id: assignment.id,
                    events,
                    allocation,
                    communication,
                })
            }
            Ok(_) => self.complete(assignment.id),
            Err(error) => {
                self.report(assignment.id, error);
                self.complete(assignment.id);
            }
        }
    }

    fn reducer(&self, reduction: ReductionId) -> Result<Arc<dyn Reducer>> {
        self.reducers
            .get(&reduction)
            .cloned()
            .ok_or_else(|| Error::internal(format!("reduction {reduction} has no reducer")))
    }

    fn collect(&mut self, garbage: &InstructionGarbage) {
        for reduction in &garbage.reductions {
            self.reducers.remove(reduction);
        }
        for allocation in &garbage.user_allocations {
            self.allocations.remove(allocation);
            self.user_memory.remove(allocation);
        }
    }

    fn invocation(
        &self,
        task: &Task,
        chunk: GridBox,
        accesses: &[BufferAccessAllocation],
        reductions: &[BufferAccessAllocation],
        device: Option<crate::types::DeviceId>,
        collective_group: CollectiveGroupId,
    ) -> Result<KernelInvocation> {
        let accessors = accesses
            .iter()
            .map(|a| {
                Ok(AccessorInfo {
                    base: SendPtr(self.pointer(a.allocation)? as *mut u8),
                    allocated_box: a.allocated_box,
                    accessed_box: a.accessed_box,
                    elem_size: a.elem_size,
                    bounds: SendPtr(std::ptr::null_mut()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut reduction_slots = Vec::with_capacity(reductions.len());
        let mut reduction_identities = Vec::with_capacity(reductions.len());
        for (slot, info) in reductions.iter().zip(task.reductions()) {
            let reducer = self.reducer(info.rid)?;
            let base = self.pointer(slot.allocation)?;
            let offset =
                linear_offset(&slot.allocated_box, &slot.accessed_box) * reducer.elem_size();
            reduction_slots.push(SendPtr((base + offset) as *mut u8));
            // The slot may be device memory: the backend writes the identity before the kernel.
            let mut identity = vec![0u8; reducer.elem_size()];
            // SAFETY: `identity` holds one element.
            unsafe { reducer.fill_identity(identity.as_mut_ptr(), 1) };
            reduction_identities.push(identity);
        }
        let host_objects = task
            .side_effects()
            .iter()
            .map(|id| {
                self.host_objects
                    .get(id)
                    .map(|h| SendPtr(h.instance as *mut u8))
                    .ok_or_else(|| Error::internal(format!("host object {id} has no instance")))
            })
            .collect::<Result<Vec<_>>>()?;
        let collective_comm = if collective_group == CollectiveGroupId::NONE {
            0
        } else {
            self.collective_comms
                .get(&collective_group)
                .map_or(0, |c| c.native_handle())
        };
        let geometry = task.geometry();
        Ok(KernelInvocation {
            chunk,
            global_range: geometry.global_size,
            global_offset: geometry.global_offset,
            dims: geometry.dims,
            accessors,
            reductions: reduction_slots,
            reduction_identities,
            host_objects,
            device,
            collective_comm,
            launch_only: task.hints().launch_only,
        })
    }

    fn check_stall(&mut self) {
        if self.stall_reported
            || self.engine.is_idle()
            || self.last_progress.elapsed() < self.config.stall_timeout
        {
            return;
        }
        self.stall_reported = true;
        let transfers = self
            .arbiter
            .pending_transfers(self.comm.num_nodes(), self.comm.local_node());
        let report = super::stall::report(
            self.comm.local_node(),
            self.last_progress.elapsed(),
            &self.engine,
            &self.instructions,
            &transfers,
        );
        tracing::warn!("{report}");
        self.delegate.stall_detected(&report);
    }
}

/// Offset (in elements) of `inner.min` inside the row-major allocation of `outer`.
fn linear_offset(outer: &GridBox, inner: &GridBox) -> usize {
    let (o, r, i) = (outer.min().0, outer.range().0, inner.min().0);
    ((i[0] - o[0]) * r[1] + (i[1] - o[1])) * r[2] + (i[2] - o[2])
}
