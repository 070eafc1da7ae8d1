//! The 27 cases of Celerity's `test/task_graph_tests.cc`, in Rust, asserting exact edges.

use std::sync::{Arc, Mutex};

use super::*;
use crate::grid::{GridBox, Region};

use DependencyOrigin::{
    CollectiveGroupSerialization, Dataflow, ExecutionFront, LastEpoch, SideEffect,
};

const INIT: TaskId = TaskId::INIT_EPOCH;

#[test]
fn calls_into_delegate_on_task_creation() {
    let created = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&created);
    let delegate = move |t: &Arc<Task>| sink.lock().unwrap().push(t.id());
    let mut tm = TaskManager::new(TaskManagerConfig::default(), Some(Box::new(delegate)));
    assert_eq!(*created.lock().unwrap(), vec![TaskId(0)]);
    tm.submit(TaskSpec::device(2, Range::ONE), CommandGroup::new())
        .unwrap();
    assert_eq!(created.lock().unwrap().len(), 2);
    tm.submit(TaskSpec::MasterNode, CommandGroup::new())
        .unwrap();
    assert_eq!(
        *created.lock().unwrap(),
        vec![TaskId(0), TaskId(1), TaskId(2)]
    );
}

#[test]
fn records_compute_task_information() {
    let mut ctx = Ctx::new();
    let buf_a = ctx.buffer(&[64, 152], true);
    let buf_b = ctx.buffer(&[7, 21, 99], false);
    let fixed_b = RangeMapper::Fixed(Subrange::new(Id::ZERO, Range::new(5, 18, 74)));
    let tid = ctx.compute_over(
        2,
        Range::new(32, 128, 1),
        Id::new(32, 24, 0),
        CommandGroup::new()
            .read(buf_a, RangeMapper::OneToOne)
            .access(buf_b, AccessMode::DiscardReadWrite, fixed_b),
    );
    let task = Arc::clone(ctx.tm.task(tid).unwrap());
    assert_eq!(task.task_type(), TaskType::DeviceCompute);
    assert_eq!(task.geometry().dims, 2);
    assert_eq!(task.geometry().global_size, Range::new(32, 128, 1));
    assert_eq!(task.geometry().global_offset, Id::new(32, 24, 0));

    let bam = task.access_map();
    assert_eq!(
        bam.accessed_buffers().collect::<Vec<_>>(),
        vec![buf_a, buf_b]
    );
    assert_eq!(bam.nth_access(0), (buf_a, AccessMode::Read));
    assert_eq!(bam.nth_access(1), (buf_b, AccessMode::DiscardReadWrite));
    let whole = task.geometry().global_box();
    assert_eq!(
        bam.compute_consumed_region(buf_a, &whole),
        Region::from_box(GridBox::from_arrays([32, 24, 0], [64, 152, 1]))
    );
    assert_eq!(
        bam.compute_produced_region(buf_b, &whole),
        Region::from_box(GridBox::from_arrays([0, 0, 0], [5, 18, 74]))
    );
}

#[test]
fn access_map_merges_multiple_accesses_with_the_same_mode() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[30, 30], true);
    let tid = ctx.compute_over(
        2,
        Range::new(100, 100, 1),
        Id::ZERO,
        CommandGroup::new()
            .read(buf, fixed2([3, 0], [10, 20]))
            .read(buf, fixed2([10, 0], [7, 20])),
    );
    let task = ctx.tm.task(tid).unwrap();
    let chunk = GridBox::from_arrays([0, 0, 0], [100, 100, 1]);
    assert_eq!(
        task.access_map().compute_consumed_region(buf, &chunk),
        Region::from_box(GridBox::from_arrays([3, 0, 0], [17, 20, 1]))
    );
}

