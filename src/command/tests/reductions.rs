//! Celerity's `command_graph_reduction_tests.cc`.

use super::*;
use crate::error::ErrorKind;
use RangeMapper::{All, OneToOne};

fn scalar() -> Region {
    Region::from_box(SCALAR_BOX)
}

#[test]
fn reduction_command_trees() {
    let mut ctx = Ctx::new(2);
    let buf0 = ctx.buffer(&[64], false);
    let buf1 = ctx.buffer(&[1], false);
    let init = ctx.device(&[64]).discard_write(buf1, OneToOne).submit();
    let produce = ctx.device(&[64]).discard_write(buf0, OneToOne).submit();
    let reduce = ctx
        .device(&[64])
        .read(buf0, OneToOne)
        .reduce(buf1, true)
        .submit();
    let consume = ctx.device(&[64]).read(buf1, All).submit();

    assert!(
        ctx.task(init)
            .on(0)
            .successors()
            .contains(&ctx.task(reduce).on(0))
    );
    assert!(ctx.task(produce).successors().contains(&ctx.task(reduce)));
    let reductions = ctx.kind("reduction");
    assert_eq!(reductions.count_per_node(), 1);
    assert!(ctx.task(reduce).successors().contains(&reductions));
    assert!(ctx.kind("await push").successors().contains(&reductions));
    assert!(reductions.successors().contains(&ctx.task(consume)));
    assert!(
        ctx.kind("await push")
            .predecessors()
            .contains(&ctx.kind("epoch"))
    );
    for n in 0..2 {
        let rec = reductions.on(n).one();
        assert!(matches!(
            rec.kind,
            CommandKind::Reduction {
                has_local_contribution: true,
                ..
            }
        ));
        let ap = ctx.kind("await push").on(n).one();
        assert_eq!(ap.await_region().unwrap(), &scalar());
        assert_eq!(ap.transfer().unwrap().reduction, ReductionId(1));
        // only node 0 includes the buffer's previous value
        let exec = ctx.task(reduce).on(n).one();
        assert!(
            matches!(exec.kind, CommandKind::Execution { is_reduction_initializer, .. } if is_reduction_initializer == (n == 0))
        );
    }
}

#[test]
fn single_node_configurations_generate_no_reduction_commands() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[64]).reduce(buf, false).submit();
    ctx.device(&[64]).read(buf, All).submit();
    assert_eq!(ctx.kind("reduction").count(), 0);
}

#[test]
fn discarded_reductions_generate_no_reduction_command() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[1], false);
    let reduce = ctx.device(&[64]).reduce(buf, false).submit();
    let discard = ctx.device(&[64]).discard_write(buf, OneToOne).submit();
    ctx.device(&[64]).read(buf, OneToOne).submit();
    assert_eq!(ctx.kind("reduction").count(), 0);
    assert!(
        ctx.task(reduce)
            .on(0)
            .successors()
            .contains(&ctx.task(discard).on(0))
    );
    // the discarded reduction is reported complete with the next horizon or epoch
    let epoch = ctx.epoch(EpochAction::None);
    let rec = ctx.task(epoch).on(0).one();
    assert!(
        matches!(&rec.kind, CommandKind::Epoch { completed_reductions, .. } if completed_reductions == &[ReductionId(1)])
    );
}

#[test]
fn empty_accesses_do_not_resolve_pending_reductions() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[64]).name("reduce").reduce(buf, false).submit();
    ctx.device(&[64])
        .name("faux consume")
        .read(buf, fixed(&[0], &[0]))
        .submit();
    assert_eq!(ctx.kind("reduction").count(), 0);
    ctx.device(&[64])
        .name("actual consume")
        .read(buf, All)
        .submit();
    assert_eq!(ctx.kind("reduction").count_per_node(), 1);
}

