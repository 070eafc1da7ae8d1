//! The instructions of a node's instruction graph (C++ Celerity: `instruction_graph.h`).
//!
//! An [`Instruction`] is immutable once its batch leaves the generator. It names its predecessors
//! by id only (never by pointer), so batches can cross threads and older instructions can be
//! dropped at any time. Every instruction carries what the executor needs to run it without
//! consulting the generator: allocation ids, boxes in buffer coordinates, the task (whose payload
//! holds the launcher or the fence / epoch promise) and transfer or message ids.

use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::grid::{GridBox, Id, Range, Region};
use crate::task::{EpochAction, Task};
use crate::types::{
    AllocationId, CollectiveGroupId, DeviceId, HostObjectId, InstructionId, MemoryId, MessageId,
    NodeId, ReductionId, TaskId, TransferId,
};

/// How the elements of a copy's source or destination are laid out in their allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyLayout {
    /// Row-major over the allocation's box (in buffer coordinates): the box of the copy region is
    /// found at its own coordinates inside that box.
    Strided {
        /// The box the allocation backs.
        allocation: GridBox,
    },
    /// The boxes of the copy region packed back to back (in the region's canonical box order),
    /// starting at a byte offset. Used by staging and gather allocations.
    Linearized {
        /// Where the first box starts.
        offset_bytes: usize,
    },
}

/// The allocation backing one accessor (or reduction output) of a kernel or host task. The i-th
/// entry of an access list belongs to the task's i-th access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferAccessAllocation {
    /// The allocation; null (raw id 0) for an access that touches nothing in this chunk.
    pub allocation: AllocationId,
    /// The box of the buffer the allocation backs.
    pub allocated_box: GridBox,
    /// The bounding box of what the chunk accesses (inside `allocated_box`).
    pub accessed_box: GridBox,
    /// Bytes per element of the buffer.
    pub elem_size: usize,
}

/// The access list of a kernel or host task: one entry per access of the task, stored inline for
/// a task of one access (a chained task) so that its instruction needs no allocation of its own.
pub type AccessAllocations = SmallVec<[BufferAccessAllocation; 1]>;

/// What the executor may release once a horizon or epoch has been reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstructionGarbage {
    /// Reductions whose reducers are no longer needed.
    pub reductions: Vec<ReductionId>,
    /// User allocations (memory 0) no instruction refers to any more.
    pub user_allocations: Vec<AllocationId>,
}

impl InstructionGarbage {
    /// Whether there is nothing to release.
    pub fn is_empty(&self) -> bool {
        self.reductions.is_empty() && self.user_allocations.is_empty()
    }
}

