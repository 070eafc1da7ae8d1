//! The first stage of the scheduler: tasks become this node's commands (the command graph) and
//! leave, with every other event, as [`Compile`] records for the instruction stage, in program
//! order. On machines with a core to spare the two stages run on threads of their own, so that
//! the command graph of one task is built while the instructions of the previous one are.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use super::{SchedulerEvent, scheduler_panic};
use crate::command::{CommandBatch, CommandGraphGenerator};
use crate::debug::json_string;
use crate::debug::trace::TraceLog;
use crate::error::{Error, ErrorKind};
use crate::task::Task;

/// What the command stage hands the instruction stage, in program order.
pub(crate) enum Compile {
    /// The commands of a task (none for a task without local work).
    Task {
        task: Arc<Task>,
        commands: CommandBatch,
    },
    /// Any other event, passed on as it came once the command graph has taken it into account
    /// (never [`SchedulerEvent::Task`]).
    Event(SchedulerEvent),
    /// A generation error for the error sink.
    Error(Error),
    /// `task` produced no commands because of `error`: what waits for it fails.
    FailTask(Arc<Task>, Error),
}

/// The command graph generator and what it needs to build one task after another.
pub(crate) struct CommandStage {
    cdag: CommandGraphGenerator,
    /// Build slices, on `track`.
    pub(super) trace: Option<TraceLog>,
    track: u64,
    /// Set after a panic inside the generator: later tasks only fail what waits for them.
    broken: Option<Error>,
}

impl CommandStage {
    pub(super) fn new(cdag: CommandGraphGenerator, trace: Option<TraceLog>, track: u64) -> Self {
        Self {
            cdag,
            trace,
            track,
            broken: None,
        }
    }

    pub(super) fn into_parts(self) -> (CommandGraphGenerator, Option<TraceLog>) {
        (self.cdag, self.trace)
    }

    /// Handles `event`, catching a panic of the generator: it is reported through `out` as an
    /// internal error, and from then on tasks only fail what waits for them.
    pub(super) fn receive(&mut self, event: SchedulerEvent, out: &mut dyn FnMut(Compile)) {
        let task = match &event {
            SchedulerEvent::Task(task) => Some(task.clone()),
            _ => None,
        };
        if let Some(broken) = self.broken.clone() {
            if let Some(task) = task {
                out(Compile::FailTask(task, broken));
            }
            return;
        }
        // A panic may come from `out` (the instruction stage on this thread): that stage
        // catches its own, so what reaches here is the command graph's.
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| self.handle(event, out))) {
            let error = scheduler_panic(payload.as_ref());
            out(Compile::Error(error.clone()));
            self.broken = Some(error.clone());
            if let Some(task) = task {
                out(Compile::FailTask(task, error));
            }
        }
    }

    /// Handles `event`: builds a task's commands, updates the generator's buffers and host
    /// objects, and passes everything on through `out`.
    pub(super) fn handle(&mut self, event: SchedulerEvent, out: &mut dyn FnMut(Compile)) {
        match &event {
            SchedulerEvent::Task(task) => return self.task(task.clone(), out),
            SchedulerEvent::BufferCreated {
                bid,
                range,
                user_allocation,
                ..
            } => self
                .cdag
                .notify_buffer_created(*bid, *range, user_allocation.is_some()),
            // The command graph is built on arrival, so it takes the name now; the instruction
            // graph in order with the queued commands.
            SchedulerEvent::BufferNameChanged(bid, name) => {
                self.cdag.notify_buffer_name_changed(*bid, name)
            }
            // Every task using it has been built: the command graph forgets it now.
            SchedulerEvent::BufferDestroyed(bid) => self.cdag.notify_buffer_destroyed(*bid),
            SchedulerEvent::HostObjectCreated(hoid, _) => {
                self.cdag.notify_host_object_created(*hoid)
            }
            SchedulerEvent::HostObjectDestroyed(hoid) => {
                self.cdag.notify_host_object_destroyed(*hoid)
            }
            SchedulerEvent::SetLookahead(_)
            | SchedulerEvent::Flush
            | SchedulerEvent::EpochReached(_) => {}
        }
        out(Compile::Event(event));
    }

    fn task(&mut self, task: Arc<Task>, out: &mut dyn FnMut(Compile)) {
        #[cfg(test)]
        crate::thread_guard::inject_panic("scheduler", task.name());
        let start = self.trace.as_ref().map(TraceLog::now_us);
        let built = self.cdag.build_task(&task);
        if let (Some(trace), Some(start)) = (&mut self.trace, start) {
            let args = vec![("task", json_string(&task.id().to_string()))];
            trace.span(self.track, format!("build {}", task.label()), start, args);
        }
        match built {
            Ok(commands) => out(Compile::Task { task, commands }),
            // Access-pattern messages start with the task's title.
            Err(error) if error.kind() == ErrorKind::AccessPattern => out(Compile::Error(error)),
            Err(error) => out(Compile::Error(
                error.context(format!("task {}", task.label())),
            )),
        }
    }
}
