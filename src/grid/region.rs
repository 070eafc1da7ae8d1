//! [`Region`]: a point set held as a canonical list of disjoint boxes, its set
//! operations, and [`RegionBuilder`] for accumulating many boxes cheaply.

use std::fmt;

use smallvec::SmallVec;

use super::grid_box::{BoxVec, GridBox, bounding_box_of, effective_dims_of};
use super::normalize::{
    Cuts, collect_cuts, dissect_box, merge_connected_boxes_along_dim, merge_connected_boxes_prefix,
    normalize, sort_disjoint_boxes,
};

/// A set of points, stored as disjoint boxes in the canonical normal form
/// (see [`normalize`](super::normalize)). Because the form is unique, the
/// derived `Eq` and `Hash` are point-set equality and hashing.
#[derive(PartialEq, Eq, Hash, Default)]
pub struct Region {
    boxes: BoxVec,
}

impl Clone for Region {
    /// Copies the boxes as one block (the derived clone copies them one by one).
    #[inline]
    fn clone(&self) -> Self {
        Region {
            boxes: BoxVec::from_slice(&self.boxes),
        }
    }

    /// Reuses the storage of `self` (a record evaluated again in place).
    #[inline]
    fn clone_from(&mut self, source: &Self) {
        self.boxes.clear();
        self.boxes.extend_from_slice(&source.boxes);
    }
}

impl Region {
    /// The empty region.
    #[inline]
    pub fn new() -> Self {
        Region {
            boxes: BoxVec::new(),
        }
    }

    /// Makes the region empty, keeping its storage.
    #[inline]
    pub fn clear(&mut self) {
        self.boxes.clear();
    }

    /// The points of one box (empty if the box is).
    #[inline]
    pub fn from_box(b: GridBox) -> Self {
        let mut boxes = BoxVec::new();
        if !b.is_empty() {
            boxes.push(b);
        }
        Region { boxes }
    }

    /// The union of arbitrary (overlapping, unordered, empty) boxes.
    pub fn from_boxes<I: IntoIterator<Item = GridBox>>(boxes: I) -> Self {
        Self::from_box_vec(boxes.into_iter().collect())
    }

    /// Like [`Region::from_boxes`], reusing the vector's storage.
    #[inline]
    pub fn from_box_vec(mut boxes: BoxVec) -> Self {
        normalize(&mut boxes);
        Region { boxes }
    }

    /// Wraps boxes that are already in canonical form.
    #[inline]
    pub(crate) fn from_normalized(boxes: BoxVec) -> Self {
        debug_assert!(
            {
                let mut copy = boxes.clone();
                normalize(&mut copy);
                copy == boxes
            },
            "boxes are not normalised: {boxes:?}"
        );
        Region { boxes }
    }

    /// The canonical box list: sorted, disjoint, non-empty, maximal along the
    /// fastest dimension first.
    #[inline]
    pub fn boxes(&self) -> &[GridBox] {
        &self.boxes
    }

    /// The normalised boxes, by value.
    #[inline]
    pub fn into_boxes(self) -> BoxVec {
        self.boxes
    }

    /// Whether the region holds no point.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }

    /// Number of points.
    #[inline]
    pub fn area(&self) -> usize {
        self.boxes.iter().map(GridBox::area).sum()
    }

    /// Smallest box containing the region (empty for an empty region).
    #[inline]
    pub fn bounding_box(&self) -> GridBox {
        match self.boxes.len() {
            0 => GridBox::EMPTY,
            1 => self.boxes[0],
            _ => bounding_box_of(&self.boxes),
        }
    }

    /// Highest effective dimensionality among the boxes.
    #[inline]
    pub fn effective_dims(&self) -> usize {
        effective_dims_of(&self.boxes)
    }

    /// True if the point lies in the region.
    #[inline]
    pub fn contains_point(&self, p: &[usize; 3]) -> bool {
        self.boxes.iter().any(|b| b.contains(p))
    }

