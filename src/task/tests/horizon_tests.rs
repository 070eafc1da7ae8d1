//! Horizons, epochs and pruning (Celerity's `task_graph_tests.cc`, horizon and epoch cases):
//! anchoring, bounded state over long runs, and the executor's reached-horizon protocol.

use std::sync::{Arc, Mutex};

use super::*;
use DependencyOrigin::{ExecutionFront, LastEpoch};

#[test]
fn tasks_without_true_dependencies_anchor_on_the_applied_horizon() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(1);
    let buf = ctx.buffer(&[1], false);
    let t1 = ctx.master(dw_all(buf));
    let h1 = ctx.tm.current_horizon().unwrap();
    assert_eq!(ctx.deps(h1), vec![dep(t1, True, ExecutionFront)]);
    // h1 is not applied yet: a free task still anchors on the init epoch
    assert_eq!(ctx.tm.epoch_for_new_tasks(), TaskId::INIT_EPOCH);
    let t2 = ctx.master(CommandGroup::new());
    assert_eq!(ctx.deps(t2), vec![dep(TaskId::INIT_EPOCH, True, LastEpoch)]);
    // t2 created h2, which applied h1
    let h2 = ctx.tm.current_horizon().unwrap();
    assert_eq!(
        ctx.deps(h2),
        vec![dep(h1, True, ExecutionFront), dep(t2, True, ExecutionFront)]
    );
    assert_eq!(ctx.tm.epoch_for_new_tasks(), h1);
    let t3 = ctx.master(CommandGroup::new());
    assert_eq!(ctx.deps(t3), vec![dep(h1, True, LastEpoch)]);
    // t3 created h3, which applied h2: it replaced t1 as the last writer. An overwrite is an
    // anti edge on h2, upgraded by the anchor on it.
    assert_eq!(ctx.tm.epoch_for_new_tasks(), h2);
    let t4 = ctx.master(dw_all(buf));
    assert_eq!(ctx.deps(t4), vec![dep(h2, True, LastEpoch)]);
}

#[test]
fn step_zero_puts_a_horizon_after_every_task() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(0);
    for i in 0..5u64 {
        let t = ctx.master(CommandGroup::new());
        assert_eq!(t, TaskId(1 + 2 * i));
        assert_eq!(ctx.tm.current_horizon(), Some(TaskId(2 + 2 * i)));
    }
    assert_eq!(ctx.recorder().of_type(TaskType::Horizon).count(), 5);
}

#[test]
fn fences_and_epochs_do_not_trigger_horizons() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(0);
    let buf = ctx.buffer(&[4], true);
    ctx.tm.fence_buffer(buf, None, None).unwrap();
    ctx.epoch(EpochAction::Barrier);
    assert_eq!(ctx.recorder().of_type(TaskType::Horizon).count(), 0);
}

#[test]
fn a_hundred_steps_keep_at_most_three_horizons_alive() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(2);
    let a = ctx.buffer(&[64], true);
    let b = ctx.buffer(&[64], true);
    let mut exec = Executor::new();
    let mut max_live = 0;
    for i in 0..100 {
        // alternate between halves so the last-writer maps hold several entries
        let half = fixed1(32 * (i % 2), 32);
        ctx.master(
            CommandGroup::new()
                .read_write(a, half.clone())
                .read(b, RangeMapper::All),
        );
        ctx.master(
            CommandGroup::new()
                .read(a, half)
                .discard_write(b, fixed1(i % 64, 1)),
        );
        exec.poll(&mut ctx.tm);
        assert!(
            ctx.live_horizons() <= 3,
            "{} horizons alive",
            ctx.live_horizons()
        );
        max_live = max_live.max(ctx.tm.num_live_tasks());
        assert!(
            ctx.tm.num_last_writer_entries() <= 8,
            "{}",
            ctx.tm.num_last_writer_entries()
        );
    }
    assert!(ctx.recorder().of_type(TaskType::Horizon).count() > 50);
    assert!(max_live <= 12, "{max_live} live tasks");
}

