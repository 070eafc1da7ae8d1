//! [`CommandGroup`]: what a submission records before it becomes a task, and [`TaskSpec`]: the
//! kind of submission (kernel or host task) with its iteration space.

use smallvec::SmallVec;

use super::access::AccessMode;
use super::range_mapper::{BufferLabel, RangeMapper};
use super::task::{Hints, TaskPayload};
use crate::error::{Error, Result};
use crate::grid::{Id, Range};
use crate::types::{BufferId, CollectiveGroupId, HostObjectId, ReductionId};

/// A reduction request of a command group.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReductionRequest {
    /// The reduction's id (the runtime keeps the operator under it).
    pub rid: ReductionId,
    /// The output buffer (0-D or one element).
    pub bid: BufferId,
    /// Start from the identity instead of including the buffer's previous value.
    pub initialize_to_identity: bool,
}

/// The description of a command group, filled access by access (`celerity_cg_*`). The task
/// manager validates it on submission; nothing is checked before.
#[derive(Default, Clone, Debug)]
pub struct CommandGroup {
    /// Accesses in call order (the accessor index of the C ABI).
    pub accesses: SmallVec<[(BufferId, AccessMode, RangeMapper); 4]>,
    /// Host objects with side effects, in call order.
    pub side_effects: SmallVec<[HostObjectId; 2]>,
    /// Reductions, in call order.
    pub reductions: SmallVec<[ReductionRequest; 1]>,
    /// Debug name.
    pub name: Option<String>,
    /// Scheduling hints.
    pub hints: Hints,
    /// Split granularity (`celerity_cg_constrain_split`); `None`: 1 in every dimension.
    pub granularity: Option<Range>,
    /// What the runtime needs to run the task; carried unchanged into the task.
    pub payload: Option<TaskPayload>,
}

impl CommandGroup {
    /// An empty command group.
    #[inline]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an access.
    // Always inlined: the builder moves the whole group (about 300 bytes) in and out of every
    // call, which only inlining into the caller's chain of calls elides.
    #[inline(always)]
    pub fn access(mut self, bid: BufferId, mode: AccessMode, mapper: RangeMapper) -> Self {
        self.accesses.push((bid, mode, mapper));
        self
    }

    /// Shorthand for a `Read` access.
    #[inline]
    pub fn read(self, bid: BufferId, mapper: RangeMapper) -> Self {
        self.access(bid, AccessMode::Read, mapper)
    }

    /// Shorthand for a `DiscardWrite` access.
    #[inline]
    pub fn discard_write(self, bid: BufferId, mapper: RangeMapper) -> Self {
        self.access(bid, AccessMode::DiscardWrite, mapper)
    }

    /// Shorthand for a `ReadWrite` access.
    #[inline]
    pub fn read_write(self, bid: BufferId, mapper: RangeMapper) -> Self {
        self.access(bid, AccessMode::ReadWrite, mapper)
    }

    /// Adds a side effect on a host object.
    #[inline]
    pub fn side_effect(mut self, hoid: HostObjectId) -> Self {
        self.side_effects.push(hoid);
        self
    }

    /// Adds a reduction into `bid`.
    #[inline]
    pub fn reduction(
        mut self,
        rid: ReductionId,
        bid: BufferId,
        initialize_to_identity: bool,
    ) -> Self {
        self.reductions.push(ReductionRequest {
            rid,
            bid,
            initialize_to_identity,
        });
        self
    }

    /// Sets the debug name.
    #[inline]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Hints a 2-D split.
    #[inline]
    pub fn hint_split_2d(mut self) -> Self {
        self.hints.split_2d = true;
        self
    }

    /// Hints oversubscription by `factor` (0 is refused on submission).
    #[inline]
    pub fn hint_oversubscribe(mut self, factor: u32) -> Self {
        self.hints.oversubscribe = factor;
        self
    }

    /// Declares that the kernel's launcher only launches kernels on its stream (no host memory
    /// read through the stream, no synchronisation), so a CUDA backend may capture its chunks
    /// into graph batches.
    #[inline]
    pub fn hint_launch_only(mut self) -> Self {
        self.hints.launch_only = true;
        self
    }

    /// Constrains splits to multiples of `granularity`.
    #[inline]
    pub fn constrain_split(mut self, granularity: Range) -> Self {
        self.granularity = Some(granularity);
        self
    }

    /// Attaches the runtime's payload.
    #[inline]
    pub fn payload(mut self, payload: TaskPayload) -> Self {
        self.payload = Some(payload);
        self
    }
}

/// The largest `hint_oversubscribe` factor: each device chunk becomes at most this many, so a
/// task's chunk lists stay bounded however absurd the hint (C++ Celerity has no limit, but a
/// factor beyond a few per device only costs scheduling time).
pub const MAX_OVERSUBSCRIBE: u32 = 1 << 12;

