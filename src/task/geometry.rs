//! [`TaskGeometry`]: the iteration space of a task, which range mappers and accesses are
//! evaluated against (C++ Celerity keeps it in the task as `geometry`; here it sits below both
//! the task and its access map, so neither file imports the other).

use crate::grid::{GridBox, Id, Range, Subrange};

/// The iteration space of a task. Unused dimensions have size 1, offset 0 and granularity 1.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TaskGeometry {
    /// Dimensionality (0 to 3).
    pub dims: usize,
    /// Extent of the iteration space.
    pub global_size: Range,
    /// Offset of the first item.
    pub global_offset: Id,
    /// Chunks are split at multiples of this (`celerity_cg_constrain_split`).
    pub granularity: Range,
}

impl Default for TaskGeometry {
    /// A single item, as for horizons, epochs, fences and master-node tasks.
    fn default() -> Self {
        TaskGeometry {
            dims: 0,
            global_size: Range::ONE,
            global_offset: Id::ZERO,
            granularity: Range::ONE,
        }
    }
}

impl TaskGeometry {
    /// An iteration space of `size` at `offset`, granularity 1.
    pub fn new(dims: usize, global_size: Range, global_offset: Id) -> Self {
        TaskGeometry {
            dims,
            global_size,
            global_offset,
            granularity: Range::ONE,
        }
    }

    /// The whole iteration space as a box.
    pub fn global_box(&self) -> GridBox {
        GridBox::from_subrange(Subrange::new(self.global_offset, self.global_size))
    }
}
