//! Geometry structs of the C ABI and their conversion to the runtime's 3-wide types.

use crate::error::{Error, Result};
use crate::grid::{GridBox, Id, Range, Subrange};

/// An offset and a range, 3-wide and row-major (dimension 0 is the slowest). Unused dimensions
/// have offset 0 and range 1.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct celerity_subrange {
    /// Offset per dimension.
    pub offset: [usize; 3],
    /// Extent per dimension.
    pub range: [usize; 3],
}

/// A chunk of an iteration space: what a range mapper maps and what a kernel computes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct celerity_chunk {
    /// Dimensionality of the iteration space (0 to 3).
    pub dims: u32,
    /// Offset of this chunk (includes the global offset).
    pub offset: [usize; 3],
    /// Extent of this chunk.
    pub range: [usize; 3],
    /// Extent of the whole iteration space.
    pub global_range: [usize; 3],
}

impl From<Subrange> for celerity_subrange {
    fn from(subrange: Subrange) -> Self {
        Self {
            offset: subrange.offset.0,
            range: subrange.range.0,
        }
    }
}

impl From<GridBox> for celerity_subrange {
    fn from(b: GridBox) -> Self {
        b.subrange().into()
    }
}

impl celerity_subrange {
    /// The subrange as a runtime subrange.
    pub fn to_subrange(self) -> Subrange {
        Subrange::new(Id(self.offset), Range(self.range))
    }

    /// The subrange as a box, rejecting coordinates that overflow.
    pub fn to_box(self, argument: &str) -> Result<GridBox> {
        let mut max = [0; 3];
        for (d, max) in max.iter_mut().enumerate() {
            *max = self.offset[d].checked_add(self.range[d]).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "argument `{argument}`: offset {} + range {} overflows in dimension {d}",
                    self.offset[d], self.range[d]
                ))
            })?;
        }
        Ok(GridBox::from_arrays(self.offset, max))
    }
}

/// Checks a dimensionality argument (0 to 3).
pub(crate) fn check_dims(dims: u32, argument: &str) -> Result<usize> {
    if dims > 3 {
        return Err(Error::invalid_argument(format!(
            "argument `{argument}` is {dims}, at most 3 dimensions are supported"
        )));
    }
    Ok(dims as usize)
}

/// Reads a `const size_t[3]` range for `dims` dimensions: entries beyond `dims` must be 1 (or
/// are treated as 1 when 0-D). NULL is an error naming `argument`.
///
/// The C caller guarantees that a non-NULL pointer points to three readable `size_t`.
pub(crate) fn read_range(ptr: *const usize, dims: usize, argument: &str) -> Result<Range> {
    if ptr.is_null() {
        return Err(Error::invalid_argument(format!(
            "argument `{argument}` is NULL"
        )));
    }
    // SAFETY: non-NULL and pointing to three size_t by the caller's contract (see above).
    let values = unsafe { std::slice::from_raw_parts(ptr, 3) };
    let mut range = [1usize; 3];
    range[..dims].copy_from_slice(&values[..dims]);
    for (d, &v) in values.iter().enumerate().skip(dims) {
        if v != 1 {
            return Err(Error::invalid_argument(format!(
                "argument `{argument}` is {values:?} but only {dims} dimension(s) are used; entry {d} must be 1"
            )));
        }
    }
    Ok(Range(range))
}

/// Reads an optional `const size_t[3]` offset for `dims` dimensions (NULL: zero); entries beyond
/// `dims` must be 0.
pub(crate) fn read_offset(ptr: *const usize, dims: usize, argument: &str) -> Result<Id> {
    if ptr.is_null() {
        return Ok(Id::default());
    }
    // SAFETY: non-NULL and pointing to three size_t by the caller's contract.
    let values = unsafe { std::slice::from_raw_parts(ptr, 3) };
    let mut offset = [0usize; 3];
    offset[..dims].copy_from_slice(&values[..dims]);
    if let Some(d) = (dims..3).find(|&d| values[d] != 0) {
        return Err(Error::invalid_argument(format!(
            "argument `{argument}` is {values:?} but only {dims} dimension(s) are used; entry {d} must be 0"
        )));
    }
    Ok(Id(offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_padded_and_checked() {
        let r = [1024usize, 1, 1];
        assert_eq!(
            read_range(r.as_ptr(), 1, "range").unwrap(),
            Range::new(1024, 1, 1)
        );
        let r = [4usize, 5, 7];
        assert_eq!(
            read_range(r.as_ptr(), 2, "range").unwrap_err().message(),
            "argument `range` is [4, 5, 7] but only 2 dimension(s) are used; entry 2 must be 1"
        );
        assert!(read_range(std::ptr::null(), 1, "range").is_err());
        let o = [3usize, 0, 0];
        assert_eq!(
            read_offset(o.as_ptr(), 1, "offset").unwrap(),
            Id::new(3, 0, 0)
        );
        assert_eq!(
            read_offset(std::ptr::null(), 1, "offset").unwrap(),
            Id::default()
        );
        assert!(
            check_dims(4, "dims")
                .unwrap_err()
                .message()
                .contains("at most 3")
        );
    }

    #[test]
    fn subranges_convert_to_boxes() {
        let s = celerity_subrange {
            offset: [1, 2, 0],
            range: [3, 4, 1],
        };
        assert_eq!(
            s.to_box("s").unwrap(),
            GridBox::from_arrays([1, 2, 0], [4, 6, 1])
        );
        let overflow = celerity_subrange {
            offset: [usize::MAX, 0, 0],
            range: [2, 1, 1],
        };
        assert!(overflow.to_box("s").is_err());
        assert_eq!(
            celerity_subrange::from(GridBox::from_arrays([1, 2, 0], [4, 6, 1])),
            s
        );
    }
}
