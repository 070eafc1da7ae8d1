//! Celerity's region_map_tests, rewritten, and property tests against a dense
//! array oracle.

use proptest::prelude::*;

use super::*;
use crate::grid::test_util::{arb_box, arb_dims, b1, b2, b3, points_of};
use crate::grid::{Id, sort_boxes};

const D: usize = usize::MAX;

/// Same entries in any order.
fn check_results<T: PartialEq + std::fmt::Debug + Clone>(
    results: &[(GridBox, T)],
    expected: &[(GridBox, T)],
) {
    assert_eq!(results.len(), expected.len(), "{results:?}");
    for e in expected {
        assert!(results.contains(e), "missing {e:?} in {results:?}");
    }
}

#[test]
fn basic_0d() {
    let rm = RegionMap::new(Range::ONE, -1);
    check_results(&rm.get_box_values(&GridBox::UNIT), &[(GridBox::UNIT, -1)]);
    assert_eq!(rm.len(), 1);
}

#[test]
fn basic_1d() {
    let fresh = || RegionMap::new(Range::new(128, 1, 1), D);
    let rm = fresh();
    check_results(&rm.get_box_values(&b1(0, 128)), &[(b1(0, 128), D)]);
    check_results(&rm.get_box_values(&b1(64, 96)), &[(b1(64, 96), D)]);

    let mut rm = fresh();
    rm.update_box(&b1(0, 128), 1337);
    check_results(&rm.get_box_values(&b1(64, 96)), &[(b1(64, 96), 1337)]);

    let mut rm = fresh();
    rm.update_box(&b1(0, 64), 1337);
    check_results(
        &rm.get_box_values(&b1(0, 128)),
        &[(b1(0, 64), 1337), (b1(64, 128), D)],
    );

    let mut rm = fresh();
    rm.update_box(&b1(32, 96), 1337);
    check_results(
        &rm.get_box_values(&b1(0, 128)),
        &[(b1(0, 32), D), (b1(32, 96), 1337), (b1(96, 128), D)],
    );

    let mut rm = fresh();
    for i in 0..16 {
        rm.update_box(&b1(i * 8, i * 8 + 8), i);
        let results = rm.get_box_values(&b1(0, 128));
        assert_eq!(results.len(), i + if i < 15 { 2 } else { 1 });
        for j in 0..=i {
            assert!(results.contains(&(b1(j * 8, j * 8 + 8), j)));
        }
        if i < 15 {
            assert!(results.contains(&(b1((i + 1) * 8, 128), D)));
        }
        rm.check_invariants();
    }
}

#[test]
fn basic_2d() {
    let (h, w) = (128, 192);
    let fresh = || RegionMap::new(Range::new(h, w, 1), D);
    let all = b2([0, 0], [h, w]);
    check_results(&fresh().get_box_values(&all), &[(all, D)]);
    let part = b2([64, 64], [96, 96]);
    check_results(&fresh().get_box_values(&part), &[(part, D)]);

    let mut rm = fresh();
    rm.update_box(&all, 1337);
    check_results(&rm.get_box_values(&part), &[(part, 1337)]);

    let mut rm = fresh();
    rm.update_box(&b2([0, 0], [64, w]), 1337);
    check_results(
        &rm.get_box_values(&all),
        &[(b2([0, 0], [64, w]), 1337), (b2([64, 0], [h, w]), D)],
    );

    let mut rm = fresh();
    rm.update_box(&b2([32, 0], [96, w]), 1337);
    check_results(
        &rm.get_box_values(&all),
        &[
            (b2([0, 0], [32, w]), D),
            (b2([32, 0], [96, w]), 1337),
            (b2([96, 0], [h, w]), D),
        ],
    );

    let mut rm = fresh();
    rm.update_box(&b2([32, 32], [96, 96]), 1337);
    check_results(
        &rm.get_box_values(&all),
        &[
            (b2([0, 0], [h, 32]), D),
            (b2([0, 96], [h, w]), D),
            (b2([0, 32], [32, 96]), D),
            (b2([96, 32], [h, 96]), D),
            (b2([32, 32], [96, 96]), 1337),
        ],
    );

    let mut rm = fresh();
    for i in 0..16 {
        rm.update_box(&b2([i * 8, 0], [i * 8 + 8, w]), i);
        let results = rm.get_box_values(&all);
        assert_eq!(results.len(), i + if i < 15 { 2 } else { 1 });
        for j in 0..=i {
            assert!(results.contains(&(b2([j * 8, 0], [j * 8 + 8, w]), j)));
        }
        if i < 15 {
            assert!(results.contains(&(b2([(i + 1) * 8, 0], [h, w]), D)));
        }
    }
}

