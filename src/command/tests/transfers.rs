//! Celerity's `command_graph_transfer_tests.cc`.

use super::*;
use RangeMapper::{All, OneToOne};

fn reverse_1d(total: usize) -> RangeMapper {
    custom(move |c| sr1(total - c.offset[0] - c.range[0], total - c.offset[0]))
}

fn targets(pairs: &[(u64, Region)]) -> Vec<(NodeId, Region)> {
    pairs.iter().map(|(n, r)| (NodeId(*n), r.clone())).collect()
}

#[test]
fn required_transfers_1d_reversed_write_then_read() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[256], false);
    ctx.device(&[256])
        .name("init")
        .discard_write(buf, reverse_1d(256))
        .submit();
    assert_eq!(ctx.named("init").count_per_node(), 1);
    ctx.device(&[256]).read(buf, OneToOne).submit();
    assert_eq!(ctx.kind("push").count(), 4);
    assert_eq!(ctx.kind("await push").count(), 4);
    // node n pushes the part it wrote that node 3-n reads; it awaits its own chunk
    for n in 0..4u64 {
        let mine = (n as usize * 64, n as usize * 64 + 64);
        let written = (256 - mine.1, 256 - mine.0);
        let push = ctx.kind("push").on(n);
        assert_eq!(
            push.one().push_targets().unwrap(),
            targets(&[(3 - n, r1(&[written]))]),
            "push on N{n}"
        );
        assert_eq!(
            ctx.kind("await push").on(n).one().await_region().unwrap(),
            &r1(&[mine])
        );
    }
}

fn check_2d_3d(dims: usize) {
    let mut ctx = Ctx::new(4);
    let range = &[256, 256, 256][..dims];
    let buf = ctx.buffer(range, false);
    ctx.device(range)
        .name("init")
        .split_2d()
        .discard_write(buf, OneToOne)
        .submit();
    assert_eq!(ctx.named("init").count_per_node(), 1);
    ctx.device(range).read(buf, All).submit();
    assert_eq!(ctx.kind("push").count(), 4);
    assert_eq!(ctx.kind("await push").count(), 4);
    let z = if dims == 3 { 256 } else { 1 };
    let whole = Region::from_box(GridBox::from_arrays([0, 0, 0], [256, 256, z]));
    let quadrant = |n: u64| {
        let (i, j) = ((n / 2) as usize * 128, (n % 2) as usize * 128);
        GridBox::from_arrays([i, j, 0], [i + 128, j + 128, z])
    };
    for n in 0..4u64 {
        let q = Region::from_box(quadrant(n));
        let expected: Vec<(u64, Region)> =
            (0..4).filter(|&m| m != n).map(|m| (m, q.clone())).collect();
        assert_eq!(
            ctx.kind("push").on(n).one().push_targets().unwrap(),
            targets(&expected)
        );
        assert_eq!(
            ctx.kind("await push").on(n).one().await_region().unwrap(),
            &whole.difference(&q)
        );
    }
}

#[test]
fn required_transfers_2d() {
    check_2d_3d(2);
}

#[test]
fn required_transfers_3d() {
    check_2d_3d(3);
}

#[test]
fn single_push_for_multiple_recipients() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[256], false);
    ctx.master_node().discard_write(buf, All).submit();
    ctx.device(&[256]).read(buf, All).submit();
    assert_eq!(ctx.kind("push").count(), 1);
    let all = r1(&[(0, 256)]);
    assert_eq!(
        ctx.kind("push").on(0).one().push_targets().unwrap(),
        targets(&[(1, all.clone()), (2, all.clone()), (3, all)])
    );
}

#[test]
fn single_push_per_buffer_and_task() {
    let mut ctx = Ctx::new(2);
    let buf0 = ctx.buffer(&[128], false);
    let buf1 = ctx.buffer(&[128], false);
    ctx.device(&[64])
        .discard_write(buf0, OneToOne)
        .discard_write(buf1, OneToOne)
        .submit();
    ctx.device_at(&[64], &[64])
        .discard_write(buf0, OneToOne)
        .discard_write(buf1, OneToOne)
        .submit();
    ctx.device(&[128])
        .read(buf0, All)
        .read(buf1, fixed(&[0], &[64]))
        .submit();
    ctx.set_chunk_multiplier(4);
    ctx.device(&[128]).read(buf1, fixed(&[64], &[64])).submit();

    assert_eq!(ctx.kind("push").count(), 6);
    let push = |bid, n, i| {
        ctx.kind("push")
            .of_buffer(bid)
            .on(n)
            .nth(i)
            .push_targets()
            .unwrap()
            .to_vec()
    };
    assert_eq!(push(buf0, 0, 0), targets(&[(1, r1(&[(0, 32), (64, 96)]))]));
    assert_eq!(push(buf1, 0, 0), targets(&[(1, r1(&[(0, 32)]))]));
    assert_eq!(
        push(buf0, 1, 0),
        targets(&[(0, r1(&[(32, 64), (96, 128)]))])
    );
    assert_eq!(push(buf1, 1, 0), targets(&[(0, r1(&[(32, 64)]))]));
    assert_eq!(push(buf1, 0, 1), targets(&[(1, r1(&[(64, 96)]))]));
    assert_eq!(push(buf1, 1, 1), targets(&[(0, r1(&[(96, 128)]))]));
}