#[test]
fn requirements_of_unaccessed_buffers_are_empty() {
    let bam = BufferAccessMap::empty(TaskId(1), TaskGeometry::default());
    let chunk = GridBox::from_arrays([0, 0, 0], [100, 1, 1]);
    assert!(bam.compute_consumed_region(BufferId(0), &chunk).is_empty());
    assert!(bam.task_produced_region(BufferId(0)).is_empty());
    assert!(
        bam.compute_required_contiguous_boxes(BufferId(0), &chunk)
            .is_empty()
    );
}

/// Two master-node tasks over two buffers, each with the given pair of modes.
fn two_buffer_pair(first: [AccessMode; 2], second: [AccessMode; 2]) -> (Ctx, TaskId, TaskId) {
    let mut ctx = Ctx::new();
    let a = ctx.buffer(&[128], false);
    let b = ctx.buffer(&[128], false);
    let cg = |modes: [AccessMode; 2]| {
        CommandGroup::new()
            .access(a, modes[0], fixed1(0, 128))
            .access(b, modes[1], fixed1(0, 128))
    };
    let t1 = ctx.master(cg(first));
    let t2 = ctx.master(cg(second));
    (ctx, t1, t2)
}

#[test]
fn no_duplicate_dependencies_between_the_same_tasks() {
    use AccessMode::{DiscardWrite as DW, Read as R};
    // true dependencies
    let (ctx, t1, t2) = two_buffer_pair([DW, DW], [R, R]);
    assert_eq!(ctx.deps(t2), vec![dep(t1, True, Dataflow)]);
    assert_eq!(ctx.tm.dependents(t1), &[t2]);
    // anti-dependencies (plus the epoch anchor, as there is no true dependency)
    let (ctx, t1, t2) = two_buffer_pair([DW, DW], [DW, DW]);
    assert_eq!(
        ctx.deps(t2),
        vec![dep(INIT, True, LastEpoch), dep(t1, Anti, Dataflow)]
    );
    assert_eq!(ctx.tm.dependents(t1), &[t2]);
    // true and anti combined: true wins, whichever comes first
    for second in [[R, DW], [DW, R]] {
        let (ctx, t1, t2) = two_buffer_pair([DW, DW], second);
        assert_eq!(ctx.deps(t2), vec![dep(t1, True, Dataflow)]);
        assert_eq!(ctx.tm.dependents(t1), &[t2]);
    }
}

#[test]
fn respects_range_mapper_results_for_finding_dependencies() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[128], true);
    let a = ctx.compute(CommandGroup::new().discard_write(buf, fixed1(0, 64)));
    let b = ctx.compute(CommandGroup::new().read(buf, fixed1(0, 128)));
    assert_eq!(
        ctx.deps(b),
        vec![dep(INIT, True, Dataflow), dep(a, True, Dataflow)]
    );
    let c = ctx.compute(CommandGroup::new().read(buf, fixed1(64, 64)));
    assert!(!ctx.has_any_dep(c, a));
    assert_eq!(ctx.deps(c), vec![dep(INIT, True, Dataflow)]);
}

#[test]
fn generates_anti_dependencies() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[128], false);
    let a = ctx.compute(CommandGroup::new().discard_write(buf, fixed1(0, 128)));
    let b = ctx.compute(CommandGroup::new().read(buf, fixed1(0, 64)));
    assert!(ctx.has_dep(b, a, True));
    // overwriting the second half: anti on the writer, not on the reader of the first half
    let c = ctx.compute(CommandGroup::new().discard_write(buf, fixed1(64, 64)));
    assert!(ctx.has_dep(c, a, Anti));
    assert!(!ctx.has_any_dep(c, b));
    // overwriting the first half: anti on the reader only
    let d = ctx.compute(CommandGroup::new().discard_write(buf, fixed1(0, 64)));
    assert!(!ctx.has_any_dep(d, a));
    assert!(ctx.has_dep(d, b, Anti));
}