/// What an instruction does.
#[derive(Debug, Clone)]
pub enum InstructionKind {
    /// Allocate `size_bytes` with `align_bytes` alignment on the allocation's memory.
    Alloc {
        /// The new allocation (its memory is `allocation.memory()`).
        allocation: AllocationId,
        /// Bytes.
        size_bytes: usize,
        /// Alignment in bytes.
        align_bytes: usize,
    },
    /// Release an allocation.
    Free {
        /// The allocation.
        allocation: AllocationId,
    },
    /// Copy `region` (buffer coordinates) between two allocations.
    Copy {
        /// Source allocation.
        source: AllocationId,
        /// Destination allocation.
        dest: AllocationId,
        /// Source layout.
        source_layout: CopyLayout,
        /// Destination layout.
        dest_layout: CopyLayout,
        /// The copied elements.
        region: Region,
        /// Bytes per element.
        elem_size: usize,
    },
    /// Launch one chunk of a device task on one device.
    DeviceKernel {
        /// The device.
        device: DeviceId,
        /// The task (its payload holds the launcher).
        task: Arc<Task>,
        /// The chunk of the iteration space.
        execution_box: GridBox,
        /// One entry per access of the task.
        accesses: AccessAllocations,
        /// One entry per reduction of the task (its partial-result slot).
        reductions: Vec<BufferAccessAllocation>,
        /// Bytes read plus bytes written, a scheduling estimate.
        estimated_traffic_bytes: usize,
    },
    /// Run one chunk of a host task on a host lane.
    HostTask {
        /// The task (its payload holds the launcher).
        task: Arc<Task>,
        /// The chunk of the iteration space.
        execution_box: GridBox,
        /// The task's global range (host tasks see it).
        global_range: Range,
        /// One entry per access of the task.
        accesses: AccessAllocations,
        /// The collective group ([`CollectiveGroupId::NONE`] unless collective).
        collective_group: CollectiveGroupId,
    },
    /// Send one box to a peer; its pilot (same message id) went out with the batch.
    Send {
        /// The receiving node.
        to: NodeId,
        /// Pairs the payload with its pilot.
        message: MessageId,
        /// The host allocation holding the data.
        source: AllocationId,
        /// Extent of that allocation.
        allocation_range: Range,
        /// Offset of the sent box inside the allocation.
        offset_in_allocation: Id,
        /// Extent of the sent box.
        send_range: Range,
        /// Bytes per element.
        elem_size: usize,
    },
    /// Receive a region of a transfer, in any number of fragments, into a host allocation.
    Receive {
        /// The transfer.
        transfer: TransferId,
        /// The received elements.
        region: Region,
        /// The destination allocation.
        dest: AllocationId,
        /// The box it backs.
        allocated_box: GridBox,
        /// Bytes per element.
        elem_size: usize,
    },
    /// Bind a host allocation to a transfer whose parts are awaited by [`Self::AwaitReceive`]s.
    SplitReceive {
        /// The transfer.
        transfer: TransferId,
        /// Everything received into the allocation.
        region: Region,
        /// The destination allocation.
        dest: AllocationId,
        /// The box it backs.
        allocated_box: GridBox,
        /// Bytes per element.
        elem_size: usize,
    },
    /// Complete once `region` of a split receive has arrived.
    AwaitReceive {
        /// The transfer.
        transfer: TransferId,
        /// The awaited part.
        region: Region,
    },
    /// Gather one slot per node (at `node * chunk_bytes`) of a reduction's partial results.
    GatherReceive {
        /// The transfer (with its reduction id).
        transfer: TransferId,
        /// The gather allocation.
        dest: AllocationId,
        /// Bytes per node's slot.
        node_chunk_bytes: usize,
    },
    /// Fill `num_values` slots of an allocation with the reduction's identity.
    FillIdentity {
        /// The reduction.
        reduction: ReductionId,
        /// The allocation.
        allocation: AllocationId,
        /// Number of values.
        num_values: usize,
    },
    /// Combine `num_source_values` values of `source` into the single value at `dest`.
    Reduce {
        /// The reduction.
        reduction: ReductionId,
        /// The gathered values.
        source: AllocationId,
        /// How many.
        num_source_values: usize,
        /// The host allocation of the buffer receiving the result.
        dest: AllocationId,
    },
    /// Fulfil a fence's promise (held by the task's payload).
    Fence {
        /// The fence task.
        task: Arc<Task>,
    },
    /// Destroy the instance of an owned host object.
    DestroyHostObject {
        /// The host object.
        host_object: HostObjectId,
    },
    /// Clone a communicator (a collective operation).
    CloneCollectiveGroup {
        /// The group cloned (the root group).
        original: CollectiveGroupId,
        /// The new group.
        new: CollectiveGroupId,
    },
    /// A horizon: report it reached and release garbage.
    Horizon {
        /// The horizon task.
        task: TaskId,
        /// What may be released.
        garbage: InstructionGarbage,
    },
    /// An epoch: report it reached, act on it, fulfil its promise and release garbage.
    Epoch {
        /// The epoch task (its payload holds the promise, if any).
        task: Arc<Task>,
        /// Init, none, barrier or shutdown.
        action: EpochAction,
        /// What may be released.
        garbage: InstructionGarbage,
    },
}

/// Where an instruction runs, as far as the generator knows: the executor maps this onto its
/// queues (its out-of-order engine derives its own view from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Synchronous or completed through the communicator.
    Immediate,
    /// Allocation or free on a memory.
    Allocation {
        /// The memory.
        memory: MemoryId,
    },
    /// A host task.
    Host,
    /// A kernel on a device.
    Device {
        /// The device.
        device: DeviceId,
    },
    /// A copy between two memories.
    Copy {
        /// Source memory.
        source: MemoryId,
        /// Destination memory.
        dest: MemoryId,
    },
}

