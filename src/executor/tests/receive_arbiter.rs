//! Receive arbiter behaviour (Celerity's `receive_arbiter_tests.cc`) over the in-process fabric.

use crate::backend::event::AsyncEvent;
use crate::comm::in_process::InProcessCommunicator;
use crate::comm::{Communicator, OutboundPilot, PilotMessage, Stride};
use crate::executor::receive_arbiter::ReceiveArbiter;
use crate::grid::{GridBox, Id, Range, Region, Subrange};
use crate::types::{BufferId, MessageId, NodeId, ReductionId, TaskId, TransferId};

const TRANSFER: TransferId = TransferId {
    consumer: TaskId(7),
    buffer: BufferId(2),
    reduction: ReductionId(0),
};

fn box1d(min: usize, max: usize) -> GridBox {
    GridBox::from_arrays([min, 0, 0], [max, 1, 1])
}

/// Node `from` sends elements `[min, max)` of its 1-D allocation `data` (covering [0, len)).
fn send(comm: &mut InProcessCommunicator, to: u64, id: u64, data: &[u32], min: usize, max: usize) {
    send_for(comm, TRANSFER, to, id, (data, min, max));
}

/// [`send`] for `transfer`.
fn send_for(
    comm: &mut InProcessCommunicator,
    transfer: TransferId,
    to: u64,
    id: u64,
    (data, min, max): (&[u32], usize, usize),
) {
    let message = PilotMessage {
        id: MessageId(id),
        transfer,
        region_box: box1d(min, max),
    };
    comm.send_outbound_pilot(&OutboundPilot {
        to: NodeId(to),
        message,
    })
    .unwrap();
    let stride = Stride {
        allocation_range: Range::new(data.len(), 1, 1),
        transfer: Subrange::new(Id::new(min, 0, 0), Range::new(max - min, 1, 1)),
        elem_size: 4,
    };
    // SAFETY: `data` outlives the send, which the in-process fabric completes immediately.
    let event =
        unsafe { comm.send_payload(NodeId(to), MessageId(id), data.as_ptr().cast(), stride) }
            .unwrap();
    assert!(event.is_complete());
}

fn poll_until(arbiter: &mut ReceiveArbiter, comm: &mut InProcessCommunicator, event: &AsyncEvent) {
    for _ in 0..10 {
        if event.is_complete() {
            break;
        }
        arbiter.poll_communicator(comm).unwrap();
    }
    assert!(event.is_complete());
    assert!(event.take_outcome().unwrap().is_ok());
}

fn source() -> Vec<u32> {
    (0..64).map(|i| 1000 + i).collect()
}

#[test]
fn receive_completes_whether_pilots_arrive_before_or_after_it_is_posted() {
    for pilots_first in [true, false] {
        let mut nodes = InProcessCommunicator::fabric(3);
        let mut receiver = nodes.remove(0);
        let (mut n1, mut n2) = (nodes.remove(0), nodes.remove(0));
        let data = source();
        let mut arbiter = ReceiveArbiter::new();
        let mut dest = vec![0u32; 32];
        if pilots_first {
            send(&mut n1, 0, 1, &data, 0, 16);
            send(&mut n2, 0, 2, &data, 16, 32);
            arbiter.poll_communicator(&mut receiver).unwrap();
        }
        let region = Region::from_box(box1d(0, 32));
        // SAFETY: `dest` outlives the receive, which completes below.
        let event = unsafe {
            arbiter.begin_receive(
                &mut receiver,
                TRANSFER,
                region,
                dest.as_mut_ptr().cast(),
                box1d(0, 32),
                4,
            )
        }
        .unwrap();
        if !pilots_first {
            arbiter.poll_communicator(&mut receiver).unwrap();
            assert!(!event.is_complete(), "nothing was sent yet");
            send(&mut n2, 0, 2, &data, 16, 32);
            arbiter.poll_communicator(&mut receiver).unwrap();
            assert!(!event.is_complete(), "half of the region is still missing");
            send(&mut n1, 0, 1, &data, 0, 16);
        }
        poll_until(&mut arbiter, &mut receiver, &event);
        assert_eq!(dest, data[..32].to_vec(), "pilots_first = {pilots_first}");
        assert!(arbiter.is_idle());
    }
}

