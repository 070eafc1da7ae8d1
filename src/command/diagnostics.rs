//! Checks run before a task's commands are generated: unknown buffers, overlapping writes between
//! chunks, reads of uninitialised data, and reductions read by a strict subset of the nodes.
//! All of them run before any state changes, so a failing `build_task` changes nothing.

use smallvec::SmallVec;

use super::assignment::{Assignment, ChunkRequirements};
use super::buffer_state::SCALAR_BOX;
use super::generator::CommandGraphGenerator;
use crate::error::{Error, ErrorKind, Result};
use crate::grid::{BoxVec, GridBox, Region, RegionBuilder};
use crate::policy::ErrorPolicy;
use crate::task::{Task, fmt_box_dims, fmt_region};
use crate::types::BufferId;

/// Applies `policy` to a detected problem.
fn report(policy: ErrorPolicy, message: impl FnOnce() -> String) -> Result<()> {
    match policy {
        ErrorPolicy::Ignore => Ok(()),
        ErrorPolicy::Log => {
            // Warning level, as the task and instruction levels log access-pattern problems.
            tracing::warn!("{}", message());
            Ok(())
        }
        ErrorPolicy::Error => Err(Error::new(ErrorKind::AccessPattern, message())),
    }
}

/// Whether no element is written by two chunks, the question [`overlapping_writes`] answers
/// with the elements themselves: the local chunks' writes (taken from `reqs`, evaluated already)
/// and those of the boxes of `remote` (the rest of the iteration space) are only tested against
/// each other instead of united and intersected, and buffers the task does not write are
/// skipped (at 4 nodes the full computation was a fifth of the command graph's work in jacobi).
fn writes_are_disjoint(task: &Task, reqs: &ChunkRequirements, remote: &[GridBox]) -> bool {
    let map = task.access_map();
    let mut local: SmallVec<[&Region; 2]> = SmallVec::new();
    let mut others: SmallVec<[Region; 2]> = SmallVec::new();
    for bid in map.accessed_buffers() {
        let written = map
            .accesses()
            .iter()
            .any(|acc| acc.bid == bid && acc.mode.is_producer());
        if !written {
            continue;
        }
        local.clear();
        for (_, mut requirements) in reqs.local_chunks(task) {
            let Some((_, _, produced)) = requirements.find(|(b, _, _)| *b == bid) else {
                continue;
            };
            if produced.is_empty() {
                continue;
            }
            if local.iter().any(|other| other.intersects(produced)) {
                return false;
            }
            local.push(produced);
        }
        others.clear();
        for chunk in remote {
            let w = map.compute_produced_region(bid, chunk);
            if w.is_empty() {
                continue;
            }
            let meets = |other: &Region| other.intersects(&w);
            if local.iter().any(|o| meets(o)) || others.iter().any(meets) {
                return false;
            }
            others.push(w);
        }
    }
    true
}

/// Per buffer, the elements written by more than one of `chunks`.
fn overlapping_writes(task: &Task, chunks: &[GridBox]) -> Vec<(BufferId, Region)> {
    let map = task.access_map();
    let mut out = Vec::new();
    for bid in map.accessed_buffers() {
        let mut written = Region::new();
        let mut overlap = RegionBuilder::new();
        for chunk in chunks {
            let writes = map.compute_produced_region(bid, chunk);
            if writes.is_empty() {
                continue;
            }
            overlap.add_region(&written.intersection(&writes));
            written = written.union(&writes);
        }
        if task.reductions().iter().any(|r| r.bid == bid) && written.intersects_box(&SCALAR_BOX) {
            overlap.add_box(SCALAR_BOX);
        }
        if !overlap.is_empty() {
            out.push((bid, overlap.into_region()));
        }
    }
    out
}

