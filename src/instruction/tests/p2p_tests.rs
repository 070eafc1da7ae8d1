//! Sends, receives and pilots (Celerity's `instruction_graph_p2p_tests.cc`).

use super::*;
use crate::grid::Region;
use crate::task::RangeMapper;

fn reversed() -> RangeMapper {
    // chunk [a, b) of [0, 256) writes [256 - b, 256 - a)
    RangeMapper::Custom(Arc::new(|ck: &crate::task::Chunk, _, _| {
        Subrange::new(
            Id::new(256 - ck.offset[0] - ck.range[0], 0, 0),
            Range::new(ck.range[0], 1, 1),
        )
    }))
}

#[test]
fn written_boxes_are_sent_once_and_received_exactly() {
    for local in [0, 1] {
        let mut ctx = Ctx::builder().nodes(2).local(local).build();
        let buf = ctx.buffer(&[256], false);
        ctx.device(&[256], CommandGroup::new().discard_write(buf, reversed()));
        ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
        let sends = ctx.select(is_send);
        let recvs = ctx.select(is_receive);
        assert_eq!((sends.len(), recvs.len()), (1, 1));
        let (written, read) = if local == 0 {
            (gbox([128, 0, 0], [256, 1, 1]), gbox([0, 0, 0], [128, 1, 1]))
        } else {
            (gbox([0, 0, 0], [128, 1, 1]), gbox([128, 0, 0], [256, 1, 1]))
        };
        let InstructionKind::Send {
            to,
            message,
            send_range,
            offset_in_allocation,
            ..
        } = sends[0].kind()
        else {
            unreachable!()
        };
        assert_eq!(*to, NodeId(1 - local));
        assert_eq!(*send_range, written.range());
        assert_eq!(*offset_in_allocation, Id::ZERO);
        let pilots = ctx.recorder().pilots();
        assert_eq!(pilots.len(), 1);
        assert_eq!(pilots[0].message.id, *message);
        assert_eq!(pilots[0].message.region_box, written);
        assert_eq!(pilots[0].to, NodeId(1 - local));
        let InstructionKind::Receive {
            transfer, region, ..
        } = recvs[0].kind()
        else {
            unreachable!()
        };
        assert_eq!(*region, Region::from(read));
        assert_eq!(transfer, &pilots[0].message.transfer);
        assert!(ctx.concurrent(sends[0].id(), recvs[0].id()));
        // the consumer kernel waits for the receive (through a host-to-device copy)
        let consumer = ctx.select(is_kernel)[1];
        assert!(ctx.depends_transitively(consumer.id(), recvs[0].id()));
        assert!(sends[0].instruction.priority() >= priority::PUSH_BASE_PRIORITY);
    }
}

#[test]
fn sends_are_split_per_producing_device() {
    let mut ctx = Ctx::builder().nodes(2).devices(2).build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(&[256], CommandGroup::new().discard_write(buf, reversed()));
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    let sends = ctx.select(is_send);
    assert_eq!(sends.len(), 2, "one send per producing kernel");
    let kernels = ctx.select(is_kernel);
    // each send waits (through its coherence copy) for its own producer only
    for s in &sends {
        let deps: Vec<_> = kernels[..2]
            .iter()
            .filter(|k| ctx.depends_transitively(s.id(), k.id()))
            .collect();
        assert_eq!(deps.len(), 1);
    }
    // the receive is split: one await per reading device
    let split = ctx.select(|k| matches!(k, InstructionKind::SplitReceive { .. }));
    let awaits = ctx.select(|k| matches!(k, InstructionKind::AwaitReceive { .. }));
    assert_eq!((split.len(), awaits.len()), (1, 2));
    assert!(
        awaits
            .iter()
            .all(|a| a.origin_of(split[0].id()) == Some(DependencyOrigin::SplitReceive))
    );
    let readers = &kernels[2..];
    for (a, r) in awaits.iter().zip(readers) {
        assert!(ctx.depends_transitively(r.id(), a.id()));
    }
    assert!(!ctx.depends_transitively(readers[0].id(), awaits[1].id()));
}

#[test]
fn overlapping_readers_get_one_await_per_reader_set() {
    let mut ctx = Ctx::builder().nodes(2).devices(2).build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(&[256], CommandGroup::new().discard_write(buf, reversed()));
    ctx.device(
        &[256],
        CommandGroup::new().read(buf, RangeMapper::Neighborhood([1, 0, 0])),
    );
    let awaits: Vec<Region> = ctx
        .select(|k| matches!(k, InstructionKind::AwaitReceive { .. }))
        .iter()
        .map(|a| match a.kind() {
            InstructionKind::AwaitReceive { region, .. } => region.clone(),
            _ => unreachable!(),
        })
        .collect();
    // node 0 reads [0, 129) from node 1: readers [0, 65) and [63, 129) -> three sets
    assert_eq!(awaits.len(), 3);
    assert_eq!(awaits.iter().map(Region::area).sum::<usize>(), 128);
}