#[test]
fn pruning_is_clamped_to_the_epoch_for_new_tasks() {
    let mut ctx = Ctx::new();
    ctx.tm.set_horizon_step(1);
    let buf = ctx.buffer(&[1], false);
    let t1 = ctx.master(dw_all(buf));
    let h1 = ctx.tm.current_horizon().unwrap();
    // h1 is the newest horizon, not yet applied: t1 is still the last writer and must stay
    ctx.tm.prune_before_epoch(h1);
    assert!(ctx.tm.task(t1).is_some());
    assert!(ctx.tm.task(TaskId::INIT_EPOCH).is_some());
    let t2 = ctx.master(CommandGroup::new().read(buf, RangeMapper::All));
    assert_eq!(
        ctx.deps(t2),
        vec![dep(t1, True, DependencyOrigin::Dataflow)]
    );
}

#[test]
fn epochs_reached_prune_everything_before_them() {
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[8], true);
    for _ in 0..10 {
        ctx.master(rw_all(buf));
    }
    let epoch = ctx.epoch(EpochAction::None);
    let mut tracker = EpochTracker::new();
    ctx.tm.prune_before_epoch(tracker.epoch_reached(epoch));
    assert_eq!(ctx.tm.num_live_tasks(), 1);
    assert_eq!(ctx.tm.graph().iter().next().unwrap().id(), epoch);
    assert_eq!(ctx.tm.execution_front(), &[epoch]);
    let t = ctx.master(rw_all(buf));
    assert_eq!(
        ctx.deps(t),
        vec![dep(epoch, True, DependencyOrigin::Dataflow)]
    );
}

#[test]
fn the_delegate_sees_every_task_in_order_and_shares_it() {
    let seen: Arc<Mutex<Vec<Arc<Task>>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let config = TaskManagerConfig {
        horizon_step: 1,
        ..TaskManagerConfig::default()
    };
    let mut tm = TaskManager::new(
        config,
        Some(Box::new(move |t: &Arc<Task>| {
            sink.lock().unwrap().push(Arc::clone(t))
        })),
    );
    tm.notify_buffer_created(BufferId(0), 1, Range::new(4, 1, 1), true);
    tm.submit(
        TaskSpec::device(1, Range::new(4, 1, 1)),
        rw_all(BufferId(0)),
    )
    .unwrap();
    tm.fence_buffer(BufferId(0), None, None).unwrap();
    tm.epoch(EpochAction::Shutdown, None).unwrap();
    let seen = seen.lock().unwrap();
    let kinds: Vec<(u64, TaskType)> = seen.iter().map(|t| (t.id().0, t.task_type())).collect();
    assert_eq!(
        kinds,
        vec![
            (0, TaskType::Epoch),
            (1, TaskType::DeviceCompute),
            (2, TaskType::Horizon),
            (3, TaskType::Fence),
            (4, TaskType::Epoch),
        ]
    );
    // the delegate holds the very tasks of the graph
    assert!(Arc::ptr_eq(&seen[1], tm.task(TaskId(1)).unwrap()));
    let err = tm
        .submit(TaskSpec::MasterNode, CommandGroup::new())
        .unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::InvalidState);
}

/// How many tasks the long-run test submits: a million where the build is optimised; in debug
/// builds a tenth, so `cargo test` stays fast (run with `--release` for the full million).
const LONG_RUN_TASKS: usize = if cfg!(debug_assertions) {
    100_000
} else {
    1_000_000
};

