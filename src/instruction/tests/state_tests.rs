//! The tracking state driven directly, lookahead (Celerity's `scheduler_tests.cc`) and bounded
//! state.

use super::*;
use crate::grid::Region;
use crate::instruction::buffer_state::{AccessFront, BufferAllocation, FrontMode};
use crate::task::RangeMapper;

fn i(n: u64) -> InstructionId {
    InstructionId(n)
}

#[test]
fn access_fronts_collapse_into_epochs() {
    let mut f = AccessFront::single(i(3), FrontMode::Read);
    f.add(i(5));
    f.add(i(9));
    assert_eq!(
        f.with_epoch_applied(i(2)),
        f,
        "nothing older than the epoch"
    );
    let g = f.with_epoch_applied(i(6));
    assert_eq!(g.instructions(), &[i(6), i(9)]);
    assert_eq!(g.mode(), FrontMode::Read);
    assert!(f.with_epoch_applied(i(10)).is_only(i(10)));
}

#[test]
fn access_fronts_collapse_into_epochs_in_place() {
    let mut f = AccessFront::single(i(3), FrontMode::Read);
    f.add(i(5));
    f.add(i(9));
    // in place, a front changes exactly when the copy would differ from it
    for epoch in [2, 3, 5, 6, 9, 10] {
        let mut g = f.clone();
        let expected = f.with_epoch_applied(i(epoch));
        assert_eq!(g.apply_epoch(i(epoch)), expected != f, "epoch {epoch}");
        assert_eq!(g, expected, "epoch {epoch}");
    }
    let mut only = AccessFront::single(i(4), FrontMode::Write);
    assert!(!only.apply_epoch(i(4)), "[epoch] is already collapsed");
    assert!(only.is_only(i(4)));
}

#[test]
fn allocation_fronts_track_reads_and_writes() {
    let aid = AllocationId::new(MemoryId::HOST, 1);
    let whole = gbox([0, 0, 0], [100, 1, 1]);
    let mut a = BufferAllocation::new(aid, Some(i(1)), whole);
    let left: Region = gbox([0, 0, 0], [50, 1, 1]).into();
    a.track_atomic_write(&left, i(2));
    a.track_concurrent_read(&left, i(3));
    a.track_concurrent_read(&whole.into(), i(4));
    let accesses = a.last_concurrent_accesses.get_region_values(&whole.into());
    assert_eq!(accesses.len(), 2);
    assert_eq!(accesses[0].1.instructions(), &[i(3), i(4)]);
    assert_eq!(accesses[1].1.instructions(), &[i(4)]);
    let writers = a.last_writers.get_region_values(&whole.into());
    assert_eq!(writers[0].1.instructions(), &[i(2)]);
    assert_eq!(writers[1].1.mode(), FrontMode::Allocate);
    // overlapping concurrent writes keep every writer
    a.begin_concurrent_writes(&left);
    a.track_concurrent_write(&left, i(5));
    a.track_concurrent_write(&left, i(6));
    assert_eq!(
        a.last_writers.get_region_values(&left)[0].1.instructions(),
        &[i(5), i(6)]
    );
    a.apply_epoch(i(5));
    assert_eq!(
        a.last_writers.get_region_values(&left)[0].1.instructions(),
        &[i(5), i(6)]
    );
    a.apply_epoch(i(7));
    assert!(
        a.last_writers
            .get_region_values(&whole.into())
            .iter()
            .all(|(_, f)| f.is_only(i(7)))
    );
}

fn growing_writes(lookahead: Lookahead) -> Ctx {
    let mut ctx = Ctx::builder().lookahead(lookahead).horizon_step(2).build();
    let buf = ctx.buffer(&[20], false);
    for n in 0..20 {
        ctx.device(
            &[1],
            CommandGroup::new().discard_write(buf, RangeMapper::Fixed(sr([n, 0, 0], [1, 1, 1]))),
        );
    }
    ctx.finish();
    ctx
}

#[test]
fn lookahead_merges_growing_allocations() {
    for lookahead in [Lookahead::Auto, Lookahead::Infinite] {
        let ctx = growing_writes(lookahead);
        let allocs = ctx.select(is_alloc);
        assert_eq!(allocs.len(), 1, "{lookahead:?}");
        assert_eq!(alloc_info(allocs[0]).1, Some(gbox([0, 0, 0], [20, 1, 1])));
        assert!(ctx.recorder().warnings().is_empty());
    }
    let ctx = growing_writes(Lookahead::None);
    assert_eq!(ctx.select(is_alloc).len(), 20);
    assert!(
        ctx.recorder()
            .warnings()
            .iter()
            .any(|w| w.contains("frequent allocations"))
    );
}

