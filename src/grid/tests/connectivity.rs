//! Celerity's instruction_graph_grid_tests, rewritten, plus property tests.

use proptest::prelude::*;

use super::*;
use crate::grid::sort_boxes;
use crate::grid::test_util::{PointSet, arb_boxes, arb_dims, b1, b2, b3};

#[test]
fn edge_connectivity() {
    assert!(boxes_edge_connected(&GridBox::UNIT, &GridBox::UNIT));

    let a = b1(10, 20);
    for (lo, hi) in [
        (0, 10),
        (9, 10),
        (10, 11),
        (10, 20),
        (8, 12),
        (19, 20),
        (20, 21),
        (20, 30),
    ] {
        assert!(boxes_edge_connected(&a, &b1(lo, hi)), "{lo}..{hi}");
    }
    assert!(!boxes_edge_connected(&GridBox::EMPTY, &GridBox::EMPTY));
    for (lo, hi) in [(0, 0), (0, 9), (21, 22), (21, 30)] {
        assert!(!boxes_edge_connected(&a, &b1(lo, hi)), "{lo}..{hi}");
    }

    let q1 = b2([10, 10], [20, 20]);
    let q2 = b2([20, 10], [30, 20]);
    let q3 = b2([10, 20], [20, 30]);
    let q4 = b2([20, 20], [30, 30]);
    for (x, y) in [(q1, q2), (q1, q3), (q2, q4), (q3, q4)] {
        assert!(boxes_edge_connected(&x, &y) && boxes_edge_connected(&y, &x));
    }
    for (x, y) in [(q1, q4), (q2, q3)] {
        assert!(!boxes_edge_connected(&x, &y) && !boxes_edge_connected(&y, &x));
    }
    let left = b2([10, 0], [30, 9]);
    let right = b2([10, 31], [30, 40]);
    for q in [q1, q2, q3, q4] {
        assert!(!boxes_edge_connected(&q, &left) && !boxes_edge_connected(&q, &right));
    }

    let q = |i: usize| {
        let o = [
            10 + 10 * (i & 1),
            10 + 10 * ((i >> 1) & 1),
            10 + 10 * ((i >> 2) & 1),
        ];
        b3(o, [o[0] + 10, o[1] + 10, o[2] + 10])
    };
    // q(i) and q(j) share a face iff their indices differ in exactly one bit
    for i in 0..8usize {
        for j in 0..8 {
            let connected = (i ^ j).count_ones() <= 1;
            assert_eq!(boxes_edge_connected(&q(i), &q(j)), connected, "{i} {j}");
        }
    }
}

fn sorted(mut v: BoxVec) -> Vec<GridBox> {
    sort_boxes(&mut v);
    v.to_vec()
}

#[test]
fn connected_bounding_boxes() {
    assert!(connected_subregion_bounding_boxes(&Region::new()).is_empty());
    assert_eq!(
        connected_subregion_bounding_boxes(&Region::from_box(GridBox::UNIT)).to_vec(),
        vec![GridBox::UNIT]
    );

    let r1 = Region::from_boxes([
        b1(0, 5),
        b1(6, 10),
        b1(10, 15),
        b1(19, 25),
        b1(12, 21),
        b1(30, 39),
        b1(35, 40),
    ]);
    assert_eq!(
        sorted(connected_subregion_bounding_boxes(&r1)),
        vec![b1(0, 5), b1(6, 25), b1(30, 40)]
    );

    let r2 = Region::from_boxes([
        b2([5, 0], [10, 15]),
        b2([10, 10], [20, 30]),
        b2([20, 10], [30, 20]),
        b2([25, 25], [40, 30]),
        b2([20, 30], [25, 35]),
    ]);
    assert_eq!(
        sorted(connected_subregion_bounding_boxes(&r2)),
        vec![
            b2([5, 0], [30, 30]),
            b2([20, 30], [25, 35]),
            b2([25, 25], [40, 30])
        ]
    );

    let r3 = Region::from_boxes([
        b3([10, 10, 10], [20, 20, 30]),
        b3([20, 10, 10], [30, 20, 20]),
        b3([10, 20, 10], [20, 30, 20]),
        b3([21, 21, 21], [29, 29, 29]),
        b3([0, 0, 10], [10, 10, 30]),
        b3([20, 20, 30], [25, 25, 35]),
    ]);
    assert_eq!(
        sorted(connected_subregion_bounding_boxes(&r3)),
        vec![
            b3([0, 0, 10], [10, 10, 30]),
            b3([10, 10, 10], [30, 30, 30]),
            b3([20, 20, 30], [25, 25, 35]),
            b3([21, 21, 21], [29, 29, 29]),
        ]
    );
}

