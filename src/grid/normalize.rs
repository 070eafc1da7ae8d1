//! Box-list primitives behind [`Region`](super::Region): directional merging,
//! dissection along cut lines and normalisation to the canonical form.
//!
//! The canonical form of a point set is the unique box list that
//! 1. has every box as long as possible along dimension 2 (the fastest), then
//!    along dimension 1, then along dimension 0;
//! 2. has no two intersecting boxes;
//! 3. has no empty box;
//! 4. is sorted by the box order (min, then max, slowest dimension first).

use smallvec::SmallVec;

use super::grid_box::{BoxVec, GridBox, effective_dims_of};

/// Sorted, deduplicated cut coordinates per dimension.
pub(crate) type Cuts = SmallVec<[SmallVec<[usize; 16]>; 3]>;

/// Sorts `boxes` by `(key, min[dim])`, where `key` holds the extents in every
/// dimension but `dim`, then replaces each run of boxes with equal keys whose
/// intervals along `dim` touch or overlap by their union, compacting the
/// result to the front. Returns the new length.
///
/// Generic over the key so that every (dimension, effective dimensionality)
/// pair gets a comparator on a fixed tuple of integers.
#[inline(always)]
fn merge_by_key<K: Ord + Copy>(
    boxes: &mut [GridBox],
    dim: usize,
    key: impl Fn(&GridBox) -> K,
) -> usize {
    if boxes.len() < 2 {
        return boxes.len();
    }
    boxes.sort_unstable_by_key(|b| (key(b), b.min_arr()[dim]));
    let mut out = 0;
    let mut cur = boxes[0];
    let mut cur_key = key(&cur);
    let mut cur_max = cur.max_arr()[dim];
    for i in 1..boxes.len() {
        let b = boxes[i];
        let k = key(&b);
        if k == cur_key && b.min_arr()[dim] <= cur_max {
            cur_max = cur_max.max(b.max_arr()[dim]);
        } else {
            boxes[out] = with_max(&cur, dim, cur_max);
            out += 1;
            cur = b;
            cur_key = k;
            cur_max = b.max_arr()[dim];
        }
    }
    boxes[out] = with_max(&cur, dim, cur_max);
    out + 1
}

