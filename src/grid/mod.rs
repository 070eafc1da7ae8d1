//! Geometry: ranges, ids, boxes, regions, region maps and splitting.
//!
//! Every layer of the runtime computes with regions. All geometry is 3-wide
//! internally and row-major (dimension 0 is the slowest); lower-dimensional
//! values are padded (range 1, offset 0), so a D-dimensional object embedded
//! in 3-D covers the same points. Algorithms detect the *effective*
//! dimensionality at run time and skip the padding dimensions.
//!
//! Regions are kept in a canonical normal form (see [`normalize`]), so two
//! regions are equal exactly when they cover the same points.

mod connectivity;
mod entry_index;
mod grid_box;
mod normalize;
mod range;
mod region;
mod region_map;
mod rtree;
mod split;

#[cfg(test)]
mod test_util;

pub use connectivity::{
    COMMUNICATOR_MAX_COORDINATE, boxes_edge_connected, communicator_split_is_excessive,
    connected_subregion_bounding_boxes, merge_overlapping_bounding_boxes,
    split_into_communicator_compatible_boxes, symmetrically_split_overlapping_regions,
};
pub use grid_box::{BoxVec, GridBox, bounding_box_of, effective_dims_of, sort_boxes};
pub use normalize::{
    dissect_box, merge_connected_boxes, merge_connected_boxes_along_dim, normalize,
};
pub use range::{Id, MAX_DIMS, Range, Subrange};
pub use region::{Region, RegionBuilder};
pub use region_map::RegionMap;
pub use split::{split_1d, split_2d};
