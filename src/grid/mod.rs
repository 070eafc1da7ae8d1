//! Geometry: ranges, ids, boxes, regions, region maps and splitting.
//!
//! Every layer of the runtime computes with regions. All geometry is 3-wide
//! internally; lower-dimensional values are padded (range 1, offset 0).