#[test]
fn basic_3d() {
    let (d, h, w) = (128, 128, 128);
    let fresh = || RegionMap::new(Range::new(d, h, w), D);
    let all = b3([0, 0, 0], [d, h, w]);
    check_results(&fresh().get_box_values(&all), &[(all, D)]);

    let mut rm = fresh();
    rm.update_box(&all, 1337);
    let part = b3([62, 64, 66], [92, 94, 96]);
    check_results(&rm.get_box_values(&part), &[(part, 1337)]);

    let mut rm = fresh();
    rm.update_box(&b3([32, 0, 0], [96, h, w]), 1337);
    check_results(
        &rm.get_box_values(&all),
        &[
            (b3([0, 0, 0], [32, h, w]), D),
            (b3([32, 0, 0], [96, h, w]), 1337),
            (b3([96, 0, 0], [d, h, w]), D),
        ],
    );

    let mut rm = fresh();
    rm.update_box(&b3([32, 32, 0], [96, 96, w]), 1337);
    check_results(
        &rm.get_box_values(&all),
        &[
            (b3([0, 0, 0], [d, 32, w]), D),
            (b3([0, 96, 0], [d, h, w]), D),
            (b3([0, 32, 0], [32, 96, w]), D),
            (b3([96, 32, 0], [d, 96, w]), D),
            (b3([32, 32, 0], [96, 96, w]), 1337),
        ],
    );

    let mut rm = fresh();
    rm.update_box(&b3([32, 32, 32], [96, 96, 96]), 1337);
    check_results(
        &rm.get_box_values(&all),
        &[
            (b3([0, 0, 0], [d, h, 32]), D),
            (b3([0, 0, 96], [d, h, w]), D),
            (b3([0, 0, 32], [d, 32, 96]), D),
            (b3([0, 96, 32], [d, h, 96]), D),
            (b3([0, 32, 32], [32, 96, 96]), D),
            (b3([96, 32, 32], [d, 96, 96]), D),
            (b3([32, 32, 32], [96, 96, 96]), 1337),
        ],
    );
}

#[test]
fn a_whole_extent_update_of_a_single_entry_map_replaces_its_value() {
    let extent = b2([0, 0], [8, 8]);
    let mut rm = RegionMap::with_box(extent, 0usize);
    rm.update_box(&extent, 1);
    check_results(&rm.get_box_values(&extent), &[(extent, 1)]);
    // clamped to the extent: still the whole map
    rm.update_box(&b2([0, 0], [100, 100]), 2);
    check_results(&rm.get_box_values(&extent), &[(extent, 2)]);
    assert_eq!(rm.len(), 1);
    // two entries, then one again
    rm.update_box(&b2([0, 0], [4, 8]), 3);
    assert_eq!(rm.len(), 2);
    rm.update_box(&extent, 4);
    check_results(&rm.get_box_values(&extent), &[(extent, 4)]);
    assert_eq!(rm.len(), 1);
    rm.check_invariants();
}

#[test]
fn updates_are_clamped_to_extent() {
    for dims in 1..=3 {
        let mut r = [1; 3];
        let mut big = [1; 3];
        r[..dims].copy_from_slice(&[64, 96, 128][..dims]);
        big[..dims].copy_from_slice(&[72, 102, 136][..dims]);
        let mut rm = RegionMap::new(Range(r), 0);
        let exceeding = GridBox::full_range(Range(big));
        rm.update_box(&exceeding, 1337);
        check_results(
            &rm.get_box_values(&exceeding),
            &[(GridBox::full_range(Range(r)), 1337)],
        );
    }
}

