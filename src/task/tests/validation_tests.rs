//! The bad-input list of API.md as far as the task layer sees it, the uninitialised-read policies,
//! reductions, hints and custom-mapper clamping. A failing call must change nothing.

use std::sync::Arc;

use super::celerity_cases::capture_logs;
use super::*;
use crate::ErrorKind;
use crate::types::ReductionId;

/// Submits and expects an error of `kind` whose message contains `needle`; checks nothing changed.
fn expect_err(ctx: &mut Ctx, spec: TaskSpec, cg: CommandGroup, kind: ErrorKind, needle: &str) {
    let next = ctx.tm.next_task_id();
    let live = ctx.tm.num_live_tasks();
    let err = ctx.tm.submit(spec, cg).unwrap_err();
    assert_eq!(err.kind(), kind, "{}", err.message());
    assert!(
        err.message().contains(needle),
        "{:?} lacks {needle:?}",
        err.message()
    );
    assert_eq!(ctx.tm.next_task_id(), next);
    assert_eq!(ctx.tm.num_live_tasks(), live);
}

#[test]
fn mapper_errors_name_mapper_value_and_buffer() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[1024], true);
    ctx.tm.notify_buffer_name_changed(buf, "grid");
    let spec = TaskSpec::device(1, Range::new(1024, 1, 1));
    let cases = [
        (
            fixed1(0, 2048),
            "range mapper FIXED subrange [0,2048) exceeds buffer B0 \"grid\" range [0,1024)",
        ),
        (
            RangeMapper::Slice(1),
            "range mapper SLICE dimension 1 is not below the dimensionality 1 of buffer B0 \"grid\"",
        ),
    ];
    for (mapper, message) in cases {
        expect_err(
            &mut ctx,
            spec,
            CommandGroup::new().read(buf, mapper),
            ErrorKind::InvalidArgument,
            message,
        );
    }
    expect_err(
        &mut ctx,
        TaskSpec::device(2, Range::new(32, 32, 1)),
        CommandGroup::new().read(buf, RangeMapper::OneToOne),
        ErrorKind::InvalidArgument,
        "the kernel is 2-D and buffer B0 \"grid\" is 1-D",
    );
}

#[test]
fn reduction_errors() {
    let mut ctx = Ctx::new();
    let scalar = ctx.buffer(&[], false);
    let vector = ctx.buffer(&[16], false);
    let spec = TaskSpec::device(1, Range::new(16, 1, 1));
    let (r1, r2) = (ReductionId(1), ReductionId(2));
    expect_err(
        &mut ctx,
        spec,
        CommandGroup::new().reduction(r1, vector, true),
        ErrorKind::InvalidArgument,
        "has 16 elements",
    );
    expect_err(
        &mut ctx,
        spec,
        CommandGroup::new()
            .reduction(r1, scalar, true)
            .reduction(r2, scalar, true),
        ErrorKind::InvalidArgument,
        "two reductions on buffer B0",
    );
    expect_err(
        &mut ctx,
        spec,
        CommandGroup::new()
            .read(scalar, RangeMapper::All)
            .reduction(r1, scalar, true),
        ErrorKind::InvalidArgument,
        "both accessed and reduced",
    );
    expect_err(
        &mut ctx,
        TaskSpec::MasterNode,
        CommandGroup::new().reduction(r1, scalar, true),
        ErrorKind::InvalidArgument,
        "master-node host task cannot reduce",
    );
}

#[test]
fn reductions_write_the_scalar_and_read_it_only_when_including_the_old_value() {
    let mut ctx = Ctx::new();
    let sum = ctx.buffer(&[1], false);
    let spec = TaskSpec::device(1, Range::new(64, 1, 1));
    let r1 = ctx
        .tm
        .submit(
            spec,
            CommandGroup::new().reduction(ReductionId(1), sum, true),
        )
        .unwrap();
    let t = ctx.tm.task(r1).unwrap();
    assert_eq!(
        t.reductions(),
        &[ReductionInfo {
            rid: ReductionId(1),
            bid: sum,
            init_from_buffer: false
        }]
    );
    assert_eq!(
        ctx.deps(r1),
        vec![dep(TaskId::INIT_EPOCH, True, DependencyOrigin::LastEpoch)]
    );
    // including the old value reads it: a true dependency on the previous reduction
    let r2 = ctx
        .tm
        .submit(
            spec,
            CommandGroup::new().reduction(ReductionId(2), sum, false),
        )
        .unwrap();
    assert_eq!(
        ctx.deps(r2),
        vec![dep(r1, True, DependencyOrigin::Dataflow)]
    );
    let reader = ctx.master(CommandGroup::new().read(sum, RangeMapper::All));
    assert_eq!(
        ctx.deps(reader),
        vec![dep(r2, True, DependencyOrigin::Dataflow)]
    );
    // a fresh reduction overwrites: anti on the reader
    let r3 = ctx
        .tm
        .submit(
            spec,
            CommandGroup::new().reduction(ReductionId(3), sum, true),
        )
        .unwrap();
    assert_eq!(
        ctx.deps(r3),
        vec![
            dep(TaskId::INIT_EPOCH, True, DependencyOrigin::LastEpoch),
            dep(reader, Anti, DependencyOrigin::Dataflow)
        ]
    );
    // including the old value of an uninitialised buffer is an uninitialised read
    let fresh = ctx.buffer(&[], false);
    expect_err(
        &mut ctx,
        spec,
        CommandGroup::new().reduction(ReductionId(4), fresh, false),
        ErrorKind::AccessPattern,
        "reading access on uninitialized B1",
    );
}