#[test]
fn handles_host_initialized_buffers() {
    let mut ctx = Ctx::with_policy(ErrorPolicy::Ignore);
    let host_init = ctx.buffer(&[128], true);
    let non_host_init = ctx.buffer(&[128], false);
    let artificial = ctx.buffer(&[1], false);

    let a = ctx.compute(
        CommandGroup::new()
            .read(host_init, fixed1(0, 128))
            .discard_write(artificial, RangeMapper::All),
    );
    assert_eq!(ctx.deps(a), vec![dep(INIT, True, Dataflow)]);
    let b = ctx.compute(
        CommandGroup::new()
            .read(non_host_init, fixed1(0, 128))
            .read(artificial, RangeMapper::All),
    );
    assert_eq!(ctx.deps(b), vec![dep(a, True, Dataflow)]);
    let c = ctx.compute(CommandGroup::new().discard_write(host_init, fixed1(0, 128)));
    assert!(ctx.has_dep(c, a, Anti));
    // b read uninitialised garbage: writing it concurrently makes no difference
    let d = ctx.compute(CommandGroup::new().discard_write(non_host_init, fixed1(0, 128)));
    assert!(!ctx.has_any_dep(d, b));
}

#[test]
fn read_write_mode_sets_produce_anti_dependencies() {
    use AccessMode::*;
    for modes in [&[DiscardReadWrite][..], &[ReadWrite], &[DiscardWrite, Read]] {
        let mut ctx = Ctx::new();
        let buf = ctx.buffer(&[128], true);
        let cg = modes.iter().fold(CommandGroup::new(), |cg, &m| {
            cg.access(buf, m, fixed1(0, 128))
        });
        let a = ctx.compute(cg);
        let b = ctx.compute(CommandGroup::new().discard_write(buf, fixed1(0, 128)));
        assert!(ctx.has_dep(b, a, Anti), "{modes:?}");
    }
}

#[test]
fn all_producer_consumer_combinations() {
    use AccessMode::*;
    for consumer in [Read, ReadWrite, Write] {
        for producer in [DiscardReadWrite, DiscardWrite, ReadWrite, Write] {
            let mut ctx = Ctx::new();
            let buf = ctx.buffer(&[128], true);
            let one = |m| CommandGroup::new().access(buf, m, RangeMapper::All);
            let a = ctx.compute(one(producer));
            let b = ctx.compute(one(consumer));
            assert!(ctx.has_dep(b, a, True), "{consumer:?} after {producer:?}");
            let c = ctx.compute(one(producer));
            let pure_consumer = consumer == Read;
            let pure_producer = !producer.is_consumer();
            let expected = if pure_consumer || pure_producer {
                Anti
            } else {
                True
            };
            assert!(
                ctx.has_dep(c, b, expected),
                "{producer:?} after {consumer:?}"
            );
        }
    }
}

#[test]
fn collective_host_tasks_are_serialised_per_group() {
    let mut ctx = Ctx::new();
    let implicit = CollectiveGroupId::FIRST_USER;
    let explicit = CollectiveGroupId(3);
    let master = ctx.master(CommandGroup::new());
    let i1 = ctx.collective(implicit, CommandGroup::new());
    let i2 = ctx.collective(implicit, CommandGroup::new());
    let e1 = ctx.collective(explicit, CommandGroup::new());
    let e2 = ctx.collective(explicit, CommandGroup::new());
    let all = [master, i1, i2, e1, e2];
    for &from in &all {
        for &to in &all {
            let expected = (from, to) == (i2, i1) || (from, to) == (e2, e1);
            assert_eq!(ctx.has_any_dep(from, to), expected, "{from} -> {to}");
        }
    }
    assert_eq!(
        ctx.deps(i2),
        vec![dep(i1, True, CollectiveGroupSerialization)]
    );
    assert_eq!(
        ctx.deps(e2),
        vec![dep(e1, True, CollectiveGroupSerialization)]
    );
    assert_eq!(
        ctx.tm.task(i1).unwrap().geometry().global_size,
        Range::new(1, 1, 1)
    );
    assert_eq!(ctx.tm.task(e1).unwrap().collective_group(), explicit);
}

