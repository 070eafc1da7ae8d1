//! [`NodeBitset`]: a fixed-size set of node ids (at most [`NodeBitset::MAX_NODES`]), used as the value type of
//! the per-buffer replication map and for reduction participants.

use std::fmt;

use crate::types::NodeId;

const WORDS: usize = 4;

/// A set of node ids below [`NodeBitset::MAX_NODES`]. `Copy`, 32 bytes, comparable: it serves as a region map
/// value, so equal neighbouring sets merge.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct NodeBitset([u64; WORDS]);

impl NodeBitset {
    /// The largest number of nodes a set (and a command graph generator) supports.
    pub const MAX_NODES: usize = WORDS * 64;

    /// The empty set.
    pub const EMPTY: NodeBitset = NodeBitset([0; WORDS]);

    /// The set `{0, 1, ..., num_nodes - 1}`.
    pub fn all(num_nodes: usize) -> Self {
        debug_assert!(num_nodes <= Self::MAX_NODES);
        let mut words = [0u64; WORDS];
        for (w, word) in words.iter_mut().enumerate() {
            let lo = w * 64;
            if num_nodes >= lo + 64 {
                *word = u64::MAX;
            } else if num_nodes > lo {
                *word = (1u64 << (num_nodes - lo)) - 1;
            }
        }
        NodeBitset(words)
    }

    /// The set holding only `nid`.
    pub fn single(nid: NodeId) -> Self {
        let mut s = Self::EMPTY;
        s.insert(nid);
        s
    }

    #[inline]
    fn split(nid: NodeId) -> (usize, u64) {
        let n = nid.0 as usize;
        debug_assert!(n < Self::MAX_NODES, "{nid} exceeds the node limit");
        (n / 64, 1u64 << (n % 64))
    }

    /// Adds `nid`.
    #[inline]
    pub fn insert(&mut self, nid: NodeId) {
        let (w, bit) = Self::split(nid);
        self.0[w] |= bit;
    }

    /// The set with `nid` added.
    #[inline]
    #[must_use]
    pub fn with(mut self, nid: NodeId) -> Self {
        self.insert(nid);
        self
    }

    /// Whether `nid` is in the set.
    #[inline]
    pub fn contains(&self, nid: NodeId) -> bool {
        let (w, bit) = Self::split(nid);
        self.0[w] & bit != 0
    }

    /// Number of nodes in the set.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The union of both sets.
    #[inline]
    #[must_use]
    pub fn union(&self, other: &NodeBitset) -> NodeBitset {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0.iter()) {
            *a |= b;
        }
        out
    }

    /// The members in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                Some(NodeId(w as u64 * 64 + b))
            })
        })
    }
}

impl fmt::Debug for NodeBitset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_sets_exactly_the_first_nodes() {
        for n in [0, 1, 5, 63, 64, 65, 128, 200, 256] {
            let s = NodeBitset::all(n);
            assert_eq!(s.len(), n);
            assert!(s.iter().map(|nid| nid.0 as usize).eq(0..n));
        }
    }

    #[test]
    fn insert_contains_union() {
        let a = NodeBitset::single(NodeId(3)).with(NodeId(200));
        let b = NodeBitset::single(NodeId(64));
        assert!(a.contains(NodeId(200)) && !a.contains(NodeId(64)));
        let u = a.union(&b);
        assert_eq!(
            u.iter().collect::<Vec<_>>(),
            [NodeId(3), NodeId(64), NodeId(200)]
        );
        assert!(NodeBitset::EMPTY.is_empty() && !u.is_empty());
        assert_eq!(format!("{b:?}"), "{N64}");
    }
}
