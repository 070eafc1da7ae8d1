//! Dependency computation of a new task: true dependencies on the last writers of what it
//! reads, anti-dependencies on the readers of what it overwrites, serialisation through side
//! effects and collective groups, and the epoch anchor; the tracking state is updated after
//! every check that can fail has passed.

use smallvec::SmallVec;

use super::{DIRECT_SCAN_MAX, ReaderScan, SCALAR_BOX, TaskManager};
use crate::error::{Error, ErrorKind, Result};
use crate::grid::{GridBox, Region, RegionBuilder};
use crate::policy::ErrorPolicy;
use crate::task::graph::TaskGraph;
use crate::task::range_mapper::fmt_box_dims;
use crate::task::task::{Dependencies, Dependency, DependencyKind, DependencyOrigin, Task};
use crate::types::{BufferId, CollectiveGroupId, TaskId};

/// The dependencies of a task under construction.
pub(super) struct DepsBuilder {
    pub(super) deps: Dependencies,
    pub(super) critical_path_length: u32,
}

impl DepsBuilder {
    pub(super) fn new() -> Self {
        DepsBuilder {
            deps: Dependencies::new(),
            critical_path_length: 0,
        }
    }

    /// Adds an edge; an existing edge is never duplicated, only upgraded from anti to true.
    // Out of line: inlined into its several callers it grew the dependency scan's loops.
    #[inline(never)]
    pub(super) fn add(
        &mut self,
        graph: &TaskGraph,
        dependee: TaskId,
        kind: DependencyKind,
        origin: DependencyOrigin,
    ) {
        if let Some(d) = self.deps.iter_mut().find(|d| d.task == dependee) {
            if d.kind < kind {
                d.kind = kind;
                d.origin = origin;
            }
            return;
        }
        let dependee_length = graph
            .critical_path_length(dependee)
            .expect("dependency on a task that is not live");
        self.critical_path_length = self.critical_path_length.max(dependee_length + 1);
        self.deps.push(Dependency {
            task: dependee,
            kind,
            origin,
        });
    }

    /// [`Self::add`] of the first edge: no duplicate to look for, and inline (the epoch anchor of
    /// a task without buffers paid an out-of-line `add` of about 55 instructions).
    #[inline]
    pub(super) fn add_first(
        &mut self,
        graph: &TaskGraph,
        dependee: TaskId,
        kind: DependencyKind,
        origin: DependencyOrigin,
    ) {
        debug_assert!(self.deps.is_empty());
        let dependee_length = graph
            .critical_path_length(dependee)
            .expect("dependency on a task that is not live");
        self.critical_path_length = dependee_length + 1;
        self.deps.push(Dependency {
            task: dependee,
            kind,
            origin,
        });
    }

    pub(super) fn has_true_dependency(&self) -> bool {
        self.deps.iter().any(|d| d.kind == DependencyKind::True)
    }
}

impl TaskManager {
    /// Computes the dependencies of a new task (data flow, side effects, collective groups,
    /// epoch anchoring) and updates the tracking state. All checks that can fail run before the
    /// first change.
    pub(super) fn compute_dependencies(
        &mut self,
        task: &Task,
        deps: &mut DepsBuilder,
    ) -> Result<()> {
        let (tid, bam) = (task.id, &task.access_map);

        if !task.reductions.is_empty() {
            // buffers with their task-level regions, reductions included (which read and
            // write one scalar)
            let nothing = Region::new();
            let scalar = Region::from_box(SCALAR_BOX);
            let reductions = task.reductions.iter().map(|red| {
                let consumed = if red.init_from_buffer {
                    &scalar
                } else {
                    &nothing
                };
                (red.bid, consumed, &scalar)
            });
            let buffers = bam.task_regions().chain(reductions);
            self.add_true_dependencies(task, buffers.clone(), deps)?;
            self.add_anti_dependencies(tid, buffers, deps);
        } else if bam.num_accesses() > 0 {
            // the common task without reductions walks its buffers without the chained
            // iterator's second half (and a task without buffers skips the set-up as well)
            self.add_true_dependencies(task, bam.task_regions(), deps)?;
            self.add_anti_dependencies(tid, bam.task_regions(), deps);
        }
        self.add_serialization_dependencies(task, deps);

        // 5. anchor on the current epoch
        if deps.deps.is_empty() {
            // the common anchor of a task without other edges: no duplicate to look for
            deps.add_first(
                &self.graph,
                self.epoch_for_new_tasks,
                DependencyKind::True,
                DependencyOrigin::LastEpoch,
            );
        } else if !deps.has_true_dependency() {
            deps.add(
                &self.graph,
                self.epoch_for_new_tasks,
                DependencyKind::True,
                DependencyOrigin::LastEpoch,
            );
        }
        Ok(())
    }

