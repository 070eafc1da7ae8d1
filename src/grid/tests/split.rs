//! Celerity's split_tests, rewritten: exact chunk boxes for split_1d/split_2d.

use proptest::prelude::*;

use super::*;
use crate::grid::{Id, Region, Subrange};

const ONES: Range = Range::ONE;

fn full(r: [usize; 3]) -> GridBox {
    GridBox::full_range(Range(r))
}

/// Checks consecutive chunks along dimension 0 with the given extents.
fn check_1d(full: &GridBox, chunks: &[GridBox], sizes: &[usize]) {
    assert_eq!(chunks.len(), sizes.len(), "{chunks:?}");
    let mut offset = full.min();
    for (c, &s) in chunks.iter().zip(sizes) {
        assert_eq!(c.min(), offset);
        assert_eq!(c.range()[0], s);
        offset[0] += s;
    }
}

/// Checks a row-major grid of chunks: one (height, widths) entry per row.
fn check_2d(full: &GridBox, chunks: &[GridBox], rows: &[(usize, &[usize])]) {
    let per_row = rows[0].1.len();
    assert_eq!(chunks.len(), rows.len() * per_row, "{chunks:?}");
    let mut offset = full.min();
    for (j, (height, widths)) in rows.iter().enumerate() {
        assert_eq!(widths.len(), per_row);
        for (i, &w) in widths.iter().enumerate() {
            let c = chunks[j * per_row + i];
            assert_eq!(c.min(), offset, "chunk {j},{i}");
            assert_eq!((c.range()[0], c.range()[1]), (*height, w), "chunk {j},{i}");
            offset[1] += w;
        }
        offset[1] = full.min()[1];
        offset[0] += height;
    }
}

#[test]
fn split_1d_even() {
    let f = full([128, 1, 1]);
    check_1d(&f, &split_1d(&f, &ONES, 4), &[32, 32, 32, 32]);
}

#[test]
fn split_1d_256_in_4() {
    let f = full([256, 1, 1]);
    check_1d(&f, &split_1d(&f, &ONES, 4), &[64, 64, 64, 64]);
}

#[test]
fn split_1d_distributes_remainder() {
    let f = full([13, 1, 1]);
    check_1d(&f, &split_1d(&f, &ONES, 5), &[3, 3, 3, 2, 2]);
}

#[test]
fn split_1d_granularity() {
    let f = full([80, 1, 1]);
    check_1d(&f, &split_1d(&f, &Range::new(16, 1, 1), 3), &[32, 32, 16]);
}

#[test]
fn split_1d_fewer_chunks_when_forced() {
    let f = full([96, 1, 1]);
    check_1d(&f, &split_1d(&f, &Range::new(48, 1, 1), 3), &[48, 48]);
    let f = full([3, 1, 1]);
    check_1d(&f, &split_1d(&f, &ONES, 8), &[1, 1, 1]);
}

#[test]
fn split_1d_preserves_offset_and_other_dims() {
    let f = GridBox::from_subrange(Subrange::new(Id::new(37, 42, 7), Range::new(128, 1, 1)));
    let chunks = split_1d(&f, &ONES, 4);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.min(), Id::new(37 + 32 * i, 42, 7));
    }
    check_1d(&f, &chunks, &[32, 32, 32, 32]);
    let f = full([128, 42, 341]);
    for c in split_1d(&f, &ONES, 4) {
        assert_eq!(c.range(), Range::new(32, 42, 341));
    }
}

#[test]
fn split_2d_square() {
    let f = full([128, 128, 1]);
    check_2d(
        &f,
        &split_2d(&f, &ONES, 4),
        &[(64, &[64, 64]), (64, &[64, 64])],
    );
}

#[test]
fn split_2d_granularity() {
    let f = full([128, 128, 1]);
    let rows = vec![(32, &[64, 64][..]); 4];
    check_2d(&f, &split_2d(&f, &Range::new(8, 8, 1), 8), &rows);

    let f = full([256, 128, 1]);
    let rows = vec![(32, &[128][..]); 8];
    check_2d(&f, &split_2d(&f, &Range::new(8, 128, 1), 8), &rows);

    let f = full([128, 128, 1]);
    check_2d(
        &f,
        &split_2d(&f, &Range::new(32, 8, 1), 4),
        &[(64, &[64, 64]), (64, &[64, 64])],
    );
}

