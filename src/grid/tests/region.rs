//! Unit tests (Celerity's grid_tests, rewritten) and property tests of
//! [`Region`] against a point-by-point oracle.

use proptest::prelude::*;

use super::*;
use crate::grid::sort_boxes;
use crate::grid::test_util::{PointSet, arb_box, arb_boxes, arb_dims, b2};

fn r2(boxes: &[([usize; 2], [usize; 2])]) -> Region {
    Region::from_boxes(boxes.iter().map(|&(a, b)| b2(a, b)))
}

fn sorted(mut v: Vec<GridBox>) -> Vec<GridBox> {
    sort_boxes(&mut v);
    v
}

#[test]
fn union_2d() {
    let ra = r2(&[
        ([0, 0], [3, 3]),
        ([4, 0], [7, 3]),
        ([0, 7], [1, 9]),
        ([4, 7], [6, 9]),
    ]);
    let rb = r2(&[
        ([2, 3], [5, 6]),
        ([6, 3], [9, 6]),
        ([1, 7], [2, 9]),
        ([4, 7], [6, 9]),
    ]);
    let expected = sorted(vec![
        b2([0, 0], [2, 3]),
        b2([2, 0], [3, 6]),
        b2([3, 3], [4, 6]),
        b2([4, 0], [5, 6]),
        b2([5, 0], [6, 3]),
        b2([6, 0], [7, 6]),
        b2([7, 3], [9, 6]),
        b2([0, 7], [2, 9]),
        b2([4, 7], [6, 9]),
    ]);
    assert_eq!(ra.union(&rb).boxes(), &expected[..]);
}

#[test]
fn intersection_2d() {
    let ra = r2(&[
        ([2, 2], [6, 6]),
        ([6, 2], [8, 4]),
        ([8, 0], [9, 4]),
        ([0, 12], [3, 14]),
        ([2, 9], [4, 11]),
    ]);
    let rb = r2(&[
        ([3, 4], [7, 8]),
        ([7, 1], [8, 4]),
        ([8, 2], [9, 5]),
        ([2, 9], [3, 14]),
    ]);
    let expected = sorted(vec![
        b2([3, 4], [6, 6]),
        b2([7, 2], [9, 4]),
        b2([2, 9], [3, 11]),
        b2([2, 12], [3, 14]),
    ]);
    assert_eq!(ra.intersection(&rb).boxes(), &expected[..]);
}

#[test]
fn difference_of_equal_regions_is_empty() {
    // an L of two boxes built in two ways (a transposed read joined with a one-to-one write)
    let l = r2(&[([0, 0], [1, 2]), ([0, 0], [2, 1])]);
    let same = Region::from_box(b2([0, 0], [1, 2])).union(&Region::from_box(b2([1, 0], [2, 1])));
    assert_eq!(l.boxes().len(), 2);
    assert!(l.difference(&same).is_empty());
    assert_eq!(
        l.difference(&r2(&[([0, 0], [1, 2])])).boxes(),
        &[b2([1, 0], [2, 1])]
    );
}

#[test]
fn difference_2d() {
    let ra = r2(&[([0, 0], [6, 6]), ([1, 8], [4, 11]), ([8, 2], [10, 4])]);
    let rb = r2(&[
        ([1, 1], [3, 3]),
        ([2, 2], [4, 4]),
        ([0, 9], [2, 12]),
        ([4, 11], [6, 13]),
        ([7, 1], [11, 5]),
    ]);
    let expected = sorted(vec![
        b2([0, 0], [1, 6]),
        b2([1, 0], [3, 1]),
        b2([3, 0], [4, 2]),
        b2([1, 3], [2, 6]),
        b2([2, 4], [4, 6]),
        b2([4, 0], [6, 6]),
        b2([1, 8], [2, 9]),
        b2([2, 8], [4, 11]),
    ]);
    assert_eq!(ra.difference(&rb).boxes(), &expected[..]);
}