    /// Step 1: true dependencies on the last writers of what is consumed (no changes yet, so a
    /// refused uninitialised read leaves the state as it was).
    #[inline]
    fn add_true_dependencies<'a>(
        &self,
        task: &Task,
        buffers: impl Iterator<Item = (BufferId, &'a Region, &'a Region)>,
        deps: &mut DepsBuilder,
    ) -> Result<()> {
        for (bid, consumed, _) in buffers {
            if consumed.is_empty() {
                continue;
            }
            let buffer = self.buffers.get(bid).expect("validated buffer");
            let mut uninitialized = RegionBuilder::new();
            let graph = &self.graph;
            buffer
                .last_writers
                .query_region(consumed, |b, writer| match writer {
                    Some(w) => deps.add(graph, w, DependencyKind::True, DependencyOrigin::Dataflow),
                    None => {
                        uninitialized.add_box(b);
                    }
                });
            if !uninitialized.is_empty() && self.config.uninitialized_read != ErrorPolicy::Ignore {
                let message =
                    self.uninitialized_read_message(task, bid, uninitialized.into_region());
                if self.config.uninitialized_read == ErrorPolicy::Error {
                    return Err(Error::new(ErrorKind::AccessPattern, message));
                }
                tracing::warn!("{message}");
            }
        }
        Ok(())
    }

    /// Step 2: anti-dependencies on the readers of what is overwritten (or on the previous
    /// writer when nobody read in between); the task becomes the last writer.
    #[inline]
    fn add_anti_dependencies<'a>(
        &mut self,
        tid: TaskId,
        buffers: impl Iterator<Item = (BufferId, &'a Region, &'a Region)>,
        deps: &mut DepsBuilder,
    ) {
        for (bid, _, produced) in buffers {
            if produced.is_empty() {
                continue;
            }
            let buffer = self.buffers.get_mut(bid).expect("validated buffer");
            let mut writers: SmallVec<[TaskId; 4]> = SmallVec::new();
            buffer
                .last_writers
                .update_region(produced, tid, |writer| match writer {
                    Some(w) if !writers.contains(&w) => writers.push(w),
                    _ => {}
                });
            let write = Overwrite {
                bid,
                produced,
                bounds: produced.bounding_box(),
            };
            for w in writers {
                add_anti_dependencies_after(&self.graph, w, &write, &mut buffer.readers, deps);
            }
        }
    }

    /// Steps 3 and 4: serialise per host object and per collective group.
    #[inline]
    fn add_serialization_dependencies(&mut self, task: &Task, deps: &mut DepsBuilder) {
        let tid = task.id;
        for hoid in &task.side_effects {
            let last = self
                .host_objects
                .get_mut(hoid)
                .expect("validated host object");
            if let Some(prev) = last.replace(tid) {
                deps.add(
                    &self.graph,
                    prev,
                    DependencyKind::True,
                    DependencyOrigin::SideEffect,
                );
            }
        }
        if task.collective_group != CollectiveGroupId::NONE
            && let Some(prev) = self.last_collective.insert(task.collective_group, tid)
        {
            deps.add(
                &self.graph,
                prev,
                DependencyKind::True,
                DependencyOrigin::CollectiveGroupSerialization,
            );
        }
    }

    fn uninitialized_read_message(&self, task: &Task, bid: BufferId, region: Region) -> String {
        let bam = &task.access_map;
        let pure_read = !bam
            .accesses()
            .iter()
            .any(|a| a.bid == bid && a.mode.is_producer());
        let label = task.title();
        let dims = self.buffers.get(bid).expect("validated buffer").dims;
        let boxes: Vec<String> = region
            .boxes()
            .iter()
            .map(|b| fmt_box_dims(b, dims))
            .collect();
        format!(
            "{label} declares a {} access on uninitialized {} {{{}}}.{}",
            if pure_read { "reading" } else { "consuming" },
            self.buffer_label(bid),
            boxes.join(", "),
            if pure_read {
                ""
            } else {
                " Make sure to use a discard access mode (no_init) if this was unintentional."
            }
        )
    }
}

