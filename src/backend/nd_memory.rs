//! Copies of n-dimensional boxes between dense row-major allocations of any shape.
//!
//! Every copy in the runtime (coherence copies between memories, staging, fence read-back,
//! (de)linearisation around sends) moves a box of elements from one allocation to another whose
//! extents differ. [`layout_nd_copy`] reduces such a copy to its minimal form: one contiguous
//! run of bytes repeated along at most two strided dimensions. A memcpy-based backend loops over
//! that description; the CUDA backend maps 0, 1 and 2 strides onto `cuMemcpy`, `cuMemcpy2D` and
//! `cuMemcpy3D`; MPI builds its datatypes from the same shape.

use crate::error::{Error, Result};

/// One strided repetition of the contiguous run: `count` times, advancing the source by
/// `source_stride` bytes and the destination by `dest_stride` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NdCopyStride {
    /// Bytes between consecutive repetitions in the source.
    pub source_stride: usize,
    /// Bytes between consecutive repetitions in the destination.
    pub dest_stride: usize,
    /// Number of repetitions.
    pub count: usize,
}

/// The minimal description of an n-D copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NdCopyLayout {
    /// Byte offset of the first element in the source allocation.
    pub offset_in_source: usize,
    /// Byte offset of the first element in the destination allocation.
    pub offset_in_dest: usize,
    /// How many of `strides` are used (0, 1 or 2); the outer one comes first.
    pub num_complex_strides: usize,
    /// Outer stride first. Unused entries are zero.
    pub strides: [NdCopyStride; 2],
    /// Bytes copied contiguously per innermost repetition; 0 for an empty copy.
    pub contiguous_size: usize,
}

impl NdCopyLayout {
    /// Total bytes moved.
    pub fn total_bytes(&self) -> usize {
        self.strides[..self.num_complex_strides]
            .iter()
            .fold(self.contiguous_size, |bytes, s| bytes * s.count)
    }

    /// Calls `f(source_offset, dest_offset, len)` for every contiguous run, in ascending order.
    pub fn for_each_run(&self, mut f: impl FnMut(usize, usize, usize)) {
        if self.contiguous_size == 0 {
            return;
        }
        let outer = self.strides[0];
        let inner = self.strides[1];
        match self.num_complex_strides {
            0 => f(
                self.offset_in_source,
                self.offset_in_dest,
                self.contiguous_size,
            ),
            1 => {
                for i in 0..outer.count {
                    f(
                        self.offset_in_source + i * outer.source_stride,
                        self.offset_in_dest + i * outer.dest_stride,
                        self.contiguous_size,
                    );
                }
            }
            _ => {
                for i in 0..outer.count {
                    let (src, dst) = (
                        self.offset_in_source + i * outer.source_stride,
                        self.offset_in_dest + i * outer.dest_stride,
                    );
                    for j in 0..inner.count {
                        f(
                            src + j * inner.source_stride,
                            dst + j * inner.dest_stride,
                            self.contiguous_size,
                        );
                    }
                }
            }
        }
    }
}

fn linear_offset(allocation: [usize; 3], offset: [usize; 3]) -> usize {
    (offset[0] * allocation[1] + offset[1]) * allocation[2] + offset[2]
}

/// The minimal layout of a copy of `copy_range` elements from `offset_in_source` of a source
/// allocation of extent `source_range` to `offset_in_dest` of a destination allocation of
/// extent `dest_range` (row-major, 3-wide, offsets relative to the allocations).
///
/// Dimensions are folded into the contiguous run from the fastest (2) outwards for as long as
/// the copy spans the whole allocation in both source and destination; the remaining dimensions
/// with more than one repetition become strides.
pub fn layout_nd_copy(
    source_range: [usize; 3],
    dest_range: [usize; 3],
    offset_in_source: [usize; 3],
    offset_in_dest: [usize; 3],
    copy_range: [usize; 3],
    elem_size: usize,
) -> NdCopyLayout {
    if copy_range.contains(&0) || elem_size == 0 {
        return NdCopyLayout::default();
    }
    let mut layout = NdCopyLayout {
        offset_in_source: linear_offset(source_range, offset_in_source) * elem_size,
        offset_in_dest: linear_offset(dest_range, offset_in_dest) * elem_size,
        ..NdCopyLayout::default()
    };
    // Byte strides of each dimension in source and destination.
    let source_strides = [
        source_range[1] * source_range[2] * elem_size,
        source_range[2] * elem_size,
        elem_size,
    ];
    let dest_strides = [
        dest_range[1] * dest_range[2] * elem_size,
        dest_range[2] * elem_size,
        elem_size,
    ];
    // Fold dimensions into the contiguous run while the inner dimensions are full in both.
    let mut contiguous = copy_range[2] * elem_size;
    let mut d = 2;
    while d > 0 && copy_range[d] == source_range[d] && copy_range[d] == dest_range[d] {
        d -= 1;
        contiguous *= copy_range[d];
    }
    layout.contiguous_size = contiguous;
    // Dimensions d-1 .. 0 with more than one repetition are strides (outermost first).
    for dim in 0..d {
        if copy_range[dim] > 1 {
            layout.strides[layout.num_complex_strides] = NdCopyStride {
                source_stride: source_strides[dim],
                dest_stride: dest_strides[dim],
                count: copy_range[dim],
            };
            layout.num_complex_strides += 1;
        }
    }
    layout
}

