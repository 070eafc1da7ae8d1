//! A communicator between nodes that live in one process.
//!
//! With one node it is the local communicator of a single-process run (pilots and payloads
//! never leave the node; clones and barriers are trivial). With N nodes it is a test fabric:
//! N executors on N threads exchange real pilots and payloads, so distributed behaviour is
//! tested without MPI. Payloads are linearised into the fabric's mailbox at send time (the send
//! completes at once) and copied into the receiver's allocation by `poll`.

use std::collections::HashMap;
use std::sync::{Arc, Barrier};

use parking_lot::Mutex;

use super::{Communicator, InboundPilot, OutboundPilot, Stride};
use crate::backend::SendPtr;
use crate::backend::event::{AsyncEvent, Completion, EventCompleter};
use crate::backend::nd_memory::{StridedBox, copy_box_raw};
use crate::error::{Error, ErrorKind, Result};
use crate::types::{MessageId, NodeId};

/// Key of a communicator group: the path of clone indices from the root.
type GroupKey = Vec<usize>;

/// A control message with its sender.
type ControlMessage = (NodeId, Vec<u8>);

struct Group {
    key: GroupKey,
    inboxes: Vec<Mutex<Vec<InboundPilot>>>,
    /// Control messages per receiving node (see `Communicator::broadcast_control`).
    control: Vec<Mutex<Vec<ControlMessage>>>,
    mailbox: Mutex<HashMap<(NodeId, NodeId, MessageId), Vec<u8>>>,
    barrier: Barrier,
    /// One slot per node for `collective_gather_bytes`.
    gather: Mutex<Vec<Option<Vec<u8>>>>,
}

impl Group {
    fn new(key: GroupKey, num_nodes: usize) -> Self {
        Self {
            key,
            inboxes: (0..num_nodes).map(|_| Mutex::new(Vec::new())).collect(),
            control: (0..num_nodes).map(|_| Mutex::new(Vec::new())).collect(),
            mailbox: Mutex::new(HashMap::new()),
            barrier: Barrier::new(num_nodes),
            gather: Mutex::new(vec![None; num_nodes]),
        }
    }
}

struct Fabric {
    num_nodes: usize,
    groups: Mutex<HashMap<GroupKey, Arc<Group>>>,
}

impl Fabric {
    fn group(&self, key: GroupKey) -> Arc<Group> {
        self.groups
            .lock()
            .entry(key.clone())
            .or_insert_with(|| Arc::new(Group::new(key, self.num_nodes)))
            .clone()
    }
}

/// A receive posted before its payload arrived.
struct PendingReceive {
    from: NodeId,
    id: MessageId,
    base: SendPtr,
    stride: Stride,
    completer: EventCompleter,
}

/// One node's endpoint of an in-process fabric.
pub struct InProcessCommunicator {
    fabric: Arc<Fabric>,
    group: Arc<Group>,
    node: NodeId,
    clones_made: usize,
    pending: Vec<PendingReceive>,
}

impl InProcessCommunicator {
    /// The communicator of a single-process run.
    pub fn local() -> Self {
        Self::fabric(1).pop().expect("one node")
    }

    /// Endpoints for `num_nodes` nodes of one fabric, indexed by node id.
    pub fn fabric(num_nodes: usize) -> Vec<Self> {
        assert!(num_nodes >= 1, "a fabric needs at least one node");
        let fabric = Arc::new(Fabric {
            num_nodes,
            groups: Mutex::new(HashMap::new()),
        });
        let root = fabric.group(Vec::new());
        (0..num_nodes)
            .map(|n| Self {
                fabric: fabric.clone(),
                group: root.clone(),
                node: NodeId(n as u64),
                clones_made: 0,
                pending: Vec::new(),
            })
            .collect()
    }

    fn check_peer(&self, peer: NodeId, what: &str) -> Result<usize> {
        let index = usize::try_from(peer.0).unwrap_or(usize::MAX);
        if index >= self.fabric.num_nodes || peer == self.node {
            return Err(Error::new(
                ErrorKind::Communication,
                format!(
                    "{what}: peer {peer} is not another node of this {}-node run (this is {})",
                    self.fabric.num_nodes, self.node
                ),
            ));
        }
        Ok(index)
    }