/// What a new task overwrites in one buffer.
struct Overwrite<'a> {
    bid: BufferId,
    produced: &'a Region,
    /// Bounding box of `produced`.
    bounds: GridBox,
}

/// Anti-dependencies of a task overwriting `write.produced` on the readers of writer `w`'s data
/// there (its dependents that consume some of it), or on `w` itself when nobody read it in
/// between (which orders the writes; a no-op if there is a true edge). `scan` is the buffer's
/// list of the readers among a writer's dependents, used for a writer with many.
#[inline]
fn add_anti_dependencies_after(
    graph: &TaskGraph,
    w: TaskId,
    write: &Overwrite,
    scan: &mut ReaderScan,
    deps: &mut DepsBuilder,
) {
    let mut has_anti_dependents = false;
    let mut add_if_reads = |reader: TaskId, consumed: &Region, deps: &mut DepsBuilder| {
        if consumed.intersects(write.produced) {
            deps.add(
                graph,
                reader,
                DependencyKind::Anti,
                DependencyOrigin::Dataflow,
            );
            has_anti_dependents = true;
        }
    };
    let dependents = graph.dependents(w);
    if dependents.len() <= DIRECT_SCAN_MAX {
        for &dependent in dependents {
            // the dependent's consumed region looked up once, for both tests
            let consumed = consumed_region(graph, dependent, write.bid);
            // bounding boxes first: most dependents read elsewhere or not at all
            if consumed.bounding_box().intersects(&write.bounds) {
                add_if_reads(dependent, consumed, deps);
            }
        }
    } else {
        if scan.writer != Some(w) {
            scan.writer = Some(w);
            scan.scanned = 0;
            scan.readers.clear();
        }
        for &dependent in &dependents[scan.scanned..] {
            let bounds = consumed_bounds(graph, dependent, write.bid);
            if !bounds.is_empty() {
                scan.readers.push((dependent, bounds));
            }
        }
        scan.scanned = dependents.len();
        for &(reader, bounds) in &scan.readers {
            if bounds.intersects(&write.bounds) {
                add_if_reads(reader, consumed_region(graph, reader, write.bid), deps);
            }
        }
    }
    if !has_anti_dependents {
        deps.add(graph, w, DependencyKind::Anti, DependencyOrigin::Dataflow);
    }
}

/// The bounding box of what the live task `tid` consumes of `bid` (empty if nothing).
#[inline]
fn consumed_bounds(graph: &TaskGraph, tid: TaskId, bid: BufferId) -> GridBox {
    graph
        .get(tid)
        .expect("live dependent")
        .access_map()
        .task_consumed_bounds(bid)
}

/// What the live task `tid` consumes of `bid` (empty if nothing).
#[inline]
fn consumed_region(graph: &TaskGraph, tid: TaskId, bid: BufferId) -> &Region {
    graph
        .get(tid)
        .expect("live dependent")
        .access_map()
        .task_consumed_region(bid)
}
