//! Celerity's `range_mapper_tests` (the built-ins of the C ABI), plus validation and clamping.

use super::*;
use crate::ErrorKind;
use crate::types::BufferId;

fn sr(offset: [usize; 3], range: [usize; 3]) -> Subrange {
    Subrange::new(Id(offset), Range(range))
}

fn chunk(dims: usize, offset: [usize; 3], range: [usize; 3], global: [usize; 3]) -> Chunk {
    Chunk::new(dims, Id(offset), Range(range), Range(global))
}

fn boxed(min: [usize; 3], max: [usize; 3]) -> GridBox {
    GridBox::from_arrays(min, max)
}

fn region(boxes: &[GridBox]) -> Region {
    Region::from_boxes(boxes.iter().copied())
}

/// The single box a mapper yields.
fn single_box(m: &Mapped) -> GridBox {
    assert_eq!(m.region.boxes().len(), 1, "{:?}", m.region);
    m.region.boxes()[0]
}

const LABEL: BufferLabel<'static> = BufferLabel {
    id: BufferId(3),
    name: Some("grid"),
};

#[test]
fn custom_results_are_clamped_to_the_buffer() {
    let raw = sr([0, 100, 127], [256, 64, 32]);
    let rm = RangeMapper::Custom(Arc::new(move |_: &Chunk, _, _| raw));
    let m = rm.map(&chunk(3, [0; 3], [1; 3], [1; 3]), 3, Range([128, 128, 128]));
    assert_eq!(single_box(&m), boxed([0, 100, 127], [128, 128, 128]));
    assert_eq!(m.clamped_from, Some(raw));
    // inside the buffer: nothing to report
    let inside = RangeMapper::Custom(Arc::new(|c: &Chunk, _, _| Subrange::new(c.offset, c.range)));
    let m = inside.map(
        &chunk(1, [2, 0, 0], [3, 1, 1], [8, 1, 1]),
        1,
        Range([8, 1, 1]),
    );
    assert_eq!(m.clamped_from, None);
    assert_eq!(single_box(&m), boxed([2, 0, 0], [5, 1, 1]));
}

#[test]
fn custom_mappers_see_chunk_and_buffer() {
    // a transposed mapper, as in Celerity's distributed tests
    let rm = RangeMapper::Custom(Arc::new(|c: &Chunk, dims, range: Range| {
        assert_eq!((dims, range), (2, Range([64, 64, 1])));
        Subrange::new(
            Id([c.offset[1], c.offset[0], 0]),
            Range([c.range[1], c.range[0], 1]),
        )
    }));
    let m = rm.map(
        &chunk(2, [0, 16, 0], [8, 4, 1], [64, 64, 1]),
        2,
        Range([64, 64, 1]),
    );
    assert_eq!(single_box(&m), boxed([16, 0, 0], [20, 8, 1]));
}

#[test]
fn one_to_one() {
    let m = RangeMapper::OneToOne.map(
        &chunk(2, [64, 32, 0], [32, 4, 1], [128, 128, 1]),
        2,
        Range([128, 128, 1]),
    );
    assert_eq!(single_box(&m), boxed([64, 32, 0], [96, 36, 1]));
}

#[test]
fn fixed() {
    let rm = RangeMapper::Fixed(sr([3, 0, 0], [97, 1, 1]));
    let m = rm.map(
        &chunk(2, [64, 32, 0], [32, 4, 1], [128, 128, 1]),
        1,
        Range([128, 1, 1]),
    );
    assert_eq!(single_box(&m), boxed([3, 0, 0], [100, 1, 1]));
}

#[test]
fn slice() {
    let c = chunk(3, [32, 32, 32], [32, 32, 32], [128, 128, 128]);
    let buffer = Range([128, 128, 128]);
    let expected = [
        boxed([0, 32, 32], [128, 64, 64]),
        boxed([32, 0, 32], [64, 128, 64]),
        boxed([32, 32, 0], [64, 64, 128]),
    ];
    for (dim, want) in expected.into_iter().enumerate() {
        assert_eq!(
            single_box(&RangeMapper::Slice(dim).map(&c, 3, buffer)),
            want
        );
    }
}

#[test]
fn all() {
    for (dims, range) in [(1, [128, 1, 1]), (2, [128, 64, 1]), (3, [128, 64, 32])] {
        let m = RangeMapper::All.map(&chunk(1, [0; 3], [1; 3], [1; 3]), dims, Range(range));
        assert_eq!(single_box(&m), GridBox::full_range(Range(range)));
    }
}

