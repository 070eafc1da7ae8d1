//! Command graph tests: N nodes simulated in one process, as Celerity's `cdag_test_context`
//! does. One real [`TaskManager`] feeds N [`CommandGraphGenerator`]s (one per node) with every
//! task, and the tests query the generators' recorders.
//!
//! `general`, `transfers`, `reductions`, `granularity` and `compaction` rewrite the cases of
//! Celerity's `command_graph_*_tests.cc` and `graph_compaction_tests.cc`; `properties` cross-checks
//! pushes against await-pushes on random task sequences.

mod compaction;
mod general;
mod granularity;
mod properties;
mod reductions;
mod requirements;
mod transfers;

use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;

use super::*;
use crate::error::Result;
use crate::grid::{GridBox, Id, Range, Region, Subrange};
use crate::policy::ErrorPolicy;
use crate::task::{
    AccessMode, Chunk, CommandGroup, EpochAction, RangeMapper, Task, TaskManager,
    TaskManagerConfig, TaskSpec,
};
use crate::types::{
    BufferId, CollectiveGroupId, CommandId, HostObjectId, NodeId, ReductionId, TaskId,
};

/// A task manager feeding one command graph generator per simulated node.
pub(super) struct Ctx {
    pub tm: TaskManager,
    queue: Arc<Mutex<Vec<Arc<Task>>>>,
    pub gens: Vec<CommandGraphGenerator>,
    next_bid: u64,
    next_hoid: u64,
    next_rid: u64,
    next_cgid: u64,
}

impl Ctx {
    pub fn new(num_nodes: usize) -> Self {
        Self::with_policies(num_nodes, ErrorPolicy::Error, CommandPolicies::default())
    }

    pub fn with_policies(
        num_nodes: usize,
        tm_uninitialized_read: ErrorPolicy,
        policies: CommandPolicies,
    ) -> Self {
        let queue: Arc<Mutex<Vec<Arc<Task>>>> = Arc::default();
        let sink = Arc::clone(&queue);
        let config = TaskManagerConfig {
            num_collective_nodes: num_nodes,
            uninitialized_read: tm_uninitialized_read,
            ..TaskManagerConfig::default()
        };
        let delegate = move |t: &Arc<Task>| sink.lock().push(Arc::clone(t));
        let tm = TaskManager::new(config, Some(Box::new(delegate)));
        let gens = (0..num_nodes)
            .map(|n| {
                let mut g =
                    CommandGraphGenerator::new(num_nodes, NodeId(n as u64), policies).unwrap();
                g.enable_recording();
                g
            })
            .collect();
        let mut ctx = Ctx {
            tm,
            queue,
            gens,
            next_bid: 0,
            next_hoid: 0,
            next_rid: 1,
            next_cgid: CollectiveGroupId::FIRST_USER.0 + 1,
        };
        ctx.flush().unwrap(); // the init epoch
        ctx
    }

    pub fn num_nodes(&self) -> usize {
        self.gens.len()
    }

    /// Feeds queued tasks to every generator; returns the first error.
    pub fn flush(&mut self) -> Result<()> {
        let tasks = std::mem::take(&mut *self.queue.lock());
        let mut result = Ok(());
        for task in &tasks {
            for g in &mut self.gens {
                if let Err(e) = g.build_task(task) {
                    if result.is_ok() {
                        result = Err(e);
                    }
                }
            }
        }
        result
    }

    pub fn set_horizon_step(&mut self, step: u32) {
        self.tm.set_horizon_step(step);
    }

    pub fn set_chunk_multiplier(&mut self, m: usize) {
        for g in &mut self.gens {
            g.set_chunk_multiplier(m);
        }
    }

