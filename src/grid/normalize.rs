//! Box-list primitives behind [`Region`](super::Region): directional merging,
//! dissection along cut lines and normalisation to the canonical form.
//!
//! The canonical form of a point set is the unique box list that
//! 1. has every box as long as possible along dimension 2 (the fastest), then
//!    along dimension 1, then along dimension 0;
//! 2. has no two intersecting boxes;
//! 3. has no empty box;
//! 4. is sorted by the box order (min, then max, slowest dimension first).

use std::cmp::Ordering;

use smallvec::SmallVec;

use super::grid_box::{BoxVec, GridBox, bounding_box_of, effective_dims_of, sort_boxes};

/// Sorted, deduplicated cut coordinates per dimension.
pub(crate) type Cuts = SmallVec<[SmallVec<[usize; 16]>; 3]>;

/// Orders boxes by their extents in every effective dimension except `dim`,
/// so that boxes that could merge along `dim` become neighbours.
#[inline]
fn cmp_orthogonal(a: &GridBox, b: &GridBox, dim: usize, eff_dims: usize) -> Ordering {
    for d in 0..eff_dims {
        if d == dim {
            continue;
        }
        let o = a.min_arr()[d]
            .cmp(&b.min_arr()[d])
            .then(a.max_arr()[d].cmp(&b.max_arr()[d]));
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Boxes that are identical in every dimension but `dim` and whose intervals
/// along `dim` touch or overlap are replaced by their union. Works in place on
/// a slice whose boxes agree in all other dimensions; returns the new length.
fn merge_intervals(boxes: &mut [GridBox], dim: usize) -> usize {
    if boxes.len() < 2 {
        return boxes.len();
    }
    boxes.sort_unstable_by_key(|b| b.min_arr()[dim]);
    let mut out = 0;
    let mut i = 0;
    while i < boxes.len() {
        let mut cur = boxes[i];
        let mut max = *cur.max_arr();
        i += 1;
        while i < boxes.len() && boxes[i].min_arr()[dim] <= max[dim] {
            max[dim] = max[dim].max(boxes[i].max_arr()[dim]);
            i += 1;
        }
        cur = GridBox::new_unchecked(*cur.min_arr(), max);
        boxes[out] = cur;
        out += 1;
    }
    out
}

/// Merges, along `dim` only, all boxes that agree in every other dimension and
/// touch or overlap along `dim`. Returns the new length of the prefix holding
/// the result; the order of the result is unspecified.
pub fn merge_connected_boxes_along_dim(
    boxes: &mut [GridBox],
    dim: usize,
    eff_dims: usize,
) -> usize {
    debug_assert!(dim < eff_dims.max(1));
    if boxes.len() < 2 {
        return boxes.len();
    }
    if eff_dims <= 1 {
        return merge_intervals(boxes, dim);
    }
    boxes.sort_unstable_by(|a, b| cmp_orthogonal(a, b, dim, eff_dims));
    let mut out = 0;
    let mut start = 0;
    while start < boxes.len() {
        let mut end = start + 1;
        while end < boxes.len()
            && cmp_orthogonal(&boxes[start], &boxes[end], dim, eff_dims) == Ordering::Equal
        {
            end += 1;
        }
        let merged = merge_intervals(&mut boxes[start..end], dim);
        boxes.copy_within(start..start + merged, out);
        out += merged;
        start = end;
    }
    out
}

/// Directional merge along every effective dimension, fastest first, so that
/// merged boxes extend furthest along contiguous memory. Returns the new length.
pub fn merge_connected_boxes_prefix(boxes: &mut [GridBox], eff_dims: usize) -> usize {
    let mut len = boxes.len();
    for dim in (0..eff_dims).rev() {
        len = merge_connected_boxes_along_dim(&mut boxes[..len], dim, eff_dims);
    }
    len
}

/// Merges connected boxes that agree in all but one dimension (see
/// [`merge_connected_boxes_along_dim`]), over all dimensions, in place.
pub fn merge_connected_boxes(boxes: &mut BoxVec) {
    let eff = effective_dims_of(boxes);
    let len = merge_connected_boxes_prefix(boxes, eff);
    boxes.truncate(len);
}

/// Splits `b` at every coordinate of `cuts[d]` that lies strictly inside it,
/// for the dimensions `d < cuts.len()`, appending the pieces to `out`.
pub fn dissect_box(b: &GridBox, cuts: &[SmallVec<[usize; 16]>], out: &mut BoxVec) {
    dissect_rec(*b.min_arr(), *b.max_arr(), cuts, 0, out);
}

fn dissect_rec(
    min: [usize; 3],
    max: [usize; 3],
    cuts: &[SmallVec<[usize; 16]>],
    dim: usize,
    out: &mut BoxVec,
) {
    if dim == cuts.len() {
        out.push(GridBox::new_unchecked(min, max));
        return;
    }
    let dim_cuts = &cuts[dim];
    // first cut strictly above the lower bound
    let mut k = dim_cuts.partition_point(|&c| c <= min[dim]);
    let mut start = min[dim];
    loop {
        let end = if k < dim_cuts.len() && dim_cuts[k] < max[dim] {
            k += 1;
            dim_cuts[k - 1]
        } else {
            max[dim]
        };
        let (mut lo, mut hi) = (min, max);
        lo[dim] = start;
        hi[dim] = end;
        dissect_rec(lo, hi, cuts, dim + 1, out);
        if end == max[dim] {
            break;
        }
        start = end;
    }
}

/// The sorted, unique lower and upper bounds of `boxes` along `dim`.
pub(crate) fn collect_cuts(boxes: &[GridBox], dim: usize) -> SmallVec<[usize; 16]> {
    let mut cuts: SmallVec<[usize; 16]> = SmallVec::with_capacity(boxes.len() * 2);
    for b in boxes {
        cuts.push(b.min_arr()[dim]);
        cuts.push(b.max_arr()[dim]);
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// Brings an arbitrary box list (overlapping, unordered, with empty boxes)
/// into the canonical form described in the module documentation.
pub fn normalize(boxes: &mut BoxVec) {
    boxes.retain(|b| !b.is_empty());
    if boxes.len() <= 1 {
        return;
    }
    // fast path: one box covers all the others (duplicates, a stencil clamped to a slab, ...)
    let bbox = bounding_box_of(boxes);
    if let Some(i) = boxes.iter().position(|b| *b == bbox) {
        boxes.swap(0, i);
        boxes.truncate(1);
        return;
    }
    let eff = effective_dims_of(boxes);
    match eff {
        0 => boxes.truncate(1),
        1 => {
            // sorting and merging intervals is the complete 1-D normalisation
            let len = merge_intervals(boxes, 0);
            boxes.truncate(len);
        }
        _ => {
            // cheap attempt first: many inputs are tilings that merge completely
            let len = merge_connected_boxes_prefix(boxes, eff);
            boxes.truncate(len);
            if boxes.len() == 1 {
                return;
            }
            // Dissect along all box bounds in every dimension but the fastest;
            // the pieces can then only overlap along the fastest dimension and
            // merging them yields the unique maximal tiling.
            let cuts: Cuts = (0..eff - 1).map(|d| collect_cuts(boxes, d)).collect();
            let mut dissected = BoxVec::with_capacity(boxes.len() * 2);
            for b in boxes.iter() {
                dissect_box(b, &cuts, &mut dissected);
            }
            let len = merge_connected_boxes_prefix(&mut dissected, eff);
            dissected.truncate(len);
            sort_boxes(&mut dissected);
            *boxes = dissected;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::smallvec;

    /// 2-D box in padded 3-D form.
    fn b2(min: [usize; 2], max: [usize; 2]) -> GridBox {
        GridBox::from_arrays([min[0], min[1], 0], [max[0], max[1], 1])
    }
    fn b1(min: usize, max: usize) -> GridBox {
        GridBox::from_arrays([min, 0, 0], [max, 1, 1])
    }
    fn b3(min: [usize; 3], max: [usize; 3]) -> GridBox {
        GridBox::from_arrays(min, max)
    }

    /// Deterministic shuffle so the merge must not depend on input order.
    fn shuffled(v: &[GridBox]) -> BoxVec {
        let mut out: BoxVec = v.iter().copied().collect();
        let mut state = 42u64;
        for i in (1..out.len()).rev() {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.swap(i, (state >> 33) as usize % (i + 1));
        }
        out
    }

    fn directional(unmerged: &[GridBox], dim: usize, eff: usize, expected: &[GridBox]) {
        let mut v = shuffled(unmerged);
        let len = merge_connected_boxes_along_dim(&mut v, dim, eff);
        v.truncate(len);
        sort_boxes(&mut v);
        let mut e: Vec<_> = expected.to_vec();
        sort_boxes(&mut e);
        assert_eq!(v.to_vec(), e, "merge along dim {dim}");
    }

    #[test]
    fn dissect_box_3d() {
        let input = b3([0, 0, 0], [7, 9, 5]);
        let cuts: Cuts = smallvec![smallvec![0, 4, 8, 12], smallvec![8, 9]];
        let mut out = BoxVec::new();
        dissect_box(&input, &cuts, &mut out);
        sort_boxes(&mut out);
        let mut expected = vec![
            b3([0, 0, 0], [4, 8, 5]),
            b3([0, 8, 0], [4, 9, 5]),
            b3([4, 0, 0], [7, 8, 5]),
            b3([4, 8, 0], [7, 9, 5]),
        ];
        sort_boxes(&mut expected);
        assert_eq!(out.to_vec(), expected);
    }

    #[test]
    fn directional_merge_1d() {
        directional(
            &[b1(0, 2), b1(2, 4), b1(4, 8), b1(10, 12)],
            0,
            1,
            &[b1(0, 8), b1(10, 12)],
        );
        directional(
            &[b1(0, 6), b1(2, 4), b1(8, 12), b1(10, 16), b1(16, 18)],
            0,
            1,
            &[b1(0, 6), b1(8, 18)],
        );
    }

    #[test]
    fn directional_merge_2d_non_overlapping() {
        let unmerged = [
            b2([0, 0], [2, 2]),
            b2([0, 2], [2, 4]),
            b2([0, 4], [2, 6]),
            b2([2, 2], [4, 4]),
            b2([2, 4], [4, 6]),
            b2([2, 6], [4, 8]),
            b2([4, 4], [6, 6]),
            b2([4, 6], [6, 8]),
            b2([4, 8], [6, 10]),
        ];
        directional(
            &unmerged,
            0,
            2,
            &[
                b2([0, 0], [2, 2]),
                b2([0, 2], [4, 4]),
                b2([0, 4], [6, 6]),
                b2([2, 6], [6, 8]),
                b2([4, 8], [6, 10]),
            ],
        );
        directional(
            &unmerged,
            1,
            2,
            &[b2([0, 0], [2, 6]), b2([2, 2], [4, 8]), b2([4, 4], [6, 10])],
        );
    }

    #[test]
    fn directional_merge_2d_overlapping() {
        let unmerged = [
            b2([0, 0], [12, 3]),
            b2([0, 1], [12, 4]),
            b2([0, 4], [12, 6]),
            b2([0, 8], [12, 10]),
            b2([0, 0], [3, 12]),
            b2([1, 0], [4, 12]),
            b2([4, 0], [6, 12]),
            b2([8, 0], [10, 12]),
        ];
        directional(
            &unmerged,
            0,
            2,
            &[
                b2([0, 0], [12, 3]),
                b2([0, 1], [12, 4]),
                b2([0, 4], [12, 6]),
                b2([0, 8], [12, 10]),
                b2([0, 0], [6, 12]),
                b2([8, 0], [10, 12]),
            ],
        );
        directional(
            &unmerged,
            1,
            2,
            &[
                b2([0, 0], [12, 6]),
                b2([0, 8], [12, 10]),
                b2([0, 0], [3, 12]),
                b2([1, 0], [4, 12]),
                b2([4, 0], [6, 12]),
                b2([8, 0], [10, 12]),
            ],
        );
    }

    #[test]
    fn directional_merge_3d() {
        let unmerged = [
            b3([0, 0, 2], [2, 2, 4]),
            b3([0, 2, 0], [2, 4, 2]),
            b3([0, 2, 2], [2, 4, 4]),
            b3([2, 0, 0], [4, 2, 2]),
            b3([2, 0, 2], [4, 2, 4]),
            b3([2, 2, 0], [4, 4, 2]),
            b3([2, 2, 2], [4, 4, 4]),
        ];
        directional(
            &unmerged,
            0,
            3,
            &[
                b3([0, 0, 2], [4, 2, 4]),
                b3([0, 2, 0], [4, 4, 2]),
                b3([0, 2, 2], [4, 4, 4]),
                b3([2, 0, 0], [4, 2, 2]),
            ],
        );
        directional(
            &unmerged,
            1,
            3,
            &[
                b3([0, 2, 0], [2, 4, 2]),
                b3([0, 0, 2], [2, 4, 4]),
                b3([2, 0, 0], [4, 4, 2]),
                b3([2, 0, 2], [4, 4, 4]),
            ],
        );
        directional(
            &unmerged,
            2,
            3,
            &[
                b3([0, 0, 2], [2, 2, 4]),
                b3([0, 2, 0], [2, 4, 4]),
                b3([2, 0, 0], [4, 2, 4]),
                b3([2, 2, 0], [4, 4, 4]),
            ],
        );
    }

    fn normalized(v: &[GridBox]) -> Vec<GridBox> {
        let mut bv: BoxVec = v.iter().copied().collect();
        normalize(&mut bv);
        bv.to_vec()
    }

    #[test]
    fn normalization_removes_overlaps_2d() {
        let input = [b2([0, 0], [4, 4]), b2([2, 2], [6, 6]), b2([4, 8], [5, 9])];
        let mut expected = vec![
            b2([0, 0], [2, 4]),
            b2([2, 0], [4, 6]),
            b2([4, 2], [6, 6]),
            b2([4, 8], [5, 9]),
        ];
        sort_boxes(&mut expected);
        assert_eq!(normalized(&input), expected);
    }

    #[test]
    fn normalization_maximizes_fast_dimension_2d() {
        let input = [
            b2([0, 0], [8, 2]),
            b2([0, 2], [2, 4]),
            b2([6, 2], [8, 4]),
            b2([0, 4], [8, 6]),
        ];
        let mut expected = vec![
            b2([0, 0], [2, 6]),
            b2([2, 0], [6, 2]),
            b2([2, 4], [6, 6]),
            b2([6, 0], [8, 6]),
        ];
        sort_boxes(&mut expected);
        assert_eq!(normalized(&input), expected);
    }

    #[test]
    fn normalization_removes_fully_covered_boxes() {
        for dims in 1..=3 {
            let pad = |v: usize, p: usize| -> [usize; 3] {
                let mut a = [p; 3];
                a[..dims].fill(v);
                a
            };
            let bx = |lo: usize, hi: usize| GridBox::from_arrays(pad(lo, 0), pad(hi, 1));
            let input = [bx(1, 9), bx(1, 7), bx(3, 7)];
            assert_eq!(normalized(&input), vec![bx(1, 9)], "dims {dims}");
        }
    }

    #[test]
    fn normalization_0d() {
        assert!(normalized(&[]).is_empty());
        assert_eq!(normalized(&[GridBox::UNIT]), vec![GridBox::UNIT]);
        assert_eq!(
            normalized(&[GridBox::UNIT, GridBox::UNIT]),
            vec![GridBox::UNIT]
        );
        assert!(normalized(&[GridBox::EMPTY, GridBox::EMPTY]).is_empty());
    }
}