#[test]
fn neighborhood_bounding_box() {
    let m = RangeMapper::Neighborhood([10, 0, 0]).map(
        &chunk(1, [15, 0, 0], [10, 1, 1], [128, 1, 1]),
        1,
        Range([128, 1, 1]),
    );
    assert_eq!(single_box(&m), boxed([5, 0, 0], [35, 1, 1]));
    let m = RangeMapper::Neighborhood([10, 10, 0]).map(
        &chunk(2, [5, 100, 0], [10, 20, 1], [128, 128, 1]),
        2,
        Range([128, 128, 1]),
    );
    assert_eq!(single_box(&m), boxed([0, 90, 0], [25, 128, 1]));
    let m = RangeMapper::Neighborhood([3, 4, 5]).map(
        &chunk(3, [3, 4, 5], [1, 1, 1], [128; 3]),
        3,
        Range([128; 3]),
    );
    assert_eq!(single_box(&m), boxed([0, 0, 0], [7, 9, 11]));
}

#[test]
fn neighborhood_along_axes_is_a_cross() {
    let m = RangeMapper::NeighborhoodAlongAxes([10, 0, 0]).map(
        &chunk(1, [15, 0, 0], [10, 1, 1], [128, 1, 1]),
        1,
        Range([128, 1, 1]),
    );
    assert_eq!(single_box(&m), boxed([5, 0, 0], [35, 1, 1]));
    let m = RangeMapper::NeighborhoodAlongAxes([10, 10, 0]).map(
        &chunk(2, [5, 100, 0], [10, 20, 1], [128, 128, 1]),
        2,
        Range([128, 128, 1]),
    );
    assert_eq!(
        m.region,
        region(&[
            boxed([0, 100, 0], [25, 120, 1]),
            boxed([5, 90, 0], [15, 128, 1])
        ])
    );
    let m = RangeMapper::NeighborhoodAlongAxes([3, 4, 5]).map(
        &chunk(3, [3, 4, 5], [1, 1, 1], [128; 3]),
        3,
        Range([128; 3]),
    );
    assert_eq!(
        m.region,
        region(&[
            boxed([0, 4, 5], [7, 5, 6]),
            boxed([3, 0, 5], [4, 9, 6]),
            boxed([3, 4, 0], [4, 5, 11]),
        ])
    );
}

#[test]
fn neighborhoods_saturate_instead_of_overflowing() {
    let huge = usize::MAX - 1;
    let m = RangeMapper::Neighborhood([huge, 0, 0]).map(
        &chunk(1, [4, 0, 0], [2, 1, 1], [8, 1, 1]),
        1,
        Range([8, 1, 1]),
    );
    assert_eq!(single_box(&m), boxed([0, 0, 0], [8, 1, 1]));
}

#[test]
fn empty_chunks_map_to_empty_regions() {
    let empty = chunk(1, [4, 0, 0], [0, 1, 1], [8, 1, 1]);
    for rm in [
        RangeMapper::OneToOne,
        RangeMapper::Slice(0),
        RangeMapper::Neighborhood([1, 0, 0]),
        RangeMapper::NeighborhoodAlongAxes([1, 0, 0]),
    ] {
        assert!(
            rm.map(&empty, 1, Range([8, 1, 1])).region.is_empty(),
            "{rm:?}"
        );
    }
    // mappers that ignore the chunk still yield their region
    assert!(
        !RangeMapper::All
            .map(&empty, 1, Range([8, 1, 1]))
            .region
            .is_empty()
    );
}

#[test]
fn fixed_outside_the_buffer_is_an_invalid_argument() {
    let err = RangeMapper::Fixed(sr([0, 0, 0], [2048, 1, 1]))
        .validate_for_buffer(LABEL, 1, Range([1024, 1, 1]))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        err.message(),
        "range mapper FIXED subrange [0,2048) exceeds buffer B3 \"grid\" range [0,1024)"
    );
    let err = RangeMapper::Fixed(sr([usize::MAX, 0, 0], [2, 1, 1]))
        .validate_for_buffer(LABEL, 2, Range([16, 16, 1]))
        .unwrap_err();
    assert!(
        err.message()
            .contains("exceeds buffer B3 \"grid\" range [0,16)x[0,16)"),
        "{}",
        err.message()
    );
    assert!(
        RangeMapper::Fixed(sr([8, 0, 0], [8, 1, 1]))
            .validate_for_buffer(LABEL, 1, Range([16, 1, 1]))
            .is_ok()
    );
}

#[test]
fn slice_dimension_must_be_below_buffer_dims() {
    let err = RangeMapper::Slice(2)
        .validate_for_buffer(LABEL, 2, Range([8, 8, 1]))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        err.message(),
        "range mapper SLICE dimension 2 is not below the dimensionality 2 of buffer B3 \"grid\""
    );
    assert!(
        RangeMapper::Slice(1)
            .validate(2, LABEL, 2, Range([8, 8, 1]))
            .is_ok()
    );
}