    /// A buffer of `range` (its length is the dimensionality).
    pub fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        let bid = BufferId(self.next_bid);
        self.next_bid += 1;
        let r = Range::from_slice(range);
        self.tm
            .notify_buffer_created(bid, range.len(), r, host_initialized);
        for g in &mut self.gens {
            g.notify_buffer_created(bid, r, host_initialized);
        }
        bid
    }

    pub fn host_object(&mut self) -> HostObjectId {
        let hoid = HostObjectId(self.next_hoid);
        self.next_hoid += 1;
        self.tm.notify_host_object_created(hoid);
        for g in &mut self.gens {
            g.notify_host_object_created(hoid);
        }
        hoid
    }

    pub fn collective_group(&mut self) -> CollectiveGroupId {
        self.next_cgid += 1;
        CollectiveGroupId(self.next_cgid - 1)
    }

    fn builder(&mut self, spec: TaskSpec) -> TaskBuilder<'_> {
        TaskBuilder {
            ctx: self,
            spec,
            cg: CommandGroup::new(),
        }
    }

    /// A device kernel over `range` (its length is the dimensionality).
    pub fn device(&mut self, range: &[usize]) -> TaskBuilder<'_> {
        self.builder(TaskSpec::device(range.len(), Range::from_slice(range)))
    }

    /// A device kernel over `range` at `offset`.
    pub fn device_at(&mut self, range: &[usize], offset: &[usize]) -> TaskBuilder<'_> {
        self.builder(TaskSpec::DeviceKernel {
            dims: range.len(),
            range: Range::from_slice(range),
            offset: Id::from_slice(offset),
        })
    }

    /// A distributed host task over `range`.
    pub fn host(&mut self, range: &[usize]) -> TaskBuilder<'_> {
        self.builder(TaskSpec::host(range.len(), Range::from_slice(range)))
    }

    pub fn master_node(&mut self) -> TaskBuilder<'_> {
        self.builder(TaskSpec::MasterNode)
    }

    pub fn collective(&mut self, group: CollectiveGroupId) -> TaskBuilder<'_> {
        self.builder(TaskSpec::Collective(group))
    }

    pub fn epoch(&mut self, action: EpochAction) -> TaskId {
        let tid = self.tm.epoch(action, None).unwrap();
        self.flush().unwrap();
        tid
    }

    pub fn fence_buffer(&mut self, bid: BufferId) -> TaskId {
        let tid = self.tm.fence_buffer(bid, None, None).unwrap();
        self.flush().unwrap();
        tid
    }

    pub fn fence_host_object(&mut self, hoid: HostObjectId) -> TaskId {
        let tid = self.tm.fence_host_object(hoid, None).unwrap();
        self.flush().unwrap();
        tid
    }

    pub fn recorder(&self, nid: u64) -> &CommandRecorder {
        self.gens[nid as usize].recorder().unwrap()
    }

    /// The record of `cid` on node `nid`.
    pub fn rec(&self, nid: u64, cid: CommandId) -> &CommandRecord {
        self.recorder(nid).get(cid).unwrap()
    }

    /// A selection from an owned snapshot.
    pub fn select(&self, items: &BTreeSet<(u64, CommandId)>) -> Sel<'_> {
        Sel {
            ctx: self,
            items: items.clone(),
        }
    }

    /// Every command on every node.
    pub fn all(&self) -> Sel<'_> {
        let items = (0..self.num_nodes() as u64)
            .flat_map(|n| self.recorder(n).records().iter().map(move |r| (n, r.id)))
            .collect();
        Sel { ctx: self, items }
    }

    /// The commands of `tid` on all nodes.
    pub fn task(&self, tid: TaskId) -> Sel<'_> {
        self.all()
            .filter(|r| r.task == tid && r.kind.is_task_command())
    }

    /// The commands of the task called `name` on all nodes.
    pub fn named(&self, name: &str) -> Sel<'_> {
        self.all()
            .filter(|r| r.task_name.as_deref() == Some(name) && r.kind.is_task_command())
    }

    /// The commands of one kind (`"push"`, `"await push"`, ...) on all nodes.
    pub fn kind(&self, name: &str) -> Sel<'_> {
        self.all().filter(|r| r.kind.name() == name)
    }
}

