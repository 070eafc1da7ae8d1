//! The first stage of the scheduler: tasks become this node's commands (the command graph) and
//! leave, with every other event, as [`Compile`] records for the instruction stage, in program
//! order. On machines with a core to spare the two stages run on threads of their own, so that
//! the command graph of one task is built while the instructions of the previous one are.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use super::SchedulerEvent;
use crate::command::{CommandGraphGenerator, CommandRef};
use crate::debug::json_string;
use crate::debug::trace::TraceLog;
use crate::error::{Error, ErrorKind};
use crate::grid::Range;
use crate::policy::Lookahead;
use crate::task::Task;
use crate::thread_guard::panic_message;
use crate::types::{AllocationId, BufferId, HostObjectId, TaskId};

/// What the command stage hands the instruction stage, in program order.
pub(crate) enum Compile {
    /// The commands of a task (none for a task without local work).
    Task {
        task: Arc<Task>,
        commands: Vec<CommandRef>,
    },
    /// A new buffer (see [`SchedulerEvent::BufferCreated`]).
    BufferCreated {
        bid: BufferId,
        range: Range,
        elem_size: usize,
        elem_align: usize,
        user_allocation: Option<AllocationId>,
    },
    /// A buffer's debug name, in order with the queued commands.
    BufferNameChanged(BufferId, String),
    /// A buffer's last use was submitted.
    BufferDestroyed(BufferId),
    /// A new host object (owned or not).
    HostObjectCreated(HostObjectId, bool),
    /// A host object's last use was submitted.
    HostObjectDestroyed(HostObjectId),
    /// The lookahead changed.
    SetLookahead(Lookahead),
    /// Compile everything queued now.
    Flush,
    /// The executor reached this epoch.
    EpochReached(TaskId),
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
            let message = panic_message(payload.as_ref());
            let error = Error::internal(format!(
                "the scheduler failed (a bug in celerity, please report it): {message}"
            ));
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
        match event {
            SchedulerEvent::Task(task) => self.task(task, out),
            SchedulerEvent::BufferCreated {
                bid,
                range,
                elem_size,
                elem_align,
                user_allocation,
            } => {
                self.cdag
                    .notify_buffer_created(bid, range, user_allocation.is_some());
                out(Compile::BufferCreated {
                    bid,
                    range,
                    elem_size,
                    elem_align,
                    user_allocation,
                });
            }
            SchedulerEvent::BufferNameChanged(bid, name) => {
                // The command graph is built on arrival, so it takes the name now; the
                // instruction graph in order with the queued commands.
                self.cdag.notify_buffer_name_changed(bid, &name);
                out(Compile::BufferNameChanged(bid, name));
            }
            SchedulerEvent::BufferDestroyed(bid) => {
                // Every task using it has been built: the command graph forgets it now.
                self.cdag.notify_buffer_destroyed(bid);
                out(Compile::BufferDestroyed(bid));
            }
            SchedulerEvent::HostObjectCreated(hoid, owned) => {
                self.cdag.notify_host_object_created(hoid);
                out(Compile::HostObjectCreated(hoid, owned));
            }
            SchedulerEvent::HostObjectDestroyed(hoid) => {
                self.cdag.notify_host_object_destroyed(hoid);
                out(Compile::HostObjectDestroyed(hoid));
            }
            SchedulerEvent::SetLookahead(lookahead) => out(Compile::SetLookahead(lookahead)),
            SchedulerEvent::Flush => out(Compile::Flush),
            SchedulerEvent::EpochReached(epoch) => out(Compile::EpochReached(epoch)),
        }
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
