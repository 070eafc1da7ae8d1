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
//!
//! The work has two stages, `CommandStage` (tasks to commands) and `InstructionStage`
//! (the lookahead queue, commands to instructions, the sink). With [`SchedulerThreads::Two`]
//! each runs on a thread of its own, connected by a bounded channel of runs of `Compile` records
//! in program order: the command graph of one task is built while the instructions of the
//! previous one are. The busier stage then does 1.6× fewer instructions per task than one thread
//! (`benches/scheduler_stages.rs`), but a running program did not get faster on the GPU host,
//! where the scheduler does not pace it, and on one host device a program submitting far ahead
//! used more memory and was no faster; so the runtime uses two only when asked (or for a dry
//! run).

mod command_stage;
mod instruction_stage;

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, TryRecvError, bounded, unbounded};

use crate::command::CommandGraphGenerator;
use crate::debug::trace::{COMMAND_GRAPH_TRACK, SCHEDULER_TRACK, TraceLog};
use crate::error::{Error, Result};
use crate::grid::Range;
use crate::instruction::{Batch, InstructionGraphGenerator};
use crate::policy::Lookahead;
use crate::task::{EpochAction, Task, TaskType};
use crate::types::{AllocationId, BufferId, HostObjectId, TaskId};
use command_stage::{CommandStage, Compile};
use instruction_stage::{InstructionStage, Spent};

pub use crate::policy::SchedulerThreads;

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

/// How the scheduler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerOptions {
    /// How far ahead it looks before compiling commands.
    pub lookahead: Lookahead,
    /// One thread for both stages, or one each (`Auto` counts as one).
    pub threads: SchedulerThreads,
    /// With two threads: the instruction stage polls for its next input for
    /// [`STAGE_SPIN`] before it parks (where the process has a core for each of its threads).
    pub poll_before_parking: bool,
}

/// How long the instruction stage polls for input before it parks, where allowed: the next run
/// of a busy program usually follows within microseconds, and a parked thread takes several to
/// wake (tens on a VM's idle vCPU), a hop that one scheduler thread does not have.
pub const STAGE_SPIN: std::time::Duration = std::time::Duration::from_micros(20);

/// The application side of the scheduler thread (or threads).
pub struct SchedulerHandle {
    sender: Sender<SchedulerEvent>,
    threads: Option<SchedulerThreadHandles>,
}

enum SchedulerThreadHandles {
    One(JoinHandle<SchedulerOutput>),
    Two {
        commands: JoinHandle<(CommandGraphGenerator, Option<TraceLog>)>,
        instructions: JoinHandle<(InstructionGraphGenerator, Option<TraceLog>)>,
    },
}