#[test]
fn anticipate_reports_whether_a_command_allocates() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[64], false);
    ctx.device(
        &[64],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    // the same access again needs no allocation
    let tid = ctx
        .tm
        .submit(
            TaskSpec::device(1, Range::from_slice(&[64])),
            CommandGroup::new().read_write(buf, RangeMapper::OneToOne),
        )
        .unwrap();
    let _ = tid;
    let tasks: Vec<_> = std::mem::take(&mut *ctx.tasks.lock().unwrap());
    let mut hints = Vec::new();
    for t in tasks {
        for cmd in ctx.cggen.build_task(&t).unwrap() {
            hints.push(ctx.iggen.anticipate(&cmd));
            ctx.iggen.compile(&cmd).unwrap();
        }
    }
    assert!(hints.iter().all(|h| *h == SchedulingHint::IsSelfContained));
    let other = ctx.buffer(&[8], false);
    let tid = ctx
        .tm
        .submit(
            TaskSpec::device(1, Range::from_slice(&[1])),
            CommandGroup::new().discard_write(other, RangeMapper::All),
        )
        .unwrap();
    let _ = tid;
    let tasks: Vec<_> = std::mem::take(&mut *ctx.tasks.lock().unwrap());
    let cmd = &ctx.cggen.build_task(&tasks[0]).unwrap()[0];
    assert_eq!(
        ctx.iggen.anticipate(cmd),
        SchedulingHint::CouldMergeWithFutureCommands
    );
}

#[test]
fn long_runs_keep_the_tracking_state_bounded() {
    let mut ctx = Ctx::builder().devices(2).horizon_step(1).build();
    let buf = ctx.buffer(&[256], true);
    for _ in 0..100 {
        ctx.device(
            &[256],
            CommandGroup::new().read_write(buf, RangeMapper::OneToOne),
        );
        ctx.host(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    }
    let state = &ctx.iggen.buffers[buf];
    let writers = state.original_writers.len();
    let mut fronts = 0;
    for m in &state.memories {
        for a in &m.allocations {
            fronts += a.last_concurrent_accesses.len();
        }
    }
    assert!(writers <= 4, "{writers} original-writer entries");
    assert!(fronts <= 12, "{fronts} access-front entries");
    // every tracked instruction is recent
    let latest = ctx.all().last().unwrap().id().0;
    state
        .original_writers
        .for_each(|_, w| assert!(latest - w.writer.0 < 40));
}

#[test]
fn fences_flush_the_lookahead_queue() {
    let mut ctx = Ctx::builder().lookahead(Lookahead::Infinite).build();
    let buf = ctx.buffer(&[16], false);
    ctx.device(
        &[16],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    assert_eq!(ctx.select(is_kernel).len(), 0, "held back: it allocates");
    ctx.fence_buffer(buf, None);
    assert_eq!(ctx.select(is_kernel).len(), 1);
    assert_eq!(
        ctx.select(|k| matches!(k, InstructionKind::Fence { .. }))
            .len(),
        1
    );
}

#[test]
fn anticipated_boxes_are_allocated_with_the_first_real_allocation() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[64], false);
    let mut commands = Vec::new();
    for n in 0..4 {
        ctx.tm
            .submit(
                TaskSpec::device(1, Range::from_slice(&[1])),
                CommandGroup::new()
                    .discard_write(buf, RangeMapper::Fixed(sr([n * 16, 0, 0], [16, 1, 1]))),
            )
            .unwrap();
    }
    let tasks: Vec<_> = std::mem::take(&mut *ctx.tasks.lock().unwrap());
    for t in &tasks {
        commands.extend(ctx.cggen.build_task(t).unwrap());
    }
    for c in &commands {
        ctx.iggen.anticipate(c);
    }
    for c in &commands {
        let (batch, _) = ctx.iggen.compile(c).unwrap();
        check_batch(&batch);
    }
    let allocs = ctx.select(is_alloc);
    assert_eq!(allocs.len(), 1);
    assert_eq!(alloc_info(allocs[0]).1, Some(gbox([0, 0, 0], [64, 1, 1])));
}