/// The command-group rules that do not need the task's iteration space, in one wording for the
/// task manager (at submission) and the C ABI (at the `celerity_cg_*` call that breaks them).
impl CommandGroup {
    /// Refuses an oversubscription factor of 0 or above `MAX_OVERSUBSCRIBE`.
    pub fn check_oversubscribe(factor: u32) -> Result<()> {
        if factor == 0 {
            return Err(Error::invalid_argument(
                "hint_oversubscribe: argument `factor` is 0; an oversubscription factor 0 is refused (it must be at least 1)",
            ));
        }
        if factor > MAX_OVERSUBSCRIBE {
            return Err(Error::invalid_argument(format!(
                "hint_oversubscribe: argument `factor` {factor} exceeds the limit of {MAX_OVERSUBSCRIBE} chunks per device"
            )));
        }
        Ok(())
    }

    /// Refuses an access of `buffer` when a reduction of the same group targets it.
    pub fn check_access(buffer: BufferLabel<'_>, reduced: bool) -> Result<()> {
        if reduced {
            return Err(both_accessed_and_reduced(buffer));
        }
        Ok(())
    }

    /// Refuses a reduction into `buffer` (of `elements` elements) when it has more than one
    /// element, when the group already reduces into it, or when the group accesses it.
    pub fn check_reduction(
        buffer: BufferLabel<'_>,
        elements: usize,
        already_reduced: bool,
        accessed: bool,
    ) -> Result<()> {
        if elements != 1 {
            return Err(Error::invalid_argument(format!(
                "reduction: buffer {buffer} has {elements} elements; a reduction needs a buffer of one element"
            )));
        }
        if already_reduced {
            return Err(Error::invalid_argument(format!(
                "reduction: two reductions on buffer {buffer} in one command group"
            )));
        }
        if accessed {
            return Err(both_accessed_and_reduced(buffer));
        }
        Ok(())
    }
}

fn both_accessed_and_reduced(buffer: BufferLabel<'_>) -> Error {
    Error::invalid_argument(format!(
        "reduction: buffer {buffer} is both accessed and reduced in one command group"
    ))
}

/// The host task kinds of the C ABI (`celerity_host_task_kind`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostTaskKind {
    /// Once, on node 0.
    OnMasterNode,
    /// Once, on one node chosen by the runtime.
    Once,
    /// Over an iteration space, split across nodes like a kernel.
    Distributed,
    /// One chunk on every node, serialised per collective group.
    Collective,
}

/// What is submitted, with its iteration space: turns a [`CommandGroup`] into a task of the
/// matching [`TaskType`](super::TaskType).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TaskSpec {
    /// `celerity_submit_parallel_for`: a device kernel.
    DeviceKernel {
        /// Dimensionality (0 to 3).
        dims: usize,
        /// Extent of the iteration space (padded with 1).
        range: Range,
        /// Offset of the first item (padded with 0).
        offset: Id,
    },
    /// A distributed host task over an iteration space.
    HostDistributed {
        /// Dimensionality (0 to 3).
        dims: usize,
        /// Extent of the iteration space (padded with 1).
        range: Range,
        /// Offset of the first item (padded with 0).
        offset: Id,
    },
    /// A host task run once, on a node chosen by the runtime (a 0-D distributed host task).
    HostOnce,
    /// A host task run once on node 0.
    MasterNode,
    /// A collective host task in the given group (never [`CollectiveGroupId::NONE`]).
    Collective(CollectiveGroupId),
}

impl TaskSpec {
    /// A device kernel over `range` at offset 0.
    #[inline]
    pub fn device(dims: usize, range: Range) -> Self {
        TaskSpec::DeviceKernel {
            dims,
            range,
            offset: Id::ZERO,
        }
    }

    /// A distributed host task over `range` at offset 0.
    #[inline]
    pub fn host(dims: usize, range: Range) -> Self {
        TaskSpec::HostDistributed {
            dims,
            range,
            offset: Id::ZERO,
        }
    }

    /// The spec of the C ABI's `celerity_submit_host_task` arguments (`group` is only read for
    /// `Collective`, `dims` and `range` only for `Distributed`).
    #[inline]
    pub fn from_host_task_kind(
        kind: HostTaskKind,
        dims: usize,
        range: Range,
        group: CollectiveGroupId,
    ) -> Self {
        match kind {
            HostTaskKind::OnMasterNode => TaskSpec::MasterNode,
            HostTaskKind::Once => TaskSpec::HostOnce,
            HostTaskKind::Distributed => TaskSpec::host(dims, range),
            HostTaskKind::Collective => TaskSpec::Collective(group),
        }
    }
}