fn complex_map() -> RegionMap<usize> {
    let mut rm = RegionMap::new(Range::new(5, 9, 1), 99999);
    let data = [
        b2([0, 0], [2, 3]),
        b2([2, 0], [5, 2]),
        b2([2, 2], [5, 3]),
        b2([0, 3], [3, 4]),
        b2([3, 3], [4, 4]),
        b2([4, 3], [5, 4]),
        b2([0, 4], [1, 9]),
        b2([1, 4], [3, 9]),
        b2([3, 4], [5, 6]),
        b2([3, 6], [5, 7]),
        b2([3, 7], [4, 9]),
        b2([4, 7], [5, 9]),
    ];
    for (i, b) in data.iter().enumerate() {
        rm.update_box(b, i);
    }
    rm.check_invariants();
    rm
}

#[test]
fn complex_queries() {
    let rm = complex_map();
    for (q, v) in [
        (b2([0, 0], [2, 2]), 0),
        (b2([0, 8], [1, 9]), 6),
        (b2([4, 0], [5, 2]), 1),
        (b2([4, 7], [5, 9]), 11),
        (b2([3, 3], [4, 4]), 4),
        (b2([1, 4], [3, 6]), 7),
    ] {
        assert_eq!(rm.get_box_values(&q), vec![(q, v)]);
    }
    check_results(
        &rm.get_box_values(&b2([1, 2], [3, 4])),
        &[
            (b2([1, 2], [2, 3]), 0),
            (b2([2, 2], [3, 3]), 2),
            (b2([1, 3], [3, 4]), 3),
        ],
    );
    check_results(
        &rm.get_box_values(&b2([1, 4], [5, 7])),
        &[
            (b2([1, 4], [3, 7]), 7),
            (b2([3, 4], [5, 6]), 8),
            (b2([3, 6], [5, 7]), 9),
        ],
    );
}

#[test]
fn merges_on_update_1d() {
    let mut rm = RegionMap::new(Range::new(128, 1, 1), D);
    rm.update_box(&b1(0, 64), 3);
    rm.update_box(&b1(64, 128), 3);
    assert_eq!(rm.len(), 1);

    let mut rm = RegionMap::new(Range::new(128, 1, 1), D);
    rm.update_box(&b1(0, 32), 3);
    rm.update_box(&b1(64, 128), 3);
    assert_eq!(rm.len(), 3);
    rm.update_box(&b1(32, 64), 3);
    assert_eq!(rm.len(), 1);
}

#[test]
fn merges_on_update_2d() {
    // tall enough for a tree of three levels below 16-wide nodes
    let (h, w) = (256, 512);
    let fresh = || RegionMap::new(Range::new(h, w, 1), D);
    let mut rm = fresh();
    rm.update_box(&b2([0, 0], [h, 64]), 3);
    rm.update_box(&b2([0, 64], [h, w]), 3);
    assert_eq!(rm.len(), 1);

    let mut rm = fresh();
    rm.update_box(&b2([0, 0], [h, 64]), 3);
    rm.update_box(&b2([32, 64], [h, w]), 3);
    assert_eq!(rm.len(), 3);
    rm.update_box(&b2([0, 64], [32, w]), 3);
    assert_eq!(rm.len(), 1);

    // merge cascade through a several levels deep tree
    let mut rm = fresh();
    for i in 0..h / 2 {
        rm.update_box(&b2([i * 2, 0], [i * 2 + 2, w - 2 - i * 2]), 3);
    }
    assert_eq!(rm.len(), 2 * (h / 2));
    assert!(rm.depth() > 2);
    rm.check_invariants();
    for i in 0..h / 2 - 1 {
        rm.update_box(&b2([i * 2, w - 2 - i * 2], [h, w - i * 2]), 3);
    }
    assert_eq!(rm.len(), 2 * (h / 2));
    rm.update_box(&b2([h - 2, w / 2], [h, w / 2 + 2]), 3);
    assert_eq!(rm.len(), 1);
    assert_eq!(rm.depth(), 1);
}