#[test]
fn tracks_critical_path_length_and_execution_front() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[128], false);
    let a = ctx.master(CommandGroup::new().discard_write(buf, fixed1(0, 128)));
    assert_eq!(
        (ctx.tm.max_critical_path_length(), ctx.tm.execution_front()),
        (1, &[a][..])
    );
    let b = ctx.master(CommandGroup::new().read_write(buf, fixed1(0, 128)));
    assert_eq!(
        (ctx.tm.max_critical_path_length(), ctx.tm.execution_front()),
        (2, &[b][..])
    );
    let c = ctx.master(CommandGroup::new().read(buf, fixed1(0, 128)));
    assert_eq!(
        (ctx.tm.max_critical_path_length(), ctx.tm.execution_front()),
        (3, &[c][..])
    );
    let d = ctx.master(CommandGroup::new());
    assert_eq!(
        (ctx.tm.max_critical_path_length(), ctx.tm.execution_front()),
        (3, &[c, d][..])
    );
}

#[test]
fn horizons_are_generated_with_correct_dependencies() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(2);
    let buf = ctx.buffer(&[128], true);
    ctx.master(CommandGroup::new().discard_write(buf, fixed1(0, 128)));
    assert_eq!(ctx.tm.current_horizon(), None);
    let c = ctx.master(CommandGroup::new().read(buf, fixed1(0, 128)));
    let h1 = ctx.tm.current_horizon().expect("horizon");
    assert_eq!(h1, TaskId(c.0 + 1));
    assert_eq!(ctx.live_horizons(), 1);
    assert_eq!(ctx.deps(h1), vec![dep(c, True, ExecutionFront)]);

    // the current horizon is part of the execution front
    let mut expected = vec![h1];
    for _ in 0..3 {
        expected.push(ctx.master(CommandGroup::new()));
    }
    assert_eq!(ctx.live_horizons(), 1);
    ctx.master(CommandGroup::new().read_write(buf, fixed1(0, 128)));
    let d = ctx.master(CommandGroup::new().read_write(buf, fixed1(0, 128)));
    expected.push(d);
    let h2 = ctx.tm.current_horizon().unwrap();
    assert_eq!(h2, TaskId(d.0 + 1));
    assert_eq!(ctx.live_horizons(), 2);
    let deps = ctx.deps(h2);
    assert_eq!(deps.iter().map(|d| d.task).collect::<Vec<_>>(), expected);
    assert!(
        deps.iter()
            .all(|d| d.kind == True && d.origin == ExecutionFront)
    );
}

#[test]
fn horizons_are_generated_for_the_parallelism_limit() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(256);
    ctx.tm.set_horizon_max_parallelism(3);
    let buf = ctx.buffer(&[128], true);
    let per_task = 128 / 9;
    for i in 0..9 {
        ctx.master(CommandGroup::new().read_write(buf, fixed1(per_task * i, per_task)));
    }
    // one horizon per max_parallelism - 1 tasks, as the previous horizon is in the front too
    assert_eq!(ctx.live_horizons(), 9 / (3 - 1));
    let current = ctx.tm.current_horizon().unwrap();
    let deps = ctx.deps(current);
    assert_eq!(deps.len(), 3);
    assert_eq!(
        ctx.tm.task(deps[0].task).unwrap().task_type(),
        TaskType::Horizon
    );
}