/// A box of elements inside a dense row-major allocation: the allocation's extent, the box's
/// offset relative to the allocation, and the box's extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StridedBox {
    /// Extent of the whole allocation, in elements.
    pub allocation_range: [usize; 3],
    /// Offset of the box inside the allocation.
    pub offset: [usize; 3],
    /// Extent of the box.
    pub range: [usize; 3],
}

impl StridedBox {
    /// The layout of a copy of this box into `dest` (same range) with `elem_size`-byte elements.
    pub fn copy_layout_to(&self, dest: &StridedBox, elem_size: usize) -> NdCopyLayout {
        layout_nd_copy(
            self.allocation_range,
            dest.allocation_range,
            self.offset,
            dest.offset,
            self.range,
            elem_size,
        )
    }

    /// Checks that the box lies inside the allocation and the allocation inside `bytes` bytes.
    pub fn validate(&self, elem_size: usize, bytes: usize, what: &str) -> Result<()> {
        for d in 0..3 {
            let end = self.offset[d].checked_add(self.range[d]);
            if end.is_none_or(|end| end > self.allocation_range[d]) {
                return Err(Error::invalid_argument(format!(
                    "{what}: box offset {:?} range {:?} exceeds allocation range {:?} in dimension {d}",
                    self.offset, self.range, self.allocation_range
                )));
            }
        }
        let needed = self
            .allocation_range
            .iter()
            .try_fold(elem_size, |acc, &r| acc.checked_mul(r));
        match needed {
            Some(needed) if needed <= bytes => Ok(()),
            _ => Err(Error::invalid_argument(format!(
                "{what}: allocation range {:?} of {elem_size}-byte elements needs more than the {bytes} bytes given",
                self.allocation_range
            ))),
        }
    }
}

/// Copies the box `source` of `src` into the box `dest` of `dst` (both of extent `range`,
/// checked against the slices).
pub fn copy_box(
    src: &[u8],
    source: StridedBox,
    dst: &mut [u8],
    dest: StridedBox,
    elem_size: usize,
) -> Result<()> {
    if source.range != dest.range {
        return Err(Error::invalid_argument(format!(
            "copy_box: source range {:?} differs from destination range {:?}",
            source.range, dest.range
        )));
    }
    source.validate(elem_size, src.len(), "copy source")?;
    dest.validate(elem_size, dst.len(), "copy destination")?;
    let layout = source.copy_layout_to(&dest, elem_size);
    layout.for_each_run(|s, d, len| dst[d..d + len].copy_from_slice(&src[s..s + len]));
    Ok(())
}

