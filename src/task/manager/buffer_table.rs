//! [`BufferTable`]: the task manager's buffers, indexed by id.
//!
//! Every task looks its buffers up several times (validation, true and anti-dependencies); a
//! hash lookup cost about 40 instructions, a slot of a table indexed by id a handful. Buffer ids
//! are handed out in increasing order, so the table spans the ids from the oldest live buffer on:
//! a released buffer leaves an empty slot (a pointer) until every older one is released too.

use crate::types::BufferId;

/// A map from buffer id to `V`, dense over the live ids.
pub(super) struct BufferTable<V> {
    /// The id of `slots[0]`.
    first: u64,
    slots: Vec<Option<Box<V>>>,
}

impl<V> Default for BufferTable<V> {
    fn default() -> Self {
        BufferTable {
            first: 0,
            slots: Vec::new(),
        }
    }
}

impl<V> BufferTable<V> {
    #[inline]
    fn index(&self, bid: BufferId) -> Option<usize> {
        let i = usize::try_from(bid.0.checked_sub(self.first)?).ok()?;
        (i < self.slots.len()).then_some(i)
    }

    #[inline]
    pub fn get(&self, bid: BufferId) -> Option<&V> {
        self.slots.get(self.index(bid)?)?.as_deref()
    }

    #[inline]
    pub fn get_mut(&mut self, bid: BufferId) -> Option<&mut V> {
        let i = self.index(bid)?;
        self.slots[i].as_deref_mut()
    }

    /// Sets the value of `bid`, returning the previous one.
    pub fn insert(&mut self, bid: BufferId, value: V) -> Option<V> {
        if self.slots.is_empty() {
            self.first = bid.0;
        }
        if bid.0 < self.first {
            let missing = usize::try_from(self.first - bid.0).expect("buffer id span fits memory");
            self.slots
                .splice(0..0, std::iter::repeat_with(|| None).take(missing));
            self.first = bid.0;
        }
        let i = usize::try_from(bid.0 - self.first).expect("buffer id span fits memory");
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i].replace(Box::new(value)).map(|b| *b)
    }

    /// Removes `bid`, dropping the empty slots at the front.
    pub fn remove(&mut self, bid: BufferId) -> Option<V> {
        let i = self.index(bid)?;
        let value = self.slots[i].take().map(|b| *b);
        let released = self.slots.iter().take_while(|s| s.is_none()).count();
        self.slots.drain(..released);
        self.first += released as u64;
        value
    }

    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.slots.iter().flatten().map(|b| &**b)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.slots.iter_mut().flatten().map(|b| &mut **b)
    }

    #[cfg(test)]
    fn num_slots(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_any_order_and_released_slots_go_from_the_front() {
        let mut t = BufferTable::default();
        assert_eq!(t.insert(BufferId(5), "five"), None);
        assert_eq!(t.insert(BufferId(3), "three"), None);
        assert_eq!(t.insert(BufferId(8), "eight"), None);
        assert_eq!(t.insert(BufferId(8), "eight again"), Some("eight"));
        assert_eq!(t.get(BufferId(4)), None);
        assert_eq!(t.get(BufferId(9)), None);
        assert_eq!(t.get(BufferId(2)), None);
        assert_eq!(t.get(BufferId(5)), Some(&"five"));
        assert_eq!(
            t.values().copied().collect::<Vec<_>>(),
            ["three", "five", "eight again"]
        );
        assert_eq!(t.remove(BufferId(5)), Some("five"));
        assert_eq!(t.num_slots(), 6);
        assert_eq!(t.remove(BufferId(3)), Some("three"));
        assert_eq!(t.num_slots(), 1, "3 to 7 are gone");
        assert_eq!(t.remove(BufferId(3)), None);
        *t.get_mut(BufferId(8)).unwrap() = "changed";
        assert_eq!(t.remove(BufferId(8)), Some("changed"));
        assert_eq!(t.num_slots(), 0);
        assert_eq!(t.insert(BufferId(1), "one"), None);
        assert_eq!(t.get(BufferId(1)), Some(&"one"));
    }
}