#[test]
fn horizons_update_the_previous_writer_data_structure() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(2);
    let buf_a = ctx.buffer(&[128], false);
    let buf_b = ctx.buffer(&[128], false);
    let t1 = ctx.master(
        CommandGroup::new()
            .discard_write(buf_a, fixed1(0, 64))
            .discard_write(buf_b, fixed1(0, 128)),
    );
    let t2 = ctx.master(CommandGroup::new().discard_write(buf_a, fixed1(64, 64)));
    ctx.master(CommandGroup::new().read_write(buf_a, fixed1(32, 64)));
    let t4 = ctx.master(CommandGroup::new().read_write(buf_a, fixed1(32, 64)));
    let horizon = ctx.tm.current_horizon().expect("horizon");
    assert_eq!(ctx.live_horizons(), 1);

    ctx.master(CommandGroup::new().read_write(buf_b, fixed1(0, 128)));
    ctx.master(CommandGroup::new().read_write(buf_b, fixed1(0, 128)));
    // previous tasks are still last writers before the first horizon is applied
    assert_eq!(ctx.last_writer_1d(buf_a, 0, 32), Some(t1));
    assert_eq!(ctx.last_writer_1d(buf_a, 96, 128), Some(t2));
    assert_eq!(ctx.last_writer_1d(buf_a, 32, 96), Some(t4));

    ctx.master(CommandGroup::new().read_write(buf_b, fixed1(0, 128)));
    assert_eq!(ctx.live_horizons(), 2);
    // the applied horizon replaced every older last writer of buf_a; t4 came after it
    assert_eq!(ctx.last_writer_1d(buf_a, 0, 32), Some(horizon));
    assert_eq!(ctx.last_writer_1d(buf_a, 32, 96), Some(t4));
    assert_eq!(ctx.last_writer_1d(buf_a, 96, 128), Some(horizon));

    let t9 = ctx.master(CommandGroup::new().read_write(buf_a, fixed1(64, 64)));
    assert_eq!(ctx.last_writer_1d(buf_a, 0, 32), Some(horizon));
    assert_eq!(ctx.last_writer_1d(buf_a, 32, 64), Some(t4));
    assert_eq!(ctx.last_writer_1d(buf_a, 64, 128), Some(t9));
}

#[test]
fn previous_horizon_is_last_writer_of_host_initialized_buffers() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(2);
    let first = ctx.buffer(&[1], true);
    let tid = ctx.master(rw_all(first));
    assert_eq!(ctx.deps(tid), vec![dep(INIT, True, Dataflow)]);
    assert!(ctx.tm.task(INIT).is_some());

    // trigger horizons and prune behind the reached ones, as the runtime does
    let buf = ctx.buffer(&[1], false);
    let mut exec = Executor::new();
    for _ in 0..8 {
        ctx.master(dw_all(buf));
        exec.poll(&mut ctx.tm);
    }
    assert!(ctx.tm.task(INIT).is_none(), "the init epoch was pruned");

    let host_init = ctx.buffer(&[1], true);
    let tid = ctx.master(rw_all(host_init));
    let deps = ctx.deps(tid);
    assert_eq!(deps.len(), 1);
    let writer = ctx.record(deps[0].task);
    assert_eq!(writer.ty, TaskType::Horizon);
    assert!(
        writer.id < ctx.tm.current_horizon().unwrap(),
        "the previous horizon is used"
    );
}

#[test]
fn collective_tasks_shadowed_by_a_horizon_depend_on_it() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(2);
    let buf = ctx.buffer(&[1], false);
    let group = CollectiveGroupId::FIRST_USER;
    let first = ctx.collective(group, CommandGroup::new());
    for _ in 0..4 {
        ctx.master(dw_all(buf));
    }
    assert_eq!(ctx.live_horizons(), 2);
    let second = ctx.collective(group, CommandGroup::new().read(buf, RangeMapper::All));
    let deps = ctx.deps(second);
    assert!(!ctx.has_any_dep(second, first));
    assert_eq!(deps.len(), 2);
    let types: Vec<TaskType> = deps.iter().map(|d| ctx.record(d.task).ty).collect();
    assert_eq!(types, vec![TaskType::Horizon, TaskType::MasterNode]);
    assert!(deps.iter().all(|d| d.kind == True));
    assert_eq!(deps[0].origin, CollectiveGroupSerialization);
    assert_eq!(deps[1].origin, Dataflow);
}