    /// True if the region shares a point with the box.
    #[inline]
    pub fn intersects_box(&self, b: &GridBox) -> bool {
        self.boxes.iter().any(|x| x.intersects(b))
    }

    /// True if the regions share a point.
    pub fn intersects(&self, other: &Region) -> bool {
        let (small, large) = self.by_size(other);
        small.boxes.iter().any(|b| large.intersects_box(b))
    }

    /// True if every point of the box lies in the region.
    pub fn covers_box(&self, b: &GridBox) -> bool {
        if b.is_empty() {
            return true;
        }
        // The region's boxes are disjoint, so the covered area is the sum of
        // the pairwise intersection areas.
        let mut covered: u128 = 0;
        for x in &self.boxes {
            if x.covers(b) {
                return true;
            }
            covered += x.intersection(b).range().size_u128();
        }
        covered == b.range().size_u128()
    }

    /// True if every point of `other` lies in `self`.
    pub fn covers(&self, other: &Region) -> bool {
        if other.boxes.len() == 1 {
            return self.covers_box(&other.boxes[0]);
        }
        let mut covered: u128 = 0;
        let mut needed: u128 = 0;
        for o in &other.boxes {
            needed += o.range().size_u128();
            for x in &self.boxes {
                covered += x.intersection(o).range().size_u128();
            }
        }
        covered == needed
    }