#[test]
fn merges_on_update_3d() {
    let (d, h, w) = (64, 96, 128);
    let mut rm = RegionMap::new(Range::new(d, h, w), D);
    rm.update_box(&b3([0, 0, 0], [d, 64, w]), 3);
    rm.update_box(&b3([0, 64, 0], [d, h, w]), 3);
    assert_eq!(rm.len(), 1);

    let mut rm = RegionMap::new(Range::new(d, h, w), D);
    rm.update_box(&b3([0, 0, 0], [d, 64, w]), 3);
    rm.update_box(&b3([32, 64, 0], [d, h, w]), 3);
    assert_eq!(rm.len(), 3);
    rm.update_box(&b3([0, 64, 0], [32, h, w]), 3);
    assert_eq!(rm.len(), 1);
}

#[test]
fn merges_truncated_results_on_query_2d() {
    let (h, w) = (5, 9);
    let mut rm = RegionMap::new(Range::new(h, w, 1), D);
    rm.update_box(&b2([0, 0], [h, 3]), 3);
    rm.update_box(&b2([2, 3], [h, 6]), 3);
    rm.update_box(&b2([0, 6], [h, w]), 3);
    assert_eq!(rm.len(), 4);
    check_results(
        &rm.get_box_values(&b2([2, 0], [5, 9])),
        &[(b2([2, 0], [h, w]), 3)],
    );

    let mut rm = RegionMap::new(Range::new(h, w, 1), D);
    rm.update_box(&b2([0, 0], [3, 3]), 3);
    rm.update_box(&b2([3, 1], [h, 3]), 3);
    rm.update_box(&b2([1, 3], [3, w]), 3);
    let results = rm.get_box_values(&b2([1, 1], [5, 9]));
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results.contains(&(b2([3, 3], [h, w]), D)));
    let v1 =
        results.contains(&(b2([1, 1], [h, 3]), 3)) && results.contains(&(b2([1, 3], [3, w]), 3));
    let v2 =
        results.contains(&(b2([1, 1], [3, w]), 3)) && results.contains(&(b2([3, 1], [h, 3]), 3));
    assert!(v1 != v2);
}

#[test]
fn merges_truncated_results_on_query_3d() {
    let (d, h, w) = (32, 64, 96);
    let mut rm = RegionMap::new(Range::new(d, h, w), D);
    rm.update_box(&b3([0, 0, 0], [d, 24, 24]), 3);
    rm.update_box(&b3([0, 24, 0], [d, 48, 48]), 3);
    rm.update_box(&b3([0, 48, 0], [d, h, w]), 3);
    assert_eq!(rm.len(), 5);
    check_results(
        &rm.get_box_values(&b3([0, 0, 0], [d, h, 24])),
        &[(b3([0, 0, 0], [d, h, 24]), 3)],
    );
}

#[test]
fn apply_to_values() {
    let fresh = || {
        let mut rm = RegionMap::new(Range::new(128, 1, 1), D);
        for (i, lo) in [0, 32, 64, 96].into_iter().enumerate() {
            rm.update_box(&b1(lo, lo + 32), i + 1);
        }
        rm
    };
    let mut rm = fresh();
    rm.apply_to_values(|v| v * v);
    for (lo, v) in [(0, 1), (32, 4), (64, 9), (96, 16)] {
        assert_eq!(
            rm.get_box_values(&b1(lo, lo + 32)),
            vec![(b1(lo, lo + 32), v)]
        );
    }
    let mut rm = fresh();
    assert_eq!(rm.len(), 4);
    rm.apply_to_values(|&v| if v != 2 { 42 } else { 1337 });
    assert_eq!(rm.len(), 3);
    assert_eq!(rm.get_box_values(&b1(0, 32)), vec![(b1(0, 32), 42)]);
    assert_eq!(rm.get_box_values(&b1(32, 64)), vec![(b1(32, 64), 1337)]);
    assert_eq!(rm.get_box_values(&b1(64, 128)), vec![(b1(64, 128), 42)]);
    // a single entry (changed in place: it has no neighbour to merge with)
    let mut rm = RegionMap::new(Range::new(128, 1, 1), 7usize);
    rm.apply_to_values(|v| v + 1);
    assert_eq!(rm.len(), 1);
    assert_eq!(rm.get_box_values(&b1(0, 128)), vec![(b1(0, 128), 8)]);
    rm.check_invariants();
}

