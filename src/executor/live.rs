//! The live executor: runs a node's instruction graph on a backend and a communicator
//! (digest 6.3).
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
//! 4. hand every assignable instruction (out-of-order engine) to its target.
//!
//! With nothing to do it parks; completions and submissions unpark it. Horizons and epochs are
//! reported to the [`ExecutorDelegate`] on this thread (epochs before their promise is fulfilled,
//! so pruning is visible when `wait` returns). A failing instruction is reported through
//! [`ExecutorDelegate::async_error`] with its task's name and id; the graph keeps draining so
//! that shutdown stays clean. The thread ends once the shutdown epoch has run and every
//! instruction has completed; it then checks that every allocation was freed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError, unbounded};
use smallvec::SmallVec;

use super::bounds_check::ArmedCheck;
use super::engine::{Assignment, OutOfOrderEngine, Target};
use super::payload::{HostObjectInstance, Reducer, UserMemory, launcher_of, promise_of};
use super::receive_arbiter::ReceiveArbiter;
use crate::backend::SendPtr;
use crate::backend::event::{AsyncEvent, Completion};
use crate::backend::interface::{AccessorInfo, Backend, CopyLane, KernelInvocation};
use crate::backend::nd_memory::StridedBox;
use crate::comm::{Communicator, OutboundPilot, Stride};
use crate::debug::trace::TraceLog;
use crate::error::{Error, Result};
use crate::grid::{GridBox, Subrange};
use crate::instruction::{
    BufferAccessAllocation, CopyLayout, Instruction, InstructionGarbage, InstructionKind,
};
use crate::runtime::config::ErrorPolicy;
use crate::task::{EpochAction, Task};
use crate::types::{
    AllocationId, BufferId, CollectiveGroupId, HostObjectId, IdMap, InstructionId, MemoryId,
    ReductionId, TaskId,
};

mod reports;

/// What the executor reports back, on its own thread.
pub trait ExecutorDelegate: Send + Sync {
    /// Horizon `task` has executed.
    fn horizon_reached(&self, task: TaskId);
    /// Epoch `task` has executed (called before its promise is fulfilled).
    fn epoch_reached(&self, task: TaskId);
    /// An instruction failed; the message names its task.
    fn async_error(&self, error: Error);
    /// The debug name of buffer `bid`, for messages.
    fn buffer_name(&self, _bid: BufferId) -> Option<String> {
        None
    }
    /// No instruction completed for `stall_timeout`; `report` lists what is pending (it is also
    /// logged as a warning). Called once per stall.
    fn stall_detected(&self, _report: &str) {}
    /// The executor stopped; `trace` holds its slices (only with `ExecutorConfig::trace_epoch`).
    fn trace_finished(&self, _trace: TraceLog) {}
}

/// Messages to the executor thread, processed in order.
pub enum ExecutorMessage {
    /// Instructions (topologically sorted) and the pilots announcing their sends.
    Submit(Vec<Arc<Instruction>>, Vec<OutboundPilot>),
    /// Memory of a user allocation (memory 0) that instructions will refer to.
    TrackUserAllocation(AllocationId, UserMemory),
    /// A host object's instance.
    TrackHostObject(HostObjectId, HostObjectInstance),
    /// A reduction's operator.
    TrackReducer(ReductionId, Arc<dyn Reducer>),
    /// Stop once in-flight work is done: the scheduler failed and no shutdown epoch will come.
    Abort,
}

/// Settings of an executor.
#[derive(Debug, Clone, Copy)]
pub struct ExecutorConfig {
    /// Warn once per stall when no instruction completes for this long.
    pub stall_timeout: Duration,
    /// Record a trace of executed instructions, timed from this instant (`trace_file`).
    pub trace_epoch: Option<Instant>,
    /// `accessor_boundary_check`: `Ignore` hands kernels no bounds records.
    pub accessor_boundary_check: ErrorPolicy,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            stall_timeout: Duration::from_secs(20),
            trace_epoch: None,
            accessor_boundary_check: ErrorPolicy::Ignore,
        }
    }
}