    #[inline]
    fn by_size<'a>(&'a self, other: &'a Region) -> (&'a Region, &'a Region) {
        if self.boxes.len() <= other.boxes.len() {
            (self, other)
        } else {
            (other, self)
        }
    }

    /// All points in either region.
    pub fn union(&self, other: &Region) -> Region {
        if self.is_empty() {
            return other.clone();
        }
        if other.is_empty() {
            return self.clone();
        }
        // one side covers the other (equal single boxes, a box inside a region, ...)
        if other.boxes.len() == 1 && self.covers_box(&other.boxes[0]) {
            return self.clone();
        }
        if self.boxes.len() == 1 && other.covers_box(&self.boxes[0]) {
            return other.clone();
        }
        let mut boxes = BoxVec::with_capacity(self.boxes.len() + other.boxes.len());
        boxes.extend_from_slice(&self.boxes);
        boxes.extend_from_slice(&other.boxes);
        Region::from_box_vec(boxes)
    }

    /// Adds the points of a box to this region.
    pub fn union_box(&self, b: &GridBox) -> Region {
        if b.is_empty() || self.covers_box(b) {
            return self.clone();
        }
        let mut boxes = BoxVec::with_capacity(self.boxes.len() + 1);
        boxes.extend_from_slice(&self.boxes);
        boxes.push(*b);
        Region::from_box_vec(boxes)
    }

    /// Points in both regions.
    pub fn intersection(&self, other: &Region) -> Region {
        if self.is_empty() || other.is_empty() {
            return Region::new();
        }
        if other.boxes.len() == 1 {
            return self.intersection_with_box(&other.boxes[0]);
        }
        if self.boxes.len() == 1 {
            return other.intersection_with_box(&self.boxes[0]);
        }
        let eff = self.effective_dims().max(other.effective_dims());
        let mut out = BoxVec::new();
        for l in &self.boxes {
            // `other` is sorted by lower corner, slowest dimension first: no
            // later box starts below `l`'s upper bound along dimension 0
            let l_max0 = l.max_arr()[0];
            for r in other.boxes.iter().take_while(|r| r.min_arr()[0] < l_max0) {
                let i = l.intersection(r);
                if !i.is_empty() {
                    out.push(i);
                }
            }
        }
        Self::finish_intersection(out, eff)
    }

    /// Points of the region inside the box.
    pub fn intersection_with_box(&self, b: &GridBox) -> Region {
        if self.boxes.len() == 1 {
            return Region::from_box(self.boxes[0].intersection(b));
        }
        let mut out = BoxVec::new();
        let mut all_inside = true;
        for x in &self.boxes {
            let i = x.intersection(b);
            if !i.is_empty() {
                all_inside &= i == *x;
                out.push(i);
            } else {
                all_inside = false;
            }
        }
        if all_inside {
            return self.clone();
        }
        let eff = self.effective_dims().max(b.effective_dims());
        Self::finish_intersection(out, eff)
    }

    /// Brings the pairwise intersections of two canonical tilings (disjoint,
    /// in the order of the left operand) into canonical form.
    ///
    /// In 1-D they already are: the intervals of each operand are sorted and
    /// separated by gaps, so their intersections are too. In 2-D, the pieces
    /// within a row are intersections of maximal, non-touching intervals, so
    /// each is a maximal interval of the result in all its rows; merging the
    /// pieces with equal intervals along dimension 0 gives the maximal runs.
    /// In 3-D a clipped box can become mergeable with a neighbour along a
    /// slower dimension only after dissection, so the pieces are renormalised
    /// (the merge-first fast path of [`normalize`] makes common cases cheap).
    fn finish_intersection(mut out: BoxVec, eff: usize) -> Region {
        match eff {
            0 | 1 => {}
            2 => {
                let len = merge_connected_boxes_along_dim(&mut out, 0, 2);
                out.truncate(len);
                sort_disjoint_boxes(&mut out, 2);
            }
            _ => normalize(&mut out),
        }
        Region::from_normalized(out)
    }

    /// Points of `self` that are not in `other`.
    pub fn difference(&self, other: &Region) -> Region {
        if self.is_empty() {
            return Region::new();
        }
        if other.is_empty() {
            return self.clone();
        }
        if self.boxes.len() == 1 && other.covers_box(&self.boxes[0]) {
            return Region::new();
        }
        // equal canonical lists are equal point sets (what a task accesses without what it
        // consumes, when every access consumes)
        if self.boxes == other.boxes {
            return Region::new();
        }
        // One box of the list taken out (the column of an L-shaped read that the write does not
        // cover): the others stay canonical. Along every slab the other cross-section boxes are
        // unchanged, and none of them continued into the removed one across a slab boundary (it
        // would have been the same box).
        if let [single] = other.boxes.as_slice() {
            if let Some(i) = self.boxes.iter().position(|b| b == single) {
                let mut boxes = self.boxes.clone();
                boxes.remove(i);
                return Region::from_normalized(boxes);
            }
        }
        if !self.bounding_box().intersects(&other.bounding_box()) {
            return self.clone();
        }
        if self.boxes.len() == 1 && other.boxes.len() == 1 {
            return box_difference(&self.boxes[0], &other.boxes[0]);
        }
        // Must consider every dimension either side uses to see the overlap.
        let eff = self.effective_dims().max(other.effective_dims());
        // Dissecting the left side along every bound of the right side turns
        // each overlap into left pieces that some right box covers entirely.
        let cuts: Cuts = (0..eff).map(|d| collect_cuts(&other.boxes, d)).collect();
        let mut pieces = BoxVec::with_capacity(self.boxes.len() * 2);
        // `other` is sorted by lower corner, slowest dimension first, so only
        // a prefix of it can intersect (or cover) a given box.
        let candidates = |b: &GridBox, strict: bool| {
            let bound = if strict {
                b.max_arr()[0]
            } else {
                b.min_arr()[0] + 1
            };
            other
                .boxes
                .iter()
                .take_while(move |r| r.min_arr()[0] < bound)
        };
        for b in &self.boxes {
            if candidates(b, true).any(|r| r.intersects(b)) {
                dissect_box(b, &cuts, &mut pieces);
            } else {
                pieces.push(*b);
            }
        }
        pieces.retain(|p| !candidates(p, false).any(|r| r.covers(p)));
        // The remaining pieces are disjoint. Within a row (1-D, 2-D), the
        // pieces of one left interval share their extent along dimension 0,
        // and left intervals do not touch, so merging along dimension 1 yields
        // the maximal intervals and merging along dimension 0 their maximal
        // runs: the canonical form. In 3-D, merging alone does not always
        // reach it; normalise (merge-first fast path).
        if eff <= 2 {
            let len = merge_connected_boxes_prefix(&mut pieces, eff.max(1));
            pieces.truncate(len);
            sort_disjoint_boxes(&mut pieces, eff);
        } else {
            normalize(&mut pieces);
        }
        Region::from_normalized(pieces)
    }

    /// Points of `self` outside the box.
    pub fn difference_box(&self, b: &GridBox) -> Region {
        if b.is_empty() || !self.intersects_box(b) {
            return self.clone();
        }
        self.difference(&Region::from_box(*b))
    }
}

