//! The task-level regions of an access map (the per-buffer unions built in place by
//! `compute_task_regions`) against a plain union of the accesses' regions.

use proptest::prelude::*;

use super::*;
use crate::grid::{Id, Subrange};

/// One of a few boxes of an 8×8 buffer, so that accesses often repeat or cover each other
/// (the in-place paths: equal single boxes, covered regions, a first side left empty).
fn arb_fixed() -> impl Strategy<Value = Subrange> {
    prop::sample::select(vec![
        ([0, 0], [8, 8]),
        ([0, 0], [4, 8]),
        ([4, 0], [4, 8]),
        ([2, 2], [3, 3]),
        ([0, 0], [1, 1]),
    ])
    .prop_map(|(o, r)| Subrange::new(Id::new(o[0], o[1], 0), Range::new(r[0], r[1], 1)))
}

fn arb_access() -> impl Strategy<Value = BufferAccess> {
    (
        0..2u64,
        prop::sample::select(AccessMode::ALL.to_vec()),
        arb_fixed(),
    )
        .prop_map(|(bid, mode, sr)| BufferAccess {
            bid: BufferId(bid),
            mode,
            mapper: RangeMapper::Fixed(sr),
            buffer_dims: 2,
            buffer_range: Range::new(8, 8, 1),
        })
}

/// The union of the regions of the accesses to `bid` whose mode passes `keep`.
fn oracle(accesses: &[BufferAccess], bid: BufferId, keep: fn(AccessMode) -> bool) -> Region {
    accesses
        .iter()
        .filter(|a| a.bid == bid && keep(a.mode))
        .fold(Region::new(), |r, a| match &a.mapper {
            RangeMapper::Fixed(sr) => r.union(&Region::from_box(GridBox::from_subrange(*sr))),
            _ => unreachable!("only fixed mappers are generated"),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn task_regions_are_the_unions_of_the_accesses(
        accesses in prop::collection::vec(arb_access(), 1..5)
    ) {
        let map = BufferAccessMap::new(
            TaskId(1),
            accesses.iter().cloned().collect(),
            TaskGeometry::default(),
        );
        for bid in [BufferId(0), BufferId(1)] {
            prop_assert_eq!(
                map.task_consumed_region(bid),
                &oracle(&accesses, bid, AccessMode::is_consumer)
            );
            prop_assert_eq!(
                map.task_produced_region(bid),
                &oracle(&accesses, bid, AccessMode::is_producer)
            );
            prop_assert_eq!(map.accesses_buffer(bid), accesses.iter().any(|a| a.bid == bid));
        }
    }
}
