//! Point-by-point oracles and proptest strategies shared by the geometry tests.

use proptest::prelude::*;

use super::grid_box::{GridBox, sort_boxes};

/// A dense set of points over `[0, extent)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointSet {
    pub extent: [usize; 3],
    pub bits: Vec<bool>,
}

impl PointSet {
    pub fn new(extent: [usize; 3]) -> Self {
        PointSet {
            extent,
            bits: vec![false; extent[0] * extent[1] * extent[2]],
        }
    }

    #[inline]
    pub fn index(&self, p: [usize; 3]) -> usize {
        (p[0] * self.extent[1] + p[1]) * self.extent[2] + p[2]
    }

    pub fn points(&self) -> impl Iterator<Item = [usize; 3]> + '_ {
        let e = self.extent;
        (0..e[0]).flat_map(move |a| (0..e[1]).flat_map(move |b| (0..e[2]).map(move |c| [a, b, c])))
    }

    pub fn from_boxes(extent: [usize; 3], boxes: &[GridBox]) -> Self {
        let mut s = Self::new(extent);
        for b in boxes {
            s.add_box(b);
        }
        s
    }

    pub fn add_box(&mut self, b: &GridBox) {
        for p in points_of(b) {
            let i = self.index(p);
            self.bits[i] = true;
        }
    }

    pub fn get(&self, p: [usize; 3]) -> bool {
        self.bits[self.index(p)]
    }

    pub fn count(&self) -> usize {
        self.bits.iter().filter(|&&b| b).count()
    }

    pub fn zip(&self, o: &PointSet, f: impl Fn(bool, bool) -> bool) -> PointSet {
        PointSet {
            extent: self.extent,
            bits: self
                .bits
                .iter()
                .zip(&o.bits)
                .map(|(&a, &b)| f(a, b))
                .collect(),
        }
    }

    /// The canonical box list, computed directly from the points: maximal
    /// intervals along dimension 2 per line, then maximal runs of identical
    /// intervals along dimension 1, then along dimension 0; sorted.
    pub fn canonical_boxes(&self) -> Vec<GridBox> {
        let e = self.extent;
        // per plane x0: list of (x1 range, x2 range) boxes
        let mut planes: Vec<Vec<([usize; 2], [usize; 2])>> = Vec::new();
        for x0 in 0..e[0] {
            let lines: Vec<Vec<[usize; 2]>> = (0..e[1])
                .map(|x1| {
                    let mut ivs = Vec::new();
                    let mut x2 = 0;
                    while x2 < e[2] {
                        if self.get([x0, x1, x2]) {
                            let lo = x2;
                            while x2 < e[2] && self.get([x0, x1, x2]) {
                                x2 += 1;
                            }
                            ivs.push([lo, x2]);
                        } else {
                            x2 += 1;
                        }
                    }
                    ivs
                })
                .collect();
            planes.push(runs(&lines));
        }
        let mut out = Vec::new();
        for (r0, (r1, r2)) in runs(&planes) {
            out.push(GridBox::from_arrays(
                [r0[0], r1[0], r2[0]],
                [r0[1], r1[1], r2[1]],
            ));
        }
        sort_boxes(&mut out);
        out
    }
}

/// Given per-coordinate lists of items, returns (coordinate run, item) for
/// each maximal run of consecutive coordinates holding an identical item.
fn runs<T: Clone + PartialEq>(slices: &[Vec<T>]) -> Vec<([usize; 2], T)> {
    let mut out = Vec::new();
    for (x, items) in slices.iter().enumerate() {
        for it in items {
            if x > 0 && slices[x - 1].contains(it) {
                continue; // covered by the run that started earlier
            }
            let mut end = x + 1;
            while end < slices.len() && slices[end].contains(it) {
                end += 1;
            }
            out.push(([x, end], it.clone()));
        }
    }
    out
}

pub fn points_of(b: &GridBox) -> impl Iterator<Item = [usize; 3]> {
    let (lo, hi) = (*b.min_arr(), *b.max_arr());
    (lo[0]..hi[0])
        .flat_map(move |a| (lo[1]..hi[1]).flat_map(move |c| (lo[2]..hi[2]).map(move |d| [a, c, d])))
}

/// Extent used for property tests of the given dimensionality (kept small so
/// the oracle stays cheap).
pub fn test_extent(dims: usize) -> [usize; 3] {
    match dims {
        0 => [1, 1, 1],
        1 => [16, 1, 1],
        2 => [7, 7, 1],
        _ => [5, 4, 5],
    }
}

/// A box inside `extent` (possibly empty), touching only the first `dims`
/// dimensions.
pub fn arb_box(extent: [usize; 3]) -> impl Strategy<Value = GridBox> {
    let dim = |e: usize| (0..=e, 0..=e).prop_map(|(a, b)| if a <= b { [a, b] } else { [b, a] });
    (dim(extent[0]), dim(extent[1]), dim(extent[2]))
        .prop_map(|(a, b, c)| GridBox::from_arrays([a[0], b[0], c[0]], [a[1], b[1], c[1]]))
}

/// A list of up to `max` boxes.
pub fn arb_boxes(extent: [usize; 3], max: usize) -> impl Strategy<Value = Vec<GridBox>> {
    prop::collection::vec(arb_box(extent), 0..=max)
}

/// (dims, extent) for dims 0..=3.
pub fn arb_dims() -> impl Strategy<Value = [usize; 3]> {
    (0usize..=3).prop_map(test_extent)
}

/// A 1-D box `[lo, hi)` in padded form.
pub fn b1(lo: usize, hi: usize) -> GridBox {
    GridBox::from_arrays([lo, 0, 0], [hi, 1, 1])
}

/// A 2-D box in padded form.
pub fn b2(min: [usize; 2], max: [usize; 2]) -> GridBox {
    GridBox::from_arrays([min[0], min[1], 0], [max[0], max[1], 1])
}

/// A 3-D box.
pub fn b3(min: [usize; 3], max: [usize; 3]) -> GridBox {
    GridBox::from_arrays(min, max)
}
