//! Celerity's `graph_compaction_tests.cc`: horizons bound the tracking state, anti-dependencies
//! across horizons, collective and side-effect subsumption; plus bounded state over long runs.

use super::*;
use RangeMapper::{All, OneToOne};

#[test]
fn horizons_bound_the_tracking_state() {
    const STEPS: usize = 100;
    const WIDTH: usize = 300;
    for step in [1u32, 2, 3] {
        let mut ctx = Ctx::new(1);
        let buf = ctx.buffer(&[STEPS, WIDTH], false);
        ctx.set_horizon_step(step);
        for t in 0..STEPS {
            let read = custom(move |_| Subrange::new(Id([0, 0, 0]), Range([t, WIDTH, 1])));
            let write = custom(move |_| Subrange::new(Id([t, 0, 0]), Range([1, WIDTH, 1])));
            ctx.device(&[WIDTH])
                .read(buf, read)
                .discard_write(buf, write)
                .submit();
            let g = &ctx.gens[0];
            if t > 2 * step as usize {
                let s = step as usize;
                // one entry for everything before the applied horizon, one per later writer
                assert_eq!(
                    g.distinct_last_writers().len(),
                    1 + s + (t + 1) % s,
                    "step {step}, t {t}"
                );
                assert!(
                    g.num_tracked_commands() <= 2 * (s + 1) + 2,
                    "step {step}, t {t}: {}",
                    g.num_tracked_commands()
                );
            }
            let horizons = ctx.kind("horizon");
            let live = horizons
                .records()
                .filter(|r| r.id >= g.epoch_for_new_commands())
                .count();
            assert!(live <= 3);
        }
    }
}

#[test]
fn horizons_deal_with_anti_dependencies() {
    let mut ctx = Ctx::new(1);
    ctx.set_horizon_step(2);
    let buf_a = ctx.buffer(&[100], false);
    let buf_b = ctx.buffer(&[100], false);
    ctx.device(&[100])
        .discard_write(buf_a, OneToOne)
        .discard_write(buf_b, OneToOne)
        .submit();
    ctx.device(&[100]).read(buf_b, OneToOne).submit();
    let first_horizon = ctx.kind("horizon").items;
    assert_eq!(first_horizon.len(), 1);
    let mut rw = TaskId(0);
    for _ in 0..3 {
        rw = ctx.device(&[100]).read_write(buf_a, OneToOne).submit();
    }
    let w = ctx
        .device(&[100])
        .read(buf_a, OneToOne)
        .discard_write(buf_b, OneToOne)
        .submit();
    assert!(ctx.task(rw).successors().contains(&ctx.task(w)));
    assert!(
        ctx.select(&first_horizon)
            .successors()
            .contains(&ctx.task(w))
    );
}

#[test]
fn previous_horizons_are_last_writers_of_host_initialized_buffers() {
    let mut ctx = Ctx::new(2);
    ctx.set_horizon_step(2);
    let buf0 = ctx.buffer(&[100], true);
    ctx.device(&[100])
        .name("access_host_init_buf")
        .read_write(buf0, OneToOne)
        .submit();
    let buf1 = ctx.buffer(&[100], false);
    for _ in 0..8 {
        ctx.device(&[100]).discard_write(buf1, OneToOne).submit();
    }
    for g in &ctx.gens {
        // the initial writers are long gone from the tracking state
        assert!(g.num_tracked_commands() < 12);
    }
    let buf2 = ctx.buffer(&[100], true);
    let t = ctx
        .device(&[100])
        .name("second")
        .read_write(buf2, OneToOne)
        .submit();
    let preds = ctx.task(t).predecessors();
    assert_eq!(preds.count_per_node(), 1);
    assert_eq!(preds.kind("horizon").count(), 2);
}

#[test]
fn collective_commands_depend_on_the_horizon_shadowing_their_predecessor() {
    let mut ctx = Ctx::new(1);
    ctx.set_horizon_step(2);
    let group = CollectiveGroupId::FIRST_USER;
    ctx.collective(group).submit();
    let buf = ctx.buffer(&[1], false);
    for _ in 0..4 {
        ctx.master_node().discard_write(buf, All).submit();
    }
    let second = ctx.collective(group).read(buf, All).submit();
    let preds = ctx.task(second).predecessors();
    assert_eq!(preds.count(), 2);
    assert_eq!(preds.kind("execution").count(), 1);
    assert_eq!(preds.kind("horizon").count(), 1);
}

#[test]
fn side_effect_dependencies_are_subsumed_by_horizons() {
    let mut ctx = Ctx::new(1);
    ctx.set_horizon_step(2);
    let ho = ctx.host_object();
    ctx.master_node().affect(ho).submit();
    let buf = ctx.buffer(&[1], false);
    for _ in 0..4 {
        ctx.master_node().discard_write(buf, All).submit();
    }
    let second = ctx.master_node().affect(ho).submit();
    let preds = ctx.task(second).predecessors();
    assert_eq!(preds.count(), 1);
    assert_eq!(preds.kind("horizon").count(), 1);
}

#[test]
fn epochs_prune_the_tracking_state() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[64], false);
    for _ in 0..10 {
        ctx.device(&[64]).discard_write(buf, OneToOne).submit();
        ctx.master_node().read(buf, All).submit();
    }
    ctx.epoch(EpochAction::Barrier);
    ctx.device(&[64]).discard_write(buf, OneToOne).submit();
    for g in &ctx.gens {
        // the epoch and the one new execution command
        assert_eq!(g.num_tracked_commands(), 2);
        assert_eq!(g.distinct_last_writers().len(), 2);
    }
}

/// A 2-D stencil over many steps on 4 nodes: the per-node state stays flat.
#[test]
fn tracking_state_stays_bounded_over_long_runs() {
    let mut ctx = Ctx::new(4);
    let a = ctx.buffer(&[64, 64], false);
    let b = ctx.buffer(&[64, 64], false);
    ctx.device(&[64, 64])
        .split_2d()
        .discard_write(a, OneToOne)
        .submit();
    ctx.device(&[64, 64])
        .split_2d()
        .discard_write(b, OneToOne)
        .submit();
    let (mut src, mut dst) = (a, b);
    let mut max_seen = [0usize; 3];
    for step in 0..300 {
        ctx.device(&[64, 64])
            .split_2d()
            .read(src, RangeMapper::NeighborhoodAlongAxes([1, 1, 0]))
            .discard_write(dst, OneToOne)
            .submit();
        std::mem::swap(&mut src, &mut dst);
        for g in &ctx.gens {
            let now = [
                g.num_tracked_commands(),
                g.num_last_writer_entries(),
                g.distinct_last_writers().len(),
            ];
            if step < 50 {
                for i in 0..3 {
                    max_seen[i] = max_seen[i].max(now[i]);
                }
            } else {
                for i in 0..3 {
                    assert!(
                        now[i] <= max_seen[i],
                        "step {step}: {now:?} grew beyond {max_seen:?}"
                    );
                }
            }
        }
    }
}