#[test]
fn geometry_hint_and_side_effect_errors() {
    let mut ctx = Ctx::new();
    let ho = ctx.host_object();
    let range = Range::new(64, 64, 1);
    let spec = TaskSpec::device(2, range);
    expect_err(
        &mut ctx,
        TaskSpec::device(2, Range::new(0, 4, 1)),
        CommandGroup::new(),
        ErrorKind::InvalidArgument,
        "is empty",
    );
    expect_err(
        &mut ctx,
        TaskSpec::device(4, range),
        CommandGroup::new(),
        ErrorKind::InvalidArgument,
        "dims 4",
    );
    expect_err(
        &mut ctx,
        spec,
        CommandGroup::new().hint_oversubscribe(0),
        ErrorKind::InvalidArgument,
        "factor 0",
    );
    expect_err(
        &mut ctx,
        spec,
        CommandGroup::new().constrain_split(Range::new(3, 1, 1)),
        ErrorKind::InvalidArgument,
        "does not divide",
    );
    expect_err(
        &mut ctx,
        spec,
        CommandGroup::new().constrain_split(Range::new(0, 1, 1)),
        ErrorKind::InvalidArgument,
        "does not divide",
    );
    expect_err(
        &mut ctx,
        spec,
        CommandGroup::new().side_effect(ho),
        ErrorKind::InvalidArgument,
        "side effects need a host task",
    );
    expect_err(
        &mut ctx,
        TaskSpec::MasterNode,
        CommandGroup::new().side_effect(HostObjectId(9)),
        ErrorKind::InvalidArgument,
        "unknown host object H9",
    );
    expect_err(
        &mut ctx,
        TaskSpec::MasterNode,
        CommandGroup::new().read(BufferId(7), RangeMapper::All),
        ErrorKind::InvalidArgument,
        "unknown buffer B7",
    );
    expect_err(
        &mut ctx,
        TaskSpec::Collective(CollectiveGroupId::NONE),
        CommandGroup::new(),
        ErrorKind::InvalidArgument,
        "CG0",
    );
    expect_err(
        &mut ctx,
        TaskSpec::MasterNode,
        CommandGroup::new().constrain_split(Range::new(2, 1, 1)),
        ErrorKind::InvalidArgument,
        "applies only to kernels",
    );

    // the accepted forms carry into the task
    let t = ctx
        .tm
        .submit(
            spec,
            CommandGroup::new()
                .name("k")
                .hint_split_2d()
                .hint_oversubscribe(4)
                .hint_launch_only()
                .constrain_split(Range::new(8, 16, 1)),
        )
        .unwrap();
    let task = ctx.tm.task(t).unwrap();
    assert_eq!(
        task.hints(),
        &Hints {
            split_2d: true,
            oversubscribe: 4,
            launch_only: true,
        }
    );
    assert_eq!(task.geometry().granularity, Range::new(8, 16, 1));
    assert_eq!(task.name(), Some("k"));
    assert_eq!(task.label().to_string(), "T1 \"k\"");
    assert_eq!(task.title().to_string(), "Device kernel T1 \"k\"");
}

#[test]
fn host_task_kinds_map_to_task_types_and_geometry() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(100);
    let g = CollectiveGroupId::FIRST_USER;
    let range = Range::new(10, 1, 1);
    let cases = [
        (
            HostTaskKind::OnMasterNode,
            TaskType::MasterNode,
            TaskGeometry::default(),
        ),
        (
            HostTaskKind::Once,
            TaskType::HostCompute,
            TaskGeometry::default(),
        ),
        (
            HostTaskKind::Distributed,
            TaskType::HostCompute,
            TaskGeometry::new(1, range, Id::ZERO),
        ),
        (
            HostTaskKind::Collective,
            TaskType::Collective,
            TaskGeometry::new(1, Range::ONE, Id::ZERO),
        ),
    ];
    for (kind, ty, geometry) in cases {
        let t = ctx
            .tm
            .submit(
                TaskSpec::from_host_task_kind(kind, 1, range, g),
                CommandGroup::new(),
            )
            .unwrap();
        let task = ctx.tm.task(t).unwrap();
        assert_eq!(
            (task.task_type(), *task.geometry()),
            (ty, geometry),
            "{kind:?}"
        );
        assert_eq!(task.execution_target(), ExecutionTarget::Host);
    }
}