    /// Completes the pending receives whose payloads have arrived.
    fn deliver(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut mailbox = self.group.mailbox.lock();
        let mut still_pending = Vec::with_capacity(self.pending.len());
        for receive in self.pending.drain(..) {
            let Some(payload) = mailbox.remove(&(receive.from, self.node, receive.id)) else {
                still_pending.push(receive);
                continue;
            };
            let expected = receive.stride.payload_bytes();
            if payload.len() != expected {
                receive.completer.complete(Err(Error::new(
                    ErrorKind::Communication,
                    format!(
                        "payload {} from {} has {} bytes, the receive expects {expected}",
                        receive.id,
                        receive.from,
                        payload.len()
                    ),
                )));
                continue;
            }
            let dense = StridedBox {
                allocation_range: receive.stride.transfer.range.0,
                offset: [0; 3],
                range: receive.stride.transfer.range.0,
            };
            // SAFETY: `payload` holds exactly the dense box; the destination allocation is valid
            // for writes until this receive's event completes (receive_payload's contract).
            unsafe {
                copy_box_raw(
                    payload.as_ptr(),
                    dense,
                    receive.base.0,
                    receive.stride.strided_box(),
                    receive.stride.elem_size,
                )
            };
            receive.completer.complete(Ok(Completion::Done));
        }
        self.pending = still_pending;
        Ok(())
    }
}

impl Communicator for InProcessCommunicator {
    fn num_nodes(&self) -> usize {
        self.fabric.num_nodes
    }

    fn describe(&self) -> String {
        if self.fabric.num_nodes == 1 {
            "local (one process, no MPI)".to_owned()
        } else {
            format!("in-process fabric of {} nodes", self.fabric.num_nodes)
        }
    }

    fn local_node(&self) -> NodeId {
        self.node
    }

    fn send_outbound_pilot(&mut self, pilot: &OutboundPilot) -> Result<()> {
        let to = self.check_peer(pilot.to, "send_outbound_pilot")?;
        self.group.inboxes[to].lock().push(InboundPilot {
            from: self.node,
            message: pilot.message,
        });
        Ok(())
    }

    fn poll_inbound_pilots(&mut self) -> Result<Vec<InboundPilot>> {
        let mut inbox = self.group.inboxes[self.node.0 as usize].lock();
        Ok(std::mem::take(&mut *inbox))
    }

    fn broadcast_control(&mut self, message: &[u8]) -> Result<()> {
        for (node, inbox) in self.group.control.iter().enumerate() {
            if node != self.node.0 as usize {
                inbox.lock().push((self.node, message.to_vec()));
            }
        }
        Ok(())
    }

    fn take_control_messages(&mut self) -> Vec<(NodeId, Vec<u8>)> {
        std::mem::take(&mut *self.group.control[self.node.0 as usize].lock())
    }

    unsafe fn send_payload(
        &mut self,
        to: NodeId,
        id: MessageId,
        base: *const u8,
        stride: Stride,
    ) -> Result<AsyncEvent> {
        self.check_peer(to, "send_payload")?;
        let mut payload = vec![0u8; stride.payload_bytes()];
        let dense = StridedBox {
            allocation_range: stride.transfer.range.0,
            offset: [0; 3],
            range: stride.transfer.range.0,
        };
        // SAFETY: the caller guarantees `base` covers the allocation in `stride`; `payload` is a
        // fresh buffer of exactly the box's size.
        unsafe {
            copy_box_raw(
                base,
                stride.strided_box(),
                payload.as_mut_ptr(),
                dense,
                stride.elem_size,
            )
        };
        let previous = self
            .group
            .mailbox
            .lock()
            .insert((self.node, to, id), payload);
        if previous.is_some() {
            return Err(Error::new(
                ErrorKind::Communication,
                format!("message {id} from {} to {to} was sent twice", self.node),
            ));
        }
        Ok(AsyncEvent::ready(Ok(Completion::Done)))
    }

    unsafe fn receive_payload(
        &mut self,
        from: NodeId,
        id: MessageId,
        base: *mut u8,
        stride: Stride,
    ) -> Result<AsyncEvent> {
        self.check_peer(from, "receive_payload")?;
        let (event, completer) = AsyncEvent::pending();
        self.pending.push(PendingReceive {
            from,
            id,
            base: SendPtr(base),
            stride,
            completer,
        });
        self.deliver()?;
        Ok(event)
    }

    fn poll(&mut self) -> Result<()> {
        self.deliver()
    }

