//! [`LastWriterMap`]: the last writer of every element of a buffer, as the task manager tracks it.
//!
//! The task graph only asks which writers a region meets, never in which order or as which boxes:
//! its dependency lists are sorted by task id and its regions are normalised. So, unlike the
//! command and instruction graphs, which report entries in the order of their R-tree
//! ([`RegionMap`](crate::grid::RegionMap)), it can keep its entries in a plain list. Task-level
//! maps hold a few dozen entries at most (one per independent writer since the last applied
//! horizon, which merges them), where scanning a list of boxes costs less than descending a tree,
//! probing points for merge partners and splitting nodes.

use std::fmt;
use std::num::NonZeroU64;

use smallvec::SmallVec;

use crate::grid::{GridBox, Range, Region};
use crate::types::TaskId;

/// Maps every element of a buffer to its last writer (`None`: uninitialised), as disjoint boxes
/// that tile the buffer. Updates merge an entry with equal-valued neighbours that fit together
/// (equal in all dimensions but one and touching in it), so a 1-D map is always fully coalesced
/// and a map stays as small as its writers' regions allow.
#[derive(Clone)]
pub struct LastWriterMap {
    extent: GridBox,
    /// `boxes[i]` was last written by `writers[i]`: the boxes apart, so a query scans them densely.
    boxes: Vec<GridBox>,
    writers: Vec<Writer>,
}

/// A candidate of [`LastWriterMap::merge`] that was merged into another entry.
const DEAD: usize = usize::MAX;

/// A last writer as stored: `Option<TaskId>` in 8 bytes (task `t` as `t + 1`, `None` as 0), so
/// the value comparisons of the merge scans are one compare of one word.
#[derive(Copy, Clone, PartialEq, Eq)]
struct Writer(Option<NonZeroU64>);

impl Writer {
    #[inline]
    fn new(w: Option<TaskId>) -> Self {
        Writer(w.map(|t| NonZeroU64::new(t.0.wrapping_add(1)).expect("task id below u64::MAX")))
    }

    #[inline]
    fn get(self) -> Option<TaskId> {
        self.0.map(|n| TaskId(n.get() - 1))
    }
}

impl LastWriterMap {
    /// A map over `[0, extent)` written by `initial` everywhere.
    pub fn new(extent: Range, initial: Option<TaskId>) -> Self {
        let extent = GridBox::full_range(extent);
        let mut map = LastWriterMap {
            extent,
            boxes: Vec::new(),
            writers: Vec::new(),
        };
        if !extent.is_empty() {
            map.boxes.push(extent);
            map.writers.push(Writer::new(initial));
        }
        map
    }

    /// The buffer's extent.
    pub fn extent(&self) -> GridBox {
        self.extent
    }

    /// Number of stored entries (boxes).
    pub fn len(&self) -> usize {
        self.boxes.len()
    }

