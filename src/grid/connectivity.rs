//! Geometry helpers of the instruction graph generator: connectivity of
//! boxes, bounding boxes of connected parts, disjoint splits of overlapping
//! regions and splits that keep transfer strides within MPI's `int` range.

use super::grid_box::{BoxVec, GridBox};
use super::range::Range;
use super::region::Region;

/// The largest coordinate an MPI subarray datatype can express (`INT_MAX`).
pub const COMMUNICATOR_MAX_COORDINATE: usize = i32::MAX as usize;

/// True if the boxes overlap or share a face: 2-connectivity in 1-D,
/// 4-connectivity in 2-D, 6-connectivity in 3-D (corners and edges alone do
/// not connect). Empty boxes connect to nothing; two 0-D points always do.
#[inline]
pub fn boxes_edge_connected(a: &GridBox, b: &GridBox) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let mut touching = 0;
    for d in 0..3 {
        let lo = a.min_arr()[d].max(b.min_arr()[d]);
        let hi = a.max_arr()[d].min(b.max_arr()[d]);
        if lo > hi {
            return false;
        }
        if lo == hi {
            touching += 1;
        }
    }
    touching <= 1
}

/// Partitions the region into edge-connected parts and returns the bounding
/// box of each. The parts are disjoint, their bounding boxes need not be.
///
/// A receive whose pending region has several such parts can be backed by one
/// contiguous allocation per part rather than one for the whole bounding box.
pub fn connected_subregion_bounding_boxes(region: &Region) -> BoxVec {
    let mut boxes: BoxVec = region.boxes().iter().copied().collect();
    let mut out = BoxVec::new();
    let mut begin = 0;
    while begin < boxes.len() {
        // boxes[begin..end] is the part grown so far
        let mut end = begin + 1;
        let mut bbox = boxes[begin];
        loop {
            // Checking the bounding box first rejects most candidates cheaply.
            let next = (end..boxes.len()).find(|&c| {
                boxes_edge_connected(&bbox, &boxes[c])
                    && boxes[begin..end]
                        .iter()
                        .any(|m| boxes_edge_connected(m, &boxes[c]))
            });
            let Some(c) = next else { break };
            bbox = bbox.bounding_box(&boxes[c]);
            boxes.swap(c, end);
            end += 1;
        }
        out.push(bbox);
        begin = end;
    }
    out
}

/// Repeatedly replaces overlapping boxes by their bounding box until no two
/// boxes overlap. Every input box stays covered.
///
/// Several accessors on one allocation each need contiguous memory, so
/// overlapping accesses are allocated as their common bounding box.
pub fn merge_overlapping_bounding_boxes(boxes: &mut BoxVec) {
    boxes.retain(|b| !b.is_empty());
    let mut i = 0;
    while i < boxes.len() {
        // Grow boxes[i] by every later box it overlaps (stable removal keeps
        // the result order deterministic).
        let mut grew = false;
        let mut j = i + 1;
        while j < boxes.len() {
            if boxes[i].intersects(&boxes[j]) {
                boxes[i] = boxes[i].bounding_box(&boxes[j]);
                boxes.remove(j);
                grew = true;
            } else {
                j += 1;
            }
        }
        // A grown box may now overlap earlier ones: start over.
        i = if grew { 0 } else { i + 1 };
    }
}

/// Replaces every overlapping pair {A, B} by {A \ B, A ∩ B, B \ A}, so that
/// no point is in two regions; empty results are dropped.
///
/// Copies and receives are then issued once per point, while each consumer
/// still waits only for the parts it reads.
pub fn symmetrically_split_overlapping_regions(regions: &mut Vec<Region>) {
    let mut i = 0;
    while i < regions.len() {
        let mut j = i + 1;
        while j < regions.len() {
            let common = regions[i].intersection(&regions[j]);
            if !common.is_empty() {
                // shrinking regions creates no new overlaps: no restart needed
                regions[i] = regions[i].difference(&common);
                regions[j] = regions[j].difference(&common);
                regions.push(common);
            }
            j += 1;
        }
        i += 1;
    }
    regions.retain(|r| !r.is_empty());
}

/// The coordinate bound's effect on a transfer of `send_box` within a buffer
/// of `buffer_range`: the dimension from which on boxes can be cut into
/// `COMMUNICATOR_MAX_COORDINATE` slabs, and whether the split degenerates into
/// very many tiny transfers (which deserves a warning).
fn communicator_split_plan(buffer_range: &Range, send_box: &GridBox) -> (usize, bool) {
    let mut compatible_from = 0;
    for d in 1..3 {
        if buffer_range[d] > COMMUNICATOR_MAX_COORDINATE {
            compatible_from = d;
        }
    }
    let r = send_box.range();
    let (mut min_boxes, mut max_box_area): (u128, u128) = (1, 1);
    for d in 0..3 {
        if d < compatible_from {
            min_boxes *= r[d] as u128;
        } else {
            max_box_area *= r[d] as u128;
        }
    }
    (compatible_from, min_boxes > 256 && max_box_area < 65536)
}

/// True if [`split_into_communicator_compatible_boxes`] would emit an
/// excessive number of small transfers for this box (it then logs a warning).
pub fn communicator_split_is_excessive(buffer_range: &Range, send_box: &GridBox) -> bool {
    communicator_split_plan(buffer_range, send_box).1
}

/// Splits `send_box` into boxes whose strides and offsets fit MPI's 32-bit
/// coordinates on both sender and receiver (hence the buffer's range, not an
/// allocation's). A dimension above 2^31 - 1 that is not the slowest forces
/// one transfer per index of every slower dimension.
pub fn split_into_communicator_compatible_boxes(
    buffer_range: &Range,
    send_box: &GridBox,
) -> BoxVec {
    debug_assert!(GridBox::full_range(*buffer_range).covers(send_box));
    let (compatible_from, excessive) = communicator_split_plan(buffer_range, send_box);
    if excessive {
        tracing::warn!(
            "Celerity is generating an excessive amount of small transfers to keep strides representable as \
             32-bit integers for MPI compatibility. This might be very slow and / or exhaust system memory. \
             Consider transposing your buffer layout to remedy this."
        );
    }
    let mut out = BoxVec::new();
    if !send_box.is_empty() {
        comm_split_rec(
            send_box,
            *send_box.min_arr(),
            *send_box.max_arr(),
            compatible_from,
            0,
            &mut out,
        );
    }
    out
}

fn comm_split_rec(
    full: &GridBox,
    mut min: [usize; 3],
    mut max: [usize; 3],
    compatible_from: usize,
    dim: usize,
    out: &mut BoxVec,
) {
    let (lo, hi) = (full.min_arr()[dim], full.max_arr()[dim]);
    if dim == compatible_from {
        // no incompatible stride in a faster dimension: cut into slabs
        let mut start = lo;
        while start < hi {
            min[dim] = start;
            max[dim] = hi.min(start.saturating_add(COMMUNICATOR_MAX_COORDINATE));
            out.push(GridBox::from_arrays(min, max));
            start = max[dim];
        }
    } else {
        // a faster dimension's stride is too large: one slice per index here
        for x in lo..hi {
            min[dim] = x;
            max[dim] = x + 1;
            comm_split_rec(full, min, max, compatible_from, dim + 1, out);
        }
    }
}

#[cfg(test)]
#[path = "tests/connectivity.rs"]
mod tests;
