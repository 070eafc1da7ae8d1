//! Half-open boxes `[min, max)`, the unit of every region computation.

use std::cmp::Ordering;
use std::fmt;

use smallvec::SmallVec;

use super::range::{Id, Range, Subrange};

/// A half-open, axis-aligned box `[min, max)` in 3-D index space.
///
/// Invariant: `min <= max` component-wise, and every empty box is stored as
/// `min = max = 0`, so that each point set has exactly one representation and
/// the derived `Eq`/`Hash` are point-set comparisons for single boxes.
/// `GridBox` deliberately has no `Ord` (it would shadow [`GridBox::min`] and
/// [`GridBox::max`]); [`GridBox::coordinate_order`] gives the canonical order.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct GridBox {
    min: [usize; 3],
    max: [usize; 3],
}

/// Inline-allocated box list used by regions and geometry helpers.
pub type BoxVec = SmallVec<[GridBox; 2]>;

impl GridBox {
    /// The empty box.
    pub const EMPTY: GridBox = GridBox {
        min: [0; 3],
        max: [0; 3],
    };
    /// The single point at the origin: the only non-empty 0-D box.
    pub const UNIT: GridBox = GridBox {
        min: [0; 3],
        max: [1; 3],
    };

    /// Builds `[min, max)`; a box that is empty in any dimension (including
    /// `max < min`) becomes [`GridBox::EMPTY`].
    #[inline]
    pub fn new(min: Id, max: Id) -> Self {
        Self::from_arrays(min.0, max.0)
    }

    /// Like [`GridBox::new`] on raw coordinate arrays.
    #[inline]
    pub fn from_arrays(min: [usize; 3], max: [usize; 3]) -> Self {
        if min[0] >= max[0] || min[1] >= max[1] || min[2] >= max[2] {
            GridBox::EMPTY
        } else {
            GridBox { min, max }
        }
    }

    /// Whether `self` and `other` are equal in every dimension but `d` and touch along `d`
    /// (their union is a box).
    #[inline]
    pub fn mergeable_along(&self, other: &GridBox, d: usize) -> bool {
        (0..3).all(|k| {
            if k == d {
                self.max[k] == other.min[k] || other.max[k] == self.min[k]
            } else {
                self.min[k] == other.min[k] && self.max[k] == other.max[k]
            }
        })
    }

    /// Whether `self` and `other` are equal in every dimension but one and touch along that one
    /// ([`GridBox::mergeable_along`] for some dimension, found in one pass).
    #[inline]
    pub fn mergeable_with(&self, other: &GridBox) -> bool {
        let mut differs = None;
        for d in 0..3 {
            if self.min[d] != other.min[d] || self.max[d] != other.max[d] {
                if differs.is_some() {
                    return false;
                }
                differs = Some(d);
            }
        }
        differs.is_some_and(|d| self.max[d] == other.min[d] || other.max[d] == self.min[d])
    }

    /// Calls `part` with the parts of `self` outside `other`, which must intersect it: disjoint
    /// boxes that together with `self ∩ other` tile `self`, cut along the fastest dimension
    /// first (the part below `other`, then the part above).
    #[inline]
    pub fn for_each_part_outside(&self, other: &GridBox, mut part: impl FnMut(GridBox)) {
        let (mut min, mut max) = (self.min, self.max);
        for d in (0..3).rev() {
            if min[d] < other.min[d] {
                let mut hi = max;
                hi[d] = other.min[d];
                part(GridBox::new_unchecked(min, hi));
                min[d] = other.min[d];
            }
            if max[d] > other.max[d] {
                let mut lo = min;
                lo[d] = other.max[d];
                part(GridBox::new_unchecked(lo, max));
                max[d] = other.max[d];
            }
        }
    }

    /// Builds a box known to be non-empty without the emptiness check.
    #[inline]
    pub(crate) fn new_unchecked(min: [usize; 3], max: [usize; 3]) -> Self {
        debug_assert!(
            (0..3).all(|d| min[d] < max[d]),
            "not a non-empty box: {min:?} {max:?}"
        );
        GridBox { min, max }
    }

    /// `[offset, offset + range)`.
    #[inline]
    pub fn from_subrange(sr: Subrange) -> Self {
        Self::from_arrays(sr.offset.0, (sr.offset + sr.range).0)
    }

