//! [`RegionMap`]: a total map from every point of an extent to a value.

use std::fmt;

use smallvec::SmallVec;

use super::entry_index::{EntryIndex, FLAT_RETURN, Flat};
use super::grid_box::GridBox;
use super::range::Range;
use super::region::Region;
use super::rtree::Orphan;

/// Maps every point of an extent to a value, as disjoint boxes that tile the
/// extent. Used for last writers, data locations, access fronts and the like.
///
/// Updates merge an entry with equal-valued neighbours that fit together, so a
/// map overwritten repeatedly with the same value stays small (1-D maps are
/// always fully coalesced). A small map keeps its entries in a flat list; a larger one in an
/// R-tree, where a query costs time in proportion to the entries it returns, not to the size of
/// the map.
pub struct RegionMap<T> {
    extent: GridBox,
    entries: EntryIndex<T>,
    len: usize,
    orphans: Vec<Orphan<T>>,
}

/// [`RegionMap::merge_partner`] for a map whose entries are a flat list: one scan of them. A
/// neighbour of matching shape touching face `2d` (low side of `d`) or `2d + 1` (high side) is
/// the entry the point probe of that face would find, so the first face in order wins, as there.
fn merge_partner_in_list<T: PartialEq>(b: &GridBox, flat: &Flat<T>) -> Option<GridBox> {
    let boxes = &flat.boxes;
    let value = |i: usize| &flat.values[i];
    let own = value(
        boxes
            .iter()
            .position(|e| e == b)
            .expect("candidate is not an entry"),
    );
    let (bmin, bmax) = (b.min_arr(), b.max_arr());
    let mut best: Option<(usize, usize)> = None; // (face, entry)
    for (j, e) in boxes.iter().enumerate() {
        let (emin, emax) = (e.min_arr(), e.max_arr());
        for d in 0..3 {
            let face = if emax[d] == bmin[d] {
                2 * d
            } else if emin[d] == bmax[d] {
                2 * d + 1
            } else {
                continue;
            };
            let same_section = (0..3).all(|k| k == d || (emin[k] == bmin[k] && emax[k] == bmax[k]));
            if same_section && best.is_none_or(|(f, _)| face < f) && value(j) == own {
                best = Some((face, j));
            }
            // touching along d with the same section along the others means d is the only
            // dimension it can touch in
            break;
        }
    }
    best.map(|(_, j)| boxes[j])
}

impl<T: Clone + PartialEq> RegionMap<T> {
    /// A map over `[0, extent)` holding `default` everywhere.
    pub fn new(extent: Range, default: T) -> Self {
        Self::with_box(GridBox::full_range(extent), default)
    }

    /// A map over an arbitrary box (which may have a non-zero offset).
    pub fn with_box(extent: GridBox, default: T) -> Self {
        let mut entries = EntryIndex::new();
        let mut len = 0;
        if !extent.is_empty() {
            entries.insert(extent, default);
            len = 1;
        }
        RegionMap {
            extent,
            entries,
            len,
            orphans: Vec::new(),
        }
    }

    /// The box every point of which has a value.
    #[inline]
    pub fn extent(&self) -> GridBox {
        self.extent
    }

    /// Number of stored entries (boxes).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The value of the only entry, when one entry covers the whole extent (a buffer written
    /// whole): a caller can answer a question about every point without a query.
    #[inline]
    pub fn single_value(&self) -> Option<&T> {
        self.entries.single_value()
    }

    /// True only for a map over an empty extent.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Depth of the index (1 for a flat list).
    pub fn depth(&self) -> usize {
        self.entries.depth()
    }

    /// The value at a point of the extent.
    pub fn get_point(&self, p: &[usize; 3]) -> Option<&T> {
        self.entries.point_query(p).map(|(_, v)| v)
    }

    /// Sets every point of `b` (clamped to the extent) to `value`.
    pub fn update_box(&mut self, b: &GridBox, value: T) {
        self.update_box_impl::<false>(b, value);
    }

