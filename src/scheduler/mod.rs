//! The scheduler thread: turns tasks into this node's commands and instructions and hands
//! instruction batches to the executor (C++ Celerity: `scheduler.cc`).
//!
//! Protocol: the application thread sends [`SchedulerEvent`]s in program order. Buffer and
//! host-object *creation* reach both generators at once, out of order with the lookahead queue,
//! so that `anticipate` knows about them; everything else goes through the queue in order.
//! Each task becomes commands (CDAG); each command is `anticipate`d and queued with its hint.
//! Commands leave the queue, are compiled (IDAG) and handed over as a batch when:
//! * lookahead is `None`;
//! * the head is self-contained (allocates nothing a later command could merge with);
//! * lookahead is `Auto` and two horizons were queued since the last command that could merge;
//! * a flush is forced: a fence or epoch command, an explicit flush, a lookahead change, or a
//!   buffer / host-object destruction (which must follow the work queued before it).
//!
//! Batches go to the [`SchedulerSink`], which may hold them back until the scheduler has caught
//! up with its input (before it blocks for the next event), after a fence or epoch, and at the
//! end: the executor then takes several batches per wake-up while the program submits faster
//! than they execute.
//!
//! Generation errors (e.g. an uninitialised read under policy `error`) are reported through the
//! error sink and the offending task produces no work. The thread ends after it handed over the
//! shutdown epoch's batch.

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;

use std::panic::{AssertUnwindSafe, catch_unwind};

use crossbeam_channel::{Receiver, Sender, TryRecvError, unbounded};

use crate::command::{CommandGraphGenerator, CommandKind, CommandRef};
use crate::debug::json_string;
use crate::debug::trace::{SCHEDULER_TRACK, TraceLog};
use crate::error::{Error, ErrorKind, Result};
use crate::grid::Range;
use crate::instruction::{Batch, InstructionGraphGenerator, SchedulingHint};
use crate::policy::Lookahead;
use crate::task::{EpochAction, Task};
use crate::thread_guard::panic_message;
use crate::types::{AllocationId, BufferId, HostObjectId, TaskId};

/// Events from the application thread, in program order.
pub enum SchedulerEvent {
    /// A task of the task graph (including horizons, epochs and fences).
    Task(Arc<Task>),
    /// A new buffer; a host-initialised buffer names the user allocation holding its contents.
    BufferCreated {
        /// The buffer.
        bid: BufferId,
        /// Its extent.
        range: Range,
        /// Bytes per element.
        elem_size: usize,
        /// Alignment of elements.
        elem_align: usize,
        /// The user allocation with the initial contents, if host-initialised.
        user_allocation: Option<AllocationId>,
    },
    /// A buffer's debug name.
    BufferNameChanged(BufferId, String),
    /// A buffer's last use has been submitted.
    BufferDestroyed(BufferId),
    /// A new host object (owned: the executor destroys its instance after its last use).
    HostObjectCreated(HostObjectId, bool),
    /// A host object's last use has been submitted.
    HostObjectDestroyed(HostObjectId),
    /// Change the lookahead (also flushes).
    SetLookahead(Lookahead),
    /// Compile everything queued now.
    Flush,
    /// The executor reached this epoch (effective epoch for pruning).
    EpochReached(TaskId),
}

/// Where the scheduler delivers its output.
pub trait SchedulerSink: Send {
    /// A batch of instructions (topologically sorted) and pilots.
    fn batch(&mut self, batch: Batch);
    /// A generation error, reported at the next synchronising call.
    fn error(&mut self, error: Error);
    /// The scheduler failed for good and will produce no shutdown epoch: the executor must stop
    /// once its in-flight work is done.
    fn abort(&mut self);
    /// The scheduler has caught up with its input (or compiled a fence or epoch): batches the
    /// sink held back must reach their consumer now. A sink may hold batches back until then,
    /// to hand over several at once.
    fn flush(&mut self) {}
}

/// What the scheduler thread hands back when it ends: its generators (whose recorders hold the
/// command and instruction graphs with `print_graphs=on`) and its trace (with `trace_file`).
pub struct SchedulerOutput {
    /// The command graph generator.
    pub cdag: CommandGraphGenerator,
    /// The instruction graph generator.
    pub idag: InstructionGraphGenerator,
    /// The scheduler's trace slices.
    pub trace: Option<TraceLog>,
}

/// The application side of the scheduler thread.
pub struct SchedulerHandle {
    sender: Sender<SchedulerEvent>,
    thread: Option<JoinHandle<SchedulerOutput>>,
}

impl SchedulerHandle {
    /// Starts the scheduler thread over the two generators of this node; with `trace`, it
    /// records a slice per task and per compiled command.
    pub fn start(
        cdag: CommandGraphGenerator,
        idag: InstructionGraphGenerator,
        lookahead: Lookahead,
        sink: Box<dyn SchedulerSink>,
        trace: Option<TraceLog>,
    ) -> Result<Self> {
        let (sender, receiver) = unbounded();
        let thread = std::thread::Builder::new()
            .name("celerity-scheduler".into())
            .spawn(move || {
                let mut scheduler = Scheduler::new(cdag, idag, lookahead, sink);
                scheduler.trace = trace;
                scheduler.run(receiver)
            })
            .map_err(|e| Error::internal(format!("cannot start the scheduler thread: {e}")))?;
        Ok(Self {
            sender,
            thread: Some(thread),
        })
    }