#[inline(always)]
fn with_max(b: &GridBox, dim: usize, max_d: usize) -> GridBox {
    let mut max = *b.max_arr();
    max[dim] = max_d;
    GridBox::new_unchecked(*b.min_arr(), max)
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
    let lo = |b: &GridBox, d: usize| b.min_arr()[d];
    let hi = |b: &GridBox, d: usize| b.max_arr()[d];
    match (eff_dims, dim) {
        (0 | 1, _) => merge_by_key(boxes, dim, |_| ()),
        (2, 0) => merge_by_key(boxes, 0, |b| (lo(b, 1), hi(b, 1))),
        (2, _) => merge_by_key(boxes, 1, |b| (lo(b, 0), hi(b, 0))),
        (_, 0) => merge_by_key(boxes, 0, |b| (lo(b, 1), hi(b, 1), lo(b, 2), hi(b, 2))),
        (_, 1) => merge_by_key(boxes, 1, |b| (lo(b, 0), hi(b, 0), lo(b, 2), hi(b, 2))),
        (_, _) => merge_by_key(boxes, 2, |b| (lo(b, 0), hi(b, 0), lo(b, 1), hi(b, 1))),
    }
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

/// Sorts pairwise disjoint boxes of effective dimensionality at most
/// `eff_dims` into the canonical order. Disjoint non-empty boxes have
/// distinct lower corners, and all boxes agree (`[0, 1)`) in the dimensions
/// from `eff_dims` on, so the lower corner's effective part is a complete key.
pub(crate) fn sort_disjoint_boxes(boxes: &mut [GridBox], eff_dims: usize) {
    let lo = |b: &GridBox, d: usize| b.min_arr()[d];
    match eff_dims {
        0 | 1 => boxes.sort_unstable_by_key(|b| lo(b, 0)),
        2 => boxes.sort_unstable_by_key(|b| (lo(b, 0), lo(b, 1))),
        _ => boxes.sort_unstable_by_key(|b| (lo(b, 0), lo(b, 1), lo(b, 2))),
    }
}

/// Calls `f(start, end)` for every piece of `[lo, hi)` cut at the coordinates
/// of the sorted `cuts` that lie strictly inside it, in increasing order.
#[inline(always)]
fn for_each_piece(cuts: &[usize], lo: usize, hi: usize, mut f: impl FnMut(usize, usize)) {
    // first cut strictly above the lower bound
    let mut k = cuts.partition_point(|&c| c <= lo);
    let mut start = lo;
    while k < cuts.len() && cuts[k] < hi {
        f(start, cuts[k]);
        start = cuts[k];
        k += 1;
    }
    f(start, hi);
}

/// Splits `b` at every coordinate of `cuts[d]` that lies strictly inside it,
/// for the dimensions `d < cuts.len()`, appending the pieces to `out`.
pub fn dissect_box(b: &GridBox, cuts: &[SmallVec<[usize; 16]>], out: &mut BoxVec) {
    let (min, max) = (*b.min_arr(), *b.max_arr());
    let piece = |lo: [usize; 3], hi: [usize; 3]| GridBox::new_unchecked(lo, hi);
    match cuts {
        [] => out.push(*b),
        [c0] => for_each_piece(c0, min[0], max[0], |s0, e0| {
            out.push(piece([s0, min[1], min[2]], [e0, max[1], max[2]]))
        }),
        [c0, c1] => for_each_piece(c0, min[0], max[0], |s0, e0| {
            for_each_piece(c1, min[1], max[1], |s1, e1| {
                out.push(piece([s0, s1, min[2]], [e0, e1, max[2]]))
            })
        }),
        [c0, c1, c2, ..] => for_each_piece(c0, min[0], max[0], |s0, e0| {
            for_each_piece(c1, min[1], max[1], |s1, e1| {
                for_each_piece(c2, min[2], max[2], |s2, e2| {
                    out.push(piece([s0, s1, s2], [e0, e1, e2]))
                })
            })
        }),
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

/// Canonical form, in the dimensions `axis..eff_dims`, of non-empty boxes that
/// agree in every dimension below `axis`; appended to `out` in canonical order.
///
/// Sweeps along `axis`: the boxes are bucketed into the slabs between
/// consecutive box bounds, the cross-section of every slab is brought into
/// canonical form recursively, and a cross-section box that also appears in
/// the previous slab extends that slab's output box instead of starting a new
/// one. Output boxes are created in order of (slab, cross-section order),
/// which is the canonical order. Bucketing keeps the input order, so when
/// `boxes` is sorted by the lower bound along the fastest effective dimension,
/// the innermost interval lists arrive sorted.
fn sweep(boxes: &mut [GridBox], axis: usize, eff_dims: usize, out: &mut BoxVec) {
    if boxes.len() == 1 {
        out.push(boxes[0]);
        return;
    }
    if axis + 1 == eff_dims {
        merge_intervals_into(boxes, axis, |b| out.push(b));
        return;
    }
    let cuts = collect_cuts(boxes, axis);
    let slabs = cuts.len() - 1;
    // slab range of every box (its bounds are among the cuts), and the
    // bucket offsets of the pieces per slab
    let slab_of = |c: usize| cuts.partition_point(|&x| x < c);
    let mut ranges: SmallVec<[(usize, usize); 8]> = SmallVec::with_capacity(boxes.len());
    let mut offsets: SmallVec<[usize; 16]> = SmallVec::new();
    offsets.resize(slabs + 1, 0);
    for b in boxes.iter() {
        let (s0, s1) = (slab_of(b.min_arr()[axis]), slab_of(b.max_arr()[axis]));
        ranges.push((s0, s1));
        for count in &mut offsets[s0 + 1..=s1] {
            *count += 1;
        }
    }
    for s in 0..slabs {
        offsets[s + 1] += offsets[s];
    }
    // inline for the few pieces of small inputs (a heap block cost more than their sweep)
    let mut pieces: SmallVec<[GridBox; 8]> = SmallVec::from_elem(GridBox::EMPTY, offsets[slabs]);
    let mut fill: SmallVec<[usize; 16]> = SmallVec::from_slice(&offsets[..slabs]);
    for (b, &(s0, s1)) in boxes.iter().zip(&ranges) {
        for s in s0..s1 {
            let (mut min, mut max) = (*b.min_arr(), *b.max_arr());
            min[axis] = cuts[s];
            max[axis] = cuts[s + 1];
            pieces[fill[s]] = GridBox::new_unchecked(min, max);
            fill[s] += 1;
        }
    }
    // indices into `out` of the boxes reaching the lower bound of the
    // current slab, in cross-section order
    let mut prev: SmallVec<[usize; 8]> = SmallVec::new();
    let mut cur: SmallVec<[usize; 8]> = SmallVec::new();
    let mut section = BoxVec::new();
    let inner = axis + 1..eff_dims;
    for s in 0..slabs {
        let items = &mut pieces[offsets[s]..offsets[s + 1]];
        cur.clear();
        let mut p = 0;
        // a cross-section box `c` of slab `s`: extends the equal box of the
        // previous slab, or starts a new output box
        let mut emit = |c: GridBox, out: &mut BoxVec| {
            let c_min = &c.min_arr()[inner.clone()];
            while p < prev.len() && out[prev[p]].min_arr()[inner.clone()] < *c_min {
                p += 1;
            }
            if p < prev.len() {
                let o = &out[prev[p]];
                if o.min_arr()[inner.clone()] == *c_min
                    && o.max_arr()[inner.clone()] == c.max_arr()[inner.clone()]
                {
                    out[prev[p]] = with_max(o, axis, cuts[s + 1]);
                    cur.push(prev[p]);
                    p += 1;
                    return;
                }
            }
            cur.push(out.len());
            out.push(c);
        };
        if items.len() <= 1 {
            if let Some(&c) = items.first() {
                emit(c, out);
            }
        } else if axis + 2 == eff_dims {
            merge_intervals_into(items, axis + 1, |c| emit(c, out));
        } else {
            section.clear();
            sweep(items, axis + 1, eff_dims, &mut section);
            for c in &section {
                emit(*c, out);
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
}

/// [`sweep`] for the union of two non-empty 2-D boxes (the union of a read and a write, as
/// the chain topology's transposed read and one-to-one write): the same slabs along dimension 0
/// and the same extension of the previous slab's boxes, with at most three slabs of at most two
/// intervals on the stack instead of the general sweep's lists (a fifth of its instructions).
fn sweep_two_boxes_2d(a: GridBox, b: GridBox, out: &mut BoxVec) {
    let interval = |x: &GridBox| (x.min_arr()[1], x.max_arr()[1]);
    let mut cuts = [
        a.min_arr()[0],
        a.max_arr()[0],
        b.min_arr()[0],
        b.max_arr()[0],
    ];
    cuts.sort_unstable();
    let (z_min, z_max) = (a.min_arr()[2], a.max_arr()[2]);
    // indices into `out` of the boxes reaching the lower bound of the current slab, in order
    let mut prev: SmallVec<[usize; 2]> = SmallVec::new();
    for k in 0..cuts.len() - 1 {
        let (lo, hi) = (cuts[k], cuts[k + 1]);
        if lo == hi {
            continue;
        }
        let spans = |x: &GridBox| x.min_arr()[0] <= lo && lo < x.max_arr()[0];
        // the slab's cross-section: one or two intervals along dimension 1, in order
        let mut section: SmallVec<[(usize, usize); 2]> = SmallVec::new();
        match (spans(&a), spans(&b)) {
            (true, true) => {
                let (first, second) = if interval(&a) <= interval(&b) {
                    (interval(&a), interval(&b))
                } else {
                    (interval(&b), interval(&a))
                };
                if second.0 <= first.1 {
                    section.push((first.0, first.1.max(second.1)));
                } else {
                    section.push(first);
                    section.push(second);
                }
            }
            (true, false) => section.push(interval(&a)),
            (false, true) => section.push(interval(&b)),
            (false, false) => {}
        }
        let mut cur: SmallVec<[usize; 2]> = SmallVec::new();
        let mut p = 0;
        for (min1, max1) in section {
            while p < prev.len() && out[prev[p]].min_arr()[1] < min1 {
                p += 1;
            }
            if p < prev.len() && interval(&out[prev[p]]) == (min1, max1) {
                out[prev[p]] = with_max(&out[prev[p]], 0, hi);
                cur.push(prev[p]);
                p += 1;
            } else {
                cur.push(out.len());
                out.push(GridBox::new_unchecked([lo, min1, z_min], [hi, max1, z_max]));
            }
        }
        prev = cur;
    }
}

/// Sorts boxes that agree in every dimension but `dim` by their lower bound
/// along it (a no-op on sorted input) and passes on the unions of each run of
/// touching or overlapping ones, in order.
#[inline(always)]
fn merge_intervals_into(boxes: &mut [GridBox], dim: usize, mut f: impl FnMut(GridBox)) {
    if !boxes.is_sorted_by_key(|b| b.min_arr()[dim]) {
        boxes.sort_unstable_by_key(|b| b.min_arr()[dim]);
    }
    let mut cur = boxes[0];
    let mut cur_max = cur.max_arr()[dim];
    for b in &boxes[1..] {
        if b.min_arr()[dim] <= cur_max {
            cur_max = cur_max.max(b.max_arr()[dim]);
        } else {
            f(with_max(&cur, dim, cur_max));
            cur = *b;
            cur_max = b.max_arr()[dim];
        }
    }
    f(with_max(&cur, dim, cur_max));
}

/// Bounding box of a non-empty list of non-empty boxes.
fn bounding_box_of_non_empty(boxes: &[GridBox]) -> GridBox {
    let (mut min, mut max) = (*boxes[0].min_arr(), *boxes[0].max_arr());
    for b in &boxes[1..] {
        for d in 0..3 {
            min[d] = min[d].min(b.min_arr()[d]);
            max[d] = max[d].max(b.max_arr()[d]);
        }
    }
    GridBox::new_unchecked(min, max)
}

/// Brings an arbitrary box list (overlapping, unordered, with empty boxes)
/// into the canonical form described in the module documentation.
pub fn normalize(boxes: &mut BoxVec) {
    if boxes.iter().any(GridBox::is_empty) {
        boxes.retain(|b| !b.is_empty());
    }
    if boxes.len() <= 1 {
        return;
    }
    // fast path: one box covers all the others (duplicates, a stencil clamped to a slab, ...)
    let bbox = bounding_box_of_non_empty(boxes);
    if let Some(i) = boxes.iter().position(|b| *b == bbox) {
        boxes.swap(0, i);
        boxes.truncate(1);
        return;
    }
    // the bounding box reaches the largest upper bound in every dimension
    let eff = bbox.effective_dims();
    match eff {
        0 => boxes.truncate(1),
        1 => {
            // sorting and merging intervals is the complete 1-D normalisation
            let len = merge_connected_boxes_along_dim(boxes, 0, 1);
            boxes.truncate(len);
        }
        _ => {
            if boxes.len() == 2 {
                // Two boxes (the union of a read and a write, as a transposed read and its
                // one-to-one write): their union is a box exactly when it fills the bounding
                // box; otherwise the directional merge cannot join them and is skipped.
                let [a, b] = [boxes[0], boxes[1]];
                let union_area = a.range().size_u128() + b.range().size_u128()
                    - a.intersection(&b).range().size_u128();
                if union_area == bbox.range().size_u128() {
                    boxes.truncate(1);
                    boxes[0] = bbox;
                    return;
                }
                if eff == 2 {
                    let mut out = BoxVec::new();
                    sweep_two_boxes_2d(a, b, &mut out);
                    *boxes = out;
                    return;
                }
            } else {
                // Tilings (the boxes' areas add up to at least the bounding box's)
                // often merge into one box without dissection: try that first.
                let area: u128 = boxes.iter().map(|b| b.range().size_u128()).sum();
                if area >= bbox.range().size_u128() {
                    let len = merge_connected_boxes_prefix(boxes, eff);
                    boxes.truncate(len);
                    if len == 1 {
                        return;
                    }
                }
            }
            // the sweep's innermost interval lists then arrive sorted
            boxes.sort_unstable_by_key(|b| b.min_arr()[eff - 1]);
            let mut out = BoxVec::with_capacity(boxes.len());
            sweep(boxes, 0, eff, &mut out);
            *boxes = out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::grid_box::sort_boxes;
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
    fn two_boxes_normalize_to_their_bounding_box_exactly_when_they_fill_it() {
        // overlapping along the only dimension they differ in: one box
        assert_eq!(
            normalized(&[b2([0, 0], [2, 3]), b2([1, 0], [4, 3])]),
            vec![b2([0, 0], [4, 3])]
        );
        // touching: one box
        assert_eq!(
            normalized(&[b2([0, 2], [2, 3]), b2([0, 0], [2, 2])]),
            vec![b2([0, 0], [2, 3])]
        );
        // a row and a column crossing (the chain topology's read and write): an L, dissected
        assert_eq!(
            normalized(&[b2([0, 0], [1, 2]), b2([0, 0], [2, 1])]),
            vec![b2([0, 0], [1, 2]), b2([1, 0], [2, 1])]
        );
        // apart: both, in box order
        assert_eq!(
            normalized(&[b2([3, 3], [4, 4]), b2([0, 0], [1, 1])]),
            vec![b2([0, 0], [1, 1]), b2([3, 3], [4, 4])]
        );
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