impl CommandGraphGenerator {
    /// The checks of a task, as the policies ask. `pending` holds the task's
    /// [`touched_buffers`](super::assignment::touched_buffers) if one of them is unknown or has a
    /// pending reduction (otherwise those checks have nothing to find).
    pub(super) fn validate(
        &self,
        task: &Task,
        assignment: &Assignment,
        reqs: &ChunkRequirements,
        pending: Option<&[BufferId]>,
    ) -> Result<()> {
        for bid in pending.unwrap_or_default() {
            if !self.buffers.contains_key(*bid) {
                return Err(Error::invalid_state(format!(
                    "{} accesses {bid}, which the command graph generator of N{} does not know",
                    task.title(),
                    self.local_nid.0
                )));
            }
        }
        if self.policies.overlapping_write != ErrorPolicy::Ignore {
            self.check_overlapping_writes(task, assignment, reqs)?;
        }
        if self.policies.uninitialized_read != ErrorPolicy::Ignore {
            self.check_uninitialized_reads(task, reqs)?;
        }
        match pending {
            Some(touched) => self.check_reduction_readers(task, reqs, touched),
            None => Ok(()),
        }
    }

    /// Local chunks against each other and against the rest of the iteration space: every
    /// overlap is reported by at least one node, at linear cost per node.
    fn check_overlapping_writes(
        &self,
        task: &Task,
        assignment: &Assignment,
        reqs: &ChunkRequirements,
    ) -> Result<()> {
        if assignment.local_chunks().next().is_none() {
            return Ok(());
        }
        if assignment.local_spans_task() && task.reductions().is_empty() {
            // One chunk is the whole iteration space: nothing else can write.
            return Ok(());
        }
        let remote = assignment.remote_space.boxes();
        let mut boxes: BoxVec = assignment.local_chunks().copied().collect();
        boxes.extend(remote.iter().copied());
        // a reduction's scalar box is written by every chunk: the full computation tells
        if task.reductions().is_empty() && writes_are_disjoint(task, reqs, remote) {
            debug_assert!(overlapping_writes(task, &boxes).is_empty());
            return Ok(());
        }
        let overlaps = overlapping_writes(task, &boxes);
        if overlaps.is_empty() {
            return Ok(());
        }
        report(self.policies.overlapping_write, || {
            let list: Vec<String> = overlaps
                .iter()
                .map(|(bid, r)| format!("{} {}", self.buffer_label(*bid), fmt_region(r)))
                .collect();
            format!(
                "{} has overlapping writes between chunks on N{} and other chunks in {}; choose a \
                 non-overlapping range mapper for the write or constrain the split",
                task.title(),
                self.local_nid.0,
                list.join(", ")
            )
        })
    }

    fn check_uninitialized_reads(&self, task: &Task, reqs: &ChunkRequirements) -> Result<()> {
        for (chunk, requirements) in reqs.local_chunks(task) {
            for (bid, consumed, _) in requirements {
                if consumed.is_empty() {
                    continue;
                }
                let initialized = &self.buffers[bid].initialized;
                // the common case without building the difference
                if initialized.covers(consumed) {
                    continue;
                }
                let missing = consumed.difference(initialized);
                if missing.is_empty() {
                    continue;
                }
                let dims = task.geometry().dims;
                report(self.policies.uninitialized_read, || {
                    format!(
                        "the chunk {} of {} on N{} reads {} {}, which no node has written",
                        fmt_box_dims(chunk, dims),
                        task.title(),
                        self.local_nid.0,
                        self.buffer_label(bid),
                        fmt_region(&missing)
                    )
                })?;
            }
        }
        Ok(())
    }

    /// A pending reduction may be read by one node or by all of them, nothing in between: with a
    /// strict subset it would be unclear who owns the result afterwards.
    fn check_reduction_readers(
        &self,
        task: &Task,
        reqs: &ChunkRequirements,
        touched: &[BufferId],
    ) -> Result<()> {
        for &bid in touched {
            if self.buffers[bid].pending_reduction.is_none() {
                continue;
            }
            let readers =
                reqs.remote_readers(bid).count() + usize::from(reqs.local_reads(task, bid));
            if readers > 1 && readers != self.num_nodes {
                return Err(Error::unsupported(format!(
                    "{} reads the result of a reduction into {} on {readers} of {} nodes; a \
                     reduction result must be read by a single node or by all of them",
                    task.title(),
                    self.buffer_label(bid),
                    self.num_nodes
                )));
            }
        }
        Ok(())
    }
}