/// [`copy_box`] on raw pointers, for the executor's allocations.
///
/// # Safety
/// `src` must be valid for reads and `dst` for writes of the whole allocations described by
/// `source.allocation_range` and `dest.allocation_range` times `elem_size` bytes, the boxes
/// must lie inside their allocations, and the copied bytes must not overlap.
pub unsafe fn copy_box_raw(
    src: *const u8,
    source: StridedBox,
    dst: *mut u8,
    dest: StridedBox,
    elem_size: usize,
) {
    let layout = source.copy_layout_to(&dest, elem_size);
    layout.for_each_run(|s, d, len| {
        // SAFETY: the caller guarantees both allocations cover every run of the layout (which
        // stays inside the boxes) and that source and destination runs do not overlap. Long
        // runs (a fence of a whole buffer into user memory) are copied on several threads.
        unsafe { super::parallel_copy::copy(dst.add(d), src.add(s), len) }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn full_allocation_copy_is_one_contiguous_run() {
        let l = layout_nd_copy([4, 5, 6], [4, 5, 6], [0; 3], [0; 3], [4, 5, 6], 8);
        assert_eq!(l.num_complex_strides, 0);
        assert_eq!(l.contiguous_size, 4 * 5 * 6 * 8);
    }

    #[test]
    fn rows_of_a_2d_subbox_are_one_stride() {
        // 2-D: copy rows 1..3, columns 2..5 of a 4x8 allocation into a dense 2x3 destination.
        let l = layout_nd_copy([1, 4, 8], [1, 2, 3], [0, 1, 2], [0, 0, 0], [1, 2, 3], 4);
        assert_eq!(l.num_complex_strides, 1);
        assert_eq!(l.contiguous_size, 12);
        assert_eq!(
            l.strides[0],
            NdCopyStride {
                source_stride: 32,
                dest_stride: 12,
                count: 2
            }
        );
        assert_eq!(l.offset_in_source, (8 + 2) * 4);
        assert_eq!(l.offset_in_dest, 0);
    }

    #[test]
    fn a_3d_subbox_needs_two_strides_unless_planes_are_full() {
        let l = layout_nd_copy([4, 4, 4], [4, 4, 4], [1, 1, 1], [1, 1, 1], [2, 2, 2], 1);
        assert_eq!(l.num_complex_strides, 2);
        assert_eq!(l.contiguous_size, 2);
        let l = layout_nd_copy([4, 4, 4], [3, 4, 4], [1, 0, 0], [0, 0, 0], [2, 4, 4], 1);
        assert_eq!(l.num_complex_strides, 0);
        assert_eq!(l.contiguous_size, 32);
        // Unit dimensions never become strides.
        let l = layout_nd_copy([4, 4, 4], [4, 4, 4], [1, 1, 0], [2, 2, 0], [1, 1, 3], 1);
        assert_eq!(l.num_complex_strides, 0);
    }

    #[test]
    fn empty_copies_move_nothing() {
        let l = layout_nd_copy([4, 4, 4], [4, 4, 4], [0; 3], [0; 3], [0, 4, 4], 4);
        assert_eq!(l.total_bytes(), 0);
        let mut runs = 0;
        l.for_each_run(|_, _, _| runs += 1);
        assert_eq!(runs, 0);
    }

    #[test]
    fn copy_box_rejects_boxes_outside_allocations() {
        let src = vec![0u8; 16];
        let mut dst = vec![0u8; 16];
        let inside = StridedBox {
            allocation_range: [1, 4, 4],
            offset: [0, 0, 0],
            range: [1, 2, 2],
        };
        let outside = StridedBox {
            allocation_range: [1, 4, 4],
            offset: [0, 3, 0],
            range: [1, 2, 2],
        };
        assert!(copy_box(&src, inside, &mut dst, inside, 1).is_ok());
        let e = copy_box(&src, outside, &mut dst, inside, 1).unwrap_err();
        assert!(
            e.message().contains("exceeds allocation range"),
            "{}",
            e.message()
        );
        let e = copy_box(&src, inside, &mut dst[..8], inside, 1).unwrap_err();
        assert!(
            e.message().contains("needs more than the 8 bytes"),
            "{}",
            e.message()
        );
    }

    fn oracle_copy(src: &[u8], s: StridedBox, dst: &mut [u8], d: StridedBox, elem: usize) {
        for i in 0..s.range[0] {
            for j in 0..s.range[1] {
                for k in 0..s.range[2] {
                    let so = linear_offset(
                        s.allocation_range,
                        [s.offset[0] + i, s.offset[1] + j, s.offset[2] + k],
                    ) * elem;
                    let dof = linear_offset(
                        d.allocation_range,
                        [d.offset[0] + i, d.offset[1] + j, d.offset[2] + k],
                    ) * elem;
                    dst[dof..dof + elem].copy_from_slice(&src[so..so + elem]);
                }
            }
        }
    }

    fn strided_box_pair() -> impl Strategy<Value = (StridedBox, StridedBox, usize)> {
        (
            prop::array::uniform3(1usize..5),
            prop::array::uniform3(0usize..3),
            prop::array::uniform3(0usize..3),
            prop::array::uniform3(0usize..3),
            prop::array::uniform3(0usize..3),
            1usize..4,
        )
            .prop_map(|(range, so, sp, dofs, dp, elem)| {
                let src_alloc = [0, 1, 2].map(|d| so[d] + range[d] + sp[d]);
                let dst_alloc = [0, 1, 2].map(|d| dofs[d] + range[d] + dp[d]);
                (
                    StridedBox {
                        allocation_range: src_alloc,
                        offset: so,
                        range,
                    },
                    StridedBox {
                        allocation_range: dst_alloc,
                        offset: dofs,
                        range,
                    },
                    elem,
                )
            })
    }

    proptest! {
        #[test]
        fn copies_match_an_elementwise_oracle((s, d, elem) in strided_box_pair()) {
            let src_len = s.allocation_range.iter().product::<usize>() * elem;
            let dst_len = d.allocation_range.iter().product::<usize>() * elem;
            let src: Vec<u8> = (0..src_len).map(|i| (i * 7 + 3) as u8).collect();
            let mut expected = vec![0xAAu8; dst_len];
            oracle_copy(&src, s, &mut expected, d, elem);
            let mut actual = vec![0xAAu8; dst_len];
            copy_box(&src, s, &mut actual, d, elem).unwrap();
            prop_assert_eq!(&actual, &expected);
            let mut raw = vec![0xAAu8; dst_len];
            // SAFETY: both vectors cover their allocations; they are distinct.
            unsafe { copy_box_raw(src.as_ptr(), s, raw.as_mut_ptr(), d, elem) };
            prop_assert_eq!(&raw, &expected);
            let layout = layout_nd_copy(s.allocation_range, d.allocation_range, s.offset, d.offset, s.range, elem);
            prop_assert!(layout.num_complex_strides <= 2);
            prop_assert_eq!(layout.total_bytes(), s.range.iter().product::<usize>() * elem);
        }
    }
}