    /// True only for a map over an empty extent.
    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }

    /// Calls `f` for every entry meeting a box of `r`, clamped to that box, in unspecified order.
    #[inline]
    pub fn query_region(&self, r: &Region, mut f: impl FnMut(GridBox, Option<TaskId>)) {
        for q in r.boxes() {
            for (b, &w) in self.boxes.iter().zip(&self.writers) {
                if b.intersects(q) {
                    f(b.intersection(q), w.get());
                }
            }
        }
    }

    /// Calls `f` for every entry.
    pub fn for_each(&self, mut f: impl FnMut(&GridBox, Option<TaskId>)) {
        for (b, &w) in self.boxes.iter().zip(&self.writers) {
            f(b, w.get());
        }
    }

    /// Makes `writer` the last writer of `r` (clamped to the extent), calling `previous` with the
    /// writer of every entry it overwrites (once per entry and box of `r`, so possibly repeated).
    pub fn update_region(
        &mut self,
        r: &Region,
        writer: TaskId,
        mut previous: impl FnMut(Option<TaskId>),
    ) {
        for (k, b) in r.boxes().iter().enumerate() {
            self.update_box(b, writer, k == 0, &mut previous);
        }
    }

    /// [`Self::update_region`] for one box of the region. A writer is a new task: only the boxes
    /// of the same region written before (`first` is false after the first) can hold it, so the
    /// first box's entry has no partner to merge with.
    fn update_box(
        &mut self,
        b: &GridBox,
        writer: TaskId,
        first: bool,
        previous: &mut impl FnMut(Option<TaskId>),
    ) {
        let b = b.intersection(&self.extent);
        if b.is_empty() {
            return;
        }
        let new = Writer::new(Some(writer));
        let mut hits: SmallVec<[usize; 8]> = SmallVec::new();
        if self.boxes.len() == 1 {
            // the one entry is the extent, which holds `b`
            previous(self.writers[0].get());
            hits.push(0);
        } else {
            for (i, e) in self.boxes.iter().enumerate() {
                if e.intersects(&b) {
                    previous(self.writers[i].get());
                    hits.push(i);
                }
            }
        }
        if let [i] = hits[..]
            && self.boxes[i] == b
        {
            // an entry of exactly the box (a buffer written whole, a column written again)
            if self.writers[i] != new {
                self.writers[i] = new;
                if !first {
                    self.merge_one(i);
                }
            }
            return;
        }
        if hits.iter().all(|&i| self.writers[i] == new) {
            return;
        }
        // Descending, so the swap-removal of one hit never moves another, unvisited one.
        let mut pieces: SmallVec<[(GridBox, Writer); 6]> = SmallVec::new();
        for &i in hits.iter().rev() {
            let e = self.boxes.swap_remove(i);
            let w = self.writers.swap_remove(i);
            e.for_each_part_outside(&b, |piece| pieces.push((piece, w)));
        }
        let start = self.boxes.len();
        self.boxes.push(b);
        self.writers.push(new);
        for (piece, w) in pieces {
            self.boxes.push(piece);
            self.writers.push(w);
        }
        let candidates = if first { start + 1 } else { start };
        self.merge((candidates..self.boxes.len()).collect());
    }

    /// Replaces every writer `w` by `f(w)` and merges the entries that changed with equal-valued
    /// neighbours.
    pub fn apply_to_values(&mut self, mut f: impl FnMut(Option<TaskId>) -> Option<TaskId>) {
        if let [w] = &mut self.writers[..] {
            // one entry (a buffer last written whole, at every horizon of most programs): it is
            // the extent, with nothing to merge
            *w = Writer::new(f(w.get()));
            return;
        }
        let mut changed: SmallVec<[usize; 8]> = SmallVec::new();
        for (i, w) in self.writers.iter_mut().enumerate() {
            let nw = Writer::new(f(w.get()));
            if nw != *w {
                *w = nw;
                changed.push(i);
            }
        }
        self.merge(changed);
    }

    /// [`LastWriterMap::merge`] of a single candidate (the remainder of a cut entry, as when
    /// a task writes one column of a buffer): it grows until it finds no partner.
    fn merge_one(&mut self, mut i: usize) {
        while let Some(j) = self.partner(i) {
            let grown = self.boxes[i].bounding_box(&self.boxes[j]);
            self.boxes[i] = grown;
            let last = self.boxes.len() - 1;
            self.boxes.swap_remove(j);
            self.writers.swap_remove(j);
            if i == last {
                i = j;
            }
        }
    }

    /// Merges each candidate entry with equal-valued neighbours of matching shape until none is
    /// left. Per candidate, the number of merges done when it last found no partner: a candidate
    /// checked since the last merge would find none again and is skipped.
    fn merge(&mut self, mut candidates: SmallVec<[usize; 8]>) {
        match candidates[..] {
            [] => return,
            // one candidate (the remainder of a cut entry, a writer changed at a horizon):
            // without the bookkeeping below
            [i] => return self.merge_one(i),
            _ => {}
        }
        let mut checked_at: SmallVec<[Option<usize>; 8]> =
            smallvec::smallvec![None; candidates.len()];
        let mut merges = 0;
        let mut merged_any = true;
        while merged_any {
            merged_any = false;
            for k in 0..candidates.len() {
                let i = candidates[k];
                if i == DEAD || checked_at[k] == Some(merges) {
                    continue;
                }
                let Some(j) = self.partner(i) else {
                    checked_at[k] = Some(merges);
                    continue;
                };
                // the candidate grows over its partner, which goes; the last entry takes the
                // partner's place
                let grown = self.boxes[i].bounding_box(&self.boxes[j]);
                self.boxes[i] = grown;
                let last = self.boxes.len() - 1;
                self.boxes.swap_remove(j);
                self.writers.swap_remove(j);
                for c in candidates.iter_mut() {
                    if *c == j {
                        *c = DEAD;
                    } else if *c == last {
                        *c = j;
                    }
                }
                merges += 1;
                checked_at[k] = None;
                merged_any = true;
            }
        }
    }

    /// An entry with the writer of entry `i` that can merge with it.
    #[inline]
    fn partner(&self, i: usize) -> Option<usize> {
        let (b, w) = (&self.boxes[i], self.writers[i]);
        self.writers
            .iter()
            .enumerate()
            .position(|(j, &v)| v == w && j != i && b.mergeable_with(&self.boxes[j]))
    }
}

