//! Splitting an iteration space into chunks for nodes and devices.
//!
//! Chunk sizes are multiples of a per-dimension granularity (the work-group
//! size or a split constraint), which must divide the box's extent. Fewer
//! chunks than requested are produced when the granularity leaves no room,
//! but never empty ones. Remainders go to the first chunks, one granularity
//! unit each.

use super::grid_box::GridBox;
use super::range::Range;

/// Per-dimension chunk layout: `num_large` chunks of `large` items followed by
/// chunks of `small` items.
#[derive(Clone, Copy)]
struct Layout {
    small: usize,
    large: usize,
    num_large: usize,
}

#[inline]
fn layout(extent: usize, gran: usize, num_chunks: usize) -> Layout {
    let ideal = extent / num_chunks;
    let small = ideal / gran * gran;
    Layout {
        small,
        large: small + gran,
        num_large: (extent - small * num_chunks) / gran,
    }
}

impl Layout {
    /// (offset relative to the start, size) of chunk `i`.
    #[inline]
    fn chunk(&self, i: usize) -> (usize, usize) {
        if i < self.num_large {
            (i * self.large, self.large)
        } else {
            (
                self.num_large * self.large + (i - self.num_large) * self.small,
                self.small,
            )
        }
    }
}

fn check_args(full: &GridBox, granularity: &Range, num_chunks: usize) {
    assert!(num_chunks > 0, "cannot split into zero chunks");
    let r = full.range();
    for d in 0..3 {
        assert!(
            granularity[d] > 0,
            "granularity {granularity:?} has a zero extent"
        );
        assert!(
            r[d] % granularity[d] == 0,
            "granularity {granularity:?} does not divide the extent {r:?}"
        );
    }
}

/// Splits `full` along dimension 0 into at most `num_chunks` chunks whose
/// sizes are multiples of `granularity[0]`; other dimensions are kept whole.
pub fn split_1d(full: &GridBox, granularity: &Range, num_chunks: usize) -> Vec<GridBox> {
    check_args(full, granularity, num_chunks);
    if full.is_empty() {
        return Vec::new();
    }
    let extent = full.range()[0];
    let actual = num_chunks.min(extent / granularity[0]);
    let l = layout(extent, granularity[0], actual);
    (0..actual)
        .map(|i| {
            let (off, size) = l.chunk(i);
            let (mut min, mut max) = (*full.min_arr(), *full.max_arr());
            min[0] += off;
            max[0] = min[0] + size;
            GridBox::from_arrays(min, max)
        })
        .collect()
}

/// For the factorisation `num_chunks = factor * (num_chunks / factor)`,
/// returns the chunk counts for dimensions 0 and 1 of whichever orientation
/// yields more chunks under the granularity caps; ties go to the slower
/// dimension for square-ish domains and to shorter chunk edges otherwise.
fn assign_factors_2d(
    full: &GridBox,
    granularity: &Range,
    factor: usize,
    num_chunks: usize,
) -> [usize; 2] {
    let r = full.range();
    let cap = [r[0] / granularity[0], r[1] / granularity[1]];
    let (f0, f1) = (factor, num_chunks / factor);
    let a = [f0.min(cap[0]), f1.min(cap[1])];
    let b = [f1.min(cap[0]), f0.min(cap[1])];
    let (count_a, count_b) = (a[0] * a[1], b[0] * b[1]);
    if count_a != count_b {
        return if count_a > count_b { a } else { b };
    }
    let squareness = (full.range().size_u128() as f64).sqrt() / r[0] as f64;
    if squareness > 0.95 && squareness < 1.05 {
        return if f0 >= f1 { a } else { b };
    }
    let edges = |s: [usize; 2]| r[0] / s[0] + r[1] / s[1];
    if edges(a) < edges(b) { a } else { b }
}

/// Splits `full` into a grid over dimensions 0 and 1 (dimension 2 is never
/// split) of at most `num_chunks` chunks, as square as the granularity and
/// the factorisations of `num_chunks` allow. Chunks are listed row by row.
pub fn split_2d(full: &GridBox, granularity: &Range, num_chunks: usize) -> Vec<GridBox> {
    check_args(full, granularity, num_chunks);
    if full.is_empty() {
        return Vec::new();
    }
    // Walk the factorisations from the most square one down to (1, n), keeping
    // the best, until one reaches exactly num_chunks.
    let mut factor = num_chunks.isqrt();
    let mut best = [0usize, 0];
    while factor >= 1 {
        while factor > 1 && num_chunks % factor != 0 {
            factor -= 1;
        }
        let counts = assign_factors_2d(full, granularity, factor, num_chunks);
        if counts[0] * counts[1] > best[0] * best[1] {
            best = counts;
        }
        if counts[0] * counts[1] == num_chunks {
            break;
        }
        factor -= 1;
    }
    let r = full.range();
    let l0 = layout(r[0], granularity[0], best[0]);
    let l1 = layout(r[1], granularity[1], best[1]);
    let mut out = Vec::with_capacity(best[0] * best[1]);
    for j in 0..best[0] {
        let (off0, size0) = l0.chunk(j);
        for i in 0..best[1] {
            let (off1, size1) = l1.chunk(i);
            let (mut min, mut max) = (*full.min_arr(), *full.max_arr());
            min[0] += off0;
            min[1] += off1;
            max[0] = min[0] + size0;
            max[1] = min[1] + size1;
            out.push(GridBox::from_arrays(min, max));
        }
    }
    out
}

#[cfg(test)]
#[path = "tests/split.rs"]
mod tests;