    /// [`RegionMap::update_box`] of a value that no entry holds yet (one that names a new
    /// instruction): the new entry has no equal neighbour to merge with, so the search for one
    /// is skipped. The map is the same as after [`RegionMap::update_box`] (debug builds check
    /// that the skipped search would have found nothing); were the promise broken, the map would
    /// still hold the right values, only in more entries.
    pub fn update_box_unique(&mut self, b: &GridBox, value: T) {
        self.update_box_impl::<true>(b, value);
    }

    #[inline]
    fn update_box_impl<const UNIQUE: bool>(&mut self, b: &GridBox, value: T) {
        let b = b.intersection(&self.extent);
        if b.is_empty() {
            return;
        }
        if self.len == 1 && b == self.extent {
            // One entry over the whole extent, all of it updated (a small buffer written whole
            // by one instruction): the value changes in place, no query and no merge.
            if let Some(v) = self.entries.single_value_mut() {
                *v = value;
                return;
            }
        }
        let mut hits: SmallVec<[(GridBox, bool); 8]> = SmallVec::new();
        // An entry of exactly `b` is the only one meeting `b` (entries are disjoint): it takes the
        // value in place during the query, and the tree's shape does not change.
        let mut value = Some(value);
        self.entries.query_mut(&b, &mut |hb, hv| {
            let same = value.as_ref().is_none_or(|v| hv == v);
            if *hb == b && !same {
                *hv = value.take().expect("one entry is exactly the box");
            }
            hits.push((*hb, same));
        });
        let Some(value) = value else {
            if UNIQUE {
                debug_assert_eq!(self.merge_partner(&b), None, "the value is not unique");
            } else {
                self.try_merge(&mut smallvec::smallvec![b]);
            }
            return;
        };
        if hits.iter().all(|&(_, same)| same) {
            return; // already holds the value everywhere
        }
        let mut candidates: SmallVec<[GridBox; 8]> = SmallVec::new();
        for &(hb, same) in &hits {
            if same && b.covers(&hb) {
                // already holds the value and is swallowed by the new entry
                self.erase(&hb);
            } else if !self.cut_outside(&hb, &b, &mut candidates) {
                self.erase(&hb);
            }
        }
        let new = self.insert_new(b, value);
        if !UNIQUE {
            candidates.push(new);
        }
        self.try_merge(&mut candidates);
        if UNIQUE {
            debug_assert_eq!(self.merge_partner(&new), None, "the value is not unique");
        }
    }

    /// Replaces the value `v` of every point of `b` (clamped to the extent) by `f(v)`: one query,
    /// entries inside `b` change in place, entries reaching out of it are cut at its faces. The
    /// read-modify-write of [`RegionMap::get_box_values`] followed by [`RegionMap::update_box`]
    /// per result, without the result vector and the second query; entries `f` leaves unchanged
    /// are not touched.
    pub fn update_box_with(&mut self, b: &GridBox, mut f: impl FnMut(&T) -> T) {
        self.change_box_values(b, |v| {
            let nv = f(v);
            let changed = nv != *v;
            if changed {
                *v = nv;
            }
            changed
        });
    }

    /// [`RegionMap::update_box_with`] with `f` changing a value in place and returning whether it
    /// did: an entry inside `b` is changed where it is stored (a value holding a vector grows it
    /// instead of being rebuilt), one reaching out of it through a copy for its part inside.
    pub fn change_box_values(&mut self, b: &GridBox, f: impl FnMut(&mut T) -> bool) {
        self.change_box_values_impl::<false>(b, f);
    }

