//! Coordinate value types: extents ([`Range`]), points ([`Id`]) and
//! offset/extent pairs ([`Subrange`]).
//!
//! All of them are 3-wide. A D-dimensional value fills the first D entries;
//! the rest are padding (extent 1, coordinate 0), so that a lower-dimensional
//! object embedded in 3-D space covers exactly the same points.

use std::fmt;
use std::ops::{Add, Index, IndexMut, Sub};

/// The number of stored dimensions of every geometric value.
pub const MAX_DIMS: usize = 3;

/// An extent: the number of items along each dimension (dimension 0 is the
/// slowest). Unused dimensions have extent 1.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Range(pub [usize; 3]);

/// A point (or an offset): one coordinate per dimension. Unused dimensions
/// have coordinate 0.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Id(pub [usize; 3]);

impl Range {
    /// The extent of a 0-D value (a single point).
    pub const ONE: Range = Range([1, 1, 1]);
    /// An empty extent.
    pub const ZERO: Range = Range([0, 0, 0]);

    /// The range of the three extents.
    #[inline]
    pub const fn new(r0: usize, r1: usize, r2: usize) -> Self {
        Range([r0, r1, r2])
    }

    /// Builds a range from the first `values.len()` (at most 3) extents,
    /// padding the remaining dimensions with 1.
    #[inline]
    pub fn from_slice(values: &[usize]) -> Self {
        assert!(
            values.len() <= MAX_DIMS,
            "range has {} > 3 dimensions",
            values.len()
        );
        let mut r = [1; 3];
        r[..values.len()].copy_from_slice(values);
        Range(r)
    }

    /// The number of items (product of the extents).
    #[inline]
    pub fn size(&self) -> usize {
        self.0[0] * self.0[1] * self.0[2]
    }

    /// Like [`Range::size`] but cannot overflow, for heuristics on huge extents.
    #[inline]
    pub fn size_u128(&self) -> u128 {
        self.0[0] as u128 * self.0[1] as u128 * self.0[2] as u128
    }

    /// True if any extent is zero.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0[0] == 0 || self.0[1] == 0 || self.0[2] == 0
    }

    /// The smallest dimensionality that represents this extent without loss:
    /// one past the last dimension whose extent is not the padding value 1.
    #[inline]
    pub fn effective_dims(&self) -> usize {
        (0..3).rev().find(|&d| self.0[d] != 1).map_or(0, |d| d + 1)
    }
}

impl Default for Range {
    /// A single point, matching the padding convention.
    fn default() -> Self {
        Range::ONE
    }
}

impl Id {
    /// The origin.
    pub const ZERO: Id = Id([0, 0, 0]);

    /// The id of the three coordinates.
    #[inline]
    pub const fn new(i0: usize, i1: usize, i2: usize) -> Self {
        Id([i0, i1, i2])
    }

    /// Builds a point from the first `values.len()` (at most 3) coordinates,
    /// padding the remaining dimensions with 0.
    #[inline]
    pub fn from_slice(values: &[usize]) -> Self {
        assert!(
            values.len() <= MAX_DIMS,
            "id has {} > 3 dimensions",
            values.len()
        );
        let mut i = [0; 3];
        i[..values.len()].copy_from_slice(values);
        Id(i)
    }

    /// Reinterprets the coordinates as an extent (e.g. a box's max as the
    /// range of a box starting at the origin).
    #[inline]
    pub const fn to_range(self) -> Range {
        Range(self.0)
    }
}

impl From<[usize; 3]> for Range {
    #[inline]
    fn from(v: [usize; 3]) -> Self {
        Range(v)
    }
}

impl From<[usize; 3]> for Id {
    #[inline]
    fn from(v: [usize; 3]) -> Self {
        Id(v)
    }
}

macro_rules! index_impls {
    ($t:ty) => {
        impl Index<usize> for $t {
            type Output = usize;
            #[inline]
            fn index(&self, d: usize) -> &usize {
                &self.0[d]
            }
        }
        impl IndexMut<usize> for $t {
            #[inline]
            fn index_mut(&mut self, d: usize) -> &mut usize {
                &mut self.0[d]
            }
        }
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "[{},{},{}]", self.0[0], self.0[1], self.0[2])
            }
        }
    };
}
index_impls!(Range);
index_impls!(Id);

impl Add<Range> for Id {
    type Output = Id;
    #[inline]
    fn add(self, r: Range) -> Id {
        Id([self.0[0] + r.0[0], self.0[1] + r.0[1], self.0[2] + r.0[2]])
    }
}

impl Add for Id {
    type Output = Id;
    #[inline]
    fn add(self, o: Id) -> Id {
        Id([self.0[0] + o.0[0], self.0[1] + o.0[1], self.0[2] + o.0[2]])
    }
}

impl Sub for Id {
    type Output = Id;
    #[inline]
    fn sub(self, o: Id) -> Id {
        Id([self.0[0] - o.0[0], self.0[1] - o.0[1], self.0[2] - o.0[2]])
    }
}

/// An offset and an extent; the C ABI's way of naming a box.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Subrange {
    /// The first point.
    pub offset: Id,
    /// The extent from the offset.
    pub range: Range,
}

impl Subrange {
    /// The subrange of `range` starting at `offset`.
    #[inline]
    pub const fn new(offset: Id, range: Range) -> Self {
        Subrange { offset, range }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_and_effective_dims() {
        assert_eq!(Range::from_slice(&[1024]), Range::new(1024, 1, 1));
        assert_eq!(Range::from_slice(&[]), Range::ONE);
        assert_eq!(Id::from_slice(&[3, 4]), Id::new(3, 4, 0));
        assert_eq!(Range::ONE.effective_dims(), 0);
        assert_eq!(Range::new(5, 1, 1).effective_dims(), 1);
        assert_eq!(Range::new(1, 5, 1).effective_dims(), 2);
        assert_eq!(Range::new(2, 2, 3).effective_dims(), 3);
        assert_eq!(Range::new(0, 1, 1).effective_dims(), 1);
    }

    #[test]
    fn arithmetic() {
        assert_eq!(Range::new(2, 3, 4).size(), 24);
        assert!(Range::new(2, 0, 4).is_empty());
        assert_eq!(Id::new(1, 2, 3) + Range::new(1, 1, 1), Id::new(2, 3, 4));
        assert_eq!(Id::new(5, 5, 5) - Id::new(1, 2, 3), Id::new(4, 3, 2));
        let mut r = Range::ONE;
        r[1] = 7;
        assert_eq!(r[1], 7);
        assert_eq!(format!("{:?}", r), "[1,7,1]");
    }
}