    /// `[0, range)`: the whole of a buffer or iteration space.
    #[inline]
    pub fn full_range(range: Range) -> Self {
        Self::from_arrays([0; 3], range.0)
    }

    /// The lowest corner (inclusive).
    #[inline]
    pub fn min(&self) -> Id {
        Id(self.min)
    }

    /// The highest corner (exclusive).
    #[inline]
    pub fn max(&self) -> Id {
        Id(self.max)
    }

    /// Lower corner, as a raw array (hot loops index it per dimension).
    #[inline]
    pub fn min_arr(&self) -> &[usize; 3] {
        &self.min
    }

    /// Upper corner (exclusive), as a raw array.
    #[inline]
    pub fn max_arr(&self) -> &[usize; 3] {
        &self.max
    }

    /// The extent in each dimension.
    #[inline]
    pub fn range(&self) -> Range {
        Range([
            self.max[0] - self.min[0],
            self.max[1] - self.min[1],
            self.max[2] - self.min[2],
        ])
    }

    /// The box as offset and range.
    #[inline]
    pub fn subrange(&self) -> Subrange {
        Subrange::new(self.min(), self.range())
    }

    /// Number of points in the box.
    #[inline]
    pub fn area(&self) -> usize {
        self.range().size()
    }

    /// Whether the box holds no point.
    #[inline]
    pub fn is_empty(&self) -> bool {
        // normalised: empty iff max[0] == 0 (all empty boxes are [0,0))
        self.max[0] == 0
    }

    /// True if every point of `other` lies in `self` (always for empty `other`).
    #[inline]
    pub fn covers(&self, other: &GridBox) -> bool {
        other.is_empty()
            || (0..3).all(|d| self.min[d] <= other.min[d] && other.max[d] <= self.max[d])
    }

    /// True if the point lies in the box.
    #[inline]
    pub fn contains(&self, p: &[usize; 3]) -> bool {
        (0..3).all(|d| self.min[d] <= p[d] && p[d] < self.max[d])
    }

    /// True if the boxes share at least one point.
    ///
    /// Two comparisons per dimension, stopping at the first that fails: the scans of the region
    /// maps' flat lists test every entry, and most entries fail in their first or second
    /// dimension. An empty box is `[0, 0)` (the invariant), so it meets nothing here either.
    #[inline]
    pub fn intersects(&self, other: &GridBox) -> bool {
        let (a, b) = (self, other);
        a.min[0] < b.max[0]
            && b.min[0] < a.max[0]
            && a.min[1] < b.max[1]
            && b.min[1] < a.max[1]
            && a.min[2] < b.max[2]
            && b.min[2] < a.max[2]
    }

    /// The common points of both boxes.
    #[inline]
    pub fn intersection(&self, other: &GridBox) -> GridBox {
        let mut min = [0; 3];
        let mut max = [0; 3];
        for d in 0..3 {
            min[d] = self.min[d].max(other.min[d]);
            max[d] = self.max[d].min(other.max[d]);
            if min[d] >= max[d] {
                return GridBox::EMPTY;
            }
        }
        GridBox { min, max }
    }

    /// The smallest box containing both; an empty operand is ignored.
    #[inline]
    pub fn bounding_box(&self, other: &GridBox) -> GridBox {
        if self.is_empty() {
            return *other;
        }
        if other.is_empty() {
            return *self;
        }
        let mut min = [0; 3];
        let mut max = [0; 3];
        for d in 0..3 {
            min[d] = self.min[d].min(other.min[d]);
            max[d] = self.max[d].max(other.max[d]);
        }
        GridBox { min, max }
    }

    /// The canonical order of boxes in a [`Region`](super::Region): by `min`,
    /// then by `max`, lexicographically with the slowest dimension first.
    #[inline]
    pub fn coordinate_order(&self, other: &GridBox) -> Ordering {
        self.min
            .cmp(&other.min)
            .then_with(|| self.max.cmp(&other.max))
    }

    /// The smallest dimensionality that holds this box without loss: one past
    /// the last dimension whose upper bound exceeds 1. Algorithms specialise
    /// on it so that lower-dimensional data embedded in 3-D costs no more.
    #[inline]
    pub fn effective_dims(&self) -> usize {
        if self.max[2] > 1 {
            3
        } else if self.max[1] > 1 {
            2
        } else if self.max[0] > 1 {
            1
        } else {
            0
        }
    }
}

impl From<Subrange> for GridBox {
    #[inline]
    fn from(sr: Subrange) -> Self {
        GridBox::from_subrange(sr)
    }
}

