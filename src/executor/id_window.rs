//! The out-of-order engine's table of incomplete instructions, by id.
//!
//! Instruction ids are handed out in increasing order and instructions complete roughly in that
//! order, so the incomplete ones form a narrow id range. The table is a window over that range
//! (one slot index per id, from the oldest incomplete instruction on) into a slab whose entries
//! are reused as instructions complete: a lookup is two array accesses into memory that the last
//! few hundred instructions used, where a hash map probed a table spread over every incomplete
//! node (a cache miss per lookup once thousands of chunks are in flight). An instruction that
//! stays incomplete while many later ones pass costs four bytes per id until it completes.

use std::collections::VecDeque;

use crate::types::InstructionId;

/// The slot index of an id with no entry.
const EMPTY: u32 = u32::MAX;

/// A map from instruction ids to `V`, for ids that arrive and leave roughly in order.
pub(super) struct IdWindow<V> {
    /// `slots[i]`: the slab index of the entry of id `base + i`, or [`EMPTY`].
    slots: VecDeque<u32>,
    base: u64,
    slab: Vec<Option<V>>,
    /// Slab entries without a value, for reuse.
    free: Vec<u32>,
    len: usize,
}

impl<V> Default for IdWindow<V> {
    fn default() -> Self {
        Self {
            slots: VecDeque::new(),
            base: 0,
            slab: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<V> IdWindow<V> {
    /// Number of entries.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no entry.
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn slot(&self, id: InstructionId) -> Option<usize> {
        let offset = usize::try_from(id.0.checked_sub(self.base)?).ok()?;
        match self.slots.get(offset) {
            Some(&slot) if slot != EMPTY => Some(slot as usize),
            _ => None,
        }
    }

    /// The entry of `id`.
    pub(super) fn get(&self, id: &InstructionId) -> Option<&V> {
        self.slot(*id).and_then(|slot| self.slab[slot].as_ref())
    }

    /// The entry of `id`, mutably.
    pub(super) fn get_mut(&mut self, id: &InstructionId) -> Option<&mut V> {
        self.slot(*id).and_then(|slot| self.slab[slot].as_mut())
    }

    /// Whether `id` has an entry.
    pub(super) fn contains_key(&self, id: &InstructionId) -> bool {
        self.slot(*id).is_some()
    }

    /// Sets the entry of `id`; returns the one it replaced.
    pub(super) fn insert(&mut self, id: InstructionId, value: V) -> Option<V> {
        if self.len == 0 {
            // Nothing older is left: the window starts afresh at `id`.
            self.slots.clear();
            self.base = id.0;
        }
        if id.0 < self.base {
            let missing = (self.base - id.0) as usize;
            self.slots.reserve(missing);
            (0..missing).for_each(|_| self.slots.push_front(EMPTY));
            self.base = id.0;
        }
        let offset = (id.0 - self.base) as usize;
        if offset >= self.slots.len() {
            self.slots.resize(offset + 1, EMPTY);
        }
        let slot = self.slots[offset];
        if slot != EMPTY {
            return self.slab[slot as usize].replace(value);
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slab[slot as usize] = Some(value);
                slot
            }
            None => {
                self.slab.push(Some(value));
                u32::try_from(self.slab.len() - 1).expect("fewer than 2^32 incomplete instructions")
            }
        };
        self.slots[offset] = slot;
        self.len += 1;
        None
    }

    /// Removes and returns the entry of `id`.
    #[cfg(test)]
    fn remove(&mut self, id: &InstructionId) -> Option<V> {
        let slot = self.slot(*id)?;
        let value = self.slab[slot].take();
        self.release(*id, slot);
        value
    }

    /// Removes the entry of `id` once `take` has taken what it needs from it; the entry is
    /// dropped where it lies (moving an engine node of about 170 bytes out, then into the
    /// caller's binding, copied it twice per completed instruction).
    pub(super) fn remove_with<R>(
        &mut self,
        id: &InstructionId,
        take: impl FnOnce(&mut V) -> R,
    ) -> Option<R> {
        let slot = self.slot(*id)?;
        let taken = take(self.slab[slot].as_mut()?);
        self.slab[slot] = None;
        self.release(*id, slot);
        Some(taken)
    }

    /// Frees `slot`, which held the entry of `id`, and narrows the window.
    fn release(&mut self, id: InstructionId, slot: usize) {
        self.free.push(slot as u32);
        self.slots[(id.0 - self.base) as usize] = EMPTY;
        self.len -= 1;
        while self.slots.front() == Some(&EMPTY) {
            self.slots.pop_front();
            self.base += 1;
        }
        while self.slots.back() == Some(&EMPTY) {
            self.slots.pop_back();
        }
    }

    /// Every entry, by increasing id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (InstructionId, &V)> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| **slot != EMPTY)
            .filter_map(|(offset, &slot)| {
                let value = self.slab[slot as usize].as_ref()?;
                Some((InstructionId(self.base + offset as u64), value))
            })
    }
}

impl<V> std::ops::Index<&InstructionId> for IdWindow<V> {
    type Output = V;

