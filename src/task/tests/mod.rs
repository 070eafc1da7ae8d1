//! Task graph tests: no threads, no MPI. They build graphs through the [`TaskManager`] and assert
//! exact edges, kinds and origins through the live graph and the recorder.
//!
//! `celerity_cases` rewrites the cases of Celerity's `test/task_graph_tests.cc`; `horizon_tests`
//! covers horizons, epochs and pruning (Celerity's `task_graph_tests.cc`, horizon and epoch cases);
//! `validation_tests` covers the bad-input list of API.md and the error policies. `range_mapper.rs`
//! in this folder is the range mapper's unit tests, included from `task/range_mapper.rs` (they
//! reach its private items).

mod celerity_cases;
mod horizon_tests;
mod validation_tests;

use super::*;
use crate::grid::{Id, Range, Subrange};
use crate::policy::ErrorPolicy;
use crate::types::{BufferId, CollectiveGroupId, HostObjectId, TaskId};

use DependencyKind::{Anti, True};

/// A task manager with a recorder and id counters for buffers and host objects, like Celerity's
/// `task_test_context`.
pub(super) struct Ctx {
    pub tm: TaskManager,
    next_bid: u64,
    next_hoid: u64,
}

impl Ctx {
    pub fn new() -> Self {
        Self::with_policy(ErrorPolicy::Error)
    }

    pub fn with_policy(uninitialized_read: ErrorPolicy) -> Self {
        let config = TaskManagerConfig {
            uninitialized_read,
            record: true,
            ..TaskManagerConfig::default()
        };
        Ctx {
            tm: TaskManager::new(config, None),
            next_bid: 0,
            next_hoid: 0,
        }
    }

    /// A buffer of `range` (its length is the dimensionality).
    pub fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        let bid = BufferId(self.next_bid);
        self.next_bid += 1;
        self.tm
            .notify_buffer_created(bid, range.len(), Range::from_slice(range), host_initialized);
        bid
    }

    pub fn host_object(&mut self) -> HostObjectId {
        let hoid = HostObjectId(self.next_hoid);
        self.next_hoid += 1;
        self.tm.notify_host_object_created(hoid);
        hoid
    }

    /// A device kernel over a 2-D `[1, 1]` range, as Celerity's `add_compute_task` default.
    pub fn compute(&mut self, cg: CommandGroup) -> TaskId {
        self.compute_over(2, Range::ONE, Id::ZERO, cg)
    }

    pub fn compute_over(
        &mut self,
        dims: usize,
        range: Range,
        offset: Id,
        cg: CommandGroup,
    ) -> TaskId {
        self.tm
            .submit(
                TaskSpec::DeviceKernel {
                    dims,
                    range,
                    offset,
                },
                cg,
            )
            .expect("submit")
    }

    pub fn master(&mut self, cg: CommandGroup) -> TaskId {
        self.tm.submit(TaskSpec::MasterNode, cg).expect("submit")
    }

    pub fn collective(&mut self, group: CollectiveGroupId, cg: CommandGroup) -> TaskId {
        self.tm
            .submit(TaskSpec::Collective(group), cg)
            .expect("submit")
    }

    pub fn epoch(&mut self, action: EpochAction) -> TaskId {
        self.tm.epoch(action, None).expect("epoch")
    }

    pub fn recorder(&self) -> &TaskRecorder {
        self.tm.recorder().expect("recording")
    }

    pub fn record(&self, tid: TaskId) -> &TaskRecord {
        self.recorder().get(tid).expect("recorded task")
    }

    pub fn deps(&self, tid: TaskId) -> Vec<Dependency> {
        self.record(tid).dependencies.clone()
    }

    pub fn has_dep(&self, from: TaskId, to: TaskId, kind: DependencyKind) -> bool {
        self.recorder().has_dependency(from, to, kind)
    }

    pub fn has_any_dep(&self, from: TaskId, to: TaskId) -> bool {
        self.recorder().has_any_dependency(from, to)
    }

    pub fn live_horizons(&self) -> usize {
        self.tm
            .graph()
            .iter()
            .filter(|t| t.task_type() == TaskType::Horizon)
            .count()
    }

    /// The last writer of the elements `[min, max)` of a 1-D buffer, which must be a single one.
    pub fn last_writer_1d(&self, bid: BufferId, min: usize, max: usize) -> Option<TaskId> {
        let region = crate::grid::Region::from_box(crate::grid::GridBox::from_arrays(
            [min, 0, 0],
            [max, 1, 1],
        ));
        let mut writers = Vec::new();
        self.tm
            .last_writers(bid)
            .unwrap()
            .query_region(&region, |_, w| writers.push(w));
        writers.sort();
        writers.dedup();
        assert_eq!(writers.len(), 1, "several last writers: {writers:?}");
        writers[0]
    }
}