#[test]
fn redundant_requirements_generate_one_reduction_command() {
    for in_one_task in [true, false] {
        let mut ctx = Ctx::new(4);
        let buf = ctx.buffer(&[1], false);
        ctx.device(&[64]).reduce(buf, false).submit();
        if in_one_task {
            ctx.master_node()
                .read(buf, All)
                .read_write(buf, All)
                .write(buf, All)
                .submit();
        } else {
            ctx.master_node().read(buf, All).submit();
            ctx.master_node().read_write(buf, All).submit();
            ctx.master_node().write(buf, All).submit();
        }
        assert_eq!(ctx.kind("reduction").count(), 1);
    }
}

#[test]
fn overwriting_commands_anti_depend_on_partial_result_pushes() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[2])
        .name("reduce a")
        .reduce(buf, false)
        .submit();
    ctx.device(&[2]).name("reduce b").reduce(buf, true).submit();
    assert!(
        ctx.kind("push")
            .on(1)
            .successors()
            .contains(&ctx.named("reduce b").on(1))
    );
}

#[test]
fn final_reduction_result_is_forwarded_to_later_readers() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[64]).reduce(buf, false).submit();
    ctx.master_node().read(buf, All).submit();
    ctx.collective(CollectiveGroupId::FIRST_USER)
        .read(buf, All)
        .submit();
    let reductions = ctx.kind("reduction");
    assert_eq!(reductions.count(), 1);
    assert_eq!(reductions.on(0).count(), 1);
    let forward = reductions.successors().kind("push").on(0);
    let s = scalar();
    assert_eq!(
        forward.one().push_targets().unwrap(),
        &[
            (NodeId(1), s.clone()),
            (NodeId(2), s.clone()),
            (NodeId(3), s)
        ]
    );
}

#[test]
fn chained_reductions_transfer_partial_results() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[2]).reduce(buf, false).submit();
    ctx.device(&[2]).reduce(buf, true).submit();
    let reduction1 = ctx.kind("reduction").items;
    assert_eq!(reduction1.len(), 1);
    ctx.master_node().read(buf, All).submit();
    let reduction2 = ctx.kind("reduction").without(&reduction1);
    assert_eq!(reduction2.count(), 1);
    assert_eq!(
        ctx.select(&reduction1)
            .predecessors()
            .kind("await push")
            .count(),
        1
    );
    assert_eq!(reduction2.predecessors().kind("await push").count(), 1);
    assert_eq!(ctx.kind("push").on(0).count(), 0);
    assert_eq!(ctx.kind("push").on(1).count(), 2);
}

#[test]
fn reductions_overwriting_the_buffer_transfer_nothing() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[1], false);
    let only_1 = custom(|c| {
        if c.range == c.global_range || c.offset[0] == 32 {
            sr1(0, 1)
        } else {
            sr1(0, 0)
        }
    });
    ctx.device(&[64]).discard_write(buf, only_1).submit();
    ctx.device(&[64]).reduce(buf, false).submit();
    assert_eq!(ctx.kind("push").count() + ctx.kind("await push").count(), 0);
}

#[test]
fn non_contributing_nodes_push_empty_notifications() {
    let mut ctx = Ctx::new(3);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[64])
        .constrain_split(&[32])
        .reduce(buf, false)
        .submit();
    assert_eq!(ctx.kind("execution").count(), 2);
    ctx.master_node().read(buf, All).submit();
    let pushes = ctx.kind("push");
    assert_eq!(pushes.count(), 2);
    assert_eq!(
        pushes.on(2).one().push_targets().unwrap(),
        &[(NodeId(0), Region::new())]
    );
    assert_eq!(pushes.on(2).predecessors(), ctx.kind("epoch").on(2));
    assert_eq!(
        pushes.on(1).one().push_targets().unwrap(),
        &[(NodeId(0), scalar())]
    );
    let red = ctx.kind("reduction").on(0).one();
    assert!(matches!(
        red.kind,
        CommandKind::Reduction {
            has_local_contribution: true,
            ..
        }
    ));
}

#[test]
fn reductions_without_the_current_value_anti_depend_on_the_previous_writer() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[1], false);
    let write = ctx.master_node().discard_write(buf, All).submit();
    let reduce = ctx.device(&[1]).reduce(buf, false).submit();
    assert!(ctx.task(write).successors().contains(&ctx.task(reduce)));
}

