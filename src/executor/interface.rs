//! What flows into and out of the executor thread: the messages the runtime and the scheduler
//! send ([`ExecutorMessage`], processed in order), the callbacks it reports through
//! ([`ExecutorDelegate`]) and its settings. Both the live and the dry-run executor speak it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::comm::OutboundPilot;
use crate::debug::trace::TraceLog;
use crate::error::Error;
use crate::instruction::Instruction;
use crate::policy::ErrorPolicy;
use crate::task::spmd::TaskDigest;
use crate::types::{AllocationId, BufferId, HostObjectId, ReductionId, TaskId};
use crate::user_objects::{HostObjectInstance, Reducer, UserMemory};

/// What the executor reports back, on its own thread.
pub trait ExecutorDelegate: Send + Sync {
    /// Horizon `task` has executed.
    fn horizon_reached(&self, task: TaskId);
    /// Epoch `task` has executed (called before its promise is fulfilled).
    fn epoch_reached(&self, task: TaskId);
    /// An instruction failed; the message names its task.
    fn async_error(&self, error: Error);
    /// Like [`Self::async_error`] for an error that was already logged (by this executor in its
    /// own words, or by the node where it happened): fail the calls without logging it again.
    fn record_error(&self, error: Error) {
        self.async_error(error);
    }
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
    /// This node fails with the error (e.g. the program exits without shutdown): the other
    /// nodes are told, as for a failing task.
    Fail(Error),
    /// The digests of the tasks created in SPMD comparison window `n` (`check_spmd`): sent to
    /// the other nodes and compared with theirs.
    SpmdWindow(u64, Vec<TaskDigest>),
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
    /// Poll briefly for completions before parking (the process has a core per thread).
    pub poll_when_idle: bool,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            stall_timeout: Duration::from_secs(20),
            trace_epoch: None,
            accessor_boundary_check: ErrorPolicy::Ignore,
            poll_when_idle: false,
        }
    }
}