#[test]
fn consecutive_tiles_keep_all_entries() {
    for row_wise in [true, false] {
        let (h, w, n) = (64, 128, 4);
        let mut rm = RegionMap::new(Range::new(h, w, 1), D);
        for i in 0..n {
            for j in 0..n {
                let (a, c) = if row_wise { (i, j) } else { (j, i) };
                let min = [a * (h / n), c * (w / n)];
                rm.update_box(&b2(min, [min[0] + h / n, min[1] + w / n]), a * n + c);
            }
        }
        assert_eq!(rm.len(), n * n);
        rm.check_invariants();
    }
}

#[test]
fn queries_are_clamped_with_nonzero_offset() {
    let ext = GridBox::new(Id::new(1, 2, 3), Id::new(7, 9, 11));
    let rm = RegionMap::with_box(ext, 42);
    assert_eq!(
        rm.get_box_values(&GridBox::full_range(Range::new(20, 19, 18))),
        vec![(ext, 42)]
    );
}

#[test]
fn empty_queries_and_updates() {
    for r in [
        Range::ONE,
        Range::new(2, 1, 1),
        Range::new(2, 3, 1),
        Range::new(2, 3, 4),
    ] {
        let mut rm = RegionMap::new(r, 0);
        assert!(rm.get_box_values(&GridBox::EMPTY).is_empty());
        assert!(rm.get_region_values(&Region::new()).is_empty());
        rm.update_box(&GridBox::EMPTY, 1);
        rm.update_region(&Region::new(), 2);
        assert_eq!(rm.get_box_values(&GridBox::UNIT), vec![(GridBox::UNIT, 0)]);
    }
    let mut rm = RegionMap::new(Range::new(0, 4, 1), 7);
    assert!(rm.is_empty());
    rm.update_box(&GridBox::full_range(Range::new(4, 4, 1)), 1);
    assert!(
        rm.get_box_values(&GridBox::full_range(Range::new(4, 4, 1)))
            .is_empty()
    );
}

#[test]
fn repeated_same_value_updates_stay_small() {
    let mut rm = RegionMap::new(Range::new(64, 64, 1), 0usize);
    for step in 0..200 {
        let i = step % 8;
        rm.update_box(&b2([i * 8, 0], [i * 8 + 8, 64]), step / 8 + 1);
        rm.update_box(&GridBox::full_range(Range::new(64, 64, 1)), 5);
        assert_eq!(rm.len(), 1);
    }
}

/// Dense oracle: one value per point of the extent.
struct Dense {
    extent: [usize; 3],
    values: Vec<u8>,
}

impl Dense {
    fn at(&self, p: [usize; 3]) -> u8 {
        self.values[(p[0] * self.extent[1] + p[1]) * self.extent[2] + p[2]]
    }
}