#[test]
fn reduction_commands_anti_depend_on_their_partial_result_pushes() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[1], false);
    let producer = ctx.device(&[2]).reduce(buf, false).submit();
    ctx.device(&[2]).read(buf, All).submit();
    let producers = ctx.task(producer);
    assert_eq!(producers.count_per_node(), 1);
    let pushes = producers.successors().kind("push");
    assert_eq!(pushes.count_per_node(), 1);
    let reductions = ctx.kind("reduction");
    assert_eq!(reductions.count_per_node(), 1);
    assert!(pushes.successors().contains(&reductions));
    for n in 0..2 {
        let push = pushes.on(n).one().id;
        assert!(
            reductions
                .on(n)
                .one()
                .depends_on(push, crate::task::DependencyKind::Anti)
        );
    }
}

#[test]
fn single_chunk_reductions_are_final_and_await_pushed_elsewhere() {
    let mut ctx = Ctx::new(3);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[1])
        .name("producer")
        .reduce(buf, false)
        .submit();
    ctx.device(&[3]).name("consumer").read(buf, All).submit();
    assert_eq!(ctx.kind("reduction").count(), 0);
    assert_eq!(ctx.named("producer").count(), 1);
    assert!(
        ctx.named("producer")
            .on(0)
            .successors()
            .contains(&ctx.kind("push").on(0))
    );
    let s = scalar();
    assert_eq!(
        ctx.kind("push").on(0).one().push_targets().unwrap(),
        &[(NodeId(1), s.clone()), (NodeId(2), s)]
    );
    for n in 1..3 {
        let ap = ctx.kind("await push").on(n);
        assert_eq!(ap.count(), 1);
        assert_eq!(ap.one().transfer().unwrap().reduction, ReductionId::NONE);
        assert!(ap.successors().contains(&ctx.named("consumer").on(n)));
    }
}

#[test]
fn non_participants_push_only_to_the_single_reader() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[4]).reduce(buf, false).submit();
    ctx.device(&[1]).read(buf, All).submit();
    assert_eq!(ctx.kind("push").count(), 3);
    assert_eq!(ctx.kind("push").on(0).count(), 0);
    for n in 1..4 {
        assert_eq!(
            ctx.kind("push").on(n).one().push_targets().unwrap(),
            &[(NodeId(0), scalar())]
        );
    }
}

#[test]
fn readers_on_a_strict_subset_of_nodes_are_an_error() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[4]).reduce(buf, false).submit();
    let before: Vec<usize> = ctx
        .gens
        .iter()
        .map(|g| g.recorder().unwrap().records().len())
        .collect();
    let err = ctx
        .device(&[2])
        .name("mytask")
        .read(buf, All)
        .try_submit()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(
        err.message().starts_with(
            "Device kernel T2 \"mytask\" reads the result of a reduction into B0 on 2 of 4 nodes"
        ),
        "{}",
        err.message()
    );
    let after: Vec<usize> = ctx
        .gens
        .iter()
        .map(|g| g.recorder().unwrap().records().len())
        .collect();
    assert_eq!(before, after);
}

#[test]
fn non_participants_await_the_result_when_reading_later() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[1], false);
    ctx.device(&[4]).reduce(buf, false).submit();
    let reducer = ctx.device(&[1]).read(buf, All).submit();
    let consumer = ctx.device(&[4]).read(buf, All).submit();
    let reductions = ctx.kind("reduction");
    assert_eq!(reductions.count(), 1);
    assert!(reductions.successors().contains(&ctx.task(reducer)));
    assert!(
        reductions
            .on(0)
            .successors()
            .contains(&ctx.kind("push").on(0))
    );
    let s = scalar();
    assert_eq!(
        ctx.kind("push").on(0).one().push_targets().unwrap(),
        &[
            (NodeId(1), s.clone()),
            (NodeId(2), s.clone()),
            (NodeId(3), s)
        ]
    );
    for n in 1..4 {
        let ap = ctx.kind("await push").on(n);
        assert_eq!(ap.count(), 1);
        assert!(ap.successors().contains(&ctx.task(consumer).on(n)));
        assert_eq!(ctx.kind("push").on(n).count(), 1);
    }
}
