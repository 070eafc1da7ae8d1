//! The second stage of the scheduler: the lookahead queue of commands, their compilation into
//! instructions (the instruction graph) and the hand-off of batches to the sink.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use super::command_stage::Compile;
use super::{SchedulerEvent, SchedulerSink, scheduler_panic};
use crate::command::{CommandBatch, CommandKind, CommandRef};
use crate::debug::json_string;
use crate::debug::trace::{SCHEDULER_TRACK, TraceLog};
use crate::error::{Error, Result};
use crate::instruction::{Batch, InstructionGraphGenerator, SchedulingHint};
use crate::policy::Lookahead;
use crate::task::{EpochAction, Task};
use crate::types::{BufferId, HostObjectId};

enum Queued {
    Command(CommandRef, SchedulingHint),
    BufferDestroyed(BufferId),
    BufferNameChanged(BufferId, String),
    HostObjectDestroyed(HostObjectId),
}

/// What the instruction stage is done with: with two threads it goes back to the command
/// stage's thread to be freed there. Commands, their lists and the record runs were allocated
/// there, and glibc's malloc returns a block freed on another thread to its arena under that
/// arena's lock: the two stages contended for it on every task (on a 2-core VM two threads were
/// then slower than one, `benches/scheduler_stages.rs`). The tasks' last references go too, so
/// that freeing a task (allocated on the application thread) costs the less busy stage.
#[derive(Default)]
pub(super) struct Spent {
    commands: Vec<CommandRef>,
    command_lists: Vec<CommandBatch>,
    tasks: Vec<Arc<Task>>,
    /// Emptied record runs, for the command stage to fill again.
    pub(super) runs: Vec<Vec<Compile>>,
}

/// The instruction graph generator, the lookahead queue in front of it and the sink behind it.
pub(crate) struct InstructionStage {
    idag: InstructionGraphGenerator,
    lookahead: Lookahead,
    pub(super) sink: Box<dyn SchedulerSink>,
    queue: VecDeque<Queued>,
    /// Horizon commands queued after the last command that could merge with later ones.
    horizons_since_mergeable: usize,
    /// The shutdown epoch was compiled (or failed): nothing follows.
    pub(super) shutdown: bool,
    /// Compile slices, on the scheduler's track.
    pub(super) trace: Option<TraceLog>,
    /// Set after a panic inside the generator: later tasks only fail what waits for them.
    broken: Option<Error>,
    /// With two threads: what goes back to the command stage's thread to be freed.
    pub(super) spent: Option<Spent>,
}

impl InstructionStage {
    pub(super) fn new(
        idag: InstructionGraphGenerator,
        lookahead: Lookahead,
        sink: Box<dyn SchedulerSink>,
        trace: Option<TraceLog>,
    ) -> Self {
        Self {
            idag,
            lookahead,
            sink,
            queue: VecDeque::new(),
            horizons_since_mergeable: 0,
            shutdown: false,
            trace,
            broken: None,
            spent: None,
        }
    }

    pub(super) fn into_parts(self) -> (InstructionGraphGenerator, Option<TraceLog>) {
        (self.idag, self.trace)
    }

    /// Handles `input`, catching a panic of the generator: it is reported to the sink as an
    /// internal error, and from then on tasks only fail what waits for them.
    pub(super) fn receive(&mut self, input: Compile) {
        let task = match &input {
            Compile::Task { task, .. } => Some(task.clone()),
            _ => None,
        };
        if let Some(broken) = self.broken.clone() {
            match (input, task) {
                (Compile::FailTask(task, error), _) => self.fail_task(&task, &error),
                (_, Some(task)) => self.fail_task(&task, &broken),
                _ => {}
            }
            return;
        }
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| self.handle(input))) {
            let error = scheduler_panic(payload.as_ref());
            self.sink.error(error.clone());
            self.broken = Some(error.clone());
            if let Some(task) = task {
                self.fail_task(&task, &error);
            }
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

    /// Handles one input.
    pub(super) fn handle(&mut self, input: Compile) {
        match input {
            Compile::Task { task, commands } => {
                self.task(&task, commands);
                if let Some(spent) = &mut self.spent {
                    spent.tasks.push(task);
                }
            }
            Compile::Event(event) => self.event(event),
            Compile::Error(error) => self.sink.error(error),
            Compile::FailTask(task, error) => self.fail_task(&task, &error),
        }
    }

    fn event(&mut self, event: SchedulerEvent) {
        match event {
            SchedulerEvent::BufferCreated {
                bid,
                range,
                elem_size,
                elem_align,
                user_allocation,
            } => {
                self.idag
                    .notify_buffer_created(bid, range, elem_size, elem_align, user_allocation)
            }
            SchedulerEvent::BufferNameChanged(bid, name) => {
                self.queue.push_back(Queued::BufferNameChanged(bid, name))
            }
            SchedulerEvent::BufferDestroyed(bid) => {
                self.queue.push_back(Queued::BufferDestroyed(bid));
                self.drain();
            }
            SchedulerEvent::HostObjectCreated(hoid, owned) => {
                self.idag.notify_host_object_created(hoid, owned)
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
            // Tasks arrive as `Compile::Task`, with their commands.
            SchedulerEvent::Task(task) => {
                let error = Error::internal(format!(
                    "task {} reached the instruction stage without its commands",
                    task.label()
                ));
                self.fail_task(&task, &error);
                self.sink.error(error);
            }
        }
    }

    fn task(&mut self, task: &Arc<Task>, mut commands: CommandBatch) {
        #[cfg(test)]
        crate::thread_guard::inject_panic("instruction stage", task.name());
        let mut force_flush = false;
        for command in commands.drain(..) {
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
        // an inline list has no block to free
        if let Some(spent) = &mut self.spent
            && commands.spilled()
        {
            spent.command_lists.push(commands);
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
            Queued::Command(command, _) => match self.traced_compile_and_retire(command, start) {
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
                    self.sink.error(error);
                    return;
                }
            },
            Queued::BufferDestroyed(bid) => self.idag.notify_buffer_destroyed(bid),
            Queued::BufferNameChanged(bid, name) => {
                self.idag.notify_buffer_name_changed(bid, &name);
                return;
            }
            Queued::HostObjectDestroyed(hoid) => self.idag.notify_host_object_destroyed(hoid),
        };
        if !batch.0.is_empty() || !batch.1.is_empty() {
            self.sink.batch(batch);
        }
    }

    /// Compiles `command`, then lets it go (to the command stage's thread with two threads).
    fn traced_compile_and_retire(
        &mut self,
        command: CommandRef,
        start: Option<f64>,
    ) -> Result<Batch> {
        let batch = self.traced_compile(&command, start);
        let batch =
            batch.map_err(|error| error.context(format!("task {}", command.task().label())));
        if let Some(spent) = &mut self.spent {
            spent.commands.push(command);
        }
        batch
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