#[test]
fn one_to_one_and_neighborhoods_need_equal_dims() {
    for rm in [
        RangeMapper::OneToOne,
        RangeMapper::Neighborhood([1, 1, 0]),
        RangeMapper::NeighborhoodAlongAxes([1, 1, 0]),
    ] {
        let err = rm.validate(2, LABEL, 1, Range([8, 1, 1])).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            err.message(),
            format!(
                "range mapper {} needs kernel and buffer of equal dimensionality, but the kernel is 2-D and buffer B3 \"grid\" is 1-D",
                rm.kind_name()
            )
        );
        assert!(rm.validate(1, LABEL, 1, Range([8, 1, 1])).is_ok());
    }
    // the others accept any kernel
    for rm in [
        RangeMapper::All,
        RangeMapper::Slice(0),
        RangeMapper::Fixed(sr([0; 3], [1; 3])),
    ] {
        assert!(rm.validate(3, LABEL, 1, Range([8, 1, 1])).is_ok(), "{rm:?}");
    }
}

/// Properties of the built-in mappers over random buffers, chunks and targets.
mod builtin_properties {
    use super::*;
    use proptest::prelude::*;

    fn arb_range(max: usize) -> impl Strategy<Value = [usize; 3]> {
        [1..=max, 1..=max, 1..=max]
    }

    /// A non-empty box inside `[0, extent)`.
    fn arb_box_in(extent: [usize; 3]) -> impl Strategy<Value = GridBox> {
        let dim = |e: usize| (0..e).prop_flat_map(move |lo| (Just(lo), lo + 1..=e));
        (dim(extent[0]), dim(extent[1]), dim(extent[2]))
            .prop_map(|(a, b, c)| boxed([a.0, b.0, c.0], [a.1, b.1, c.1]))
    }

    fn arb_builtin_mapper() -> impl Strategy<Value = RangeMapper> {
        prop_oneof![
            Just(RangeMapper::OneToOne),
            Just(RangeMapper::All),
            ([0..24usize, 0..24, 0..24], [0..24usize, 0..24, 0..24])
                .prop_map(|(o, r)| RangeMapper::Fixed(sr(o, r))),
            (0..4usize).prop_map(RangeMapper::Slice),
            [0..4usize, 0..4, 0..4].prop_map(RangeMapper::Neighborhood),
            [0..4usize, 0..4, 0..4].prop_map(RangeMapper::NeighborhoodAlongAxes),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// The contract the command generator's push search relies on: a chunk meets the box
        /// exactly when the bounds of what it accesses meet the target.
        #[test]
        fn a_chunk_meets_the_box_exactly_when_its_bounds_meet_the_target(
            (mapper, buffer, global, chunk_box, target) in (
                arb_builtin_mapper(), arb_range(20), arb_range(24)
            ).prop_flat_map(|(m, buffer, global)| (
                Just(m), Just(buffer), Just(global), arb_box_in(global), arb_box_in(buffer)
            ))
        ) {
            let ck = chunk(3, *chunk_box.min_arr(), chunk_box.range().0, global);
            let bounds = mapper.bounds(&ck, Range(buffer)).expect("a built-in mapper");
            let reaching = mapper
                .chunks_reaching(&target, Range(buffer))
                .expect("a built-in mapper");
            prop_assert_eq!(
                chunk_box.intersects(&reaching),
                bounds.intersects(&target),
                "{:?}: chunk {:?}, bounds {:?}, target {:?}, box {:?}",
                mapper, chunk_box, bounds, target, reaching
            );
        }

        /// A cross is the chunk with one arm per axis, clamped to the buffer, whatever shortcut
        /// builds it: the same region as uniting the core and every arm.
        #[test]
        fn a_cross_is_the_union_of_its_core_and_arms(
            (n, buffer, global, chunk_box) in (
                [0..4usize, 0..4, 0..4], arb_range(20), arb_range(24)
            ).prop_flat_map(|(n, buffer, global)| (
                Just(n), Just(buffer), Just(global), arb_box_in(global)
            ))
        ) {
            let ck = chunk(3, *chunk_box.min_arr(), chunk_box.range().0, global);
            let full = GridBox::full_range(Range(buffer));
            let mut parts = vec![chunk_box.intersection(&full)];
            for d in 0..3 {
                let (mut min, mut max) = (*chunk_box.min_arr(), *chunk_box.max_arr());
                min[d] = min[d].saturating_sub(n[d]);
                max[d] += n[d];
                parts.push(GridBox::from_arrays(min, max).intersection(&full));
            }
            let expected = region(&parts);
            let mapped = RangeMapper::NeighborhoodAlongAxes(n).map(&ck, 3, Range(buffer));
            prop_assert_eq!(&mapped.region, &expected, "n {:?}, chunk {:?}", n, chunk_box);
        }
    }

    #[test]
    fn a_custom_mapper_has_no_box() {
        let rm = RangeMapper::Custom(Arc::new(|_: &Chunk, _, _| sr([0; 3], [1; 3])));
        assert_eq!(
            rm.chunks_reaching(&boxed([0; 3], [1; 3]), Range([4, 4, 4])),
            None
        );
    }
}