#[test]
fn disconnected_await_regions_do_not_allocate_their_bounding_box() {
    let mut ctx = Ctx::builder().nodes(2).build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    // node 0 reads two disconnected boxes owned by node 1
    ctx.device(
        &[256],
        CommandGroup::new()
            .read(buf, RangeMapper::Fixed(sr([200, 0, 0], [10, 1, 1])))
            .read(buf, RangeMapper::Fixed(sr([240, 0, 0], [10, 1, 1]))),
    );
    let host_allocs: Vec<_> = ctx
        .select(is_alloc)
        .iter()
        .map(|a| alloc_info(a))
        .filter(|(m, _, _)| *m == MemoryId::HOST)
        .map(|(_, b, _)| b.unwrap())
        .collect();
    assert_eq!(
        host_allocs,
        vec![
            gbox([200, 0, 0], [210, 1, 1]),
            gbox([240, 0, 0], [250, 1, 1])
        ]
    );
}

#[test]
fn huge_buffers_are_sent_in_communicator_compatible_boxes() {
    let mut ctx = Ctx::builder().nodes(2).build();
    let huge = crate::grid::COMMUNICATOR_MAX_COORDINATE + 10;
    let buf = ctx.buffer_with(&[4, huge], 1, false);
    // node 1 writes its rows, node 0 reads a 2-column stripe of all rows
    ctx.device(
        &[4, 1],
        CommandGroup::new().discard_write(buf, RangeMapper::Slice(1)),
    );
    ctx.submit(
        TaskSpec::MasterNode,
        CommandGroup::new().read(buf, RangeMapper::Fixed(sr([0, 5, 0], [4, 2, 1]))),
    );
    let sends = ctx.select(is_send);
    let _ = sends;
    let pilots = ctx.recorder().pilots().to_vec();
    // the receiving side (node 0) gets rows 2 and 3, one box per row
    let mut ctx1 = Ctx::builder().nodes(2).local(1).build();
    let buf1 = ctx1.buffer_with(&[4, huge], 1, false);
    ctx1.device(
        &[4, 1],
        CommandGroup::new().discard_write(buf1, RangeMapper::Slice(1)),
    );
    ctx1.submit(
        TaskSpec::MasterNode,
        CommandGroup::new().read(buf1, RangeMapper::Fixed(sr([0, 5, 0], [4, 2, 1]))),
    );
    let boxes: Vec<_> = ctx1
        .recorder()
        .pilots()
        .iter()
        .map(|p| p.message.region_box)
        .collect();
    assert_eq!(
        boxes,
        vec![gbox([2, 5, 0], [3, 7, 1]), gbox([3, 5, 0], [4, 7, 1])]
    );
    assert!(pilots.is_empty(), "node 0 sends nothing");
}

#[test]
fn a_broadcast_sends_once_per_peer_with_distinct_message_ids() {
    let mut ctx = Ctx::builder().nodes(4).build();
    let buf = ctx.buffer(&[256], false);
    ctx.submit(
        TaskSpec::MasterNode,
        CommandGroup::new().discard_write(buf, RangeMapper::All),
    );
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    let sends = ctx.select(is_send);
    assert_eq!(sends.len(), 3);
    let pilots = ctx.recorder().pilots();
    let targets: Vec<_> = pilots.iter().map(|p| p.to.0).collect();
    assert_eq!(targets, vec![1, 2, 3]);
    let mut ids: Vec<_> = pilots.iter().map(|p| p.message.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    // one coherence copy to host serves all three sends
    assert_eq!(ctx.select(is_copy).len(), 1);
    for s in &sends {
        let InstructionKind::Send { message, .. } = s.kind() else {
            unreachable!()
        };
        assert!(pilots.iter().any(|p| p.message.id == *message));
    }
}

#[test]
fn received_data_is_not_received_again() {
    let mut ctx = Ctx::builder().nodes(2).build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(&[256], CommandGroup::new().discard_write(buf, reversed()));
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    assert_eq!(ctx.select(is_receive).len(), 1);
    assert_eq!(ctx.recorder().await_push_commands().len(), 1);
}

#[test]
fn receives_land_in_host_memory_and_reach_devices_by_copy() {
    let mut ctx = Ctx::builder().nodes(2).devices(2).build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(&[256], CommandGroup::new().discard_write(buf, reversed()));
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    for r in ctx.select(|k| matches!(k, InstructionKind::SplitReceive { .. })) {
        let InstructionKind::SplitReceive { dest, .. } = r.kind() else {
            unreachable!()
        };
        assert_eq!(dest.memory(), MemoryId::HOST);
    }
    let to_devices = ctx
        .select(is_copy)
        .into_iter()
        .filter(|c| copy_info(c).0 == MemoryId::HOST && copy_info(c).1 >= MemoryId::FIRST_DEVICE)
        .count();
    assert_eq!(to_devices, 2);
}
