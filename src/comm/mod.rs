//! Communicators: how nodes exchange pilots, payloads and collectives.
//!
//! The executor talks to other nodes only through the [`Communicator`] trait (C++ Celerity:
//! `communicator.h`):
//!
//! * **Pilots** announce a payload before it is sent: which transfer (`TransferId`), which box of
//!   the buffer, and the `MessageId` that pairs pilot and payload. Pilots are fire-and-forget and
//!   polled without blocking, so a receiver can post its receive before or after the pilot
//!   arrives (the receive arbiter matches them).
//! * **Payloads** move a strided box straight from a sender's allocation into the receiver's
//!   allocation ([`Stride`]); both calls return an [`AsyncEvent`] completed by [`Communicator::poll`].
//! * **Collectives** (`collective_clone`, `collective_barrier`, `collective_gather_bytes`) must be called in the same order on
//!   every node. Clones are independent communicators that may be used from their own thread.
//!
//! Implementations: [`in_process`] (one or more nodes inside one process: the local
//! communicator of a single-process run and the multi-node test fabric) and, with the `mpi`
//! feature, the MPI communicator.

pub mod in_process;
#[cfg(feature = "mpi")]
pub mod mpi;

use crate::backend::event::AsyncEvent;
use crate::error::Result;
use crate::grid::{GridBox, Range, Subrange};
use crate::types::{MessageId, NodeId, TransferId};

/// The longest control message (`Communicator::broadcast_control`).
pub const CONTROL_MESSAGE_LIMIT: usize = 1 << 20;

/// The message that precedes a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PilotMessage {
    /// Pairs the pilot with its payload.
    pub id: MessageId,
    /// The transfer this payload belongs to.
    pub transfer: TransferId,
    /// The box of the buffer the payload carries (empty: "nothing from me", for gathers).
    pub region_box: GridBox,
}

/// A pilot to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboundPilot {
    /// The receiving node.
    pub to: NodeId,
    /// The message.
    pub message: PilotMessage,
}

/// A pilot received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboundPilot {
    /// The sending node.
    pub from: NodeId,
    /// The message.
    pub message: PilotMessage,
}

/// Where a payload lives in memory: a box (`transfer`, relative to the allocation) inside a dense
/// row-major allocation of extent `allocation_range`, with elements of `elem_size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stride {
    /// Extent of the allocation, in elements.
    pub allocation_range: Range,
    /// The transferred box, relative to the allocation.
    pub transfer: Subrange,
    /// Bytes per element.
    pub elem_size: usize,
}

impl Stride {
    /// Bytes the payload carries.
    pub fn payload_bytes(&self) -> usize {
        self.transfer.range.size() * self.elem_size
    }

    pub(crate) fn strided_box(&self) -> crate::backend::nd_memory::StridedBox {
        crate::backend::nd_memory::StridedBox {
            allocation_range: self.allocation_range.0,
            offset: self.transfer.offset.0,
            range: self.transfer.range.0,
        }
    }
}

/// Words of a [`CpuMask`]: 1 024 CPUs, Linux's default `CPU_SETSIZE`.
pub const CPU_MASK_WORDS: usize = 16;

/// CPUs covered by an affinity mask, CPU `c` at bit `c % 64` of word `c / 64`.
pub type CpuMask = [u64; CPU_MASK_WORDS];

/// A process's place among the processes of its host ([`Communicator::host_placement`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPlacement {
    /// This process's rank among the host's processes: which of the host's GPUs it takes.
    pub local_rank: usize,
    /// The host's processes of this run.
    pub local_processes: usize,
    /// The host's processes, this one included, that may run on some CPU of this one's mask:
    /// those it shares its cores with. A launcher that gives each rank cores of its own
    /// (`--map-by slot:PE=N`, `srun --cpus-per-task`) makes it 1; unbound ranks share all.
    pub core_sharers: usize,
}

impl HostPlacement {
    /// The only process of its host.
    pub const ALONE: Self = Self {
        local_rank: 0,
        local_processes: 1,
        core_sharers: 1,
    };
}

/// A communicator between the nodes of one run. See the module documentation for the protocol.
pub trait Communicator: Send {
    /// Number of nodes in the run.
    fn num_nodes(&self) -> usize;