    fn index(&self, id: &InstructionId) -> &V {
        self.get(id)
            .unwrap_or_else(|| panic!("{id} is not an incomplete instruction"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_arrive_and_leave_in_any_order() {
        let mut window = IdWindow::default();
        for id in [5, 7, 6, 3] {
            assert_eq!(window.insert(InstructionId(id), id * 10), None);
        }
        assert_eq!(window.len(), 4);
        assert_eq!(window.get(&InstructionId(4)), None);
        assert_eq!(window[&InstructionId(3)], 30);
        assert_eq!(window.insert(InstructionId(6), 61), Some(60));
        assert_eq!(window.remove(&InstructionId(3)), Some(30));
        assert_eq!(window.remove(&InstructionId(3)), None);
        assert!(!window.contains_key(&InstructionId(3)));
        *window.get_mut(&InstructionId(7)).unwrap() += 1;
        let entries: Vec<_> = window.iter().map(|(id, v)| (id.0, *v)).collect();
        assert_eq!(entries, [(5, 50), (6, 61), (7, 71)]);
        for id in [6, 7, 5] {
            window.remove(&InstructionId(id));
        }
        assert!(window.is_empty());
        // A fresh window far away, then an id below it.
        window.insert(InstructionId(1000), 1);
        window.insert(InstructionId(998), 2);
        assert_eq!(window.iter().count(), 2);
        assert_eq!(window[&InstructionId(998)], 2);
        assert_eq!(window.remove(&InstructionId(1000)), Some(1));
        assert_eq!(window.len(), 1);
    }

    #[test]
    fn an_entry_removed_in_place_gives_up_what_was_taken_and_is_dropped() {
        let mut window = IdWindow::default();
        let shared = std::rc::Rc::new(());
        window.insert(InstructionId(4), (vec![1, 2], shared.clone()));
        window.insert(InstructionId(5), (vec![3], shared.clone()));
        let taken = window.remove_with(&InstructionId(4), |(list, _)| std::mem::take(list));
        assert_eq!(taken, Some(vec![1, 2]));
        assert_eq!(
            std::rc::Rc::strong_count(&shared),
            2,
            "the rest of the entry was dropped"
        );
        assert!(!window.contains_key(&InstructionId(4)));
        assert_eq!(window.remove_with(&InstructionId(4), |_| ()), None);
        assert_eq!(window.len(), 1);
        assert_eq!(window[&InstructionId(5)].0, [3]);
    }

    #[test]
    fn completed_entries_make_room_for_new_ones() {
        let mut window = IdWindow::default();
        for id in 0..10_000u64 {
            window.insert(InstructionId(id), id);
            if id >= 8 {
                window.remove(&InstructionId(id - 8));
            }
        }
        assert_eq!(window.len(), 8);
        // Eight live entries, and slots only for the ids between the oldest and the newest.
        assert!(window.slab.len() <= 9, "{}", window.slab.len());
        assert_eq!(window.slots.len(), 8);
    }
}