    #[inline]
    fn change_box_values_impl<const UNIQUE: bool>(
        &mut self,
        b: &GridBox,
        mut f: impl FnMut(&mut T) -> bool,
    ) {
        let b = b.intersection(&self.extent);
        if b.is_empty() {
            return;
        }
        if self.len == 1 && b == self.extent {
            // One entry over the whole extent, all of it changed (an allocation read whole): in
            // place, without a query, and no neighbour to merge with.
            if let Some(v) = self.entries.single_value_mut() {
                f(v);
                return;
            }
        }
        // Entries inside `b` change in place during the query (the tree's shape stays); entries
        // reaching out of it keep their new value (`Some`) until they are cut, in query order.
        let mut changes: SmallVec<[(GridBox, Option<T>); 4]> = SmallVec::new();
        self.entries.query_mut(&b, &mut |hb, hv| {
            if b.covers(hb) {
                if f(hv) {
                    changes.push((*hb, None));
                }
            } else {
                let mut nv = hv.clone();
                if f(&mut nv) {
                    changes.push((*hb, Some(nv)));
                }
            }
        });
        // With unique new values, a single changed entry has no equal neighbour: only the parts
        // cut off outside `b` (old values) are offered for merging. Several changed entries may
        // have come to hold the same new value, so they merge as usual.
        let lone_unique = UNIQUE && changes.len() == 1;
        let mut candidates: SmallVec<[GridBox; 8]> = SmallVec::new();
        let mut changed = GridBox::EMPTY;
        for (hb, nv) in changes {
            match nv {
                None => changed = hb,
                Some(nv) => {
                    let cut = self.cut_outside(&hb, &b, &mut candidates);
                    debug_assert!(cut, "an entry reaching out of the box has parts outside it");
                    changed = self.insert_new(hb.intersection(&b), nv);
                }
            }
            if !lone_unique {
                candidates.push(changed);
            }
        }
        self.try_merge(&mut candidates);
        if lone_unique {
            debug_assert_eq!(
                self.merge_partner(&changed),
                None,
                "the value is not unique"
            );
        }
    }

    /// Like [`RegionMap::change_box_values`] for every box of a region.
    pub fn change_region_values(&mut self, r: &Region, f: impl FnMut(&mut T) -> bool) {
        self.change_region_values_impl::<false>(r, f);
    }

    /// [`RegionMap::change_region_values`] where every value `f` changes comes to hold something
    /// no entry held before the call (a new instruction joins it): a changed entry can then only
    /// merge with another changed one, and a lone changed entry of the first box is not offered
    /// for merging (see [`RegionMap::update_box_unique`]). Later boxes may meet values the first
    /// one made, so they merge as usual.
    pub fn change_region_values_unique(&mut self, r: &Region, f: impl FnMut(&mut T) -> bool) {
        self.change_region_values_impl::<true>(r, f);
    }

    /// The region form of both: with `UNIQUE`, only the first box takes the unique path.
    #[inline]
    fn change_region_values_impl<const UNIQUE: bool>(
        &mut self,
        r: &Region,
        mut f: impl FnMut(&mut T) -> bool,
    ) {
        let Some((first, rest)) = r.boxes().split_first() else {
            return;
        };
        self.change_box_values_impl::<UNIQUE>(first, &mut f);
        for b in rest {
            self.change_box_values(b, &mut f);
        }
    }

    /// Shrinks the entry `hb` to its parts outside `b` (cut along the fastest dimension first):
    /// the first part keeps the entry's slot, the others are inserted with a copy of its value;
    /// all become merge candidates. Returns false (changing nothing) if `b` covers `hb`.
    fn cut_outside(
        &mut self,
        hb: &GridBox,
        b: &GridBox,
        candidates: &mut SmallVec<[GridBox; 8]>,
    ) -> bool {
        let mut pieces: SmallVec<[GridBox; 6]> = SmallVec::new();
        hb.for_each_part_outside(b, |piece| pieces.push(piece));
        let Some((&first, rest)) = pieces.split_first() else {
            return false;
        };
        candidates.push(first);
        // the value is copied only for the pieces beyond the first, and moved into the last
        let Some((&last, middle)) = rest.split_last() else {
            self.entries
                .shrink_entry(hb, first, |_| ())
                .expect("entry vanished");
            return true;
        };
        let old = self
            .entries
            .shrink_entry(hb, first, T::clone)
            .expect("entry vanished");
        for &piece in middle {
            candidates.push(self.insert_new(piece, old.clone()));
        }
        candidates.push(self.insert_new(last, old));
        true
    }