/// Priority offsets per instruction kind (higher runs first among ready instructions); a batch
/// compiled for a push adds [`priority::PUSH_BASE_PRIORITY`].
pub mod priority {
    /// Frees run only when nothing else is ready.
    pub const FREE: i32 = -1;
    /// Allocations are slow and synchronous: postpone them.
    pub const ALLOC: i32 = 1;
    /// Sends and the receive family.
    pub const TRANSFER: i32 = 2;
    /// Fences.
    pub const FENCE: i32 = 3;
    /// Kernels and host tasks: quick to launch, long to run.
    pub const KERNEL: i32 = 4;
    /// Horizons and epochs free the pipeline.
    pub const HORIZON: i32 = 5;
    /// Copies: a stalled copy may block kernels on peer devices.
    pub const COPY: i32 = 6;
    /// Everything else.
    pub const OTHER: i32 = 0;
    /// Added to every instruction generated for a push command.
    pub const PUSH_BASE_PRIORITY: i32 = 10;
}

impl InstructionKind {
    /// The priority offset of this kind.
    pub fn priority_offset(&self) -> i32 {
        use InstructionKind as K;
        match self {
            K::Free { .. } => priority::FREE,
            K::Alloc { .. } => priority::ALLOC,
            K::Send { .. }
            | K::Receive { .. }
            | K::SplitReceive { .. }
            | K::AwaitReceive { .. } => priority::TRANSFER,
            K::Fence { .. } => priority::FENCE,
            K::DeviceKernel { .. } | K::HostTask { .. } => priority::KERNEL,
            K::Horizon { .. } | K::Epoch { .. } => priority::HORIZON,
            K::Copy { .. } => priority::COPY,
            K::GatherReceive { .. }
            | K::FillIdentity { .. }
            | K::Reduce { .. }
            | K::DestroyHostObject { .. }
            | K::CloneCollectiveGroup { .. } => priority::OTHER,
        }
    }

    /// The task a kernel, host task, fence or epoch runs for.
    pub fn task(&self) -> Option<&Arc<Task>> {
        use InstructionKind as K;
        match self {
            K::DeviceKernel { task, .. }
            | K::HostTask { task, .. }
            | K::Fence { task }
            | K::Epoch { task, .. } => Some(task),
            _ => None,
        }
    }

    /// Short lower-case name (`"alloc"`, `"copy"`, ...).
    pub fn name(&self) -> &'static str {
        use InstructionKind as K;
        match self {
            K::Alloc { .. } => "alloc",
            K::Free { .. } => "free",
            K::Copy { .. } => "copy",
            K::DeviceKernel { .. } => "device kernel",
            K::HostTask { .. } => "host task",
            K::Send { .. } => "send",
            K::Receive { .. } => "receive",
            K::SplitReceive { .. } => "split receive",
            K::AwaitReceive { .. } => "await receive",
            K::GatherReceive { .. } => "gather receive",
            K::FillIdentity { .. } => "fill identity",
            K::Reduce { .. } => "reduce",
            K::Fence { .. } => "fence",
            K::DestroyHostObject { .. } => "destroy host object",
            K::CloneCollectiveGroup { .. } => "clone collective group",
            K::Horizon { .. } => "horizon",
            K::Epoch { .. } => "epoch",
        }
    }
}

/// One instruction of a node's instruction graph.
#[derive(Clone)]
pub struct Instruction {
    pub(crate) id: InstructionId,
    pub(crate) priority: i32,
    pub(crate) dependencies: SmallVec<[InstructionId; 4]>,
    pub(crate) kind: InstructionKind,
}

impl Instruction {
    /// Its id (a per-node counter, starting with the init epoch's 0).
    #[inline]
    pub fn id(&self) -> InstructionId {
        self.id
    }

    /// Higher runs first among ready instructions.
    #[inline]
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// Predecessors (older instructions), each once.
    #[inline]
    pub fn dependencies(&self) -> &[InstructionId] {
        &self.dependencies
    }

    /// What it does.
    #[inline]
    pub fn kind(&self) -> &InstructionKind {
        &self.kind
    }

    /// Where it runs: the memories or device it involves.
    pub fn placement(&self) -> Placement {
        use InstructionKind as K;
        match &self.kind {
            K::Alloc { allocation, .. } | K::Free { allocation } => Placement::Allocation {
                memory: allocation.memory(),
            },
            K::Copy { source, dest, .. } => Placement::Copy {
                source: source.memory(),
                dest: dest.memory(),
            },
            K::DeviceKernel { device, .. } => Placement::Device { device: *device },
            K::HostTask { .. } => Placement::Host,
            _ => Placement::Immediate,
        }
    }
}

impl fmt::Debug for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instruction")
            .field("id", &self.id)
            .field("priority", &self.priority)
            .field("dependencies", &self.dependencies)
            .field("kind", &self.kind)
            .finish()
    }
}