    /// This node's id.
    fn local_node(&self) -> NodeId;

    /// Sends a pilot; the message is copied, so the call returns at once.
    fn send_outbound_pilot(&mut self, pilot: &OutboundPilot) -> Result<()>;

    /// Pilots received since the last call. Never blocks.
    fn poll_inbound_pilots(&mut self) -> Result<Vec<InboundPilot>>;

    /// Starts sending the box `stride` of the allocation at `base` to node `to` as message `id`.
    ///
    /// # Safety
    /// `base` must stay valid for reads of the whole allocation described by `stride`, and the
    /// box must not be written, until the returned event is complete.
    unsafe fn send_payload(
        &mut self,
        to: NodeId,
        id: MessageId,
        base: *const u8,
        stride: Stride,
    ) -> Result<AsyncEvent>;

    /// Starts receiving message `id` from node `from` into the box `stride` of the allocation at
    /// `base`.
    ///
    /// # Safety
    /// `base` must stay valid for writes of the whole allocation described by `stride`, and the
    /// box must not be accessed otherwise, until the returned event is complete.
    unsafe fn receive_payload(
        &mut self,
        from: NodeId,
        id: MessageId,
        base: *mut u8,
        stride: Stride,
    ) -> Result<AsyncEvent>;

    /// Advances outstanding payload operations, completing their events. Never blocks.
    fn poll(&mut self) -> Result<()>;

    /// After the job failed, at shutdown: gives up this node's outstanding payload transfers so
    /// that the shutdown need not wait for data a failed peer never sends. Receives not yet
    /// matched are cancelled; the events of everything given up complete with an error. True if
    /// nothing is left that could still write into or read from an allocation, so the caller may
    /// free them; false if some transfer could not be given up within a short grace (the caller
    /// must then keep its allocations). Blocks for at most that grace.
    fn abandon_transfers(&mut self) -> bool;

    /// A new, independent communicator over the same nodes. Collective: every node calls it
    /// in the same order.
    fn collective_clone(&mut self) -> Result<Box<dyn Communicator>>;

    /// Where this process sits among the processes of its host, given `cpus`, its affinity mask.
    /// Collective over the nodes: every node calls it at start-up. A communicator without a
    /// notion of hosts answers [`HostPlacement::ALONE`].
    fn host_placement(&self, _cpus: &CpuMask) -> Result<HostPlacement> {
        Ok(HostPlacement::ALONE)
    }

    /// The communicator in words for the startup line (which transport, which library).
    fn describe(&self) -> String {
        format!("{} node(s)", self.num_nodes())
    }

    /// Blocks until every node has called it. Collective.
    fn collective_barrier(&mut self) -> Result<()>;

    /// Gathers one byte string from every node onto `root`: `root` gets them indexed by node
    /// id, the others `None`. Blocking and collective: every node calls it in the same order
    /// (the runtime uses it at shutdown to collect the command graphs on node 0).
    fn collective_gather_bytes(
        &mut self,
        root: NodeId,
        bytes: &[u8],
    ) -> Result<Option<Vec<Vec<u8>>>>;

    /// Sends `message` (at most [`CONTROL_MESSAGE_LIMIT`] bytes) to every other node: failure
    /// notices and SPMD digests (API.md "Faults across ranks"). Ordered with the pilots: a peer
    /// sees the message before any pilot sent after it, so a failure notice arrives before any
    /// data produced after the failure.
    fn broadcast_control(&mut self, message: &[u8]) -> Result<()>;

    /// Control messages received since the last call, with their senders. Never blocks.
    fn take_control_messages(&mut self) -> Vec<(NodeId, Vec<u8>)>;

    /// The address of the native communicator handle (`MPI_Comm*`) that collective host tasks
    /// may use, or 0 when there is none (the in-process fabric). Stable while `self` lives.
    fn native_handle(&self) -> usize {
        0
    }
}

/// The error with which [`Communicator::abandon_transfers`] completes the transfers it gives up.
pub(crate) fn abandoned_transfer() -> crate::error::Error {
    crate::error::Error::new(
        crate::error::ErrorKind::Communication,
        "transfer given up at shutdown after the job failed",
    )
}