/// The application side of a running executor.
pub struct ExecutorHandle {
    sender: Sender<ExecutorMessage>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl ExecutorHandle {
    /// Starts the executor thread.
    pub fn start(
        backend: Box<dyn Backend>,
        communicator: Box<dyn Communicator>,
        delegate: Arc<dyn ExecutorDelegate>,
        config: ExecutorConfig,
    ) -> Result<Self> {
        let (sender, receiver) = unbounded();
        let thread = std::thread::Builder::new()
            .name("celerity-executor".into())
            .spawn(move || {
                let mut executor = Executor::new(backend, communicator, delegate, receiver, config);
                executor.run()
            })
            .map_err(|e| Error::internal(format!("cannot start the executor thread: {e}")))?;
        Ok(Self {
            sender,
            thread: Some(thread),
        })
    }

    /// Starts the dry-run executor thread (`dry_run_nodes`): nothing is executed.
    pub fn start_dry_run(delegate: Arc<dyn ExecutorDelegate>) -> Result<Self> {
        let (sender, receiver) = unbounded();
        let thread = std::thread::Builder::new()
            .name("celerity-executor".into())
            .spawn(move || super::dry_run::run(receiver, delegate))
            .map_err(|e| Error::internal(format!("cannot start the executor thread: {e}")))?;
        Ok(Self {
            sender,
            thread: Some(thread),
        })
    }

    /// A sender for messages (the scheduler's sink sends batches through it).
    pub fn sender(&self) -> Sender<ExecutorMessage> {
        self.sender.clone()
    }

    /// The executor thread, to unpark after sending.
    pub fn thread_handle(&self) -> std::thread::Thread {
        self.thread
            .as_ref()
            .map_or_else(std::thread::current, |t| t.thread().clone())
    }

    /// Sends `message` and wakes the executor.
    pub fn send(&self, message: ExecutorMessage) {
        // The executor only stops after the shutdown epoch, after which nothing is sent.
        let _ = self.sender.send(message);
        if let Some(thread) = &self.thread {
            thread.thread().unpark();
        }
    }

    /// Waits for the executor thread to finish (after the shutdown epoch) and returns what it
    /// found at shutdown (e.g. leaked allocations).
    pub fn join(&mut self) -> Result<()> {
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(Error::internal("the executor thread panicked"))),
            None => Ok(()),
        }
    }
}

/// An instruction waiting for asynchronous work.
struct InFlight {
    id: InstructionId,
    events: SmallVec<[AsyncEvent; 1]>,
    /// Alloc instructions record their allocation once complete.
    allocation: Option<AllocationId>,
}

struct Executor {
    backend: Box<dyn Backend>,
    comm: Box<dyn Communicator>,
    delegate: Arc<dyn ExecutorDelegate>,
    receiver: Receiver<ExecutorMessage>,
    config: ExecutorConfig,
    engine: OutOfOrderEngine,
    arbiter: ReceiveArbiter,
    instructions: IdMap<InstructionId, Arc<Instruction>>,
    allocations: HashMap<AllocationId, usize>,
    user_memory: HashMap<AllocationId, UserMemory>,
    host_objects: IdMap<HostObjectId, HostObjectInstance>,
    reducers: IdMap<ReductionId, Arc<dyn Reducer>>,
    collective_comms: IdMap<CollectiveGroupId, Box<dyn Communicator>>,
    in_flight: Vec<InFlight>,
    shutdown_reached: bool,
    aborted: bool,
    disconnected: bool,
    last_progress: Instant,
    stall_reported: bool,
    /// Present only with `trace_file`: one check per dispatch and retirement otherwise.
    trace: Option<Box<TraceLog>>,
    /// The bounds records of running kernel and host-task chunks.
    bounds_checks: HashMap<InstructionId, ArmedCheck>,
    /// Tasks whose failure was reported (further failures of their chunks are not).
    failed_tasks: HashSet<TaskId>,
    /// Allocations whose alloc failed: work needing them is dropped, their free skipped.
    failed_allocations: HashSet<AllocationId>,
}

fn task_context(task: &Task) -> String {
    format!("task {}", task.label())
}