    /// [`RegionMap::update_region`] of a value no entry holds yet (see
    /// [`RegionMap::update_box_unique`]): only the first box's entry skips the merge search, as
    /// the later ones may meet the value the first one set.
    pub fn update_region_unique(&mut self, r: &Region, value: T) {
        self.update_region_impl::<true>(r, value);
    }

    /// The region form of both: with `UNIQUE`, only the first box takes the unique path.
    #[inline]
    fn update_region_impl<const UNIQUE: bool>(&mut self, r: &Region, value: T) {
        let Some((first, rest)) = r.boxes().split_first() else {
            return;
        };
        if rest.is_empty() {
            // one box (the usual case): the value moves in, without a clone
            self.update_box_impl::<UNIQUE>(first, value);
            return;
        }
        self.update_box_impl::<UNIQUE>(first, value.clone());
        for b in rest {
            self.update_box(b, value.clone());
        }
    }

    /// Sets every point of the region (clamped to the extent) to `value`.
    pub fn update_region(&mut self, r: &Region, value: T) {
        self.update_region_impl::<false>(r, value);
    }

    /// The entries intersecting `b`, clamped to it, with equal-valued
    /// neighbours merged where they fit together. Together they tile `b ∩ extent`.
    pub fn get_box_values(&self, b: &GridBox) -> Vec<(GridBox, T)> {
        let mut out = Vec::new();
        self.collect(b, &mut out);
        merge_equal_neighbours(&mut out);
        out
    }

    /// Like [`RegionMap::get_box_values`] for every box of a region.
    pub fn get_region_values(&self, r: &Region) -> Vec<(GridBox, T)> {
        let mut out = Vec::new();
        for b in r.boxes() {
            self.collect(b, &mut out);
        }
        merge_equal_neighbours(&mut out);
        out
    }

    /// Calls `f` for every entry intersecting `b`, clamped to it, without merging equal-valued
    /// neighbours and in unspecified order: a cheaper [`RegionMap::get_box_values`] for callers
    /// that only look at each value (no allocation).
    #[inline]
    pub fn query_box<'a>(&'a self, b: &GridBox, mut f: impl FnMut(GridBox, &'a T)) {
        self.entries.query(b, &mut |eb, v| f(eb.intersection(b), v));
    }

    /// Like [`RegionMap::query_box`] for every box of a region.
    #[inline]
    pub fn query_region<'a>(&'a self, r: &Region, mut f: impl FnMut(GridBox, &'a T)) {
        for b in r.boxes() {
            self.entries.query(b, &mut |eb, v| f(eb.intersection(b), v));
        }
    }

    fn collect(&self, q: &GridBox, out: &mut Vec<(GridBox, T)>) {
        self.entries
            .query(q, &mut |b, v| out.push((b.intersection(q), v.clone())));
    }

    /// Calls `f` for every stored entry (in unspecified order).
    pub fn for_each(&self, mut f: impl FnMut(&GridBox, &T)) {
        self.entries.for_each(&mut |b, v| f(b, v));
    }

    /// Replaces every value `v` by `f(v)` and merges the entries that changed
    /// with equal-valued neighbours.
    pub fn apply_to_values(&mut self, mut f: impl FnMut(&T) -> T) {
        self.change_values(|v| {
            let nv = f(v);
            let changed = nv != *v;
            if changed {
                *v = nv;
            }
            changed
        });
    }

    /// Lets `f` change every value in place (returning whether it did) and merges the entries
    /// that changed with equal-valued neighbours: [`RegionMap::apply_to_values`] without a new
    /// value (and its comparison) for every entry.
    pub fn change_values(&mut self, mut f: impl FnMut(&mut T) -> bool) {
        if self.len == 1 {
            // a single entry (a buffer written whole) has no neighbour to merge with
            self.entries.for_each_mut(&mut |_, v| {
                f(v);
            });
            return;
        }
        let mut changed: SmallVec<[GridBox; 8]> = SmallVec::new();
        self.entries.for_each_mut(&mut |b, v| {
            if f(v) {
                changed.push(*b);
            }
        });
        if changed.len() > 8 && changed.len() * 4 >= self.len {
            // most of the map changed: merging entry by entry would rebuild the tree piecemeal
            self.rebuild_merged();
        } else {
            self.try_merge(&mut changed);
        }
    }