#[test]
fn single_await_push_per_buffer_and_task() {
    let mut ctx = Ctx::new(2);
    let buf0 = ctx.buffer(&[128], false);
    let buf1 = ctx.buffer(&[128], false);
    ctx.device(&[128])
        .name("init")
        .discard_write(buf0, OneToOne)
        .discard_write(buf1, OneToOne)
        .submit();
    ctx.set_chunk_multiplier(4);
    ctx.device(&[128])
        .read(buf0, reverse_1d(128))
        .read(buf1, reverse_1d(128))
        .submit();
    assert_eq!(ctx.kind("push").count_per_node(), 2);
    assert_eq!(ctx.kind("await push").count_per_node(), 2);
    for (n, other) in [(0, (64, 128)), (1, (0, 64))] {
        for i in 0..2 {
            let ap = ctx.kind("await push").on(n).nth(i);
            assert_eq!(ap.await_region().unwrap(), &r1(&[other]));
        }
    }
}

#[test]
fn no_duplicate_transfers_within_one_task() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[128], false);
    ctx.device(&[128]).discard_write(buf, OneToOne).submit();
    ctx.master_node().read(buf, All).write(buf, All).submit();
    assert_eq!(
        ctx.kind("push").on(1).one().push_targets().unwrap(),
        targets(&[(0, r1(&[(64, 128)]))])
    );
    assert_eq!(ctx.kind("await push").on(0).count(), 1);
}

#[test]
fn no_duplicate_transfers_for_several_chunks_on_one_node() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[128], false);
    ctx.master_node().discard_write(buf, All).submit();
    ctx.set_chunk_multiplier(2);
    ctx.device(&[128]).read(buf, All).submit();
    assert_eq!(ctx.kind("push").count(), 1);
    assert_eq!(
        ctx.kind("push").on(0).one().push_targets().unwrap(),
        targets(&[(1, r1(&[(0, 128)]))])
    );
}

#[test]
fn no_duplicate_transfers_in_consecutive_and_parallel_tasks() {
    for consecutive in [true, false] {
        let mut ctx = Ctx::new(2);
        let buf0 = ctx.buffer(&[128], false);
        let buf1 = ctx.buffer(&[128], false);
        ctx.device(&[128]).discard_write(buf0, OneToOne).submit();
        if consecutive {
            ctx.master_node()
                .read(buf0, All)
                .discard_write(buf1, All)
                .submit();
        } else {
            ctx.master_node().read(buf0, All).submit();
        }
        assert_eq!(ctx.kind("push").on(1).count(), 1);
        assert_eq!(ctx.kind("await push").on(0).count(), 1);
        if consecutive {
            ctx.master_node().read(buf0, All).read(buf1, All).submit();
        } else {
            ctx.master_node().read(buf0, All).submit();
        }
        assert_eq!(ctx.kind("push").on(1).count(), 1);
        assert_eq!(ctx.kind("await push").on(0).count(), 1);
    }
}

fn full_range_for_single_node(node: usize) -> RangeMapper {
    custom(move |c| {
        if c.range == c.global_range {
            sr1(c.offset[0], c.offset[0] + c.range[0])
        } else if c.offset[0] == 100 * node {
            sr1(0, 300)
        } else {
            sr1(0, 0)
        }
    })
}