    fn abandon_transfers(&mut self) -> bool {
        // Sends deposit their payload at once; only receives wait, and only this endpoint writes
        // into their allocations (in `deliver`).
        for receive in self.pending.drain(..) {
            receive.completer.complete(Err(super::abandoned_transfer()));
        }
        true
    }

    fn collective_clone(&mut self) -> Result<Box<dyn Communicator>> {
        let mut key = self.group.key.clone();
        key.push(self.clones_made);
        self.clones_made += 1;
        Ok(Box::new(Self {
            fabric: self.fabric.clone(),
            group: self.fabric.group(key),
            node: self.node,
            clones_made: 0,
            pending: Vec::new(),
        }))
    }

    fn collective_barrier(&mut self) -> Result<()> {
        self.group.barrier.wait();
        Ok(())
    }

    fn collective_gather_bytes(
        &mut self,
        root: NodeId,
        bytes: &[u8],
    ) -> Result<Option<Vec<Vec<u8>>>> {
        if root.0 as usize >= self.fabric.num_nodes {
            return Err(Error::new(
                ErrorKind::Communication,
                format!("gather: root {root} is not a node of this run"),
            ));
        }
        self.group.gather.lock()[self.node.0 as usize] = Some(bytes.to_vec());
        // Everyone has deposited; the root collects; nobody deposits for the next gather until
        // the root has collected.
        self.group.barrier.wait();
        let gathered = (self.node == root).then(|| {
            self.group
                .gather
                .lock()
                .iter_mut()
                .map(|slot| slot.take().unwrap_or_default())
                .collect()
        });
        self.group.barrier.wait();
        Ok(gathered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::PilotMessage;
    use crate::grid::{GridBox, Id, Range, Subrange};
    use crate::types::{BufferId, ReductionId, TaskId, TransferId};

    fn pilot(to: u64, id: u64) -> OutboundPilot {
        OutboundPilot {
            to: NodeId(to),
            message: PilotMessage {
                id: MessageId(id),
                transfer: TransferId {
                    consumer: TaskId(3),
                    buffer: BufferId(1),
                    reduction: ReductionId::NONE,
                },
                region_box: GridBox::from_arrays([0, 0, 0], [4, 1, 1]),
            },
        }
    }

    #[test]
    fn pilots_reach_their_destination_only() {
        let mut nodes = InProcessCommunicator::fabric(3);
        nodes[0].send_outbound_pilot(&pilot(2, 7)).unwrap();
        nodes[1].send_outbound_pilot(&pilot(2, 8)).unwrap();
        assert!(nodes[1].poll_inbound_pilots().unwrap().is_empty());
        let inbound = nodes[2].poll_inbound_pilots().unwrap();
        assert_eq!(inbound.len(), 2);
        assert_eq!(
            (inbound[0].from, inbound[0].message.id),
            (NodeId(0), MessageId(7))
        );
        assert_eq!(
            (inbound[1].from, inbound[1].message.id),
            (NodeId(1), MessageId(8))
        );
        assert!(nodes[2].poll_inbound_pilots().unwrap().is_empty());
        let e = nodes[0].send_outbound_pilot(&pilot(0, 1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Communication);
        assert!(nodes[0].send_outbound_pilot(&pilot(5, 1)).is_err());
    }

    #[test]
    fn strided_payloads_arrive_in_differently_shaped_allocations_in_any_order() {
        let mut nodes = InProcessCommunicator::fabric(2);
        // Sender: a 4x4 allocation of u32; send the 2x2 box at (1,1).
        let source: Vec<u32> = (0..16).collect();
        let send_stride = Stride {
            allocation_range: Range::new(4, 4, 1),
            transfer: Subrange::new(Id::new(1, 1, 0), Range::new(2, 2, 1)),
            elem_size: 4,
        };
        // Receiver: a 3x5 allocation; the box lands at (0,2).
        let mut dest = vec![0u32; 15];
        let recv_stride = Stride {
            allocation_range: Range::new(3, 5, 1),
            transfer: Subrange::new(Id::new(0, 2, 0), Range::new(2, 2, 1)),
            elem_size: 4,
        };
        let (mut n0, mut n1) = {
            let mut it = nodes.drain(..);
            (it.next().unwrap(), it.next().unwrap())
        };
        // Receive posted first, payload later.
        // SAFETY: `dest` outlives the event, which is polled to completion below.
        let receive = unsafe {
            n1.receive_payload(
                NodeId(0),
                MessageId(1),
                dest.as_mut_ptr().cast(),
                recv_stride,
            )
        }
        .unwrap();
        assert!(!receive.is_complete());
        // SAFETY: `source` outlives the (immediately complete) send.
        let send = unsafe {
            n0.send_payload(NodeId(1), MessageId(1), source.as_ptr().cast(), send_stride)
        }
        .unwrap();
        assert!(send.is_complete());
        n1.poll().unwrap();
        assert!(receive.is_complete());
        assert_eq!(receive.take_outcome(), Some(Ok(Completion::Done)));
        assert_eq!(dest, vec![0, 0, 5, 6, 0, 0, 0, 9, 10, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_payload_of_the_wrong_size_fails_the_receive() {
        let mut nodes = InProcessCommunicator::fabric(2);
        let source = [1u8; 8];
        let stride = |n| Stride {
            allocation_range: Range::new(n, 1, 1),
            transfer: Subrange::new(Id::new(0, 0, 0), Range::new(n, 1, 1)),
            elem_size: 1,
        };
        // SAFETY: the buffers outlive the events, which complete within this test.
        unsafe { nodes[0].send_payload(NodeId(1), MessageId(4), source.as_ptr(), stride(8)) }
            .unwrap();
        let mut dest = [0u8; 4];
        // SAFETY: as above.
        let receive = unsafe {
            nodes[1].receive_payload(NodeId(0), MessageId(4), dest.as_mut_ptr(), stride(4))
        }
        .unwrap();
        let error = receive.take_outcome().unwrap().unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Communication);
        assert!(error.message().contains("8 bytes"), "{}", error.message());
    }

    #[test]
    fn clones_are_independent_and_barriers_synchronise_all_nodes() {
        let nodes = InProcessCommunicator::fabric(3);
        let arrived = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = nodes
            .into_iter()
            .map(|mut comm| {
                let arrived = arrived.clone();
                std::thread::spawn(move || {
                    let mut clone = comm.collective_clone().unwrap();
                    let me = clone.local_node().0;
                    if me != 0 {
                        clone.send_outbound_pilot(&pilot(0, me)).unwrap();
                    }
                    arrived.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    clone.collective_barrier().unwrap();
                    assert_eq!(arrived.load(std::sync::atomic::Ordering::SeqCst), 3);
                    comm.collective_barrier().unwrap();
                    // Pilots on the clone never show up on the root communicator.
                    let root_pilots = comm.poll_inbound_pilots().unwrap();
                    let clone_pilots = clone.poll_inbound_pilots().unwrap();
                    (me, root_pilots.len(), clone_pilots.len())
                })
            })
            .collect();
        let mut results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        results.sort();
        assert_eq!(results, vec![(0, 0, 2), (1, 0, 0), (2, 0, 0)]);
    }

    #[test]
    fn gathers_collect_every_nodes_bytes_on_the_root_only() {
        let nodes = InProcessCommunicator::fabric(3);
        let threads: Vec<_> = nodes
            .into_iter()
            .map(|mut comm| {
                std::thread::spawn(move || {
                    let me = comm.local_node().0 as u8;
                    let first = comm
                        .collective_gather_bytes(NodeId(1), &vec![me; me as usize + 1])
                        .unwrap();
                    let second = comm.collective_gather_bytes(NodeId(0), &[me + 10]).unwrap();
                    (me, first, second)
                })
            })
            .collect();
        for thread in threads {
            let (me, first, second) = thread.join().unwrap();
            assert_eq!(first.is_some(), me == 1);
            assert_eq!(second.is_some(), me == 0);
            if let Some(all) = first {
                assert_eq!(all, vec![vec![0], vec![1, 1], vec![2, 2, 2]]);
            }
            if let Some(all) = second {
                assert_eq!(all, vec![vec![10], vec![11], vec![12]]);
            }
        }
        let mut local = InProcessCommunicator::local();
        assert_eq!(
            local.collective_gather_bytes(NodeId(0), b"x").unwrap(),
            Some(vec![b"x".to_vec()])
        );
        assert!(local.collective_gather_bytes(NodeId(1), b"x").is_err());
    }

    #[test]
    fn the_local_communicator_is_one_node() {
        let mut local = InProcessCommunicator::local();
        assert_eq!((local.num_nodes(), local.local_node()), (1, NodeId(0)));
        local.collective_barrier().unwrap();
        let mut clone = local.collective_clone().unwrap();
        clone.collective_barrier().unwrap();
        assert!(local.poll_inbound_pilots().unwrap().is_empty());
    }
}