    /// A sender for events (the task manager's delegate and the executor's epoch reports).
    pub fn sender(&self) -> Sender<SchedulerEvent> {
        self.sender.clone()
    }

    /// Sends an event to the scheduler thread.
    pub fn send(&self, event: SchedulerEvent) {
        // The scheduler only stops after the shutdown epoch, after which nothing is sent.
        let _ = self.sender.send(event);
    }

    /// Waits for the scheduler thread to end (after the shutdown epoch) and takes its output.
    pub fn join(&mut self) -> Option<SchedulerOutput> {
        self.thread.take().and_then(|thread| thread.join().ok())
    }
}

enum Queued {
    Command(CommandRef, SchedulingHint),
    BufferDestroyed(BufferId),
    BufferNameChanged(BufferId, String),
    HostObjectDestroyed(HostObjectId),
}

/// The scheduler's state (also usable without a thread, for tests).
pub struct Scheduler {
    cdag: CommandGraphGenerator,
    idag: InstructionGraphGenerator,
    lookahead: Lookahead,
    sink: Box<dyn SchedulerSink>,
    queue: VecDeque<Queued>,
    /// Horizon commands queued after the last command that could merge with later ones.
    horizons_since_mergeable: usize,
    shutdown: bool,
    trace: Option<TraceLog>,
    /// Set after a panic inside a generator: later tasks only get their promises failed.
    broken: Option<Error>,
}

impl Scheduler {
    /// A scheduler over the two generators.
    pub fn new(
        cdag: CommandGraphGenerator,
        idag: InstructionGraphGenerator,
        lookahead: Lookahead,
        sink: Box<dyn SchedulerSink>,
    ) -> Self {
        Self {
            cdag,
            idag,
            lookahead,
            sink,
            queue: VecDeque::new(),
            horizons_since_mergeable: 0,
            shutdown: false,
            trace: None,
            broken: None,
        }
    }

    fn run(mut self, receiver: Receiver<SchedulerEvent>) -> SchedulerOutput {
        if let Some(trace) = &mut self.trace {
            trace.name_track(SCHEDULER_TRACK, "scheduler");
        }
        while let Some(event) = self.next_event(&receiver) {
            let task = match &event {
                SchedulerEvent::Task(task) => Some(task.clone()),
                _ => None,
            };
            if let Some(broken) = self.broken.clone() {
                if let Some(task) = task {
                    self.fail_task(&task, &broken);
                }
            } else if let Err(payload) = catch_unwind(AssertUnwindSafe(|| self.handle(event))) {
                let message = panic_message(payload.as_ref());
                let error = Error::internal(format!(
                    "the scheduler failed (a bug in celerity, please report it): {message}"
                ));
                self.sink.error(error.clone());
                self.broken = Some(error.clone());
                if let Some(task) = task {
                    self.fail_task(&task, &error);
                }
            }
            if self.shutdown {
                break;
            }
        }
        self.sink.flush();
        SchedulerOutput {
            cdag: self.cdag,
            idag: self.idag,
            trace: self.trace,
        }
    }

    /// The next event; before blocking for it, the sink hands over what it holds (the
    /// application thread is slower than this one, or waits).
    fn next_event(&mut self, receiver: &Receiver<SchedulerEvent>) -> Option<SchedulerEvent> {
        match receiver.try_recv() {
            Ok(event) => Some(event),
            Err(TryRecvError::Empty) => {
                self.sink.flush();
                receiver.recv().ok()
            }
            Err(TryRecvError::Disconnected) => None,
        }
    }

    /// Fails whatever waits for `task` (its fence or epoch promise); a shutdown epoch also stops
    /// the executor, since no shutdown instruction will reach it.
    fn fail_task(&mut self, task: &Arc<Task>, error: &Error) {
        if let Some(promise) = task.promise() {
            promise.fulfill(Err(error.clone()));
        }
        if task.epoch_action() == Some(EpochAction::Shutdown) {
            self.sink.abort();
            self.shutdown = true;
        }
    }

    /// Processes one event.
    pub fn handle(&mut self, event: SchedulerEvent) {
        match event {
            SchedulerEvent::Task(task) => self.task(&task),
            SchedulerEvent::BufferCreated {
                bid,
                range,
                elem_size,
                elem_align,
                user_allocation,
            } => {
                self.cdag
                    .notify_buffer_created(bid, range, user_allocation.is_some());
                self.idag
                    .notify_buffer_created(bid, range, elem_size, elem_align, user_allocation);
            }
            SchedulerEvent::BufferNameChanged(bid, name) => {
                // The command graph is built on arrival, so it takes the name now; the
                // instruction graph in order with the queued commands.
                self.cdag.notify_buffer_name_changed(bid, &name);
                self.queue.push_back(Queued::BufferNameChanged(bid, name))
            }
            SchedulerEvent::BufferDestroyed(bid) => {
                self.queue.push_back(Queued::BufferDestroyed(bid));
                self.drain();
            }
            SchedulerEvent::HostObjectCreated(hoid, owned) => {
                self.cdag.notify_host_object_created(hoid);
                self.idag.notify_host_object_created(hoid, owned);
            }
            SchedulerEvent::HostObjectDestroyed(hoid) => {
                self.queue.push_back(Queued::HostObjectDestroyed(hoid));
                self.drain();
            }
            SchedulerEvent::SetLookahead(lookahead) => {
                self.lookahead = lookahead;
                self.drain();
            }
            SchedulerEvent::Flush => self.drain(),
            SchedulerEvent::EpochReached(epoch) => self.idag.prune_before_epoch(epoch),
        }
    }