    /// Merges equal-valued neighbours of the whole map at once and rebuilds the index.
    fn rebuild_merged(&mut self) {
        let old = std::mem::replace(&mut self.entries, EntryIndex::new());
        let mut entries = Vec::with_capacity(self.len);
        old.into_entries(&mut entries);
        merge_equal_neighbours(&mut entries);
        self.len = entries.len();
        self.entries = EntryIndex::bulk_load(entries);
    }

    fn insert_new(&mut self, b: GridBox, value: T) -> GridBox {
        self.entries.insert(b, value);
        self.len += 1;
        b
    }

    fn erase(&mut self, b: &GridBox) -> T {
        let v = self
            .entries
            .erase(b, &mut self.orphans)
            .expect("erasing a box that is not an entry");
        self.len -= 1;
        if self.len == FLAT_RETURN {
            // a tree holds more entries than this (it starts above the list's limit, and the count
            // moves by one): it becomes a list again
            self.entries.flatten();
        }
        v
    }

    /// Merges each candidate entry with an equal-valued neighbour of matching shape (the first
    /// found in face order: low then high side of dimension 0, 1, 2), until nothing changes.
    fn try_merge(&mut self, candidates: &mut SmallVec<[GridBox; 8]>) {
        if candidates.is_empty() {
            return;
        }
        // Per candidate: the number of merges done when it last found no partner (`None`: never
        // checked, or dead). The map changes only by merges here, so a candidate checked since
        // the last merge would find no partner again and is skipped: the same merges as checking
        // every candidate in every round, without the final round that finds nothing.
        const DEAD: usize = usize::MAX;
        let mut inline = [None; 8];
        let mut spilled;
        let checked_at: &mut [Option<usize>] = if candidates.len() <= inline.len() {
            &mut inline[..candidates.len()]
        } else {
            spilled = vec![None; candidates.len()];
            &mut spilled
        };
        let mut merges = 0usize;
        let mut merged_any = true;
        while merged_any {
            merged_any = false;
            for i in 0..candidates.len() {
                match checked_at[i] {
                    Some(DEAD) => continue,
                    Some(at) if at == merges => continue,
                    _ => {}
                }
                let b = candidates[i];
                let Some(nb) = self.merge_partner(&b) else {
                    checked_at[i] = Some(merges);
                    continue;
                };
                if let Some(j) = candidates.iter().position(|c| *c == nb) {
                    checked_at[j] = Some(DEAD);
                }
                merges += 1;
                checked_at[i] = None;
                // the partner goes, the candidate grows in place over it
                self.erase(&nb);
                let merged = b.bounding_box(&nb);
                let grown = self.entries.grow_entry(&b, merged);
                debug_assert!(grown, "candidate is not an entry");
                candidates[i] = merged;
                merged_any = true;
            }
        }
    }

    /// The equal-valued neighbour entry that `b` (an entry) can merge with, first in face order.
    fn merge_partner(&self, b: &GridBox) -> Option<GridBox> {
        match self.entries.as_flat() {
            Some(flat) => merge_partner_in_list(b, flat),
            None => self.merge_partner_by_probes(b),
        }
    }