/// `a` without `b`, for boxes that intersect without `b` covering `a`: at most two slabs per
/// dimension around the intersection, which are canonical as they stand. Per dimension `d`
/// (slowest first) the parts of `a` below and above the intersection along `d`, spanning the
/// intersection along the slower dimensions and all of `a` along the faster ones: each is
/// maximal along the faster dimensions (it spans `a`), and along `d` and the slower ones its
/// neighbours hold a different interval (they span `a` where it does not). Listed in box order.
fn box_difference(a: &GridBox, b: &GridBox) -> Region {
    let i = a.intersection(b);
    debug_assert!(!i.is_empty() && i != *a);
    let (a_min, a_max) = (a.min_arr(), a.max_arr());
    let (i_min, i_max) = (i.min_arr(), i.max_arr());
    let piece = |d: usize, lo: usize, hi: usize| {
        let (mut min, mut max) = (*a_min, *a_max);
        min[..d].copy_from_slice(&i_min[..d]);
        max[..d].copy_from_slice(&i_max[..d]);
        min[d] = lo;
        max[d] = hi;
        GridBox::new_unchecked(min, max)
    };
    let mut below = BoxVec::new();
    let mut above: SmallVec<[GridBox; 3]> = SmallVec::new();
    for d in 0..3 {
        if a_min[d] < i_min[d] {
            below.push(piece(d, a_min[d], i_min[d]));
        }
        if i_max[d] < a_max[d] {
            above.push(piece(d, i_max[d], a_max[d]));
        }
    }
    below.extend(above.into_iter().rev());
    Region::from_normalized(below)
}

impl From<GridBox> for Region {
    #[inline]
    fn from(b: GridBox) -> Self {
        Region::from_box(b)
    }
}

impl FromIterator<GridBox> for Region {
    fn from_iter<I: IntoIterator<Item = GridBox>>(iter: I) -> Self {
        Region::from_boxes(iter)
    }
}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.boxes.iter()).finish()
    }
}

/// Accumulates boxes and regions in any order and normalises once, in
/// [`RegionBuilder::into_region`]; use it instead of repeated unions.
#[derive(Clone, Debug, Default)]
pub struct RegionBuilder {
    boxes: BoxVec,
    /// True while the builder holds exactly one canonical input, which then
    /// needs no normalisation.
    single_normalized: bool,
}

impl RegionBuilder {
    /// An empty builder.
    #[inline]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the points of a box.
    #[inline]
    pub fn add_box(&mut self, b: GridBox) -> &mut Self {
        if !b.is_empty() {
            self.single_normalized = self.boxes.is_empty();
            self.boxes.push(b);
        }
        self
    }

    /// Adds the points of a region.
    pub fn add_region(&mut self, r: &Region) -> &mut Self {
        if !r.is_empty() {
            self.single_normalized = self.boxes.is_empty();
            self.boxes.extend_from_slice(r.boxes());
        }
        self
    }

    /// True if nothing non-empty was added.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }

    /// The union of everything added.
    pub fn into_region(self) -> Region {
        if self.single_normalized {
            Region::from_normalized(self.boxes)
        } else {
            Region::from_box_vec(self.boxes)
        }
    }
}

impl Extend<GridBox> for RegionBuilder {
    fn extend<I: IntoIterator<Item = GridBox>>(&mut self, iter: I) {
        for b in iter {
            self.add_box(b);
        }
    }
}

#[cfg(test)]
#[path = "tests/region.rs"]
mod tests;