#[test]
fn set_operations_0d() {
    let empty = Region::new();
    let unit = Region::from_box(GridBox::UNIT);
    assert!(empty.is_empty() && !unit.is_empty());
    assert!(empty.union(&empty).is_empty());
    assert!(!empty.union(&unit).is_empty());
    assert!(!unit.union(&empty).is_empty());
    assert_eq!(unit.union(&unit), unit);
    assert!(empty.intersection(&empty).is_empty());
    assert!(empty.intersection(&unit).is_empty());
    assert!(unit.intersection(&empty).is_empty());
    assert_eq!(unit.intersection(&unit), unit);
    assert!(empty.difference(&empty).is_empty());
    assert!(empty.difference(&unit).is_empty());
    assert_eq!(unit.difference(&empty), unit);
    assert!(unit.difference(&unit).is_empty());
    assert_eq!(
        Region::from_boxes([GridBox::UNIT, GridBox::UNIT]).boxes(),
        &[GridBox::UNIT]
    );
}

#[test]
fn region_queries() {
    let r = r2(&[([0, 0], [2, 2]), ([4, 4], [6, 6])]);
    assert_eq!(r.area(), 8);
    assert_eq!(r.bounding_box(), b2([0, 0], [6, 6]));
    assert!(r.covers_box(&b2([0, 0], [1, 2])));
    assert!(!r.covers_box(&b2([0, 0], [3, 2])));
    assert!(r.covers(&r2(&[([0, 0], [1, 1]), ([5, 5], [6, 6])])));
    assert!(!r.covers(&r2(&[([0, 0], [1, 1]), ([3, 3], [4, 4])])));
    assert!(r.intersects_box(&b2([1, 1], [5, 5])));
    assert!(!r.intersects_box(&b2([2, 2], [4, 4])));
    assert!(r.contains_point(&[5, 4, 0]) && !r.contains_point(&[3, 3, 0]));
    assert_eq!(r.effective_dims(), 2);
    assert_eq!(Region::new().bounding_box(), GridBox::EMPTY);
    assert_eq!(r.union_box(&b2([2, 0], [4, 2])).area(), 12);
    assert_eq!(r.difference_box(&b2([0, 0], [6, 1])).area(), 6);
}

#[test]
fn builder_normalises_once_and_shortcuts_single_input() {
    let r = r2(&[([0, 0], [2, 2]), ([4, 4], [6, 6])]);
    let mut b = RegionBuilder::new();
    assert!(b.is_empty());
    b.add_region(&r);
    assert_eq!(b.clone().into_region(), r);
    b.add_box(b2([2, 0], [4, 2])).add_box(GridBox::EMPTY);
    assert_eq!(b.into_region(), r.union(&r2(&[([2, 0], [4, 2])])));
    let mut b = RegionBuilder::new();
    b.extend([b2([0, 0], [1, 1]), b2([0, 1], [1, 2])]);
    assert_eq!(b.into_region().boxes(), &[b2([0, 0], [1, 2])]);
}

fn check_canonical(r: &Region, expected: &PointSet) {
    assert_eq!(r.boxes(), &expected.canonical_boxes()[..], "not canonical");
    assert_eq!(PointSet::from_boxes(expected.extent, r.boxes()), *expected);
}

