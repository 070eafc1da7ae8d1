//! Celerity's `command_graph_general_tests.cc`: dependencies, anti-dependencies, collective
//! groups, side effects, epochs, fences and the error policies.

use super::*;
use crate::error::ErrorKind;
use crate::task::DependencyKind;
use RangeMapper::{All, OneToOne};

#[test]
fn dependencies_on_remotely_produced_data() {
    let mut ctx = Ctx::new(2);
    let buf0 = ctx.buffer(&[128], false);
    let buf1 = ctx.buffer(&[128], false);
    ctx.device(&[128]).discard_write(buf0, OneToOne).submit();
    ctx.device(&[128]).discard_write(buf1, OneToOne).submit();
    let c = ctx.master_node().read(buf0, All).read(buf1, All).submit();
    let awaits = ctx.kind("await push").on(0);
    assert_eq!(awaits.count(), 2);
    assert!(awaits.successors().contains(&ctx.task(c).on(0)));
}

#[test]
fn dependencies_on_data_received_by_an_earlier_task() {
    let mut ctx = Ctx::new(2);
    let buf0 = ctx.buffer(&[128], false);
    ctx.device(&[128]).discard_write(buf0, OneToOne).submit();
    ctx.master_node().read(buf0, All).submit();
    let awaits = ctx.kind("await push").on(0).items;
    assert_eq!(awaits.len(), 1);
    let c = ctx.master_node().read(buf0, All).submit();
    assert_eq!(ctx.kind("await push").on(0).items, awaits);
    assert!(
        ctx.select(&awaits)
            .successors()
            .contains(&ctx.task(c).on(0))
    );
}

#[test]
fn dependencies_on_locally_produced_data() {
    let mut ctx = Ctx::new(2);
    let buf0 = ctx.buffer(&[128], false);
    let buf1 = ctx.buffer(&[128], false);
    let a = ctx.device(&[128]).discard_write(buf0, OneToOne).submit();
    let b = ctx.device(&[128]).discard_write(buf1, OneToOne).submit();
    let c = ctx
        .device(&[128])
        .read(buf0, OneToOne)
        .read(buf1, OneToOne)
        .submit();
    assert!(ctx.task(a).successors().contains(&ctx.task(c)));
    assert!(ctx.task(b).successors().contains(&ctx.task(c)));
    assert_eq!(ctx.kind("push").count() + ctx.kind("await push").count(), 0);
}

#[test]
fn dependencies_on_all_local_writers_of_a_range() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[96], false);
    let a = ctx
        .device_at(&[32], &[0])
        .discard_write(buf, OneToOne)
        .submit();
    let b = ctx
        .device_at(&[32], &[32])
        .discard_write(buf, OneToOne)
        .submit();
    let c = ctx
        .device_at(&[32], &[64])
        .discard_write(buf, OneToOne)
        .submit();
    let d = ctx.device(&[96]).read(buf, OneToOne).submit();
    for t in [a, b, c] {
        assert!(ctx.task(t).successors().contains(&ctx.task(d)));
    }
}

#[test]
fn anti_dependencies_for_commands_with_a_task_level_true_dependency() {
    let mut ctx = Ctx::new(2);
    let buf0 = ctx.buffer(&[128], false);
    let buf1 = ctx.buffer(&[128], false);
    let a = ctx
        .device(&[128])
        .discard_write(buf0, OneToOne)
        .discard_write(buf1, OneToOne)
        .submit();
    // only node 1 reads buf0, but both overwrite buf1
    let node_1_reads = custom(|c| match (c.range == c.global_range, c.offset[0]) {
        (true, _) => sr1(64, 128),
        (false, 0) => sr1(0, 0),
        _ => sr1(c.offset[0], c.offset[0] + c.range[0]),
    });
    let b = ctx
        .device(&[128])
        .read(buf0, node_1_reads)
        .discard_write(buf1, OneToOne)
        .submit();
    assert!(ctx.task(a).on(0).successors().contains(&ctx.task(b).on(0)));
    assert!(ctx.task(a).on(1).successors().contains(&ctx.task(b).on(1)));
}

#[test]
fn no_false_anti_dependencies_through_other_buffers() {
    let mut ctx = Ctx::new(1);
    let buf0 = ctx.buffer(&[128], false);
    let buf1 = ctx.buffer(&[128], false);
    ctx.device(&[128])
        .discard_write(buf0, OneToOne)
        .discard_write(buf1, OneToOne)
        .submit();
    let b = ctx.device(&[128]).read(buf0, OneToOne).submit();
    let c = ctx.device(&[128]).discard_write(buf1, OneToOne).submit();
    assert!(ctx.task(b).is_concurrent_with(&ctx.task(c)));
}

