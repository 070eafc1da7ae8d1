//! [`IdTable`]: a map from ids handed out in increasing order to values, one slot per id.
//!
//! The task manager and the command graph generator look each buffer of a task up several times
//! per task (validation, dependencies, last-writer updates). A hash lookup cost 20 to 40
//! instructions there, a slot of a table indexed by id a handful. Ids are handed out in
//! increasing order and the old ones leave first, so the slots span the ids from the oldest live
//! one on; a removed id leaves an empty slot until every older one is gone too.

use std::marker::PhantomData;
use std::ops::Index;

use crate::types::BufferId;

/// An id that is a position in a sequence handed out in increasing order.
pub trait SequentialId: Copy {
    /// The id's position in its sequence.
    fn position(self) -> u64;
}

impl SequentialId for BufferId {
    #[inline]
    fn position(self) -> u64 {
        self.0
    }
}

/// A map from `K` to `V` with a slot per id between the oldest and the newest live id.
pub struct IdTable<K, V> {
    /// The position of `slots[0]` (meaningless while `slots` is empty).
    oldest: u64,
    slots: Vec<Option<V>>,
    id: PhantomData<fn(K)>,
}

impl<K, V> Default for IdTable<K, V> {
    fn default() -> Self {
        IdTable {
            oldest: 0,
            slots: Vec::new(),
            id: PhantomData,
        }
    }
}

impl<K: SequentialId, V> IdTable<K, V> {
    #[inline]
    fn slot(&self, id: K) -> Option<usize> {
        let offset = id.position().wrapping_sub(self.oldest);
        (offset < self.slots.len() as u64).then_some(offset as usize)
    }

    /// The value of `id`.
    #[inline]
    pub fn get(&self, id: K) -> Option<&V> {
        self.slots.get(self.slot(id)?)?.as_ref()
    }

    /// The value of `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: K) -> Option<&mut V> {
        let slot = self.slot(id)?;
        self.slots[slot].as_mut()
    }

    /// Whether `id` has a value.
    #[inline]
    pub fn contains_key(&self, id: K) -> bool {
        self.get(id).is_some()
    }

    /// Sets the value of `id`, returning the previous one (ids older than the oldest slot grow
    /// the table at the front).
    pub fn insert(&mut self, id: K, value: V) -> Option<V> {
        let position = id.position();
        if self.slots.is_empty() {
            self.oldest = position;
        }
        if position < self.oldest {
            let missing = usize::try_from(self.oldest - position).expect("id span fits memory");
            self.slots
                .splice(0..0, std::iter::repeat_with(|| None).take(missing));
            self.oldest = position;
        }
        let slot = usize::try_from(position - self.oldest).expect("id span fits memory");
        if slot >= self.slots.len() {
            self.slots.resize_with(slot + 1, || None);
        }
        self.slots[slot].replace(value)
    }

    /// Removes `id`, returning its value; the empty slots at the front go.
    pub fn remove(&mut self, id: K) -> Option<V> {
        let value = self.slot(id).and_then(|slot| self.slots[slot].take());
        let released = self.slots.iter().take_while(|s| s.is_none()).count();
        self.slots.drain(..released);
        self.oldest += released as u64;
        value
    }

    /// Number of live ids.
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

impl<K: SequentialId, V> Index<K> for IdTable<K, V> {
    type Output = V;

    #[inline]
    fn index(&self, id: K) -> &V {
        self.get(id).expect("a live id")
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
            let mut table = IdTable::default();
            let mut oracle = BTreeMap::new();
            for (i, (id, insert)) in ops.into_iter().enumerate() {
                let bid = BufferId(id);
                if insert {
                    prop_assert_eq!(table.insert(bid, i), oracle.insert(id, i));
                } else {
                    prop_assert_eq!(table.remove(bid), oracle.remove(&id));
                }
                for probe in 0..26 {
                    prop_assert_eq!(table.get(BufferId(probe)), oracle.get(&probe));
                    prop_assert_eq!(table.contains_key(BufferId(probe)), oracle.contains_key(&probe));
                }
                prop_assert_eq!(table.len(), oracle.len());
                prop_assert!(table.values().eq(oracle.values()));
                prop_assert!(table.slots.first().is_none_or(Option::is_some), "empty front slot");
            }
        }
    }

    #[test]
    fn released_slots_go_from_the_front() {
        let mut t = IdTable::default();
        assert_eq!(t.insert(BufferId(5), "five"), None);
        assert_eq!(t.insert(BufferId(3), "three"), None);
        assert_eq!(t.insert(BufferId(8), "eight"), None);
        assert_eq!(t.insert(BufferId(8), "eight again"), Some("eight"));
        assert_eq!(t.remove(BufferId(5)), Some("five"));
        assert_eq!(t.slots.len(), 6);
        assert_eq!(t.remove(BufferId(3)), Some("three"));
        assert_eq!(t.slots.len(), 1, "3 to 7 are gone");
        assert_eq!(t.remove(BufferId(3)), None);
        *t.get_mut(BufferId(8)).unwrap() = "changed";
        assert_eq!(t[BufferId(8)], "changed");
        assert_eq!(t.remove(BufferId(8)), Some("changed"));
        assert!(t.slots.is_empty());
    }
}