#[test]
fn merging_overlapping_bounding_boxes() {
    let mut v: BoxVec = [
        b2([0, 0], [2, 2]),
        b2([5, 5], [6, 6]),
        b2([1, 1], [3, 3]),
        b2([2, 4], [6, 5]),
    ]
    .into_iter()
    .collect();
    merge_overlapping_bounding_boxes(&mut v);
    assert_eq!(
        sorted(v),
        vec![b2([0, 0], [3, 3]), b2([2, 4], [6, 5]), b2([5, 5], [6, 6])]
    );

    let mut v: BoxVec = [b2([0, 0], [2, 2]), b2([3, 0], [5, 5]), b2([1, 1], [4, 2])]
        .into_iter()
        .collect();
    merge_overlapping_bounding_boxes(&mut v);
    assert_eq!(v.to_vec(), vec![b2([0, 0], [5, 5])]);
}

#[test]
fn communicator_compatible_boxes() {
    let max = COMMUNICATOR_MAX_COORDINATE;
    let huge = 3 * max + 100;

    let full = b3([0, 0, 0], [huge, 2, 3]);
    assert_eq!(
        split_into_communicator_compatible_boxes(&full.range(), &full).to_vec(),
        vec![
            b3([0, 0, 0], [max, 2, 3]),
            b3([max, 0, 0], [2 * max, 2, 3]),
            b3([2 * max, 0, 0], [3 * max, 2, 3]),
            b3([3 * max, 0, 0], [huge, 2, 3]),
        ]
    );

    let access = b3([999, 0, 0], [999 + max, 2, 3]);
    assert_eq!(
        split_into_communicator_compatible_boxes(&Range::new(huge, 2, 3), &access).to_vec(),
        vec![access]
    );

    let access = b3([999, 0, 0], [999 + huge, 2, 3]);
    assert_eq!(
        split_into_communicator_compatible_boxes(&Range::new(2 * huge, 2, 3), &access).to_vec(),
        vec![
            b3([999, 0, 0], [999 + max, 2, 3]),
            b3([999 + max, 0, 0], [999 + 2 * max, 2, 3]),
            b3([999 + 2 * max, 0, 0], [999 + 3 * max, 2, 3]),
            b3([999 + 3 * max, 0, 0], [999 + huge, 2, 3]),
        ]
    );

    for d2 in [1, 2] {
        let access = b3([3, 10, 0], [8, 13, d2]);
        let expected: Vec<_> = (3..8).map(|x| b3([x, 10, 0], [x + 1, 13, d2])).collect();
        assert_eq!(
            split_into_communicator_compatible_boxes(&Range::new(10, huge, d2), &access).to_vec(),
            expected
        );
        assert!(!communicator_split_is_excessive(
            &Range::new(10, huge, d2),
            &access
        ));
    }
}

#[test]
fn communicator_split_of_a_column_is_excessive() {
    let buffer = Range::new(4096, COMMUNICATOR_MAX_COORDINATE + 1, 1);
    let column = b3([0, 0, 0], [4096, 1, 1]);
    let split = split_into_communicator_compatible_boxes(&buffer, &column);
    assert_eq!(split.len(), 4096);
    for (y, b) in split.iter().enumerate() {
        assert_eq!(*b, b3([y, 0, 0], [y + 1, 1, 1]));
    }
    assert!(communicator_split_is_excessive(&buffer, &column));
}

fn regions2(v: &[&[([usize; 2], [usize; 2])]]) -> Vec<Region> {
    v.iter()
        .map(|bs| Region::from_boxes(bs.iter().map(|&(a, b)| b2(a, b))))
        .collect()
}