fn check_query(rm: &RegionMap<u8>, dense: &Dense, queries: &[GridBox]) {
    let region = Region::from_boxes(queries.iter().copied());
    let results = rm.get_region_values(&region);
    let mut boxes: Vec<GridBox> = results.iter().map(|r| r.0).collect();
    for (b, v) in &results {
        assert!(
            region.covers_box(b),
            "result {b:?} outside query {region:?}"
        );
        for p in points_of(b) {
            assert_eq!(dense.at(p), *v, "point {p:?}");
        }
    }
    let total: usize = boxes.iter().map(GridBox::area).sum();
    sort_boxes(&mut boxes);
    assert_eq!(total, region.area(), "results overlap or miss points");
    assert_eq!(Region::from_boxes(boxes), region);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn answers_like_a_dense_array(
        (extent, updates, queries) in arb_dims().prop_flat_map(|e| (
            Just(e),
            prop::collection::vec((arb_box(e), 0u8..3), 0..24),
            prop::collection::vec(arb_box(e), 1..4),
        ))
    ) {
        let mut rm = RegionMap::new(Range(extent), 0u8);
        let mut dense = Dense { extent, values: vec![0; extent.iter().product()] };
        for (b, v) in &updates {
            rm.update_box(b, *v);
            for p in points_of(b) {
                let i = (p[0] * extent[1] + p[1]) * extent[2] + p[2];
                dense.values[i] = *v;
            }
            rm.check_invariants();
            rm.check_merge_partner_scan();
        }
        check_query(&rm, &dense, &queries);
        check_query(&rm, &dense, &[GridBox::full_range(Range(extent))]);
        for p in crate::grid::test_util::PointSet::new(extent).points() {
            prop_assert_eq!(rm.get_point(&p), Some(&dense.at(p)));
        }
        // 1-D maps are fully coalesced: no equal-valued neighbours
        if extent[1] == 1 && extent[2] == 1 {
            let mut entries = Vec::new();
            rm.for_each(|b, v| entries.push((*b, *v)));
            entries.sort_by_key(|e| e.0.min_arr()[0]);
            for w in entries.windows(2) {
                prop_assert!(w[0].1 != w[1].1, "{:?}", entries);
            }
        }
        rm.apply_to_values(|v| v / 2);
        rm.check_invariants();
        for d in dense.values.iter_mut() {
            *d /= 2;
        }
        check_query(&rm, &dense, &queries);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    /// Read-modify-write updates (`update_box_with`, `change_box_values`) mixed with plain ones
    /// keep every point's value and the tiling invariants.
    #[test]
    fn update_with_answers_like_a_dense_array(
        (extent, updates, queries) in arb_dims().prop_flat_map(|e| (
            Just(e),
            prop::collection::vec((arb_box(e), 0u8..3, 0u8..3), 0..24),
            prop::collection::vec(arb_box(e), 1..4),
        ))
    ) {
        let mut rm = RegionMap::new(Range(extent), 0u8);
        let mut dense = Dense { extent, values: vec![0; extent.iter().product()] };
        for (b, v, mode) in &updates {
            // 0: plain update, 1: read-modify-write, 2: the same changed in place
            let new = |old: u8| if *mode > 0 { (old + v) % 4 } else { *v };
            match mode {
                0 => rm.update_box(b, *v),
                1 => rm.update_box_with(b, |old| new(*old)),
                _ => rm.change_box_values(b, |old| {
                    let changed = new(*old) != *old;
                    *old = new(*old);
                    changed
                }),
            }
            for p in points_of(b) {
                let i = (p[0] * extent[1] + p[1]) * extent[2] + p[2];
                dense.values[i] = new(dense.values[i]);
            }
            rm.check_invariants();
        }
        check_query(&rm, &dense, &queries);
        for p in crate::grid::test_util::PointSet::new(extent).points() {
            prop_assert_eq!(rm.get_point(&p), Some(&dense.at(p)));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    /// The `_unique` updates skip the merge search for values no entry holds yet; they must leave
    /// the very entries (boxes and values) that the plain updates leave. Values are update
    /// numbers, as instruction ids are: a plain update sets a new number, a read-like change adds
    /// one to the set an entry holds (or starts one), and some updates reuse an older number so
    /// the plain path is exercised too.
    #[test]
    fn unique_updates_leave_the_entries_of_plain_updates(
        (extent, updates) in arb_dims().prop_flat_map(|e| (
            Just(e),
            prop::collection::vec(
                (prop::collection::vec(arb_box(e), 1..3), 0u8..3, any::<bool>()),
                0..32,
            ),
        ))
    ) {
        let mut plain = RegionMap::new(Range(extent), vec![0u32]);
        let mut unique = RegionMap::new(Range(extent), vec![0u32]);
        for (n, (boxes, mode, fresh)) in updates.iter().enumerate() {
            let region = Region::from_boxes(boxes.iter().copied());
            let id = n as u32 + 1;
            match mode {
                0 if *fresh => {
                    plain.update_region(&region, vec![id]);
                    unique.update_region_unique(&region, vec![id]);
                }
                0 => {
                    // an older value: not unique, so only the plain path may be used
                    plain.update_region(&region, vec![id / 2]);
                    unique.update_region(&region, vec![id / 2]);
                }
                _ => {
                    let join = |v: &mut Vec<u32>| {
                        if *mode == 1 {
                            v.push(id);
                        } else {
                            *v = vec![id];
                        }
                        true
                    };
                    plain.change_region_values(&region, join);
                    unique.change_region_values_unique(&region, join);
                }
            }
            unique.check_invariants();
            let mut a = Vec::new();
            let mut b = Vec::new();
            plain.for_each(|bx, v| a.push((*bx, v.clone())));
            unique.for_each(|bx, v| b.push((*bx, v.clone())));
            a.sort_by(|x, y| x.0.coordinate_order(&y.0));
            b.sort_by(|x, y| x.0.coordinate_order(&y.0));
            prop_assert_eq!(a, b);
        }
    }
}

#[test]
fn update_with_leaves_unchanged_entries_alone() {
    let mut rm = RegionMap::new(Range::new(8, 8, 1), 0u8);
    rm.update_box(&b2([0, 0], [4, 8]), 1);
    assert_eq!(rm.len(), 2);
    // the new value equals the old one on the left half: nothing is cut there
    rm.update_box_with(&b2([2, 0], [6, 8]), |v| (*v).max(1));
    assert_eq!(rm.len(), 2);
    assert_eq!(rm.get_box_values(&b2([0, 0], [8, 8])).len(), 2);
    assert_eq!(rm.get_point(&[5, 0, 0]), Some(&1));
    assert_eq!(rm.get_point(&[6, 0, 0]), Some(&0));
}

#[test]
fn can_be_moved_and_cloned() {
    let mut rm = RegionMap::new(Range::new(128, 1, 1), -1);
    rm.update_box(&b1(0, 128), 1337);
    let moved = rm;
    assert_eq!(moved.get_box_values(&b1(0, 128)), vec![(b1(0, 128), 1337)]);
    let mut copy = moved.clone();
    copy.update_box(&b1(0, 64), 1);
    assert_eq!(moved.get_box_values(&b1(0, 128)), vec![(b1(0, 128), 1337)]);
    assert_eq!(copy.len(), 2);
    assert!(format!("{copy:?}").contains("1337"));
}

// ===== small maps: the flat list of entries =====

/// The entries in the order queries report them.
fn query_order(rm: &RegionMap<u8>) -> Vec<(GridBox, u8)> {
    let mut out = Vec::new();
    rm.query_box(&rm.extent(), |b, v| out.push((b, *v)));
    out
}

#[test]
fn a_small_map_reports_entries_in_the_order_of_a_one_leaf_tree() {
    // a leaf appends new entries, moves its last entry into the gap an erased one leaves, and
    // keeps a shrunk or grown entry in its place
    let mut rm = RegionMap::new(Range::new(8, 1, 1), 0u8);
    rm.update_box(&b1(1, 2), 1); // [0, 8) shrinks to [0, 1), [2, 8) and [1, 2) are appended
    assert_eq!(
        query_order(&rm),
        [(b1(0, 1), 0), (b1(2, 8), 0), (b1(1, 2), 1)]
    );
    rm.update_box(&b1(3, 4), 2); // [2, 8) shrinks to [2, 3), [4, 8) and [3, 4) are appended
    assert_eq!(
        query_order(&rm),
        [
            (b1(0, 1), 0),
            (b1(2, 3), 0),
            (b1(1, 2), 1),
            (b1(4, 8), 0),
            (b1(3, 4), 2)
        ]
    );
    // [1, 2) takes 0 in place and grows over [0, 1) (erased: [3, 4) moves into its place), then
    // over [2, 3) (erased: [4, 8) moves into its place)
    rm.update_box(&b1(1, 2), 0);
    assert_eq!(
        query_order(&rm),
        [(b1(3, 4), 2), (b1(4, 8), 0), (b1(0, 3), 0)]
    );
    assert_eq!(rm.depth(), 1);
    rm.check_invariants();
}

#[test]
fn a_small_map_merges_equal_neighbours() {
    let mut rm = RegionMap::new(Range::new(4, 4, 1), 0u8);
    // four quadrants, one value each: no merges
    for (i, (lo, hi)) in [
        ([0, 0], [2, 2]),
        ([0, 2], [2, 4]),
        ([2, 0], [4, 2]),
        ([2, 2], [4, 4]),
    ]
    .into_iter()
    .enumerate()
    {
        rm.update_box(&b2(lo, hi), i as u8 + 1);
    }
    assert_eq!(rm.len(), 4);
    // the right column takes the value of the top right quadrant: two entries merge
    rm.update_box(&b2([2, 2], [4, 4]), 2);
    assert_eq!(rm.len(), 3);
    assert_eq!(
        rm.get_box_values(&b2([0, 2], [4, 4])),
        [(b2([0, 2], [4, 4]), 2)]
    );
    // the left column too: the map becomes one entry
    rm.update_box(&b2([0, 0], [4, 2]), 2);
    assert_eq!(rm.len(), 1);
    assert_eq!(query_order(&rm), [(b2([0, 0], [4, 4]), 2)]);
    rm.check_invariants();
}

/// Random updates of a map that crosses the list's limit both ways, against the dense oracle:
/// values, the tiling, the merge partners of the list scan against the point probes, and the
/// conversions between list and tree.
#[test]
fn a_map_grows_past_the_list_and_shrinks_back_to_a_list() {
    use crate::grid::entry_index::{FLAT_MAX, FLAT_RETURN};
    for (extent, seed) in [
        ([16, 16, 1], 12345u64),
        ([6, 6, 4], 777),
        ([96, 1, 1], 4242),
    ] {
        let mut rm = RegionMap::new(Range(extent), 0u8);
        let mut dense = Dense {
            extent,
            values: vec![0; extent.iter().product()],
        };
        let (mut grew, mut shrank, mut largest) = (0, 0, 0);
        let mut seed = seed;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for step in 0..600 {
            let was_list = rm.depth() == 1;
            // mostly small boxes, now and then a large one that collapses the map again
            let (b, v) = if step % 97 == 96 {
                (GridBox::full_range(Range(extent)), next(3) as u8)
            } else if step % 31 == 30 {
                let lo = extent.map(|e| next(e / 2 + 1));
                (b3(lo, extent), next(4) as u8)
            } else {
                let lo = extent.map(&mut next);
                let hi: [usize; 3] =
                    std::array::from_fn(|d| lo[d] + 1 + next((extent[d] - lo[d]).min(3)));
                (b3(lo, hi), next(4) as u8)
            };
            rm.update_box(&b, v);
            for p in points_of(&b) {
                let i = (p[0] * extent[1] + p[1]) * extent[2] + p[2];
                dense.values[i] = v;
            }
            rm.check_invariants();
            rm.check_merge_partner_scan();
            let is_list = rm.depth() == 1;
            assert!(
                !is_list || rm.len() <= FLAT_MAX,
                "a list of {} entries",
                rm.len()
            );
            assert!(
                is_list || rm.len() > FLAT_RETURN,
                "a tree of {} entries",
                rm.len()
            );
            grew += usize::from(was_list && !is_list);
            shrank += usize::from(!was_list && is_list);
            largest = largest.max(rm.len());
            for p in crate::grid::test_util::PointSet::new(extent).points() {
                assert_eq!(
                    rm.get_point(&p),
                    Some(&dense.at(p)),
                    "step {step}, point {p:?}"
                );
            }
            let half = extent.map(|e| e / 2);
            check_query(
                &rm,
                &dense,
                &[b3(half.map(|h| h / 2), half.map(|h| h + h / 2 + 1))],
            );
            if step % 50 == 49 {
                // most values change at once: the whole map is rebuilt
                rm.apply_to_values(|v| v / 2);
                dense.values.iter_mut().for_each(|d| *d /= 2);
                rm.check_invariants();
            }
        }
        assert!(
            grew >= 3 && shrank >= 3,
            "{extent:?}: grew {grew}, shrank {shrank}, largest {largest}"
        );
    }
}