#[test]
fn empty_accesses_do_not_generate_dataflow_dependencies() {
    let writes = [([16, 16], [0, 0]), ([16, 16], [8, 8])];
    let reads = [([1, 1], [0, 0]), ([8, 8], [16, 16])];
    for (w_off, w_range) in writes {
        for (r_off, r_range) in reads {
            let mut ctx = Ctx::new();
            let buf = ctx.buffer(&[32, 32], true);
            let w = ctx.compute(CommandGroup::new().discard_write(buf, fixed2(w_off, w_range)));
            let r = ctx.compute(CommandGroup::new().read(buf, fixed2(r_off, r_range)));
            let both_non_empty = w_range != [0, 0] && r_range != [0, 0];
            assert_eq!(
                ctx.has_any_dep(r, w),
                both_non_empty,
                "{w_range:?} {r_range:?}"
            );
        }
    }
}

#[test]
fn side_effects_generate_dependencies() {
    let mut ctx = Ctx::new();
    let common = ctx.host_object();
    let ho_a = ctx.host_object();
    let ho_b = ctx.host_object();
    let a = ctx.master(CommandGroup::new().side_effect(common).side_effect(ho_a));
    let b = ctx.master(CommandGroup::new().side_effect(common).side_effect(ho_b));
    assert_eq!(ctx.deps(a), vec![dep(INIT, True, LastEpoch)]);
    assert_eq!(ctx.deps(b), vec![dep(a, True, SideEffect)]);
}

#[test]
fn side_effect_dependencies_are_subsumed_by_horizons() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(2);
    let ho = ctx.host_object();
    ctx.master(CommandGroup::new().side_effect(ho));
    let buf = ctx.buffer(&[1], false);
    for _ in 0..5 {
        ctx.master(dw_all(buf));
    }
    let second = ctx.master(CommandGroup::new().side_effect(ho));
    let deps = ctx.deps(second);
    assert_eq!(deps.len(), 1);
    assert_eq!(ctx.record(deps[0].task).ty, TaskType::Horizon);
    assert_eq!((deps[0].kind, deps[0].origin), (True, SideEffect));
}

#[test]
fn epochs_create_dependencies_to_predecessors_and_successors() {
    let mut ctx = Ctx::new();
    let buf_a = ctx.buffer(&[1], false);
    let a = ctx.compute(dw_all(buf_a));
    let buf_b = ctx.buffer(&[1], false);
    let b = ctx.compute(dw_all(buf_b));
    let epoch = ctx.epoch(EpochAction::None);
    assert_eq!(
        ctx.deps(epoch),
        vec![dep(a, True, ExecutionFront), dep(b, True, ExecutionFront)]
    );

    let c = ctx.compute(CommandGroup::new().read(buf_a, RangeMapper::All));
    let d = ctx.compute(dw_all(buf_b));
    let e = ctx.compute(CommandGroup::new());
    let f = ctx.compute(CommandGroup::new().read(buf_b, RangeMapper::All));
    let g = ctx.compute(dw_all(buf_b));
    assert_eq!(ctx.deps(c), vec![dep(epoch, True, Dataflow)]);
    // d only has an anti-dependency otherwise, so it is anchored on the epoch
    assert_eq!(ctx.deps(d), vec![dep(epoch, True, LastEpoch)]);
    assert_eq!(ctx.deps(e), vec![dep(epoch, True, LastEpoch)]);
    assert_eq!(ctx.deps(f), vec![dep(d, True, Dataflow)]);
    assert_eq!(
        ctx.deps(g),
        vec![dep(epoch, True, LastEpoch), dep(f, Anti, Dataflow)]
    );
}

#[test]
fn epochs_reset_the_need_for_horizons() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(2);
    let buf = ctx.buffer(&[1], false);
    for _ in 0..3 {
        ctx.master(dw_all(buf));
        ctx.epoch(EpochAction::None);
    }
    assert_eq!(ctx.live_horizons(), 0);
}