/// Builds a command group and submits it.
pub(super) struct TaskBuilder<'a> {
    ctx: &'a mut Ctx,
    spec: TaskSpec,
    cg: CommandGroup,
}

impl TaskBuilder<'_> {
    pub fn name(mut self, name: &str) -> Self {
        self.cg = self.cg.name(name);
        self
    }
    pub fn access(mut self, bid: BufferId, mode: AccessMode, mapper: RangeMapper) -> Self {
        self.cg = self.cg.access(bid, mode, mapper);
        self
    }
    pub fn read(self, bid: BufferId, mapper: RangeMapper) -> Self {
        self.access(bid, AccessMode::Read, mapper)
    }
    pub fn write(self, bid: BufferId, mapper: RangeMapper) -> Self {
        self.access(bid, AccessMode::Write, mapper)
    }
    pub fn read_write(self, bid: BufferId, mapper: RangeMapper) -> Self {
        self.access(bid, AccessMode::ReadWrite, mapper)
    }
    pub fn discard_write(self, bid: BufferId, mapper: RangeMapper) -> Self {
        self.access(bid, AccessMode::DiscardWrite, mapper)
    }
    /// A reduction into `bid`; `include_current` keeps the buffer's previous value.
    pub fn reduce(mut self, bid: BufferId, include_current: bool) -> Self {
        let rid = ReductionId(self.ctx.next_rid);
        self.ctx.next_rid += 1;
        self.cg = self.cg.reduction(rid, bid, !include_current);
        self
    }
    pub fn affect(mut self, hoid: HostObjectId) -> Self {
        self.cg = self.cg.side_effect(hoid);
        self
    }
    pub fn split_2d(mut self) -> Self {
        self.cg = self.cg.hint_split_2d();
        self
    }
    pub fn constrain_split(mut self, granularity: &[usize]) -> Self {
        self.cg = self.cg.constrain_split(Range::from_slice(granularity));
        self
    }
    pub fn try_submit(self) -> Result<TaskId> {
        let tid = self.ctx.tm.submit(self.spec, self.cg)?;
        self.ctx.flush()?;
        Ok(tid)
    }
    pub fn submit(self) -> TaskId {
        self.try_submit().unwrap()
    }
}

/// A custom range mapper from a closure over the chunk.
pub(super) fn custom(f: impl Fn(&Chunk) -> Subrange + Send + Sync + 'static) -> RangeMapper {
    RangeMapper::Custom(Arc::new(move |chunk: &Chunk, _dims, _range| f(chunk)))
}

pub(super) fn fixed(offset: &[usize], range: &[usize]) -> RangeMapper {
    RangeMapper::Fixed(Subrange::new(
        Id::from_slice(offset),
        Range::from_slice(range),
    ))
}

/// The 1-D subrange `[lo, hi)`.
pub(super) fn sr1(lo: usize, hi: usize) -> Subrange {
    Subrange::new(Id([lo, 0, 0]), Range([hi - lo, 1, 1]))
}

/// The 1-D box `[lo, hi)`.
pub(super) fn b1(lo: usize, hi: usize) -> GridBox {
    GridBox::from_arrays([lo, 0, 0], [hi, 1, 1])
}

/// The 1-D region of `[lo, hi)` intervals.
pub(super) fn r1(intervals: &[(usize, usize)]) -> Region {
    Region::from_boxes(intervals.iter().map(|&(lo, hi)| b1(lo, hi)))
}

/// A selection of commands: (node, command id) pairs, like Celerity's `command_query`.
#[derive(Clone)]
pub(super) struct Sel<'a> {
    ctx: &'a Ctx,
    pub items: BTreeSet<(u64, CommandId)>,
}

impl PartialEq for Sel<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl std::fmt::Debug for Sel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.records()
                    .map(|r| (r.node, r.id, r.task, r.kind.name())),
            )
            .finish()
    }
}