#[test]
fn payloads_land_at_their_offset_inside_a_larger_allocation() {
    let mut nodes = InProcessCommunicator::fabric(2);
    let mut receiver = nodes.remove(0);
    let mut sender = nodes.remove(0);
    let data = source();
    let mut arbiter = ReceiveArbiter::new();
    // The allocation covers [8, 40); the receive wants [20, 30).
    let mut dest = vec![0u32; 32];
    // SAFETY: `dest` outlives the receive.
    let event = unsafe {
        arbiter.begin_receive(
            &mut receiver,
            TRANSFER,
            Region::from_box(box1d(20, 30)),
            dest.as_mut_ptr().cast(),
            box1d(8, 40),
            4,
        )
    }
    .unwrap();
    send(&mut sender, 0, 9, &data, 20, 30);
    poll_until(&mut arbiter, &mut receiver, &event);
    assert_eq!(&dest[12..22], &data[20..30]);
    assert!(dest[..12].iter().chain(&dest[22..]).all(|&v| v == 0));
}

#[test]
fn split_receive_subregions_complete_independently() {
    let mut nodes = InProcessCommunicator::fabric(3);
    let mut receiver = nodes.remove(0);
    let (mut n1, mut n2) = (nodes.remove(0), nodes.remove(0));
    let data = source();
    let mut arbiter = ReceiveArbiter::new();
    let mut dest = vec![0u32; 32];
    // SAFETY: `dest` outlives the split receive.
    unsafe {
        arbiter.begin_split_receive(
            &mut receiver,
            TRANSFER,
            Region::from_box(box1d(0, 32)),
            dest.as_mut_ptr().cast(),
            box1d(0, 32),
            4,
        )
    }
    .unwrap();
    let first = arbiter.await_split_receive_subregion(TRANSFER, Region::from_box(box1d(0, 16)));
    let second = arbiter.await_split_receive_subregion(TRANSFER, Region::from_box(box1d(16, 32)));
    send(&mut n2, 0, 5, &data, 16, 32);
    poll_until(&mut arbiter, &mut receiver, &second);
    assert!(!first.is_complete(), "the first half has not been sent");
    assert_eq!(&dest[16..32], &data[16..32]);
    send(&mut n1, 0, 4, &data, 0, 16);
    poll_until(&mut arbiter, &mut receiver, &first);
    assert_eq!(&dest[..16], &data[..16]);
    // Awaiting a subregion that already arrived completes at once.
    let late = arbiter.await_split_receive_subregion(TRANSFER, Region::from_box(box1d(0, 8)));
    assert!(late.is_complete());
    assert!(arbiter.is_idle());
}

#[test]
fn differently_shaped_fragments_fill_one_2d_request() {
    // A 2-D receive of rows [0,4) x cols [0,4) assembled from a row strip and two column blocks.
    let mut nodes = InProcessCommunicator::fabric(4);
    let mut receiver = nodes.remove(0);
    let source: Vec<u32> = (0..16).map(|i| 100 + i).collect();
    let stride_of = |b: GridBox| Stride {
        allocation_range: Range::new(4, 4, 1),
        transfer: Subrange::new(b.min(), b.range()),
        elem_size: 4,
    };
    let pieces = [
        GridBox::from_arrays([0, 0, 0], [1, 4, 1]),
        GridBox::from_arrays([1, 0, 0], [4, 2, 1]),
        GridBox::from_arrays([1, 2, 0], [4, 4, 1]),
    ];
    let mut arbiter = ReceiveArbiter::new();
    let mut dest = vec![0u32; 16];
    let whole = GridBox::from_arrays([0, 0, 0], [4, 4, 1]);
    // SAFETY: `dest` outlives the receive.
    let event = unsafe {
        arbiter.begin_receive(
            &mut receiver,
            TRANSFER,
            Region::from_box(whole),
            dest.as_mut_ptr().cast(),
            whole,
            4,
        )
    }
    .unwrap();
    for (i, (piece, sender)) in pieces.iter().zip(nodes.iter_mut()).enumerate() {
        let message = PilotMessage {
            id: MessageId(i as u64),
            transfer: TRANSFER,
            region_box: *piece,
        };
        sender
            .send_outbound_pilot(&OutboundPilot {
                to: NodeId(0),
                message,
            })
            .unwrap();
        // SAFETY: `source` outlives the immediate send.
        unsafe {
            sender.send_payload(
                NodeId(0),
                MessageId(i as u64),
                source.as_ptr().cast(),
                stride_of(*piece),
            )
        }
        .unwrap();
    }
    poll_until(&mut arbiter, &mut receiver, &event);
    assert_eq!(dest, source);
}