#[test]
fn symmetric_split_non_overlapping_and_duplicates() {
    let input = regions2(&[
        &[([0, 0], [10, 10])],
        &[([10, 0], [20, 10])],
        &[([0, 10], [10, 20])],
        &[([10, 10], [20, 20])],
    ]);
    let mut result = input.clone();
    symmetrically_split_overlapping_regions(&mut result);
    assert_eq!(result, input);

    let input = regions2(&[&[([0, 0], [10, 10])][..]; 3]);
    let mut result = input.clone();
    symmetrically_split_overlapping_regions(&mut result);
    assert_eq!(result, vec![input[0].clone()]);
}

#[test]
fn symmetric_split_nested_and_partial() {
    let mut result = regions2(&[
        &[([0, 0], [20, 20])],
        &[([0, 0], [15, 15])],
        &[([5, 5], [15, 15])],
        &[([8, 8], [12, 12])],
    ]);
    symmetrically_split_overlapping_regions(&mut result);
    let expected = regions2(&[
        &[([0, 15], [15, 20]), ([15, 0], [20, 20])],
        &[([0, 0], [5, 15]), ([5, 0], [15, 5])],
        &[
            ([5, 5], [8, 15]),
            ([8, 5], [12, 8]),
            ([8, 12], [12, 15]),
            ([12, 5], [15, 15]),
        ],
        &[([8, 8], [12, 12])],
    ]);
    assert_eq!(result, expected);

    let mut result = regions2(&[
        &[([0, 8], [10, 18]), ([8, 0], [18, 10])],
        &[([5, 13], [15, 23]), ([13, 5], [23, 15])],
    ]);
    symmetrically_split_overlapping_regions(&mut result);
    let expected = regions2(&[
        &[
            ([0, 8], [5, 18]),
            ([5, 8], [8, 13]),
            ([8, 0], [10, 13]),
            ([10, 0], [13, 10]),
            ([13, 0], [18, 5]),
        ],
        &[
            ([5, 18], [10, 23]),
            ([10, 13], [13, 23]),
            ([13, 10], [15, 23]),
            ([15, 10], [18, 15]),
            ([18, 5], [23, 15]),
        ],
        &[([5, 13], [10, 18]), ([13, 5], [18, 10])],
    ]);
    assert_eq!(result, expected);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// The split regions are pairwise disjoint, cover the input union, and each
    /// input region is a union of some outputs.
    #[test]
    fn symmetric_split_decomposes(
        (extent, lists) in arb_dims().prop_flat_map(|e| (Just(e), prop::collection::vec(arb_boxes(e, 3), 0..5)))
    ) {
        let input: Vec<Region> = lists.iter().map(|l| Region::from_boxes(l.iter().copied())).collect();
        let mut result = input.clone();
        symmetrically_split_overlapping_regions(&mut result);
        let mut acc = Region::new();
        for r in &result {
            prop_assert!(!r.is_empty());
            prop_assert!(!acc.intersects(r));
            acc = acc.union(r);
            for i in &input {
                prop_assert!(i.covers(r) || !i.intersects(r));
            }
        }
        let all = input.iter().fold(Region::new(), |a, r| a.union(r));
        prop_assert_eq!(acc, all);
        let _ = extent;
    }

    /// Connected-part bounding boxes cover the region, and boxes of different
    /// parts are not connected through region points.
    #[test]
    fn connected_parts_cover_region(
        (extent, boxes) in arb_dims().prop_flat_map(|e| (Just(e), arb_boxes(e, 6)))
    ) {
        let r = Region::from_boxes(boxes.iter().copied());
        let bbs = connected_subregion_bounding_boxes(&r);
        let covered = PointSet::from_boxes(extent, &bbs);
        let points = PointSet::from_boxes(extent, r.boxes());
        prop_assert!(points.zip(&covered, |p, c| p && !c).count() == 0);
        // each region box lies within exactly one part's bounding box
        for b in r.boxes() {
            prop_assert!(bbs.iter().any(|bb| bb.covers(b)));
        }
        let mut merged: BoxVec = boxes.iter().copied().collect();
        merge_overlapping_bounding_boxes(&mut merged);
        for (i, a) in merged.iter().enumerate() {
            for c in &merged[i + 1..] {
                prop_assert!(!a.intersects(c));
            }
        }
        for b in boxes.iter().filter(|b| !b.is_empty()) {
            prop_assert!(merged.iter().any(|m| m.covers(b)));
        }
    }
}
