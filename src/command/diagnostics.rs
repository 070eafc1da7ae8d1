//! Checks run before a task's commands are generated: unknown buffers, overlapping writes between
//! chunks, reads of uninitialised data, and reductions read by a strict subset of the nodes.
//! All of them run before any state changes, so a failing `build_task` changes nothing.

use super::assignment::{AssignedChunk, ChunkRequirements};
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
        chunks: &[AssignedChunk],
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
            self.check_overlapping_writes(task, chunks)?;
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
    fn check_overlapping_writes(&self, task: &Task, chunks: &[AssignedChunk]) -> Result<()> {
        let mut boxes: BoxVec = chunks
            .iter()
            .filter(|c| c.node == self.local_nid)
            .map(|c| c.chunk)
            .collect();
        if boxes.is_empty() {
            return Ok(());
        }
        let global = task.geometry().global_box();
        if boxes.len() == 1 && boxes[0] == global && task.reductions().is_empty() {
            // One chunk is the whole iteration space: nothing else can write.
            return Ok(());
        }
        let local = Region::from_boxes(boxes.iter().copied());
        let remote = Region::from_box(global).difference(&local);
        boxes.extend(remote.boxes().iter().copied());
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
                let missing = consumed.difference(&self.buffers[bid].initialized);
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