fn shuffle<T>(v: &mut [T], mut seed: u64) {
    for i in (1..v.len()).rev() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        v.swap(i, (seed >> 33) as usize % (i + 1));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn normalisation_is_canonical(
        (extent, boxes, seed) in arb_dims().prop_flat_map(|e| (Just(e), arb_boxes(e, 7), any::<u64>()))
    ) {
        let points = PointSet::from_boxes(extent, &boxes);
        let r = Region::from_boxes(boxes.iter().copied());
        check_canonical(&r, &points);
        prop_assert_eq!(r.area(), points.count());
        // order-independent, and equal to building from single points
        let mut shuffled = boxes.clone();
        shuffle(&mut shuffled, seed);
        let mut builder = RegionBuilder::new();
        builder.extend(shuffled.iter().copied());
        prop_assert_eq!(builder.into_region(), r.clone());
        let from_points = Region::from_boxes(
            points.points().filter(|p| points.get(*p)).map(|p| GridBox::from_arrays(p, [p[0] + 1, p[1] + 1, p[2] + 1])),
        );
        prop_assert_eq!(from_points, r.clone());
        let bb = r.bounding_box();
        prop_assert!(boxes.iter().all(|b| bb.covers(b)));
        prop_assert_eq!(r.is_empty(), points.count() == 0);
    }

    #[test]
    fn normalisation_of_many_boxes_is_canonical(
        (extent, boxes) in arb_dims().prop_flat_map(|e| (Just(e), arb_boxes(e, 24)))
    ) {
        // enough boxes for the slab sweep to see empty, single and crowded slabs
        check_canonical(&Region::from_boxes(boxes.iter().copied()), &PointSet::from_boxes(extent, &boxes));
    }

    #[test]
    fn difference_of_single_boxes_matches_oracle(
        (extent, a, b) in arb_dims().prop_flat_map(|e| (Just(e), arb_box(e), arb_box(e)))
    ) {
        // the box-minus-box path builds its slabs without normalising
        let (pa, pb) = (PointSet::from_boxes(extent, &[a]), PointSet::from_boxes(extent, &[b]));
        let (ra, rb) = (Region::from_box(a), Region::from_box(b));
        check_canonical(&ra.difference(&rb), &pa.zip(&pb, |x, y| x && !y));
        check_canonical(&rb.difference(&ra), &pa.zip(&pb, |x, y| y && !x));
    }

    #[test]
    fn union_of_two_boxes_matches_oracle(
        (extent, a, b) in arb_dims().prop_flat_map(|e| (Just(e), arb_box(e), arb_box(e)))
    ) {
        // two boxes take their own path through the normalisation (a 2-D sweep on the stack)
        let expected = PointSet::from_boxes(extent, &[a, b]);
        check_canonical(&Region::from_box(a).union(&Region::from_box(b)), &expected);
        check_canonical(&Region::from_boxes([b, a]), &expected);
    }

    #[test]
    fn difference_with_one_of_its_own_boxes_matches_oracle(
        (extent, boxes, pick) in arb_dims().prop_flat_map(|e| (Just(e), arb_boxes(e, 7), any::<usize>()))
    ) {
        // taking out a box of the canonical list keeps the others as they are
        let r = Region::from_boxes(boxes.iter().copied());
        if r.is_empty() {
            return Ok(());
        }
        let own = r.boxes()[pick % r.boxes().len()];
        let (pr, po) = (PointSet::from_boxes(extent, &boxes), PointSet::from_boxes(extent, &[own]));
        check_canonical(&r.difference(&Region::from_box(own)), &pr.zip(&po, |x, y| x && !y));
    }

    #[test]
    fn set_operations_match_oracle(
        (extent, a, b) in arb_dims().prop_flat_map(|e| (Just(e), arb_boxes(e, 6), arb_boxes(e, 6)))
    ) {
        let (pa, pb) = (PointSet::from_boxes(extent, &a), PointSet::from_boxes(extent, &b));
        let (ra, rb) = (Region::from_boxes(a.iter().copied()), Region::from_boxes(b.iter().copied()));
        check_canonical(&ra.union(&rb), &pa.zip(&pb, |x, y| x || y));
        check_canonical(&ra.intersection(&rb), &pa.zip(&pb, |x, y| x && y));
        check_canonical(&ra.difference(&rb), &pa.zip(&pb, |x, y| x && !y));
        check_canonical(&rb.difference(&ra), &pa.zip(&pb, |x, y| y && !x));
        let inter = pa.zip(&pb, |x, y| x && y).count();
        prop_assert_eq!(ra.intersects(&rb), inter > 0);
        prop_assert_eq!(ra.covers(&rb), inter == pb.count());
        if let Some(first) = b.first() {
            let pf = PointSet::from_boxes(extent, &[*first]);
            let covered = pf.zip(&pa, |x, y| x && !y).count() == 0;
            prop_assert_eq!(ra.covers_box(first), covered);
            check_canonical(&ra.intersection_with_box(first), &pa.zip(&pf, |x, y| x && y));
            check_canonical(&ra.difference_box(first), &pa.zip(&pf, |x, y| x && !y));
            check_canonical(&ra.union_box(first), &pa.zip(&pf, |x, y| x || y));
        }
    }
}