impl<'a> Sel<'a> {
    fn with(&self, items: BTreeSet<(u64, CommandId)>) -> Sel<'a> {
        Sel {
            ctx: self.ctx,
            items,
        }
    }

    pub fn records(&self) -> impl Iterator<Item = &'a CommandRecord> + '_ {
        self.items.iter().map(|&(n, c)| self.ctx.rec(n, c))
    }

    pub fn filter(&self, f: impl Fn(&CommandRecord) -> bool) -> Sel<'a> {
        let ctx = self.ctx;
        self.with(
            self.items
                .iter()
                .copied()
                .filter(|&(n, c)| f(ctx.rec(n, c)))
                .collect(),
        )
    }

    pub fn on(&self, nid: u64) -> Sel<'a> {
        self.with(
            self.items
                .iter()
                .copied()
                .filter(|(n, _)| *n == nid)
                .collect(),
        )
    }

    pub fn kind(&self, name: &str) -> Sel<'a> {
        self.filter(|r| r.kind.name() == name)
    }

    pub fn of_buffer(&self, bid: BufferId) -> Sel<'a> {
        self.filter(|r| r.transfer().is_some_and(|t| t.buffer == bid))
    }

    pub fn count(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The number of commands on each node, asserted to be equal on all nodes.
    pub fn count_per_node(&self) -> usize {
        let counts: Vec<usize> = (0..self.ctx.num_nodes() as u64)
            .map(|n| self.on(n).count())
            .collect();
        assert!(
            counts.iter().all(|&c| c == counts[0]),
            "counts differ between nodes: {counts:?} in {self:?}"
        );
        counts[0]
    }

    /// The single command of the selection.
    pub fn one(&self) -> &'a CommandRecord {
        assert_eq!(self.count(), 1, "expected exactly one command in {self:?}");
        self.records().next().unwrap()
    }

    /// The i-th command (in node, id order).
    pub fn nth(&self, i: usize) -> &'a CommandRecord {
        self.records().nth(i).unwrap()
    }

    pub fn union(&self, other: &Sel<'a>) -> Sel<'a> {
        self.with(self.items.union(&other.items).copied().collect())
    }

    pub fn difference(&self, other: &Sel<'a>) -> Sel<'a> {
        self.without(&other.items)
    }

    /// The selection minus an owned snapshot of another one (`sel.items`).
    pub fn without(&self, items: &BTreeSet<(u64, CommandId)>) -> Sel<'a> {
        self.with(self.items.difference(items).copied().collect())
    }

    /// Whether every command of `other` is in this selection (and `other` is not empty).
    pub fn contains(&self, other: &Sel<'_>) -> bool {
        !other.is_empty() && other.items.is_subset(&self.items)
    }

    /// Direct dependents (any kind) on the same node.
    pub fn successors(&self) -> Sel<'a> {
        let ctx = self.ctx;
        ctx.all().filter(|r| {
            r.dependencies
                .iter()
                .any(|d| self.items.contains(&(r.node.0, d.node)))
        })
    }

    /// Direct dependencies (any kind).
    pub fn predecessors(&self) -> Sel<'a> {
        let items = self
            .records()
            .flat_map(|r| r.dependencies.iter().map(move |d| (r.node.0, d.node)))
            .filter(|&(n, c)| self.ctx.recorder(n).get(c).is_some())
            .collect();
        self.with(items)
    }

    /// Everything reachable through dependents.
    pub fn transitive_successors(&self) -> Sel<'a> {
        let mut out = self.with(BTreeSet::new());
        let mut frontier = self.successors();
        while !frontier.is_empty() {
            out = out.union(&frontier);
            frontier = frontier.successors().difference(&out);
        }
        out
    }

    /// No command of either selection transitively depends on one of the other.
    pub fn is_concurrent_with(&self, other: &Sel<'_>) -> bool {
        let a = self.transitive_successors();
        let b = other.with_ctx(self.ctx).transitive_successors();
        other.items.is_disjoint(&a.items) && self.items.is_disjoint(&b.items)
    }

    fn with_ctx<'b>(&self, ctx: &'b Ctx) -> Sel<'b> {
        Sel {
            ctx,
            items: self.items.clone(),
        }
    }
}