#[test]
fn anti_successors_of_the_last_writer_are_not_anti_dependency_candidates() {
    let mut ctx = Ctx::new(1);
    let buf0 = ctx.buffer(&[128], false);
    let buf1 = ctx.buffer(&[128], false);
    ctx.device(&[128])
        .discard_write(buf0, OneToOne)
        .discard_write(buf1, OneToOne)
        .submit();
    let b = ctx.device(&[128]).discard_write(buf0, OneToOne).submit();
    let c = ctx.device(&[128]).discard_write(buf1, OneToOne).submit();
    assert!(ctx.task(b).is_concurrent_with(&ctx.task(c)));
}

#[test]
fn anti_dependency_onto_the_producer_without_readers() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[128], false);
    let a = ctx.device(&[128]).discard_write(buf, OneToOne).submit();
    let b = ctx.device(&[128]).discard_write(buf, OneToOne).submit();
    assert!(ctx.task(a).successors().contains(&ctx.task(b)));
    for n in 0..2 {
        let exec = ctx.task(b).on(n).one();
        let prev = ctx.task(a).on(n).one().id;
        assert!(exec.depends_on(prev, DependencyKind::Anti));
    }
}

#[test]
fn anti_dependencies_onto_pushes_of_the_same_task() {
    for writing_node in [0u64, 1] {
        let other_node = 1 - writing_node;
        let mut ctx = Ctx::new(2);
        let buf = ctx.buffer(&[128], false);
        let only_one_writes = custom(move |c| {
            let own = sr1(c.offset[0], c.offset[0] + c.range[0]);
            if c.range == c.global_range {
                return if writing_node == 0 {
                    sr1(0, 64)
                } else {
                    sr1(64, 128)
                };
            }
            let node = c.offset[0] / 64;
            if node as u64 == writing_node {
                own
            } else {
                sr1(0, 0)
            }
        });
        ctx.device(&[128]).discard_write(buf, OneToOne).submit();
        let b = ctx
            .device(&[128])
            .read(buf, All)
            .discard_write(buf, only_one_writes)
            .submit();
        let push_w = ctx.kind("push").on(writing_node);
        let push_o = ctx.kind("push").on(other_node);
        assert_eq!((push_w.count(), push_o.count()), (1, 1));
        assert!(!push_o.successors().contains(&ctx.task(b).on(other_node)));
        assert!(push_w.successors().contains(&ctx.task(b).on(writing_node)));
    }
}

#[test]
fn anti_dependencies_for_host_initialized_buffers() {
    let mut ctx = Ctx::new(2);
    let buf0 = ctx.buffer(&[128], true);
    let buf1 = ctx.buffer(&[128], true);
    let a = ctx.device(&[128]).read(buf0, OneToOne).submit();
    let b = ctx.device(&[128]).discard_write(buf0, OneToOne).submit();
    assert!(ctx.task(a).successors().contains(&ctx.task(b)));
    let c = ctx.device(&[128]).discard_write(buf1, OneToOne).submit();
    assert!(
        ctx.task(c)
            .is_concurrent_with(&ctx.task(a).union(&ctx.task(b)))
    );
    assert_eq!(ctx.kind("push").count() + ctx.kind("await push").count(), 0);
}

#[test]
fn collective_groups_serialise_only_their_own_tasks() {
    let mut ctx = Ctx::new(2);
    let group = ctx.collective_group();
    let default = CollectiveGroupId::FIRST_USER;
    ctx.master_node().name("task a").submit();
    ctx.collective(default).name("implicit 1").submit();
    ctx.collective(default).name("implicit 2").submit();
    ctx.collective(group).name("explicit 1").submit();
    ctx.collective(group).name("explicit 2").submit();
    let a = ctx.named("task a").on(0);
    for name in ["implicit 1", "implicit 2", "explicit 1", "explicit 2"] {
        assert!(ctx.named(name).on(0).is_concurrent_with(&a), "{name}");
        assert_eq!(ctx.named(name).count_per_node(), 1);
    }
    for (i, e) in [
        ("implicit 1", "explicit 1"),
        ("implicit 1", "explicit 2"),
        ("implicit 2", "explicit 1"),
        ("implicit 2", "explicit 2"),
    ] {
        assert!(ctx.named(i).is_concurrent_with(&ctx.named(e)));
    }
    for (first, second) in [("implicit 1", "implicit 2"), ("explicit 1", "explicit 2")] {
        assert!(ctx.named(first).successors().contains(&ctx.named(second)));
        for n in 0..2 {
            let dep = ctx
                .named(second)
                .on(n)
                .one()
                .dependency_on_record(ctx.named(first).on(n).one().id);
            assert_eq!(
                dep.origin,
                crate::task::DependencyOrigin::CollectiveGroupSerialization
            );
        }
    }
}