    /// [`Self::merge_partner`] for a tree of several levels: probes the point just outside each
    /// face of `b` (a neighbour of matching shape contains it).
    fn merge_partner_by_probes(&self, b: &GridBox) -> Option<GridBox> {
        let ext = self.extent;
        // the candidate's own value, looked up only once a neighbour of matching shape turns up
        // (most probes fail on the shape)
        let mut own: Option<&T> = None;
        for d in 0..3 {
            let mut probes: SmallVec<[[usize; 3]; 2]> = SmallVec::new();
            if b.min_arr()[d] > ext.min_arr()[d] {
                let mut p = *b.min_arr();
                p[d] -= 1;
                probes.push(p);
            }
            if b.max_arr()[d] < ext.max_arr()[d] {
                let mut p = *b.min_arr();
                p[d] = b.max_arr()[d];
                probes.push(p);
            }
            let partner = probes.iter().find_map(|p| {
                let (nb, nv) = self
                    .entries
                    .point_query(p)
                    .expect("map does not tile its extent");
                if !b.mergeable_along(&nb, d) {
                    return None;
                }
                let v = *own.get_or_insert_with(|| {
                    self.entries
                        .point_query(b.min_arr())
                        .expect("candidate is not an entry")
                        .1
                });
                (nv == v).then_some(nb)
            });
            if partner.is_some() {
                return partner;
            }
        }
        None
    }

    /// Checks that the list scan finds the partner the point probes find, for every entry (tests
    /// only): the scan must not change which entries merge.
    #[cfg(test)]
    pub(crate) fn check_merge_partner_scan(&self) {
        let Some(flat) = self.entries.as_flat() else {
            return;
        };
        for b in &flat.boxes {
            assert_eq!(
                merge_partner_in_list(b, flat),
                self.merge_partner_by_probes(b),
                "partner of {b:?}"
            );
        }
    }

    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        self.entries.check();
        assert!(
            self.depth() == 1 || self.len > FLAT_RETURN,
            "a tree of {} entries",
            self.len
        );
        let mut area = 0usize;
        let mut count = 0;
        self.for_each(|b, _| {
            assert!(self.extent.covers(b) && !b.is_empty());
            area += b.area();
            count += 1;
        });
        assert_eq!(count, self.len);
        // disjoint boxes inside the extent with the extent's total area tile it
        assert_eq!(area, self.extent.area());
    }
}

/// Merges result boxes with equal values that are identical in all but one
/// dimension and touch in it; repeats over all dimensions until stable.
fn merge_equal_neighbours<T: PartialEq>(out: &mut Vec<(GridBox, T)>) {
    if out.len() < 2 {
        return;
    }
    loop {
        let before = out.len();
        for d in (0..3).rev() {
            merge_along(out, d);
        }
        if out.len() == before {
            break;
        }
    }
}

fn merge_along<T: PartialEq>(out: &mut Vec<(GridBox, T)>, d: usize) {
    // the other two dimensions in order: rows are sorted by their section along them, then by
    // the start along `d` (compared field by field rather than through a key array built per
    // comparison, which cost more than the comparison)
    let (o1, o2) = match d {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    let section = |b: &GridBox| {
        let (min, max) = (b.min_arr(), b.max_arr());
        (min[o1], max[o1], min[o2], max[o2])
    };
    out.sort_unstable_by(|a, b| {
        section(&a.0)
            .cmp(&section(&b.0))
            .then(a.0.min_arr()[d].cmp(&b.0.min_arr()[d]))
    });
    let mut w = 0;
    for r in 1..out.len() {
        let (prev, cur) = (&out[w], &out[r]);
        let same_row = section(&prev.0) == section(&cur.0);
        if same_row && prev.0.max_arr()[d] == cur.0.min_arr()[d] && prev.1 == cur.1 {
            let merged = prev.0.bounding_box(&cur.0);
            out[w].0 = merged;
        } else {
            w += 1;
            out.swap(w, r);
        }
    }
    out.truncate(w + 1);
}

impl<T: Clone> Clone for RegionMap<T> {
    fn clone(&self) -> Self {
        RegionMap {
            extent: self.extent,
            entries: self.entries.clone(),
            len: self.len,
            orphans: Vec::new(),
        }
    }
}

impl<T: Clone + PartialEq + fmt::Debug> fmt::Debug for RegionMap<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut entries = Vec::new();
        self.for_each(|b, v| entries.push((*b, v.clone())));
        entries.sort_by(|a, b| a.0.coordinate_order(&b.0));
        f.debug_struct("RegionMap")
            .field("extent", &self.extent)
            .field("entries", &entries)
            .finish()
    }
}

#[cfg(test)]
#[path = "tests/region_map.rs"]
mod tests;
