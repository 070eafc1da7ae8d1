//! How the executor reports problems: each task's failure once (a task failing on four devices is
//! one problem), an allocation failure naming the task and buffer that needed it, and nothing for
//! the work that is dropped because its allocation failed (the failure was reported already).
//! Accessor boundary violations are reported when their chunk completes.

use std::sync::Arc;

use super::super::bounds_check::{self, ArmedCheck};
use super::{Executor, task_context};
use crate::backend::interface::KernelInvocation;
use crate::error::{Error, ErrorKind, Result};
use crate::instruction::InstructionKind;
use crate::policy::ErrorPolicy;
use crate::task::{BufferLabel, Task};
use crate::types::{AllocationId, InstructionId};

/// The message of the error that stands for "needs an allocation that failed": such work is
/// dropped without a report of its own.
const DROPPED: &str = "dropped: an allocation it needs failed";

/// The error that work needing a failed allocation stops with.
pub(super) fn dropped() -> Error {
    Error::new(ErrorKind::OutOfMemory, DROPPED)
}

impl Executor {
    /// The task of a kernel or host-task instruction.
    fn task_of(&self, id: InstructionId) -> Option<Arc<Task>> {
        match self.instructions.get(&id).map(|i| i.kind()) {
            Some(
                InstructionKind::DeviceKernel { task, .. } | InstructionKind::HostTask { task, .. },
            ) => Some(task.clone()),
            _ => None,
        }
    }

    /// Reports a failure of instruction `id`, naming its task; once per task.
    pub(super) fn report(&mut self, id: InstructionId, error: Error) {
        if error.message() == DROPPED {
            return;
        }
        let context = match self.task_of(id) {
            Some(task) => {
                if !self.failed_tasks.insert(task.id()) {
                    return;
                }
                format!(
                    "{} ({} {id})",
                    task_context(&task),
                    self.instructions[&id].kind().name()
                )
            }
            None => match self.instructions.get(&id) {
                Some(instruction) => format!("{} instruction {id}", instruction.kind().name()),
                None => format!("instruction {id}"),
            },
        };
        self.fail(error.context(context));
    }

    /// Alloc instruction `id` failed: reported once, naming the first waiting task and buffer;
    /// work that needs the allocation is dropped and its free skipped.
    pub(super) fn allocation_failed(
        &mut self,
        id: InstructionId,
        allocation: AllocationId,
        error: Error,
    ) {
        self.failed_allocations.insert(allocation);
        let user = self.instructions.values().find_map(|i| match i.kind() {
            InstructionKind::DeviceKernel { task, accesses, .. }
            | InstructionKind::HostTask { task, accesses, .. } => accesses
                .iter()
                .position(|a| a.allocation == allocation)
                .map(|n| (task.clone(), n)),
            _ => None,
        });
        let Some((task, n)) = user else {
            self.report(id, error);
            return;
        };
        if !self.failed_tasks.insert(task.id()) {
            return;
        }
        let bid = task.access_map().accesses()[n].bid;
        let name = self.delegate.buffer_name(bid);
        let buffer = BufferLabel {
            id: bid,
            name: name.as_deref(),
        };
        // The backend's message names the memory and the size.
        let message = format!("{}: cannot allocate buffer {buffer}: {error}", task.title());
        self.fail(Error::new(error.kind(), message));
    }

    /// Reports the accessor boundary violations of completed instruction `id`.
    pub(super) fn report_bounds_violations(&mut self, id: InstructionId, check: &ArmedCheck) {
        if !check.violated() {
            return;
        }
        let Some(instruction) = self.instructions.get(&id) else {
            return;
        };
        let delegate = &self.delegate;
        let report =
            bounds_check::violations(check, instruction.kind(), &|bid| delegate.buffer_name(bid));
        let task = instruction.kind().task().map(|t| t.id());
        if let Some(error) =
            report.and_then(|r| bounds_check::apply(self.config.accessor_boundary_check, r))
        {
            self.failed_tasks.extend(task);
            self.fail(error);
        }
    }

    /// With `accessor_boundary_check`, gives `invocation`'s accessors their records.
    pub(super) fn arm_bounds_check(
        &mut self,
        id: InstructionId,
        invocation: &mut KernelInvocation,
    ) -> Result<()> {
        if self.config.accessor_boundary_check == ErrorPolicy::Ignore {
            return Ok(());
        }
        if let Some(check) =
            bounds_check::arm(self.backend.as_ref(), &mut self.spare_records, invocation)?
        {
            self.bounds_checks.insert(id, check);
        }
        Ok(())
    }
}