#[test]
fn side_effects_serialise_commands_per_host_object() {
    let mut ctx = Ctx::new(2);
    let common = ctx.host_object();
    let ho_a = ctx.host_object();
    let ho_b = ctx.host_object();
    let t0 = ctx.host(&[2]).affect(ho_a).submit();
    let t1 = ctx.host(&[2]).affect(common).affect(ho_b).submit();
    let t2 = ctx.host(&[2]).affect(common).submit();
    assert_eq!(ctx.task(t0).predecessors().kind("epoch").count(), 2);
    assert_eq!(ctx.task(t1).predecessors().kind("epoch").count(), 2);
    let preds = ctx.task(t2).predecessors();
    assert_eq!(preds.count_per_node(), 1);
    assert_eq!(preds, ctx.task(t1));
}

#[test]
fn epochs_serialise_task_commands_on_every_node() {
    let mut ctx = Ctx::new(2);
    ctx.device(&[2]).name("task a").submit();
    ctx.device(&[2]).name("task b").submit();
    let before_epoch = ctx.all().items;
    let epoch = ctx.epoch(EpochAction::None);
    let init = ctx.task(TaskId::INIT_EPOCH);
    assert_eq!(init.count_per_node(), 1);
    assert_eq!(ctx.task(epoch).count_per_node(), 1);
    for name in ["task a", "task b"] {
        assert_eq!(ctx.named(name).count_per_node(), 1);
        assert!(init.successors().contains(&ctx.named(name)));
        assert!(ctx.named(name).successors().contains(&ctx.task(epoch)));
    }
    let buf = ctx.buffer(&[2], true);
    ctx.device(&[2])
        .name("task c")
        .read_write(buf, OneToOne)
        .submit();
    ctx.device(&[2])
        .name("task d")
        .discard_write(buf, OneToOne)
        .submit();
    assert!(ctx.task(epoch).successors().contains(&ctx.named("task c")));
    assert!(ctx.task(epoch).successors().contains(&ctx.named("task d")));
    assert!(
        ctx.named("task c")
            .successors()
            .contains(&ctx.named("task d"))
    );
    let later = ctx
        .named("task c")
        .union(&ctx.named("task d"))
        .predecessors();
    // dependencies do not pass the epoch
    assert!(later.items.is_disjoint(&before_epoch));
}

#[test]
fn sequence_of_epochs_without_commands_in_between() {
    let mut ctx = Ctx::new(2);
    let mut before = TaskId::INIT_EPOCH;
    for action in [EpochAction::Barrier, EpochAction::Shutdown] {
        let tid = ctx.epoch(action);
        assert_eq!(ctx.task(tid).predecessors().count_per_node(), 1);
        assert_eq!(ctx.task(before).successors().count_per_node(), 1);
        assert!(ctx.task(before).successors().contains(&ctx.task(tid)));
        before = tid;
    }
}

#[test]
fn every_command_transitively_depends_on_the_preceding_epoch() {
    let mut ctx = Ctx::new(2);
    let buf1 = ctx.buffer(&[2], true);
    let buf2 = ctx.buffer(&[1], false);
    let buf3 = ctx.buffer(&[1], false);
    ctx.device(&[2])
        .discard_write(buf2, OneToOne)
        .reduce(buf3, false)
        .submit();
    let epoch = ctx.epoch(EpochAction::None);
    let after_epoch = ctx.all().items;
    ctx.device(&[2])
        .name("task a")
        .discard_write(buf1, OneToOne)
        .read(buf2, All)
        .submit();
    ctx.device(&[2]).name("task b").read(buf3, All).submit();
    let new = ctx.all().without(&after_epoch);
    assert!(new.kind("await push").count() > 0 && new.kind("reduction").count() > 0);
    assert_eq!(ctx.task(epoch).transitive_successors(), new);
}

#[test]
fn fences_depend_on_host_objects() {
    let mut ctx = Ctx::new(2);
    let ho = ctx.host_object();
    let a = ctx
        .collective(CollectiveGroupId::FIRST_USER)
        .affect(ho)
        .submit();
    let fence = ctx.fence_host_object(ho);
    let b = ctx
        .collective(CollectiveGroupId::FIRST_USER)
        .affect(ho)
        .submit();
    assert_eq!(ctx.task(a).count_per_node(), 1);
    assert!(ctx.task(a).successors().contains(&ctx.task(fence)));
    assert!(ctx.task(fence).successors().contains(&ctx.task(b)));
}