impl SchedulerHandle {
    /// Starts the scheduler over the two generators of this node, on one thread or, with
    /// [`SchedulerThreads::Two`], on one thread per stage; with `trace`, it records a slice per
    /// task and per compiled command.
    pub fn start(
        cdag: CommandGraphGenerator,
        idag: InstructionGraphGenerator,
        options: SchedulerOptions,
        sink: Box<dyn SchedulerSink>,
        trace: Option<TraceLog>,
    ) -> Result<Self> {
        let SchedulerOptions {
            lookahead,
            threads,
            poll_before_parking,
        } = options;
        let (sender, receiver) = unbounded();
        let spawn_error =
            |e: std::io::Error| Error::internal(format!("cannot start the scheduler thread: {e}"));
        let handles = if threads == SchedulerThreads::Two {
            let command_trace = trace.as_ref().map(TraceLog::sibling);
            let commands = CommandStage::new(cdag, command_trace, COMMAND_GRAPH_TRACK);
            let mut instructions = InstructionStage::new(idag, lookahead, sink, trace);
            instructions.spent = Some(Spent::default());
            let (to_instructions, compile_inputs) = bounded(MAX_RUNS_IN_FLIGHT);
            let (to_commands, spent) = unbounded();
            let instructions = std::thread::Builder::new()
                .name("celerity-idag".into())
                .spawn(move || {
                    run_instruction_stage(
                        instructions,
                        compile_inputs,
                        to_commands,
                        poll_before_parking,
                    )
                })
                .map_err(spawn_error)?;
            let commands = std::thread::Builder::new()
                .name("celerity-scheduler".into())
                .spawn(move || run_command_stage(commands, receiver, (to_instructions, spent)))
                .map_err(spawn_error)?;
            SchedulerThreadHandles::Two {
                commands,
                instructions,
            }
        } else {
            let thread = std::thread::Builder::new()
                .name("celerity-scheduler".into())
                .spawn(move || {
                    let mut scheduler = Scheduler::new(cdag, idag, lookahead, sink);
                    scheduler.instructions.trace = trace;
                    scheduler.run(receiver)
                })
                .map_err(spawn_error)?;
            SchedulerThreadHandles::One(thread)
        };
        Ok(Self {
            sender,
            threads: Some(handles),
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

    /// Waits for the scheduler thread(s) to end (after the shutdown epoch) and takes the output.
    pub fn join(&mut self) -> Option<SchedulerOutput> {
        match self.threads.take()? {
            SchedulerThreadHandles::One(thread) => thread.join().ok(),
            SchedulerThreadHandles::Two {
                commands,
                instructions,
            } => {
                let (cdag, command_trace) = commands.join().ok()?;
                let (idag, trace) = instructions.join().ok()?;
                let trace = merged_trace(trace, command_trace);
                Some(SchedulerOutput { cdag, idag, trace })
            }
        }
    }
}

/// Most records the command stage holds back before it hands them to the instruction stage
/// anyway. Handing over one record at a time woke the instruction stage once per task (it
/// caught up and parked in between): on a 2-core VM that wake-up cost more than the stage split
/// saved (3.5 µs per task against 2.9 on one thread, `benches/scheduler_stages.rs`).
const MAX_HELD_RECORDS: usize = 64;

/// Most runs of records on their way from the command stage to the instruction stage; the
/// command stage waits when this many are. Unbounded, nothing kept the command stage from
/// running up to hundreds of thousands of commands ahead of the slower instruction stage in a
/// program that submits faster than the scheduler keeps up (`million_tasks`: 13 % slower than
/// one thread on an H100 host, where `runtime_throughput`'s chain, which waits every thousand
/// tasks, was 23 % faster); bounded, it was as fast as one thread there (docs/benchmarks.md,
/// "The stage hand-off bounded"). The program's backlog now waits in the application's queue,
/// as with one thread.
const MAX_RUNS_IN_FLIGHT: usize = 4;

/// The command stage's thread: builds commands until the shutdown epoch (or until the
/// application side hangs up) and hands everything on to the instruction stage, in runs: what
/// it has made goes over once it holds [`MAX_HELD_RECORDS`], or before it blocks for the next
/// event (the application is slower, or waits), after a fence or epoch, or after the shutdown
/// epoch.
fn run_command_stage(
    mut stage: CommandStage,
    events: Receiver<SchedulerEvent>,
    (to_instructions, spent): (Sender<Vec<Compile>>, Receiver<Spent>),
) -> (CommandGraphGenerator, Option<TraceLog>) {
    if let Some(trace) = &mut stage.trace {
        trace.name_track(COMMAND_GRAPH_TRACK, "scheduler (command graph)");
    }
    let mut held: Vec<Compile> = Vec::new();
    let mut empty_runs: Vec<Vec<Compile>> = Vec::new();
    // The instruction stage ends only after the shutdown epoch, the last record.
    let hand_over = |held: &mut Vec<Compile>, empty_runs: &mut Vec<Vec<Compile>>| {
        if !held.is_empty() {
            let next = empty_runs.pop().unwrap_or_default();
            let _ = to_instructions.send(std::mem::replace(held, next));
        }
    };
    // What the instruction stage is done with is freed here, where it was allocated; its record
    // runs are filled again.
    let free_spent = |empty_runs: &mut Vec<Vec<Compile>>| {
        for mut returned in spent.try_iter() {
            empty_runs.append(&mut returned.runs);
        }
    };
    loop {
        free_spent(&mut empty_runs);
        let Some(event) = next_input(&events, false, || hand_over(&mut held, &mut empty_runs))
        else {
            break;
        };
        let (shutdown, awaited) = match &event {
            SchedulerEvent::Task(task) => (
                task.epoch_action() == Some(EpochAction::Shutdown),
                task.epoch_action().is_some() || task.task_type() == TaskType::Fence,
            ),
            _ => (false, false),
        };
        stage.receive(event, &mut |input| held.push(input));
        if shutdown {
            break;
        }
        // A fence or epoch is awaited by the application: no holding back behind it.
        if awaited || held.len() >= MAX_HELD_RECORDS {
            hand_over(&mut held, &mut empty_runs);
        }
    }
    hand_over(&mut held, &mut empty_runs);
    stage.into_parts()
}

/// The instruction stage's thread: compiles until the shutdown epoch is handed over (or the
/// command stage hangs up); before it blocks for input, the sink hands over what it holds.
fn run_instruction_stage(
    mut stage: InstructionStage,
    inputs: Receiver<Vec<Compile>>,
    to_commands: Sender<Spent>,
    poll_before_parking: bool,
) -> (InstructionGraphGenerator, Option<TraceLog>) {
    if let Some(trace) = &mut stage.trace {
        trace.name_track(SCHEDULER_TRACK, "scheduler");
    }
    'inputs: while let Some(mut run) =
        next_input(&inputs, poll_before_parking, || stage.sink.flush())
    {
        for input in run.drain(..) {
            stage.receive(input);
            if stage.shutdown {
                break 'inputs;
            }
        }
        // Back to the command stage's thread, to be freed there (see `Spent`); once that thread
        // has ended (after the shutdown epoch) they are freed here.
        if let Some(spent) = &mut stage.spent {
            spent.runs.push(run);
            let _ = to_commands.send(std::mem::take(spent));
        }
    }
    stage.sink.flush();
    stage.into_parts()
}

/// The internal error a panic inside a scheduler stage becomes.
fn scheduler_panic(payload: &(dyn std::any::Any + Send)) -> Error {
    let message = crate::thread_guard::panic_message(payload);
    Error::internal(format!(
        "the scheduler failed (a bug in celerity, please report it): {message}"
    ))
}

/// The next message of `inputs`, `None` once its senders are gone. When none is waiting,
/// `before_blocking` runs first (a sink or a held run hands over what it holds, so that nothing
/// waits behind this thread's sleep); with `poll`, the thread then polls for [`STAGE_SPIN`]
/// before it blocks.
fn next_input<T>(inputs: &Receiver<T>, poll: bool, before_blocking: impl FnOnce()) -> Option<T> {
    match inputs.try_recv() {
        Ok(input) => return Some(input),
        Err(TryRecvError::Disconnected) => return None,
        Err(TryRecvError::Empty) => {}
    }
    before_blocking();
    if poll {
        let start = std::time::Instant::now();
        while start.elapsed() < STAGE_SPIN {
            match inputs.try_recv() {
                Ok(input) => return Some(input),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
    }
    inputs.recv().ok()
}

/// The scheduler's trace: the compile slices with the command stage's build slices merged in.
fn merged_trace(trace: Option<TraceLog>, command_trace: Option<TraceLog>) -> Option<TraceLog> {
    let mut trace = trace?;
    if let Some(command_trace) = command_trace {
        trace.merge(command_trace);
    }
    Some(trace)
}

/// Both stages on one thread (also usable without a thread, for tests and benchmarks).
pub struct Scheduler {
    commands: CommandStage,
    instructions: InstructionStage,
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
            commands: CommandStage::new(cdag, None, SCHEDULER_TRACK),
            instructions: InstructionStage::new(idag, lookahead, sink, None),
        }
    }

    fn run(mut self, receiver: Receiver<SchedulerEvent>) -> SchedulerOutput {
        if let Some(trace) = &mut self.instructions.trace {
            trace.name_track(SCHEDULER_TRACK, "scheduler");
            // One thread, one track: build and compile slices alternate on it.
            self.commands.trace = Some(trace.sibling());
        }
        // Before blocking for the next event, the sink hands over what it holds (the
        // application thread is slower than this one, or waits).
        while let Some(event) = next_input(&receiver, false, || self.instructions.sink.flush()) {
            let instructions = &mut self.instructions;
            self.commands
                .receive(event, &mut |input| instructions.receive(input));
            if self.instructions.shutdown {
                break;
            }
        }
        self.instructions.sink.flush();
        let (cdag, command_trace) = self.commands.into_parts();
        let (idag, trace) = self.instructions.into_parts();
        let trace = merged_trace(trace, command_trace);
        SchedulerOutput { cdag, idag, trace }
    }

    /// Processes one event (a panic of a generator propagates).
    pub fn handle(&mut self, event: SchedulerEvent) {
        let instructions = &mut self.instructions;
        self.commands
            .handle(event, &mut |input| instructions.handle(input));
    }
}

#[cfg(test)]
mod tests;