#[test]
fn only_the_original_producer_pushes() {
    // (reading tasks, expected pushes on node 0)
    let cases: [(&[Option<usize>], usize); 4] = [
        (&[None], 1),
        (&[Some(1), Some(2)], 2),
        (&[Some(2), Some(1)], 2),
        (&[], 0),
    ];
    for (i, (readers, expected)) in cases.iter().enumerate() {
        let mut ctx = Ctx::new(3);
        let buf = ctx.buffer(&[300], false);
        ctx.master_node().discard_write(buf, All).submit();
        if readers.is_empty() {
            // a single read-write task across nodes
            ctx.device(&[300]).read_write(buf, OneToOne).submit();
        }
        for r in *readers {
            match r {
                None => ctx.device(&[300]).read(buf, OneToOne).submit(),
                Some(n) => ctx
                    .device(&[300])
                    .read(buf, full_range_for_single_node(*n))
                    .submit(),
            };
        }
        let expected = if readers.is_empty() { 1 } else { *expected };
        assert_eq!(ctx.kind("push").count(), expected, "case {i}");
        assert_eq!(ctx.kind("push").on(0).count(), expected, "case {i}");
        assert_eq!(ctx.kind("await push").on(1).count(), 1, "case {i}");
        assert_eq!(ctx.kind("await push").on(2).count(), 1, "case {i}");
    }
}

#[test]
fn partial_replication_does_not_divide_pushes() {
    let mut ctx = Ctx::new(3);
    let buf = ctx.buffer(&[96], false);
    ctx.device(&[96])
        .name("task a")
        .discard_write(buf, OneToOne)
        .submit();
    for n in 0..3 {
        let r = ctx.named("task a").on(n).one().execution_range().unwrap();
        assert_eq!(r, b1(n as usize * 32, n as usize * 32 + 32));
    }
    ctx.master_node().read(buf, fixed(&[48], &[32])).submit();
    let pushes1 = ctx.kind("push").items;
    assert_eq!(pushes1.len(), 2);
    let rm = custom(|c| {
        if c.offset[0] + c.range[0] >= 64 {
            sr1(32, 96)
        } else {
            sr1(0, 0)
        }
    });
    ctx.device(&[96]).read(buf, rm).submit();
    assert_eq!(ctx.kind("push").without(&pushes1).count(), 2);
}

#[test]
fn pushes_depend_on_all_writers() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[128], false);
    ctx.device(&[64])
        .name("first half")
        .discard_write(buf, OneToOne)
        .submit();
    ctx.device_at(&[64], &[64])
        .name("second half")
        .discard_write(buf, OneToOne)
        .submit();
    ctx.master_node().read(buf, All).submit();
    let push = ctx.kind("push");
    assert_eq!(push.on(1).count(), 1);
    assert!(ctx.named("first half").successors().contains(&push));
    assert!(ctx.named("second half").successors().contains(&push));
}

#[test]
fn await_push_anti_depends_on_execution_reader() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[128], true);
    let a = ctx.master_node().read(buf, All).submit();
    ctx.device(&[128]).discard_write(buf, OneToOne).submit();
    ctx.master_node().read(buf, All).submit();
    assert!(
        ctx.task(a)
            .on(0)
            .successors()
            .contains(&ctx.kind("await push").on(0))
    );
}

#[test]
fn await_push_anti_depends_on_push_reader() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[128], true);
    ctx.device(&[128]).discard_write(buf, OneToOne).submit();
    ctx.master_node().read_write(buf, All).submit();
    ctx.device(&[128]).read(buf, OneToOne).submit();
    assert!(
        ctx.kind("push")
            .on(1)
            .successors()
            .contains(&ctx.kind("await push").on(1))
    );
}

#[test]
fn await_push_anti_dependency_is_delegated_to_readers_of_earlier_await_push() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[128], true);
    ctx.device(&[128]).discard_write(buf, OneToOne).submit();
    let b = ctx.master_node().read(buf, All).submit();
    let first = ctx.kind("await push").items;
    assert_eq!(first.len(), 1);
    ctx.device(&[128]).discard_write(buf, OneToOne).submit();
    ctx.master_node().read(buf, All).submit();
    let second = ctx.kind("await push").without(&first);
    assert!(ctx.task(b).successors().contains(&second));
}

#[test]
fn anti_dependencies_with_subrange_precision_for_execution_commands() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[128], true);
    let a = ctx.device(&[64]).discard_write(buf, OneToOne).submit();
    let b = ctx.device(&[64]).read(buf, OneToOne).submit();
    let c = ctx
        .device_at(&[64], &[64])
        .discard_write(buf, OneToOne)
        .submit();
    assert!(ctx.task(a).is_concurrent_with(&ctx.task(c)));
    assert!(ctx.task(b).is_concurrent_with(&ctx.task(c)));
}

