//! [`Replication`]: which nodes already hold a copy of the data this node produced (C++ Celerity:
//! `replicated_regions`, a region map of node sets).
//!
//! Stored per node instead of per element: for each node that received something from us, the
//! region it received since we last overwrote it. (A buffer's initial contents, which every node
//! holds, are not tracked here: their last-writer state is marked replicated, so they are never
//! pushed; tracking them as a region held everywhere cost a region difference per local write until
//! the whole buffer was overwritten, 2 k instructions per task in the 4-node soup.) A node set per
//! element fragments into one entry per target as soon as every node reads a different part of our
//! data (all-to-all patterns), and every push and every write then pays an R-tree update per
//! fragment; here a push to one target touches only that target's region, and a write clears the
//! others with a bounding-box test each. Membership is the same: node `n` holds element `e` (that
//! we produced) iff `e` is in `n`'s region.

use crate::grid::{GridBox, Region};
use crate::types::NodeId;

/// The nodes holding copies of what this node produced, per element.
#[derive(Default)]
pub(super) struct Replication {
    /// The elements held by individual nodes: ascending node ids, no empty regions.
    per_node: Vec<(NodeId, Region)>,
    /// A box around everything in `per_node` (it may be larger: a write that clears part of
    /// it leaves it as it is), so that a write covering all of it clears every entry at once.
    bounds: GridBox,
}

impl Replication {
    /// No node holds anything.
    pub fn nowhere() -> Self {
        Replication::default()
    }

    fn position(&self, nid: NodeId) -> Result<usize, usize> {
        // pushes visit targets in ascending order, so the last entry is the common hit
        match self.per_node.last() {
            Some((last, _)) if *last == nid => Ok(self.per_node.len() - 1),
            Some((last, _)) if *last < nid => Err(self.per_node.len()),
            _ => self.per_node.binary_search_by_key(&nid, |(n, _)| *n),
        }
    }

    /// The part of `b` that `nid` does not hold.
    pub fn missing_on(&self, nid: NodeId, b: &GridBox) -> Region {
        let mut missing = Region::from_box(*b);
        if let Ok(pos) = self.position(nid) {
            let held = &self.per_node[pos].1;
            if !missing.is_empty() && held.intersects(&missing) {
                missing = missing.difference(held);
            }
        }
        missing
    }

    /// `nid` now holds `region` too.
    pub fn add(&mut self, nid: NodeId, region: &Region) {
        if region.is_empty() {
            return;
        }
        self.bounds = self.bounds.bounding_box(&region.bounding_box());
        match self.position(nid) {
            Ok(pos) => {
                let held = &mut self.per_node[pos].1;
                *held = held.union(region);
            }
            Err(pos) => self.per_node.insert(pos, (nid, region.clone())),
        }
    }

    /// This node overwrote `region`: no other node holds the new contents.
    pub fn overwritten(&mut self, region: &Region) {
        if region.is_empty() {
            return;
        }
        let bounds = region.bounding_box();
        let single_box = region.boxes().len() == 1;
        if single_box && bounds.covers(&self.bounds) {
            // every node's copy is overwritten (all-to-all patterns, where each task replaces
            // what every peer received of the previous one): one test instead of one per node
            self.per_node.clear();
            self.bounds = GridBox::EMPTY;
            return;
        }
        self.per_node.retain_mut(|(_, held)| {
            let held_bounds = held.bounding_box();
            if !held_bounds.intersects(&bounds) {
                return true;
            }
            if single_box && bounds.covers(&held_bounds) {
                return false;
            }
            *held = held.difference(region);
            !held.is_empty()
        });
        if self.per_node.is_empty() {
            self.bounds = GridBox::EMPTY;
        }
    }

    /// Number of nodes holding something beyond the common contents (tracking state).
    #[cfg(test)]
    pub fn num_node_entries(&self) -> usize {
        self.per_node.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: usize, n: usize) -> GridBox {
        GridBox::from_arrays([i, 0, 0], [i + 1, n, 1])
    }

    fn point(i: usize, j: usize) -> GridBox {
        GridBox::from_arrays([i, j, 0], [i + 1, j + 1, 1])
    }

    #[test]
    fn pushes_are_remembered_per_target_and_cleared_by_a_write() {
        let mut r = Replication::nowhere();
        for j in (1..4).rev() {
            r.add(NodeId(j as u64), &Region::from_box(point(0, j)));
        }
        assert_eq!(r.num_node_entries(), 3);
        assert!(r.missing_on(NodeId(2), &point(0, 2)).is_empty());
        assert_eq!(
            r.missing_on(NodeId(2), &row(0, 4)),
            Region::from_boxes([point(0, 0), point(0, 1), point(0, 3)])
        );
        r.add(NodeId(2), &Region::from_box(point(0, 3)));
        assert!(r.missing_on(NodeId(2), &point(0, 3)).is_empty());
        r.overwritten(&Region::from_box(point(0, 2)));
        assert_eq!(
            r.missing_on(NodeId(2), &point(0, 2)),
            Region::from_box(point(0, 2))
        );
        assert!(r.missing_on(NodeId(2), &point(0, 3)).is_empty());
        r.overwritten(&Region::from_box(row(0, 4)));
        assert_eq!(r.num_node_entries(), 0);
    }

    /// A write that covers only part of what nodes hold keeps the rest; once the entries are
    /// gone, a later write over everything held again clears it all.
    #[test]
    fn a_write_over_part_of_the_held_data_keeps_the_other_copies() {
        let mut r = Replication::nowhere();
        r.add(NodeId(1), &Region::from_box(point(0, 1)));
        r.add(NodeId(2), &Region::from_box(point(3, 3)));
        r.overwritten(&Region::from_box(row(0, 4)));
        assert_eq!(r.num_node_entries(), 1);
        assert!(r.missing_on(NodeId(2), &point(3, 3)).is_empty());
        assert_eq!(
            r.missing_on(NodeId(1), &point(0, 1)),
            Region::from_box(point(0, 1))
        );
        r.overwritten(&Region::from_box(row(3, 4)));
        assert_eq!(r.num_node_entries(), 0);
        r.add(NodeId(1), &Region::from_box(point(1, 1)));
        r.add(NodeId(3), &Region::from_box(point(1, 2)));
        r.overwritten(&Region::from_box(row(2, 4)));
        assert_eq!(r.num_node_entries(), 2);
        r.overwritten(&Region::from_box(row(1, 4)));
        assert_eq!(r.num_node_entries(), 0);
    }
}