impl fmt::Debug for GridBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{},{},{}]-[{},{},{}]",
            self.min[0], self.min[1], self.min[2], self.max[0], self.max[1], self.max[2]
        )
    }
}

/// Effective dimensionality of a set of boxes (the maximum over its members).
#[inline]
pub fn effective_dims_of(boxes: &[GridBox]) -> usize {
    let mut dims = 0;
    for b in boxes {
        dims = dims.max(b.effective_dims());
        if dims == 3 {
            break;
        }
    }
    dims
}

/// Sorts boxes into the canonical [`GridBox::coordinate_order`].
#[inline]
pub fn sort_boxes(boxes: &mut [GridBox]) {
    boxes.sort_unstable_by(GridBox::coordinate_order);
}

/// Bounding box of a set of boxes (empty for an empty set).
#[inline]
pub fn bounding_box_of(boxes: &[GridBox]) -> GridBox {
    boxes
        .iter()
        .fold(GridBox::EMPTY, |acc, b| acc.bounding_box(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(min: [usize; 3], max: [usize; 3]) -> GridBox {
        GridBox::from_arrays(min, max)
    }

    #[test]
    fn empty_boxes_are_normalised() {
        assert_eq!(b([3, 4, 5], [3, 9, 9]), GridBox::EMPTY);
        assert_eq!(b([5, 0, 0], [3, 9, 9]), GridBox::EMPTY);
        assert!(GridBox::EMPTY.is_empty());
        assert_eq!(GridBox::EMPTY.area(), 0);
        assert_eq!(
            b([1, 1, 1], [2, 3, 4]).intersection(&b([5, 5, 5], [6, 6, 6])),
            GridBox::EMPTY
        );
    }

    #[test]
    fn basic_operations() {
        let a = b([0, 0, 0], [4, 4, 1]);
        let c = b([2, 2, 0], [6, 6, 1]);
        assert_eq!(a.intersection(&c), b([2, 2, 0], [4, 4, 1]));
        assert_eq!(a.bounding_box(&c), b([0, 0, 0], [6, 6, 1]));
        assert_eq!(a.bounding_box(&GridBox::EMPTY), a);
        assert!(a.covers(&b([1, 1, 0], [3, 3, 1])));
        assert!(!a.covers(&c));
        assert!(a.covers(&GridBox::EMPTY));
        assert_eq!(a.area(), 16);
        assert_eq!(a.effective_dims(), 2);
        assert_eq!(GridBox::UNIT.effective_dims(), 0);
        assert_eq!(GridBox::UNIT.area(), 1);
        assert!(a.contains(&[3, 3, 0]) && !a.contains(&[4, 0, 0]));
        let sr = Subrange::new(Id::new(1, 2, 3), Range::new(4, 5, 6));
        assert_eq!(GridBox::from(sr).subrange(), sr);
        let lt = |x: GridBox, y: GridBox| x.coordinate_order(&y) == Ordering::Less;
        assert!(lt(b([0, 0, 0], [1, 1, 1]), b([0, 0, 1], [1, 1, 2])));
        assert!(lt(b([0, 5, 5], [9, 9, 9]), b([1, 0, 0], [2, 1, 1])));
        assert!(lt(b([0, 0, 0], [1, 1, 1]), b([0, 0, 0], [1, 1, 2])));
    }

    /// `intersects` compares the bounds directly and relies on the empty box being `[0, 0)`:
    /// every pair of boxes over coordinates 0..3 in two dimensions (empty, touching, nested and
    /// overlapping, on either side) agrees with the intersection.
    #[test]
    fn intersects_exactly_when_the_intersection_is_not_empty() {
        let spans = [
            (0, 0),
            (0, 1),
            (0, 2),
            (0, 3),
            (1, 1),
            (1, 2),
            (1, 3),
            (2, 3),
            (3, 3),
        ];
        let mut boxes = Vec::new();
        for &(x0, x1) in &spans {
            for &(y0, y1) in &spans {
                boxes.push(b([x0, y0, 0], [x1, y1, 1]));
            }
        }
        boxes.push(b([1, 1, 2], [2, 2, 3]));
        for p in &boxes {
            for q in &boxes {
                let expected = !p.intersection(q).is_empty();
                assert_eq!(p.intersects(q), expected, "{p:?} and {q:?}");
            }
        }
    }
}