/// Marks every new horizon as reached right away, the way a fast executor would, and prunes.
pub(super) struct Executor {
    tracker: EpochTracker,
    last_seen: Option<TaskId>,
}

impl Executor {
    pub fn new() -> Self {
        Executor {
            tracker: EpochTracker::new(),
            last_seen: None,
        }
    }

    pub fn poll(&mut self, tm: &mut TaskManager) {
        let Some(current) = tm.current_horizon() else {
            return;
        };
        if self.last_seen != Some(current) {
            self.last_seen = Some(current);
            if let Some(epoch) = self.tracker.horizon_reached(current) {
                tm.prune_before_epoch(epoch);
            }
        }
    }
}

/// `Fixed` over `[offset, offset + len)` of a 1-D buffer.
pub(super) fn fixed1(offset: usize, len: usize) -> RangeMapper {
    RangeMapper::Fixed(Subrange::new(Id::new(offset, 0, 0), Range::new(len, 1, 1)))
}

/// `Fixed` over a 2-D subrange.
pub(super) fn fixed2(offset: [usize; 2], range: [usize; 2]) -> RangeMapper {
    RangeMapper::Fixed(Subrange::new(
        Id::new(offset[0], offset[1], 0),
        Range::new(range[0], range[1], 1),
    ))
}

/// A dependency with the given fields.
pub(super) fn dep(task: TaskId, kind: DependencyKind, origin: DependencyOrigin) -> Dependency {
    Dependency { task, kind, origin }
}

/// A read-write access to all of `bid`.
pub(super) fn rw_all(bid: BufferId) -> CommandGroup {
    CommandGroup::new().read_write(bid, RangeMapper::All)
}

/// A discard-write access to all of `bid`.
pub(super) fn dw_all(bid: BufferId) -> CommandGroup {
    CommandGroup::new().discard_write(bid, RangeMapper::All)
}

#[test]
fn read_after_write_is_a_single_true_edge() {
    // `task_graph_tests.cc`: a read/write task has a single true edge to its previous writer
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[128], false);
    let a = ctx.master(dw_all(buf));
    let b = ctx.master(rw_all(buf));
    assert_eq!(ctx.deps(b), vec![dep(a, True, DependencyOrigin::Dataflow)]);
    let c = ctx.master(CommandGroup::new().read(buf, RangeMapper::All));
    assert_eq!(ctx.deps(c), vec![dep(b, True, DependencyOrigin::Dataflow)]);
    // write after read: anti edge to the reader only
    let d = ctx.master(dw_all(buf));
    assert_eq!(
        ctx.deps(d),
        vec![
            dep(TaskId::INIT_EPOCH, True, DependencyOrigin::LastEpoch),
            dep(c, Anti, DependencyOrigin::Dataflow),
        ]
    );
}

#[test]
fn anti_dependencies_on_a_writer_with_many_dependents() {
    // The init epoch wrote a host-initialised buffer that twelve tasks read one element each:
    // more dependents than are scanned directly, so their reads are listed once and the list is
    // extended by the readers that come later. An overwrite waits for exactly the readers of
    // what it overwrites.
    let mut ctx = Ctx::new();
    let buf = ctx.buffer(&[32], true);
    let read = |i| CommandGroup::new().read(buf, fixed1(i, 1));
    let readers: Vec<TaskId> = (0..12).map(|i| ctx.master(read(i))).collect();
    let first = ctx.master(CommandGroup::new().discard_write(buf, fixed1(0, 4)));
    for (i, &r) in readers.iter().enumerate() {
        assert_eq!(ctx.has_dep(first, r, Anti), i < 4, "reader of element {i}");
    }
    assert!(!ctx.has_dep(first, TaskId::INIT_EPOCH, Anti));
    let late = ctx.master(read(20));
    let second = ctx.master(CommandGroup::new().discard_write(buf, fixed1(8, 16)));
    for (i, &r) in readers.iter().enumerate() {
        assert_eq!(
            ctx.has_dep(second, r, Anti),
            i >= 8,
            "reader of element {i}"
        );
    }
    assert!(ctx.has_dep(second, late, Anti));
    // nobody read what is left: an anti edge on the writer orders the writes
    let third = ctx.master(CommandGroup::new().discard_write(buf, fixed1(28, 4)));
    assert_eq!(
        ctx.deps(third),
        vec![dep(TaskId::INIT_EPOCH, True, DependencyOrigin::LastEpoch)]
    );
}

#[test]
fn a_task_fits_the_allocators_small_blocks() {
    // mimalloc serves blocks up to 1 KiB from per-size free lists; a larger `Arc<Task>` block
    // took its aligned over-allocation path, about 175 instructions more per task
    let arc_block = std::mem::size_of::<Task>() + 2 * std::mem::size_of::<usize>();
    assert!(arc_block <= 1024, "Arc<Task> takes {arc_block} bytes");
}