#[test]
fn fences_depend_on_buffers() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[2], false);
    let a = ctx.master_node().discard_write(buf, All).submit();
    let fence = ctx.fence_buffer(buf);
    let b = ctx
        .collective(CollectiveGroupId::FIRST_USER)
        .discard_write(buf, OneToOne)
        .submit();
    for n in 0..2u64 {
        assert_eq!(ctx.task(a).on(n).count(), usize::from(n == 0));
        assert_eq!(ctx.kind("push").on(n).count(), usize::from(n == 0));
        assert_eq!(ctx.kind("await push").on(n).count(), usize::from(n == 1));
        if n == 0 {
            assert!(
                ctx.task(a)
                    .on(0)
                    .successors()
                    .contains(&ctx.kind("push").on(0))
            );
            assert!(
                ctx.task(a)
                    .on(0)
                    .successors()
                    .contains(&ctx.task(fence).on(0))
            );
        } else {
            assert!(
                ctx.kind("await push")
                    .on(1)
                    .successors()
                    .contains(&ctx.task(fence).on(1))
            );
        }
        assert_eq!(ctx.task(b).on(n).count(), 1);
        assert!(
            ctx.task(fence)
                .on(n)
                .successors()
                .contains(&ctx.task(b).on(n))
        );
        assert_eq!(ctx.task(fence).on(n).one().kind, CommandKind::Fence);
    }
}

fn uninit_ctx() -> Ctx {
    // the task layer would report the read first
    Ctx::with_policies(2, ErrorPolicy::Ignore, CommandPolicies::default())
}

#[test]
fn uninitialized_read_of_a_fully_uninitialized_buffer() {
    let mut ctx = uninit_ctx();
    let buf = ctx.buffer(&[1], false);
    let err = ctx
        .device(&[2])
        .name("uninitialized")
        .read(buf, All)
        .try_submit()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AccessPattern);
    assert_eq!(
        err.message(),
        "the chunk [0,1) of Device kernel T1 \"uninitialized\" on N0 reads B0 {[0,1)}, which no \
         node has written"
    );
}

#[test]
fn uninitialized_read_of_partially_initialized_buffers() {
    for (mapper, node, missing) in [
        (
            All,
            0,
            "[0,1) of Device kernel T2 on N0 reads B0 {[1,2)}, which no node has written",
        ),
        (
            OneToOne,
            1,
            "[1,2) of Device kernel T2 on N1 reads B0 {[1,2)}, which no node has written",
        ),
    ] {
        let mut ctx = uninit_ctx();
        let buf = ctx.buffer(&[2], false);
        ctx.device(&[1]).discard_write(buf, OneToOne).submit();
        let err = ctx.device(&[2]).read(buf, mapper).try_submit().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AccessPattern);
        assert!(
            err.message().ends_with(missing),
            "N{node}: {}",
            err.message()
        );
    }
}

#[test]
fn uninitialized_reads_are_ignored_or_logged_by_policy() {
    for policy in [ErrorPolicy::Ignore, ErrorPolicy::Log] {
        let mut ctx = Ctx::with_policies(
            2,
            ErrorPolicy::Ignore,
            CommandPolicies {
                uninitialized_read: policy,
                overlapping_write: ErrorPolicy::Error,
            },
        );
        let buf = ctx.buffer(&[2], false);
        ctx.device(&[2]).read(buf, All).submit();
        assert_eq!(ctx.kind("push").count() + ctx.kind("await push").count(), 0);
    }
}

#[test]
fn overlapping_writes_are_errors() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[20, 20], false);
    let err = ctx
        .device(&[20, 20])
        .discard_write(buf, All)
        .try_submit()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AccessPattern);
    assert!(
        err.message()
            .starts_with("Device kernel T1 has overlapping writes"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains("B0 {[0,20)x[0,20)}"),
        "{}",
        err.message()
    );

    let err = ctx
        .host(&[20, 20])
        .name("host neighborhood")
        .discard_write(buf, RangeMapper::Neighborhood([1, 1, 0]))
        .try_submit()
        .unwrap_err();
    assert!(
        err.message()
            .starts_with("Host task T2 \"host neighborhood\" has overlapping writes"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains("B0 {[9,11)x[0,20)}"),
        "{}",
        err.message()
    );
    // a failed build changed nothing: the next task still gets consecutive command ids
    ctx.gens
        .iter()
        .for_each(|g| assert_eq!(g.recorder().unwrap().records().len(), 1));
}

#[test]
fn overlapping_writes_are_ignored_by_policy() {
    let mut ctx = Ctx::with_policies(
        2,
        ErrorPolicy::Error,
        CommandPolicies {
            uninitialized_read: ErrorPolicy::Error,
            overlapping_write: ErrorPolicy::Ignore,
        },
    );
    let buf = ctx.buffer(&[20, 20], false);
    ctx.device(&[20, 20]).discard_write(buf, All).submit();
    assert_eq!(ctx.kind("execution").count(), 2);
}
