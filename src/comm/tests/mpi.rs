//! MPI communicator tests that need no peers: the library, pilot encoding, stride folding.

use super::*;
use crate::grid::{Id, Range, Subrange};

#[test]
fn names_the_linked_mpi_library() {
    let version = library_version().unwrap();
    assert!(version.contains("MPI"), "{version}");
}

#[test]
fn pilots_survive_encoding() {
    let message = PilotMessage {
        id: MessageId(77),
        transfer: TransferId {
            consumer: TaskId(5),
            buffer: BufferId(2),
            reduction: ReductionId(1),
        },
        region_box: GridBox::from_arrays([1, 2, 3], [4, 5, 6]),
    };
    assert_eq!(decode_pilot(&encode_pilot(&message)), message);
    assert_eq!(payload_tag(MessageId(0)), 1);
    assert_eq!(payload_tag(MessageId(c_int::MAX as u64 - 1)), 1);
}

#[test]
fn strides_fold_the_leading_offset_and_reject_int_overflow() {
    let stride = Stride {
        allocation_range: Range::new(100, 8, 4),
        transfer: Subrange::new(Id::new(10, 2, 1), Range::new(5, 3, 2)),
        elem_size: 8,
    };
    let (offset, key) = normalise_stride(&stride).unwrap();
    assert_eq!(offset, 10 * 8 * 4 * 8);
    assert_eq!(
        (key.sizes, key.subsizes, key.starts),
        ([5, 8, 4], [5, 3, 2], [0, 2, 1])
    );
    let huge = Stride {
        allocation_range: Range::new(4, 1 << 32, 1),
        transfer: Subrange::new(Id::new(0, 0, 0), Range::new(1, 1 << 32, 1)),
        elem_size: 1,
    };
    let error = normalise_stride(&huge).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Communication);
    assert!(error.message().contains("exceeds MPI's int coordinates"));
}