#[test]
fn uninitialized_read_policies() {
    // log: the task is created, with a warning
    let logs = capture_logs(|| {
        let mut ctx = Ctx::with_policy(ErrorPolicy::Log);
        let buf = ctx.buffer(&[8], false);
        let t = ctx.master(CommandGroup::new().read(buf, RangeMapper::All));
        assert_eq!(
            ctx.deps(t),
            vec![dep(TaskId::INIT_EPOCH, True, DependencyOrigin::LastEpoch)]
        );
    });
    assert!(
        logs.contains(
            "Master-node host task T1 declares a reading access on uninitialized B0 {[0,8)}."
        ),
        "{logs}"
    );
    // ignore: silent
    let logs = capture_logs(|| {
        let mut ctx = Ctx::with_policy(ErrorPolicy::Ignore);
        let buf = ctx.buffer(&[8], false);
        ctx.master(CommandGroup::new().read(buf, RangeMapper::All));
    });
    assert!(logs.is_empty(), "{logs}");
    // host-initialised buffers never trip the check, discard modes never read
    let mut ctx = Ctx::new();
    let init = ctx.buffer(&[8], true);
    let fresh = ctx.buffer(&[8], false);
    ctx.master(
        CommandGroup::new()
            .read(init, RangeMapper::All)
            .discard_write(fresh, RangeMapper::All),
    );
    ctx.master(CommandGroup::new().access(fresh, AccessMode::DiscardReadWrite, fixed1(0, 4)));
}

#[test]
fn custom_mapper_clamping_warns_once_per_task() {
    let logs = capture_logs(|| {
        let mut ctx = Ctx::new();
        let buf = ctx.buffer(&[8], true);
        let wide = RangeMapper::Custom(Arc::new(|c: &Chunk, _, _| {
            Subrange::new(c.offset, Range::new(100, 1, 1))
        }));
        let t = ctx.compute_over(
            1,
            Range::new(8, 1, 1),
            Id::ZERO,
            CommandGroup::new().read(buf, wide),
        );
        let task = Arc::clone(ctx.tm.task(t).unwrap());
        assert_eq!(
            ctx.record(t).accesses[0].region,
            crate::grid::Region::from_box(crate::grid::GridBox::full_range(Range::new(8, 1, 1)))
        );
        // chunk queries (the scheduler's) clamp again without warning again
        let chunk = crate::grid::GridBox::from_arrays([4, 0, 0], [6, 1, 1]);
        assert_eq!(
            task.access_map()
                .compute_required_contiguous_boxes(buf, &chunk)
                .as_slice(),
            &[crate::grid::GridBox::from_arrays([4, 0, 0], [8, 1, 1])]
        );
    });
    assert_eq!(
        logs.matches(
            "custom range mapper of access #0 returned [0,100) outside buffer B0 range [0,8)"
        )
        .count(),
        1,
        "{logs}"
    );
}

#[test]
fn buffer_fences_validate_their_subrange() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[16], true);
    let err = ctx
        .tm
        .fence_buffer(
            buf,
            Some(Subrange::new(Id::new(8, 0, 0), Range::new(16, 1, 1))),
            None,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.message()
            .contains("FIXED subrange [8,24) exceeds buffer B0 range [0,16)")
    );
    let f = ctx
        .tm
        .fence_buffer(
            buf,
            Some(Subrange::new(Id::new(8, 0, 0), Range::new(8, 1, 1))),
            None,
        )
        .unwrap();
    assert_eq!(ctx.record(f).accesses[0].mode, AccessMode::Read);
    assert_eq!(
        ctx.deps(f),
        vec![dep(TaskId::INIT_EPOCH, True, DependencyOrigin::Dataflow)]
    );
}

#[test]
fn overflowing_geometry_and_absurd_hints_are_invalid_arguments() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[64], false);
    let spec = TaskSpec::device(1, Range::new(64, 1, 1));
    expect_err(
        &mut ctx,
        TaskSpec::device(3, Range::new(1 << 32, 1 << 32, 2)),
        CommandGroup::new(),
        ErrorKind::InvalidArgument,
        "item count overflows",
    );
    expect_err(
        &mut ctx,
        TaskSpec::DeviceKernel {
            dims: 1,
            range: Range::new(16, 1, 1),
            offset: Id::new(usize::MAX - 4, 0, 0),
        },
        CommandGroup::new(),
        ErrorKind::InvalidArgument,
        "overflows 64 bits in dimension 0",
    );
    expect_err(
        &mut ctx,
        spec,
        CommandGroup::new()
            .discard_write(buf, RangeMapper::OneToOne)
            .hint_oversubscribe(1 << 28),
        ErrorKind::InvalidArgument,
        "`factor` 268435456 exceeds the limit",
    );
}

#[test]
fn handles_released_before_submission_are_invalid_state() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[64], false);
    let ho = ctx.host_object();
    ctx.tm.notify_buffer_destroyed(buf);
    ctx.tm.notify_host_object_destroyed(ho);
    expect_err(
        &mut ctx,
        TaskSpec::device(1, Range::new(64, 1, 1)),
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
        ErrorKind::InvalidState,
        "buffer B0 was released",
    );
    expect_err(
        &mut ctx,
        TaskSpec::MasterNode,
        CommandGroup::new().side_effect(ho),
        ErrorKind::InvalidState,
        "was released before",
    );
}