    fn task(&mut self, task: &Arc<Task>) {
        #[cfg(test)]
        crate::thread_guard::inject_panic("scheduler", task.name());
        let start = self.trace.as_ref().map(TraceLog::now_us);
        let built = self.cdag.build_task(task);
        if let (Some(trace), Some(start)) = (&mut self.trace, start) {
            let args = vec![("task", json_string(&task.id().to_string()))];
            trace.span(
                SCHEDULER_TRACK,
                format!("build {}", task.label()),
                start,
                args,
            );
        }
        let commands = match built {
            Ok(commands) => commands,
            Err(error) if error.kind() == ErrorKind::AccessPattern => {
                // Access-pattern messages start with the task's title.
                self.sink.error(error);
                return;
            }
            Err(error) => {
                self.sink
                    .error(error.context(format!("task {}", task.label())));
                return;
            }
        };
        let mut force_flush = false;
        for command in commands {
            let hint = if self.lookahead == Lookahead::None {
                SchedulingHint::IsSelfContained
            } else {
                self.idag.anticipate(&command)
            };
            match command.kind() {
                CommandKind::Horizon { .. } => self.horizons_since_mergeable += 1,
                CommandKind::Epoch { .. } | CommandKind::Fence => force_flush = true,
                _ if hint == SchedulingHint::CouldMergeWithFutureCommands => {
                    self.horizons_since_mergeable = 0
                }
                _ => {}
            }
            self.queue.push_back(Queued::Command(command, hint));
        }
        if force_flush {
            self.drain();
            // A fence or epoch is awaited by the application: no holding back behind it.
            self.sink.flush();
        } else if self.lookahead == Lookahead::None {
            self.drain();
        } else {
            self.dequeue_ready();
        }
        if task.epoch_action() == Some(EpochAction::Shutdown) {
            self.drain();
            self.shutdown = true;
        }
    }

    /// Compiles queued commands from the head for as long as the lookahead rules allow.
    fn dequeue_ready(&mut self) {
        let flush_all = self.lookahead == Lookahead::Auto && self.horizons_since_mergeable >= 2;
        if flush_all {
            self.drain();
            return;
        }
        while let Some(Queued::Command(_, SchedulingHint::IsSelfContained)) = self.queue.front() {
            let head = self.queue.pop_front().expect("non-empty");
            self.compile(head);
        }
    }

    /// Compiles everything queued.
    fn drain(&mut self) {
        while let Some(head) = self.queue.pop_front() {
            self.compile(head);
        }
        self.horizons_since_mergeable = 0;
    }

    fn compile(&mut self, queued: Queued) {
        let start = self.trace.as_ref().map(TraceLog::now_us);
        let batch = match queued {
            Queued::Command(command, _) => match self.traced_compile(&command, start) {
                Ok(batch) => {
                    if let Some(error) = self.idag.take_policy_error() {
                        // The message names the task already; the batch still runs.
                        self.sink.batch(batch);
                        self.sink.error(error);
                        return;
                    }
                    batch
                }
                Err(error) => {
                    self.sink
                        .error(error.context(format!("task {}", command.task().label())));
                    return;
                }
            },
            Queued::BufferDestroyed(bid) => {
                self.cdag.notify_buffer_destroyed(bid);
                self.idag.notify_buffer_destroyed(bid)
            }
            Queued::BufferNameChanged(bid, name) => {
                self.idag.notify_buffer_name_changed(bid, &name);
                return;
            }
            Queued::HostObjectDestroyed(hoid) => {
                self.cdag.notify_host_object_destroyed(hoid);
                self.idag.notify_host_object_destroyed(hoid)
            }
        };
        if !batch.0.is_empty() || !batch.1.is_empty() {
            self.sink.batch(batch);
        }
    }

    fn traced_compile(&mut self, command: &CommandRef, start: Option<f64>) -> Result<Batch> {
        let batch = self.idag.compile(command);
        if let (Some(trace), Some(start)) = (&mut self.trace, start) {
            let mut args = vec![
                ("command", json_string(&command.id().to_string())),
                ("task", json_string(&command.task().id().to_string())),
            ];
            if let Ok((instructions, _)) = &batch {
                args.push(("instructions", instructions.len().to_string()));
            }
            let name = format!("compile {} {}", command.kind().name(), command.id());
            trace.span(SCHEDULER_TRACK, name, start, args);
        }
        batch
    }
}