#[test]
fn split_2d_distributes_remainder() {
    let f = full([100, 100, 1]);
    check_2d(
        &f,
        &split_2d(&f, &ONES, 6),
        &[(34, &[50, 50]), (33, &[50, 50]), (33, &[50, 50])],
    );

    let f = full([128, 120, 1]);
    check_2d(
        &f,
        &split_2d(&f, &Range::new(8, 8, 1), 4),
        &[(64, &[64, 56]), (64, &[64, 56])],
    );

    let f = full([128, 128, 1]);
    let rows = vec![(32, &[48, 40, 40][..]); 4];
    check_2d(&f, &split_2d(&f, &Range::new(16, 8, 1), 12), &rows);
}

#[test]
fn split_2d_fewer_chunks_when_forced() {
    let f = full([128, 128, 1]);
    check_2d(
        &f,
        &split_2d(&f, &Range::new(64, 64, 1), 3),
        &[(64, &[128]), (64, &[128])],
    );
}

#[test]
fn split_2d_transposes_for_granularity() {
    let f = full([128, 128, 1]);
    let rows = vec![(32, &[64, 64][..]); 4];
    check_2d(&f, &split_2d(&f, &Range::new(8, 64, 1), 8), &rows);
    let rows = vec![(64, &[32, 32, 32, 32][..]); 2];
    check_2d(&f, &split_2d(&f, &Range::new(64, 8, 1), 8), &rows);
}

#[test]
fn split_2d_minimises_edges_for_non_square_domains() {
    let f = full([256, 64, 1]);
    let rows = vec![(64, &[32, 32][..]); 4];
    check_2d(&f, &split_2d(&f, &ONES, 8), &rows);
    let f = full([64, 256, 1]);
    let rows = vec![(32, &[64, 64, 64, 64][..]); 2];
    check_2d(&f, &split_2d(&f, &ONES, 8), &rows);
}

#[test]
fn split_2d_preserves_offset_and_other_dims() {
    let f = GridBox::from_subrange(Subrange::new(Id::new(37, 42, 7), Range::new(64, 64, 1)));
    let mins: Vec<_> = split_2d(&f, &ONES, 4).iter().map(|c| c.min()).collect();
    assert_eq!(
        mins,
        [
            Id::new(37, 42, 7),
            Id::new(37, 74, 7),
            Id::new(69, 42, 7),
            Id::new(69, 74, 7)
        ]
    );
    for c in split_2d(&full([128, 128, 341]), &ONES, 4) {
        assert_eq!(c.range(), Range::new(64, 64, 341));
    }
}

#[test]
fn split_2d_on_1d_boxes() {
    let f = full([128, 1, 1]);
    let rows = vec![(32, &[1][..]); 4];
    check_2d(&f, &split_2d(&f, &ONES, 4), &rows);
    let f = full([13, 1, 1]);
    check_2d(
        &f,
        &split_2d(&f, &ONES, 5),
        &[(3, &[1]), (3, &[1]), (3, &[1]), (2, &[1]), (2, &[1])],
    );
}

#[test]
fn empty_boxes_give_no_chunks() {
    assert!(split_1d(&GridBox::EMPTY, &ONES, 4).is_empty());
    assert!(split_2d(&GridBox::EMPTY, &ONES, 4).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Chunks tile the box exactly, are non-empty, respect the granularity and
    /// never exceed the requested count.
    #[test]
    fn splits_tile_the_box(
        g0 in 1usize..4, g1 in 1usize..4, m0 in 1usize..20, m1 in 1usize..20,
        off in (0usize..5, 0usize..5), n in 1usize..17, two_d in any::<bool>(),
    ) {
        let gran = Range::new(g0, g1, 1);
        let f = GridBox::from_subrange(Subrange::new(Id::new(off.0, off.1, 0), Range::new(g0 * m0, g1 * m1, 1)));
        let chunks = if two_d { split_2d(&f, &gran, n) } else { split_1d(&f, &gran, n) };
        prop_assert!(!chunks.is_empty() && chunks.len() <= n);
        prop_assert_eq!(chunks.iter().map(GridBox::area).sum::<usize>(), f.area());
        prop_assert_eq!(Region::from_boxes(chunks.iter().copied()), Region::from_box(f));
        for c in &chunks {
            prop_assert!(!c.is_empty());
            prop_assert!(c.range()[0] % g0 == 0 && c.range()[1] % g1 == 0);
        }
        if !two_d {
            prop_assert_eq!(chunks.len(), n.min(m0));
        }
    }
}