#[test]
fn a_long_run_keeps_the_live_state_bounded() {
    let config = TaskManagerConfig {
        uninitialized_read: ErrorPolicy::Error,
        ..TaskManagerConfig::default()
    };
    let mut tm = TaskManager::new(config, None);
    let buf = BufferId(0);
    tm.notify_buffer_created(buf, 1, Range::new(16, 1, 1), true);
    let mut exec = Executor::new();
    let (mut max_live, mut max_entries) = (0, 0);
    for i in 0..LONG_RUN_TASKS {
        let cg = CommandGroup::new().read_write(buf, fixed1(i % 16, 1));
        tm.submit(TaskSpec::MasterNode, cg).unwrap();
        exec.poll(&mut tm);
        max_live = max_live.max(tm.num_live_tasks());
        max_entries = max_entries.max(tm.num_last_writer_entries());
    }
    assert!(tm.next_task_id().0 > LONG_RUN_TASKS as u64);
    // 16 independent writers fill the execution front up to the default max parallelism of 64
    assert!(max_live <= 3 * 64, "{max_live} live tasks");
    assert!(max_entries <= 16, "{max_entries} last-writer entries");
}

#[test]
fn pruning_releases_payloads_at_once_and_reused_tasks_are_whole() {
    // pruned tasks leave their allocations to later tasks: what they carried must go at the
    // prune (not when the allocation is reused), and the reused tasks must be the new ones
    let mut tm = TaskManager::new(TaskManagerConfig::default(), None);
    tm.set_horizon_step(0);
    let promise = crate::user_objects::Promise::new();
    let carrier = tm
        .submit(
            TaskSpec::MasterNode,
            CommandGroup::new().payload(TaskPayload::Promise(Arc::clone(&promise))),
        )
        .unwrap();
    assert_eq!(Arc::strong_count(&promise), 2);
    let mut last = carrier;
    for _ in 0..3 {
        last = tm
            .submit(TaskSpec::MasterNode, CommandGroup::new())
            .unwrap();
    }
    tm.prune_before_epoch(tm.epoch_for_new_tasks());
    assert!(tm.task(carrier).is_none(), "the carrier was pruned");
    assert_eq!(
        Arc::strong_count(&promise),
        1,
        "payload released by the prune"
    );
    // new tasks take the spare allocations: each is the task it was created as
    for _ in 0..4 {
        let tid = tm
            .submit(TaskSpec::MasterNode, CommandGroup::new().name("again"))
            .unwrap();
        let task = tm.task(tid).unwrap();
        assert_eq!(task.id(), tid);
        assert_eq!(task.name(), Some("again"));
        assert_eq!(task.task_type(), TaskType::MasterNode);
        assert!(task.payload().is_none());
        assert!(tid > last);
        let horizon = tm.current_horizon().unwrap();
        assert_eq!(tm.task(horizon).unwrap().task_type(), TaskType::Horizon);
        assert_eq!(tm.dependents(tid), &[horizon]);
        tm.prune_before_epoch(tm.epoch_for_new_tasks());
    }
}

#[test]
fn a_refused_task_leaves_nothing_in_the_allocation_the_next_task_takes() {
    // a command group refused after its accesses were checked and recorded gives its allocation
    // back for reuse: the next task must carry none of it
    let mut tm = TaskManager::new(TaskManagerConfig::default(), None);
    let buf = BufferId(0);
    tm.notify_buffer_created(buf, 1, Range::new(16, 1, 1), true);
    let hoid = HostObjectId(0);
    tm.notify_host_object_created(hoid);
    let refused = tm.submit(
        TaskSpec::HostDistributed {
            dims: 1,
            range: Range::new(16, 1, 1),
            offset: Id::default(),
        },
        CommandGroup::new()
            .name("refused")
            .side_effect(hoid)
            .read(buf, RangeMapper::OneToOne)
            .hint_split_2d()
            .reduction(crate::types::ReductionId(1), BufferId(99), true),
    );
    assert!(
        refused.is_err(),
        "a reduction into an unknown buffer is refused"
    );
    let tid = tm
        .submit(TaskSpec::MasterNode, CommandGroup::new())
        .unwrap();
    let task = tm.task(tid).unwrap();
    assert_eq!(task.id(), tid);
    assert_eq!(task.task_type(), TaskType::MasterNode);
    assert_eq!(task.name(), None);
    assert!(task.side_effects().is_empty());
    assert!(task.reductions().is_empty());
    assert_eq!(task.access_map().num_accesses(), 0);
    assert!(!task.hints().split_2d);
    assert!(task.payload().is_none());
}