impl fmt::Debug for LastWriterMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut entries: Vec<(GridBox, Option<TaskId>)> = self
            .boxes
            .iter()
            .copied()
            .zip(self.writers.iter().map(|w| w.get()))
            .collect();
        entries.sort_by(|a, b| a.0.coordinate_order(&b.0));
        f.debug_struct("LastWriterMap")
            .field("extent", &self.extent)
            .field("entries", &entries)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense oracle: the writer of every element of a small 2-D buffer.
    fn check_against(map: &LastWriterMap, dense: &[Vec<Option<TaskId>>]) {
        let mut area = 0;
        map.for_each(|b, w| {
            assert!(map.extent().covers(b));
            area += b.area();
            let (min, max) = (b.min_arr(), b.max_arr());
            for (x, row) in dense.iter().enumerate().take(max[0]).skip(min[0]) {
                for (y, &cell) in row.iter().enumerate().take(max[1]).skip(min[1]) {
                    assert_eq!(cell, w, "element ({x}, {y}) of {map:?}");
                }
            }
        });
        // boxes inside the extent, each element checked, with the extent's total area: a tiling
        assert_eq!(area, map.extent().area());
    }

    #[test]
    fn random_updates_and_horizons_match_a_dense_oracle() {
        const N: usize = 9;
        let mut map = LastWriterMap::new(Range::new(N, N, 1), None);
        let mut dense = vec![vec![None; N]; N];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % m as u64) as usize
        };
        for t in 1..400u64 {
            let (x0, y0) = (next(N), next(N));
            let (x1, y1) = (x0 + 1 + next(N - x0), y0 + 1 + next(N - y0));
            let b = GridBox::from_arrays([x0, y0, 0], [x1, y1, 1]);
            let mut seen = Vec::new();
            map.update_region(&Region::from_box(b), TaskId(t), |w| seen.push(w));
            let mut expected = Vec::new();
            for row in &mut dense[x0..x1] {
                for cell in &mut row[y0..y1] {
                    expected.push(*cell);
                    *cell = Some(TaskId(t));
                }
            }
            seen.sort();
            seen.dedup();
            expected.sort();
            expected.dedup();
            assert_eq!(seen, expected, "previous writers of {b:?}");
            check_against(&map, &dense);
            if t % 25 == 0 {
                // a horizon: everything older than t - 3 becomes t - 3
                let epoch = Some(TaskId(t - 3));
                let older = |w: Option<TaskId>| if w < epoch { epoch } else { w };
                map.apply_to_values(older);
                for row in &mut dense {
                    for cell in row.iter_mut() {
                        *cell = older(*cell);
                    }
                }
                check_against(&map, &dense);
            }
        }
        // pairwise merges cannot always coalesce a 2-D map into one box (a pinwheel of four
        // boxes around a fifth has no mergeable pair), but they never lose an element
        map.apply_to_values(|_| Some(TaskId(1000)));
        check_against(&map, &vec![vec![Some(TaskId(1000)); N]; N]);
    }

    #[test]
    fn horizons_on_one_entry_and_on_a_single_changed_entry() {
        // one entry, the extent: its writer changes and it stays the only entry
        let mut map = LastWriterMap::new(Range::new(8, 8, 1), Some(TaskId(1)));
        map.apply_to_values(|w| w.map(|t| TaskId(t.0 + 1)));
        assert_eq!(map.len(), 1);
        check_against(&map, &vec![vec![Some(TaskId(2)); 8]; 8]);
        // [0,4) by 2, [4,6) by 3, [6,8) by 1: only the middle entry changes, to its left
        // neighbour's writer, and merges with it (and with nothing else)
        let mut map = LastWriterMap::new(Range::new(8, 1, 1), Some(TaskId(1)));
        for (lo, hi, t) in [(0, 4, 2), (4, 6, 3)] {
            let b = GridBox::from_arrays([lo, 0, 0], [hi, 1, 1]);
            map.update_region(&Region::from_box(b), TaskId(t), |_| {});
        }
        assert_eq!(map.len(), 3);
        map.apply_to_values(|w| {
            if w == Some(TaskId(3)) {
                Some(TaskId(2))
            } else {
                w
            }
        });
        assert_eq!(map.len(), 2);
        let mut dense = vec![vec![Some(TaskId(2))]; 8];
        dense[6..].fill(vec![Some(TaskId(1))]);
        check_against(&map, &dense);
    }

    #[test]
    fn one_dimensional_maps_stay_coalesced() {
        let mut map = LastWriterMap::new(Range::new(100, 1, 1), Some(TaskId(0)));
        for i in 0..100 {
            let b = GridBox::from_arrays([i, 0, 0], [i + 1, 1, 1]);
            map.update_region(&Region::from_box(b), TaskId(1 + i as u64 % 2), |_| {});
        }
        assert_eq!(map.len(), 100);
        map.apply_to_values(|_| Some(TaskId(5)));
        assert_eq!(map.len(), 1);
        let mut hits = Vec::new();
        map.query_region(
            &Region::from_box(GridBox::from_arrays([10, 0, 0], [20, 1, 1])),
            |b, w| hits.push((b, w)),
        );
        assert_eq!(
            hits,
            [(
                GridBox::from_arrays([10, 0, 0], [20, 1, 1]),
                Some(TaskId(5))
            )]
        );
    }
}