#[test]
fn gather_completes_when_every_peer_sent_data_or_an_empty_pilot() {
    let mut nodes = InProcessCommunicator::fabric(4);
    let mut receiver = nodes.remove(0);
    let mut arbiter = ReceiveArbiter::new();
    let mut slots = vec![0u64; 4];
    // Node 1 sends before the gather is posted.
    let value1 = [11u64];
    let chunk = || Stride {
        allocation_range: Range::new(1, 1, 1),
        transfer: Subrange::new(Id::new(0, 0, 0), Range::new(1, 1, 1)),
        elem_size: 8,
    };
    let pilot = |id: u64, b: GridBox| OutboundPilot {
        to: NodeId(0),
        message: PilotMessage {
            id: MessageId(id),
            transfer: TRANSFER,
            region_box: b,
        },
    };
    let one = GridBox::from_arrays([0, 0, 0], [1, 1, 1]);
    nodes[0].send_outbound_pilot(&pilot(1, one)).unwrap();
    // SAFETY: the values outlive the immediate sends.
    unsafe { nodes[0].send_payload(NodeId(0), MessageId(1), value1.as_ptr().cast(), chunk()) }
        .unwrap();
    arbiter.poll_communicator(&mut receiver).unwrap();
    // SAFETY: `slots` outlives the gather.
    let event =
        unsafe { arbiter.gather_receive(&mut receiver, TRANSFER, slots.as_mut_ptr().cast(), 8) }
            .unwrap();
    // Node 2 has nothing (empty pilot); node 3 sends after.
    nodes[1]
        .send_outbound_pilot(&pilot(2, GridBox::default()))
        .unwrap();
    arbiter.poll_communicator(&mut receiver).unwrap();
    assert!(!event.is_complete(), "node 3 has not reported");
    let value3 = [33u64];
    nodes[2].send_outbound_pilot(&pilot(3, one)).unwrap();
    // SAFETY: as above.
    unsafe { nodes[2].send_payload(NodeId(0), MessageId(3), value3.as_ptr().cast(), chunk()) }
        .unwrap();
    poll_until(&mut arbiter, &mut receiver, &event);
    assert_eq!(slots, vec![0, 11, 0, 33]);
    assert!(arbiter.is_idle());
}

#[test]
fn polls_visit_only_transfers_with_payloads_in_flight() {
    // Receives posted far ahead of their data (an iterative stencil under MPI posts thousands)
    // must not make every poll cost one visit each: before, 20,000 posted receives made the
    // executor spend 92 % of its time re-examining them and a stencil step took 6× longer.
    let mut nodes = InProcessCommunicator::fabric(2);
    let mut receiver = nodes.remove(0);
    let mut sender = nodes.remove(0);
    let mut arbiter = ReceiveArbiter::new();
    let mut dests = vec![[0u32; 4]; 1000];
    let mut events = Vec::new();
    for (i, dest) in dests.iter_mut().enumerate() {
        let transfer = TransferId {
            consumer: TaskId(100 + i as u64),
            ..TRANSFER
        };
        let region = Region::from_box(box1d(0, 4));
        // SAFETY: `dests` outlives every receive; the ones left pending are never written.
        let event = unsafe {
            arbiter.begin_receive(
                &mut receiver,
                transfer,
                region,
                dest.as_mut_ptr().cast(),
                box1d(0, 4),
                4,
            )
        }
        .unwrap();
        events.push(event);
    }
    let posted = arbiter.transfer_visits;
    for _ in 0..10 {
        arbiter.poll_communicator(&mut receiver).unwrap();
    }
    assert_eq!(
        arbiter.transfer_visits, posted,
        "polls without pilots visited transfers"
    );

    // The data of one of them arrives: the poll that sees its pilot completes it.
    let data = source();
    let transfer = TransferId {
        consumer: TaskId(100 + 7),
        ..TRANSFER
    };
    send_for(&mut sender, transfer, 0, 5, (&data, 0, 4));
    poll_until(&mut arbiter, &mut receiver, &events[7]);
    assert!(
        arbiter.transfer_visits - posted <= 3,
        "{} visits",
        arbiter.transfer_visits - posted
    );
    assert_eq!(dests[7], [1000, 1001, 1002, 1003]);
    assert!(
        events
            .iter()
            .enumerate()
            .all(|(i, e)| i == 7 || !e.is_complete())
    );
}
