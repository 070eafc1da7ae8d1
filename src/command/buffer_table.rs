//! [`BufferTable`]: the generator's per-buffer state, indexed by buffer id.
//!
//! Every task looks each of its buffers up several times (the pending-reduction check, read and
//! anti-dependencies, the last-writer update); a hash lookup cost 20 to 30 instructions, a slot of
//! a table indexed by id a handful. Buffer ids are handed out in increasing order, so the slots
//! span the ids from the oldest live buffer on; a destroyed buffer leaves an empty slot until
//! every older one is gone too.

use std::collections::VecDeque;
use std::ops::Index;

use crate::types::BufferId;

/// A map from buffer id to `V` with a slot per id between the oldest and the newest live buffer.
pub(super) struct BufferTable<V> {
    /// The id of `slots[0]` (meaningless while `slots` is empty).
    oldest: u64,
    slots: VecDeque<Option<V>>,
}

impl<V> Default for BufferTable<V> {
    fn default() -> Self {
        BufferTable {
            oldest: 0,
            slots: VecDeque::new(),
        }
    }
}

impl<V> BufferTable<V> {
    #[inline]
    fn slot(&self, bid: BufferId) -> Option<usize> {
        let offset = bid.0.wrapping_sub(self.oldest);
        (offset < self.slots.len() as u64).then_some(offset as usize)
    }

    #[inline]
    pub fn get(&self, bid: &BufferId) -> Option<&V> {
        self.slots.get(self.slot(*bid)?)?.as_ref()
    }

    #[inline]
    pub fn get_mut(&mut self, bid: &BufferId) -> Option<&mut V> {
        let slot = self.slot(*bid)?;
        self.slots[slot].as_mut()
    }

    #[inline]
    pub fn contains_key(&self, bid: &BufferId) -> bool {
        self.get(bid).is_some()
    }

    /// Sets the value of `bid` (ids older than the oldest slot grow the table at the front).
    pub fn insert(&mut self, bid: BufferId, value: V) {
        if self.slots.is_empty() {
            self.oldest = bid.0;
        }
        while bid.0 < self.oldest {
            self.slots.push_front(None);
            self.oldest -= 1;
        }
        let slot = usize::try_from(bid.0 - self.oldest).expect("buffer id span fits memory");
        if slot >= self.slots.len() {
            self.slots.resize_with(slot + 1, || None);
        }
        self.slots[slot] = Some(value);
    }

    /// Forgets `bid`; the empty slots at the front go.
    pub fn remove(&mut self, bid: &BufferId) {
        if let Some(slot) = self.slot(*bid) {
            self.slots[slot] = None;
        }
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.oldest += 1;
        }
    }

    /// Number of live buffers.
    pub fn len(&self) -> usize {
        self.values().count()
    }

    /// The live values, in id order.
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.slots.iter().flatten()
    }

    /// The live values, in id order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.slots.iter_mut().flatten()
    }
}

impl<V> Index<&BufferId> for BufferTable<V> {
    type Output = V;

    #[inline]
    fn index(&self, bid: &BufferId) -> &V {
        self.get(bid).expect("a known buffer")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Random insertions (in any id order) and removals agree with an ordered map.
        #[test]
        fn agrees_with_an_ordered_map(ops in proptest::collection::vec((0u64..24, any::<bool>()), 0..64)) {
            let mut table = BufferTable::default();
            let mut oracle = BTreeMap::new();
            for (i, (id, insert)) in ops.into_iter().enumerate() {
                let bid = BufferId(id);
                if insert {
                    table.insert(bid, i);
                    oracle.insert(id, i);
                } else {
                    table.remove(&bid);
                    oracle.remove(&id);
                }
                for probe in 0..26 {
                    prop_assert_eq!(table.get(&BufferId(probe)), oracle.get(&probe));
                    prop_assert_eq!(table.contains_key(&BufferId(probe)), oracle.contains_key(&probe));
                }
                prop_assert_eq!(table.len(), oracle.len());
                prop_assert!(table.values().eq(oracle.values()));
                prop_assert!(table.slots.front().is_none_or(Option::is_some), "empty front slot");
            }
        }
    }
}