#[test]
fn anti_dependencies_with_subrange_precision_for_await_pushes() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[128], true);
    let a = ctx.device(&[128]).discard_write(buf, OneToOne).submit();
    let b = ctx.master_node().read(buf, fixed(&[64], &[64])).submit();
    ctx.device(&[64]).discard_write(buf, OneToOne).submit();
    let d = ctx.master_node().read(buf, fixed(&[0], &[64])).submit();
    let await_push = ctx.task(d).predecessors().kind("await push");
    assert_eq!(await_push.count(), 1);
    assert!(ctx.task(a).on(0).successors().contains(&await_push.on(0)));
    assert!(ctx.task(b).on(0).is_concurrent_with(&await_push.on(0)));
}

#[test]
fn split_2d_five_point_stencil_has_no_diagonal_exchange() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[256, 256], false);
    ctx.device(&[256, 256])
        .name("init")
        .split_2d()
        .discard_write(buf, OneToOne)
        .submit();
    ctx.device(&[256, 256])
        .name("read")
        .split_2d()
        .read(buf, RangeMapper::NeighborhoodAlongAxes([1, 1, 0]))
        .submit();
    for (n, diagonal) in [(0, 3), (1, 2), (2, 1), (3, 0)] {
        let push = ctx.kind("push").on(n);
        let t = push.one().push_targets().unwrap();
        assert!(
            t.iter().all(|(target, _)| *target != NodeId(diagonal)),
            "N{n} pushes to its diagonal"
        );
        // and exactly one row or column of halo to each of the two edge neighbours
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|(_, r)| r.area() == 128));
        assert_eq!(
            ctx.kind("await push")
                .on(n)
                .one()
                .await_region()
                .unwrap()
                .area(),
            256
        );
    }
}

/// A buffer's initial contents are held by every node and never pushed, also after the node
/// overwrote part of the buffer and an epoch replaced the old writers (the initial pieces and the
/// written ones then have the same writer): only what was written is sent.
#[test]
fn initial_contents_are_never_pushed() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[20], true);
    ctx.master_node()
        .read_write(buf, fixed(&[0], &[5]))
        .submit();
    ctx.epoch(EpochAction::None);
    ctx.device(&[20]).read(buf, All).submit();
    let pushes: Vec<(u64, Vec<(NodeId, Region)>)> = (0..2)
        .flat_map(|n| {
            ctx.recorder(n)
                .records()
                .iter()
                .filter_map(move |r| match &r.kind {
                    CommandKind::Push { targets, .. } => Some((n, targets.clone())),
                    _ => None,
                })
        })
        .collect();
    assert_eq!(
        pushes,
        vec![(0, targets(&[(1, Region::from_box(b1(0, 5)))]))]
    );
}

/// With many nodes a stencil's halo goes to the neighbours only, and a read of whole columns
/// reaches every other node: the pushes a node finds by comparing coordinates (built-in
/// mappers) are those the mappers yield.
#[test]
fn halo_pushes_at_64_nodes_reach_the_neighbours_and_a_column_read_reaches_every_node() {
    const NODES: u64 = 64;
    let rows = NODES as usize * 4;
    let b2 = |r0: usize, r1: usize| GridBox::from_arrays([r0, 0, 0], [r1, 8, 1]);
    let mut ctx = Ctx::new(NODES as usize);
    let halo = ctx.buffer(&[rows, 8], false);
    let columns = ctx.buffer(&[rows, 8], false);
    for buf in [halo, columns] {
        ctx.device(&[rows, 8]).discard_write(buf, OneToOne).submit();
    }
    ctx.device(&[rows, 8])
        .name("stencil")
        .read(halo, RangeMapper::NeighborhoodAlongAxes([1, 1, 0]))
        .read(columns, RangeMapper::Slice(0))
        .submit();
    let pushes = |n: u64, bid: BufferId| -> Vec<(NodeId, Region)> {
        ctx.kind("push")
            .on(n)
            .of_buffer(bid)
            .records()
            .flat_map(|r| r.push_targets().unwrap().to_vec())
            .collect()
    };
    for n in 0..NODES {
        let first = n as usize * 4;
        let mut neighbours = Vec::new();
        if n > 0 {
            neighbours.push((NodeId(n - 1), Region::from_box(b2(first, first + 1))));
        }
        if n + 1 < NODES {
            neighbours.push((NodeId(n + 1), Region::from_box(b2(first + 3, first + 4))));
        }
        assert_eq!(pushes(n, halo), neighbours, "halo pushes of N{n}");
        let everyone: Vec<(NodeId, Region)> = (0..NODES)
            .filter(|&p| p != n)
            .map(|p| (NodeId(p), Region::from_box(b2(first, first + 4))))
            .collect();
        assert_eq!(pushes(n, columns), everyone, "column pushes of N{n}");
    }
}