impl Executor {
    fn new(
        backend: Box<dyn Backend>,
        comm: Box<dyn Communicator>,
        delegate: Arc<dyn ExecutorDelegate>,
        receiver: Receiver<ExecutorMessage>,
        config: ExecutorConfig,
    ) -> Self {
        let num_devices = backend.system_info().devices.len();
        let trace = config
            .trace_epoch
            .map(|epoch| Box::new(TraceLog::new(comm.local_node(), epoch)));
        Self {
            backend,
            comm,
            delegate,
            receiver,
            config,
            engine: OutOfOrderEngine::new(num_devices),
            arbiter: ReceiveArbiter::new(),
            instructions: IdMap::default(),
            allocations: HashMap::new(),
            user_memory: HashMap::new(),
            host_objects: IdMap::default(),
            reducers: IdMap::default(),
            collective_comms: IdMap::default(),
            in_flight: Vec::new(),
            shutdown_reached: false,
            aborted: false,
            disconnected: false,
            last_progress: Instant::now(),
            stall_reported: false,
            trace,
            bounds_checks: HashMap::new(),
            failed_tasks: HashSet::new(),
            failed_allocations: HashSet::new(),
        }
    }

    fn run(&mut self) -> Result<()> {
        loop {
            let mut progressed = false;
            if let Err(error) = self.arbiter.poll_communicator(self.comm.as_mut()) {
                self.delegate.async_error(error);
            }
            if let Err(error) = self.backend.poll() {
                self.delegate.async_error(error);
            }
            progressed |= self.retire_completed();
            progressed |= self.take_messages();
            while let Some(assignment) = self.engine.assign_one() {
                self.dispatch(assignment);
                progressed = true;
            }
            if self.shutdown_reached && self.engine.is_idle() {
                break;
            }
            if self.aborted && self.in_flight.is_empty() {
                return Err(Error::internal(
                    "the executor stopped early because the scheduler failed",
                ));
            }
            if progressed {
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
            let timeout = if self.in_flight.is_empty() && self.arbiter.is_idle() {
                Duration::from_millis(5)
            } else {
                Duration::from_micros(50)
            };
            std::thread::park_timeout(timeout);
        }
        if let Some(trace) = self.trace.take() {
            self.delegate.trace_finished(*trace);
        }
        self.finish()
    }

    /// At shutdown everything the executor allocated must have been freed.
    fn finish(&mut self) -> Result<()> {
        self.user_memory.clear();
        self.host_objects.clear();
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
        loop {
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
    }

    fn handle_message(&mut self, message: ExecutorMessage) {
        match message {
            ExecutorMessage::Submit(instructions, pilots) => {
                for pilot in &pilots {
                    if let Err(error) = self.comm.send_outbound_pilot(pilot) {
                        self.delegate.async_error(error);
                    }
                }
                let system = self.backend.system_info();
                for instruction in instructions {
                    self.engine.submit(instruction.engine_instruction(system));
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
        }
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
        }
        if let Some(trace) = &mut self.trace {
            trace.instruction_retired(id);
        }
        self.engine.complete_assigned(id);
        self.instructions.remove(&id);
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
        if let Some(trace) = &mut self.trace {
            trace.instruction_dispatched(&instruction, &assignment);
        }
        match self.start(&instruction, assignment) {
            Ok((events, allocation)) if !events.is_empty() => self.in_flight.push(InFlight {
                id: assignment.id,
                events,
                allocation,
            }),
            Ok(_) => self.complete(assignment.id),
            Err(error) => {
                self.report(assignment.id, error);
                self.complete(assignment.id);
            }
        }
    }

    /// Starts an instruction; returns the events it completes with (none: already complete).
    fn start(
        &mut self,
        instruction: &Instruction,
        assignment: Assignment,
    ) -> Result<(SmallVec<[AsyncEvent; 1]>, Option<AllocationId>)> {
        use InstructionKind as K;
        let mut events = SmallVec::new();
        match instruction.kind() {
            K::Alloc {
                allocation,
                size_bytes,
                align_bytes,
            } => {
                events.push(self.backend.enqueue_alloc(
                    allocation.memory(),
                    *size_bytes,
                    *align_bytes,
                ));
                return Ok((events, Some(*allocation)));
            }
            K::Free { allocation } => {
                if self.failed_allocations.remove(allocation) {
                    return Ok((events, None));
                }
                let address = self.allocations.remove(allocation).ok_or_else(|| {
                    Error::internal(format!("free of {allocation}, which is not live"))
                })?;
                // SAFETY: the address came from this allocation's alloc instruction, and the
                // instruction graph orders the free after every access to it.
                events.push(unsafe {
                    self.backend
                        .enqueue_free(allocation.memory(), address as *mut u8)
                });
            }
            K::Copy {
                source,
                dest,
                source_layout,
                dest_layout,
                region,
                elem_size,
            } => {
                let lane = match (assignment.target, assignment.device, assignment.lane) {
                    (Target::DeviceQueue, Some(device), Some(lane)) => {
                        CopyLane::Device(device, lane)
                    }
                    (_, _, lane) => CopyLane::Host(lane.unwrap_or(0)),
                };
                let (source_base, dest_base) = (self.pointer(*source)?, self.pointer(*dest)?);
                let mut source_offset = 0;
                let mut dest_offset = 0;
                for b in region.boxes() {
                    let (source_box, source_ptr) = locate(
                        source_layout,
                        b,
                        source_base,
                        &mut source_offset,
                        *elem_size,
                    )?;
                    let (dest_box, dest_ptr) =
                        locate(dest_layout, b, dest_base, &mut dest_offset, *elem_size)?;
                    // SAFETY: both allocations are live (the graph orders the copy between their
                    // alloc and free) and cover the located boxes; nothing else accesses the
                    // copied elements until the copy's successors run.
                    events.push(unsafe {
                        self.backend.enqueue_copy(
                            lane,
                            source_ptr as *const u8,
                            source_box,
                            dest_ptr as *mut u8,
                            dest_box,
                            *elem_size,
                        )
                    });
                }
            }
            K::DeviceKernel {
                device,
                task,
                execution_box,
                accesses,
                reductions,
                ..
            } => {
                let mut invocation = self.invocation(
                    task,
                    *execution_box,
                    accesses,
                    reductions,
                    Some(*device),
                    CollectiveGroupId::NONE,
                )?;
                self.arm_bounds_check(assignment.id, &mut invocation)?;
                let launcher = launcher_of(task)?;
                events.push(self.backend.enqueue_device_kernel(
                    *device,
                    assignment.lane.unwrap_or(0),
                    launcher,
                    invocation,
                ));
            }
            K::HostTask {
                task,
                execution_box,
                accesses,
                collective_group,
                ..
            } => {
                let mut invocation =
                    self.invocation(task, *execution_box, accesses, &[], None, *collective_group)?;
                self.arm_bounds_check(assignment.id, &mut invocation)?;
                let launcher = launcher_of(task)?;
                events.push(self.backend.enqueue_host_task(
                    assignment.lane.unwrap_or(0),
                    launcher,
                    invocation,
                ));
            }
            K::Send {
                to,
                message,
                source,
                allocation_range,
                offset_in_allocation,
                send_range,
                elem_size,
            } => {
                let stride = Stride {
                    allocation_range: *allocation_range,
                    transfer: Subrange::new(*offset_in_allocation, *send_range),
                    elem_size: *elem_size,
                };
                let base = self.pointer(*source)?;
                // SAFETY: the host allocation is live and not written until the send completes
                // (the graph orders later writers after the send).
                events.push(unsafe {
                    self.comm
                        .send_payload(*to, *message, base as *const u8, stride)
                }?);
            }
            K::Receive {
                transfer,
                region,
                dest,
                allocated_box,
                elem_size,
            } => {
                let base = self.pointer(*dest)?;
                // SAFETY: the allocation is live and reserved for this receive until it completes.
                events.push(unsafe {
                    self.arbiter.begin_receive(
                        self.comm.as_mut(),
                        *transfer,
                        region.clone(),
                        base as *mut u8,
                        *allocated_box,
                        *elem_size,
                    )
                }?);
            }
            K::SplitReceive {
                transfer,
                region,
                dest,
                allocated_box,
                elem_size,
            } => {
                let base = self.pointer(*dest)?;
                // SAFETY: as for Receive, until every await of the transfer completed.
                unsafe {
                    self.arbiter.begin_split_receive(
                        self.comm.as_mut(),
                        *transfer,
                        region.clone(),
                        base as *mut u8,
                        *allocated_box,
                        *elem_size,
                    )
                }?;
            }
            K::AwaitReceive { transfer, region } => {
                events.push(
                    self.arbiter
                        .await_split_receive_subregion(*transfer, region.clone()),
                );
            }
            K::GatherReceive {
                transfer,
                dest,
                node_chunk_bytes,
            } => {
                let base = self.pointer(*dest)?;
                // SAFETY: the gather allocation holds one chunk per node and is reserved for it.
                events.push(unsafe {
                    self.arbiter.gather_receive(
                        self.comm.as_mut(),
                        *transfer,
                        base as *mut u8,
                        *node_chunk_bytes,
                    )
                }?);
            }
            K::FillIdentity {
                reduction,
                allocation,
                num_values,
            } => {
                let reducer = self.reducer(*reduction)?;
                let base = self.pointer(*allocation)?;
                // SAFETY: a host allocation of at least `num_values` elements, exclusively ours
                // while this instruction runs.
                unsafe { reducer.fill_identity(base as *mut u8, *num_values) };
            }
            K::Reduce {
                reduction,
                source,
                num_source_values,
                dest,
            } => {
                let reducer = self.reducer(*reduction)?;
                let (source, dest) = (self.pointer(*source)?, self.pointer(*dest)?);
                // SAFETY: host allocations holding `num_source_values` values and one value.
                unsafe { reducer.reduce(dest as *mut u8, source as *const u8, *num_source_values) };
            }
            K::Fence { task } => {
                if let Some(promise) = promise_of(task) {
                    promise.fulfill(Ok(()));
                }
            }
            K::DestroyHostObject { host_object } => {
                self.host_objects.remove(host_object);
            }
            K::CloneCollectiveGroup { original, new } => {
                let clone = if *original == CollectiveGroupId::ROOT {
                    self.comm.collective_clone()?
                } else {
                    self.collective_comms
                        .get_mut(original)
                        .ok_or_else(|| {
                            Error::internal(format!("collective group {original} was never cloned"))
                        })?
                        .collective_clone()?
                };
                self.collective_comms.insert(*new, clone);
            }
            K::Horizon { task, garbage } => {
                self.delegate.horizon_reached(*task);
                self.collect(garbage);
            }
            K::Epoch {
                task,
                action,
                garbage,
            } => {
                let barrier = if *action == EpochAction::Barrier {
                    self.comm.collective_barrier()
                } else {
                    Ok(())
                };
                self.delegate.epoch_reached(task.id());
                self.collect(garbage);
                if let Some(promise) = promise_of(task) {
                    promise.fulfill(barrier.clone());
                }
                barrier?;
                if *action == EpochAction::Shutdown {
                    self.shutdown_reached = true;
                }
            }
        }
        Ok((events, None))
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

/// Where box `b` of a copy lives under `layout`: its strided description and base address.
/// Linearised layouts pack the region's boxes back to back; `cursor` tracks the bytes used.
fn locate(
    layout: &CopyLayout,
    b: &GridBox,
    base: usize,
    cursor: &mut usize,
    elem_size: usize,
) -> Result<(StridedBox, usize)> {
    match layout {
        CopyLayout::Strided { allocation } => {
            if !allocation.covers(b) {
                return Err(Error::internal(format!(
                    "copy box {b:?} is outside its allocation {allocation:?}"
                )));
            }
            let offset = [0, 1, 2].map(|d| b.min().0[d] - allocation.min().0[d]);
            Ok((
                StridedBox {
                    allocation_range: allocation.range().0,
                    offset,
                    range: b.range().0,
                },
                base,
            ))
        }
        CopyLayout::Linearized { offset_bytes } => {
            let address = base + offset_bytes + *cursor;
            *cursor += b.area() * elem_size;
            Ok((
                StridedBox {
                    allocation_range: b.range().0,
                    offset: [0; 3],
                    range: b.range().0,
                },
                address,
            ))
        }
    }
}