#[test]
fn a_sequence_of_epochs_without_tasks_is_a_chain() {
    let mut ctx = Ctx::new();
    let mut before = INIT;
    for action in [EpochAction::Barrier, EpochAction::Shutdown] {
        let tid = ctx.epoch(action);
        assert_eq!(ctx.deps(tid), vec![dep(before, True, ExecutionFront)]);
        assert_eq!(ctx.record(tid).epoch_action, Some(action));
        before = tid;
    }
}

#[test]
fn fences_introduce_dependencies_on_host_objects() {
    let mut ctx = Ctx::new();
    let ho = ctx.host_object();
    let group = CollectiveGroupId::FIRST_USER;
    let a = ctx.collective(group, CommandGroup::new().side_effect(ho));
    let fence = ctx.tm.fence_host_object(ho, None).unwrap();
    let b = ctx.collective(group, CommandGroup::new().side_effect(ho));
    assert_eq!(ctx.deps(fence), vec![dep(a, True, SideEffect)]);
    assert_eq!(ctx.record(fence).ty, TaskType::Fence);
    assert!(ctx.has_dep(b, fence, True));
}

#[test]
fn fences_introduce_data_dependencies() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[1], false);
    let a = ctx.master(dw_all(buf));
    let fence = ctx.tm.fence_buffer(buf, None, None).unwrap();
    let b = ctx.master(dw_all(buf));
    assert_eq!(ctx.deps(fence), vec![dep(a, True, Dataflow)]);
    assert!(ctx.has_dep(b, fence, Anti));
}

#[test]
fn uninitialized_reads_are_errors_under_policy_error() {
    // on a fully uninitialised buffer
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[1], false);
    let err = ctx
        .tm
        .submit(
            TaskSpec::device(2, Range::ONE),
            CommandGroup::new()
                .name("uninit_read")
                .read(buf, RangeMapper::All),
        )
        .unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::AccessPattern);
    assert_eq!(
        err.message(),
        "Device kernel T1 \"uninit_read\" declares a reading access on uninitialized B0 {[0,1)}."
    );

    // on a partially initialised buffer
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[64, 64], false);
    ctx.compute(CommandGroup::new().discard_write(buf, fixed2([0, 0], [32, 32])));
    let err = ctx
        .tm
        .submit(
            TaskSpec::device(2, Range::ONE),
            CommandGroup::new().name("uninit_read").access(
                buf,
                AccessMode::Write,
                RangeMapper::All,
            ),
        )
        .unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::AccessPattern);
    assert_eq!(
        err.message(),
        "Device kernel T2 \"uninit_read\" declares a consuming access on uninitialized B0 \
         {[0,32)x[32,64), [32,64)x[0,64)}. Make sure to use a discard access mode (no_init) if this was unintentional."
    );
    // nothing changed: the next task gets id 2 and B0's last writers are untouched
    assert_eq!(ctx.tm.next_task_id(), TaskId(2));
    assert_eq!(ctx.tm.num_live_tasks(), 2);
}

#[test]
fn warns_when_programs_frequently_epoch_synchronize() {
    let logs = capture_logs(|| {
        for action in [EpochAction::None, EpochAction::Barrier] {
            let mut tm = TaskManager::new(TaskManagerConfig::default(), None);
            for _ in 0..=25 {
                for _ in 0..5 {
                    tm.submit(TaskSpec::HostOnce, CommandGroup::new()).unwrap();
                }
                tm.epoch(action, None).unwrap();
            }
            tm.epoch(EpochAction::Shutdown, None).unwrap();
        }
    });
    assert_eq!(
        logs.matches("call celerity_wait() excessively").count(),
        2,
        "{logs}"
    );
}

/// Runs `f` with a subscriber that collects WARN-level log lines into a string.
pub(super) fn capture_logs(f: impl FnOnce()) -> String {
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let bytes = sink.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}
