//! SPMD divergence detection (issue 18): every node records a digest of each task it creates —
//! kind, geometry, accesses, side effects, reductions, collective group and name, never the task
//! id or anything process-specific such as addresses — and the nodes compare the digests of the
//! tasks between two synchronisation points (horizons, epochs, barriers). The first task whose
//! digests differ is the first divergent submission; every node names its own version of it.

use std::fmt::Write;

use super::task::{Task, TaskType};
use crate::types::TaskId;

/// What one node submitted as one task: the digest that is compared, and the description that
/// is shown when it differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskDigest {
    /// The task's id on this node.
    pub id: TaskId,
    /// A stable hash of `description` (FNV-1a), equal on nodes that submitted the same task.
    pub hash: u64,
    /// Kind, name, geometry, accesses, side effects, reductions and collective group.
    pub description: String,
}

/// The digest of `task`.
pub fn digest(task: &Task) -> TaskDigest {
    let mut d = String::new();
    let name = task.name.as_deref().unwrap_or("");
    let _ = write!(d, "{} \"{name}\"", task.ty.description());
    if let Some(action) = task.epoch_action {
        let _ = write!(d, " {action:?}");
    }
    if !matches!(task.ty, TaskType::Horizon | TaskType::Epoch) {
        let g = task.geometry();
        let _ = write!(
            d,
            " {}-D range {:?} offset {:?}",
            g.dims, g.global_size, g.global_offset
        );
        if g.granularity != crate::grid::Range::ONE {
            let _ = write!(d, " granularity {:?}", g.granularity);
        }
    }
    for access in task.access_map.accesses() {
        let _ = write!(d, "; {:?} {} {:?}", access.mode, access.bid, access.mapper);
    }
    for hoid in &task.side_effects {
        let _ = write!(d, "; side effect on {hoid}");
    }
    for red in &task.reductions {
        let _ = write!(
            d,
            "; reduction {} into {}{}",
            red.rid,
            red.bid,
            if red.init_from_buffer {
                " including its value"
            } else {
                ""
            }
        );
    }
    if task.collective_group != crate::types::CollectiveGroupId::NONE {
        let _ = write!(d, "; collective group {}", task.collective_group);
    }
    TaskDigest {
        id: task.id,
        hash: fnv1a(d.as_bytes()),
        description: d,
    }
}

/// Whether a task closes a comparison window (the nodes exchange digests when they create it).
pub fn is_sync_point(task: &Task) -> bool {
    matches!(task.ty, TaskType::Horizon | TaskType::Epoch)
}

/// Where two nodes' digests of one window first differ: the index of the first differing task,
/// or of the first task only one of them has; `None` when they agree.
pub fn first_divergence(mine: &[u64], theirs: &[u64]) -> Option<usize> {
    let common = mine.len().min(theirs.len());
    (0..common)
        .find(|&i| mine[i] != theirs[i])
        .or((mine.len() != theirs.len()).then_some(common))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_divergence_is_the_first_differing_or_extra_task() {
        assert_eq!(first_divergence(&[1, 2, 3], &[1, 2, 3]), None);
        assert_eq!(first_divergence(&[1, 2, 3], &[1, 9, 3]), Some(1));
        assert_eq!(first_divergence(&[1, 2], &[1, 2, 3]), Some(2));
        assert_eq!(first_divergence(&[], &[7]), Some(0));
    }

    #[test]
    fn digests_are_stable_and_ignore_only_the_id() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fnv1a(b"read B0 All"), fnv1a(b"read B1 All"));
    }
}
