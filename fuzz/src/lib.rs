//! Fuzz target logic (issue 18), shared by the cargo-fuzz binaries in `fuzz_targets/` and by the
//! corpus replay test of the main crate (`tests/fuzz_corpus_replay.rs`, which includes this file),
//! so the saved corpus runs on the stable toolchain in every `cargo test`.
//!
//! * `region_algebra`: union, intersection and difference of regions, and region-map updates
//!   and queries, against a dense bitmap oracle on a small grid.
//! * `range_mapper`: every range-mapper kind (custom ones with arbitrary, overflowing results) on
//!   arbitrary chunks, against a per-point oracle; the result always lies inside the buffer.
//! * `c_api`: sequences of C API calls decoded from the bytes: NULL, stale and forged handles,
//!   overflowing sizes. No call may panic (INTERNAL) or crash.

use std::ffi::c_void;

use celerity::ffi::buffer::*;
use celerity::ffi::command_group::*;
use celerity::ffi::config::*;
use celerity::ffi::future::*;
use celerity::ffi::geometry::celerity_subrange;
use celerity::ffi::host_object::*;
use celerity::ffi::kernel::celerity_kernel_context;
use celerity::ffi::range_mapper::*;
use celerity::ffi::runtime::*;
use celerity::ffi::status::*;
use celerity::grid::{GridBox, Id, Range, Region, RegionMap, Subrange};
use celerity::task::{Chunk, RangeMapper};

/// Reads the fuzz input front to back; past its end every read is 0.
struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn exhausted(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn below(&mut self, n: usize) -> usize {
        self.byte() as usize % n.max(1)
    }

    /// A size from a table that includes the values where arithmetic overflows.
    fn size(&mut self) -> usize {
        const SIZES: [usize; 12] = [
            0,
            1,
            2,
            3,
            7,
            16,
            64,
            1 << 20,
            1 << 32,
            1 << 62,
            usize::MAX - 1,
            usize::MAX,
        ];
        SIZES[self.below(SIZES.len())]
    }
}

// ---- region algebra ------------------------------------------------------------------------

const N: usize = 6;
type Bitmap = [[[bool; N]; N]; N];

fn decode_box(input: &mut Input) -> GridBox {
    let mut min = [0; 3];
    let mut max = [0; 3];
    for d in 0..3 {
        min[d] = input.below(N);
        max[d] = min[d] + input.below(N + 1 - min[d]);
    }
    GridBox::from_arrays(min, max)
}

fn bitmap_of(boxes: &[GridBox]) -> Bitmap {
    let mut bits = [[[false; N]; N]; N];
    for b in boxes {
        for_points(|p| {
            if b.contains(&p) {
                bits[p[0]][p[1]][p[2]] = true;
            }
        });
    }
    bits
}

fn for_points(mut f: impl FnMut([usize; 3])) {
    for i in 0..N {
        for j in 0..N {
            for k in 0..N {
                f([i, j, k]);
            }
        }
    }
}

/// The region agrees with the oracle point by point, and its boxes are disjoint and non-empty.
fn check_region(region: &Region, oracle: &Bitmap, what: &str) {
    let mut count = 0;
    for_points(|p| {
        let expected = oracle[p[0]][p[1]][p[2]];
        assert_eq!(region.contains_point(&p), expected, "{what}: point {p:?}");
        count += usize::from(expected);
    });
    assert_eq!(
        region.area(),
        count,
        "{what}: boxes overlap or area is wrong"
    );
    assert!(
        region.boxes().iter().all(|b| !b.is_empty()),
        "{what}: empty box"
    );
    let normalized = Region::from_boxes(region.boxes().iter().copied());
    assert_eq!(&normalized, region, "{what}: not in canonical form");
}

/// Region union/intersection/difference and a region map against bitmap oracles.
pub fn region_algebra(data: &[u8]) {
    let mut input = Input::new(data);
    let a_boxes: Vec<GridBox> = (0..1 + input.below(5))
        .map(|_| decode_box(&mut input))
        .collect();
    let b_boxes: Vec<GridBox> = (0..1 + input.below(5))
        .map(|_| decode_box(&mut input))
        .collect();
    let (a, b) = (
        Region::from_boxes(a_boxes.clone()),
        Region::from_boxes(b_boxes.clone()),
    );
    let (oa, ob) = (bitmap_of(&a_boxes), bitmap_of(&b_boxes));
    check_region(&a, &oa, "A");
    check_region(&b, &ob, "B");
    let combine = |f: fn(bool, bool) -> bool| {
        let mut bits = [[[false; N]; N]; N];
        for_points(|p| bits[p[0]][p[1]][p[2]] = f(oa[p[0]][p[1]][p[2]], ob[p[0]][p[1]][p[2]]));
        bits
    };
    check_region(&a.union(&b), &combine(|x, y| x || y), "A ∪ B");
    check_region(&a.intersection(&b), &combine(|x, y| x && y), "A ∩ B");
    check_region(&a.difference(&b), &combine(|x, y| x && !y), "A \\ B");
    assert_eq!(a.intersects(&b), a.intersection(&b).area() > 0);

    // A region map over the grid: updates against a per-point oracle.
    let mut map = RegionMap::new(Range::new(N, N, N), 0u8);
    let mut values = [[[0u8; N]; N]; N];
    while !input.exhausted() {
        let target = decode_box(&mut input);
        let value = input.byte() % 4;
        map.update_box(&target, value);
        for_points(|p| {
            if target.contains(&p) {
                values[p[0]][p[1]][p[2]] = value;
            }
        });
        let query = decode_box(&mut input);
        let mut covered = 0;
        for (piece, value) in map.get_box_values(&query) {
            assert!(query.covers(&piece), "query {query:?} returned {piece:?}");
            covered += piece.area();
            for_points(|p| {
                if piece.contains(&p) {
                    assert_eq!(values[p[0]][p[1]][p[2]], value, "map value at {p:?}");
                }
            });
        }
        assert_eq!(
            covered,
            query.area(),
            "the map's pieces tile the query {query:?}"
        );
    }
    for_points(|p| assert_eq!(map.get_point(&p), Some(&values[p[0]][p[1]][p[2]])));
}

// ---- range mappers -------------------------------------------------------------------------

/// Every mapper kind on an arbitrary chunk and buffer: the region lies in the buffer, equals the
/// per-point oracle (on small buffers), and lies inside the mapper's bounds.
pub fn range_mapper(data: &[u8]) {
    let mut input = Input::new(data);
    let buffer = Range::new(1 + input.below(N), 1 + input.below(N), 1 + input.below(N));
    let small = |input: &mut Input| input.below(N + 2);
    let (offset, range) = if input.byte() % 4 == 0 {
        (
            Id::new(input.size(), input.size(), input.size()),
            Range::new(input.size(), input.size(), input.size()),
        )
    } else {
        (
            Id::new(small(&mut input), small(&mut input), small(&mut input)),
            Range::new(small(&mut input), small(&mut input), small(&mut input)),
        )
    };
    let chunk = Chunk::new(1 + input.below(3), offset, range, range);
    let n = [small(&mut input), small(&mut input), small(&mut input)];
    let custom = Subrange::new(
        Id::new(input.size(), input.size(), input.size()),
        Range::new(input.size(), input.size(), input.size()),
    );
    let mapper = match input.below(7) {
        0 => RangeMapper::OneToOne,
        1 => RangeMapper::All,
        2 => RangeMapper::Fixed(custom),
        3 => RangeMapper::Slice(input.below(4)),
        4 => RangeMapper::Neighborhood(n),
        5 => RangeMapper::NeighborhoodAlongAxes(n),
        _ => RangeMapper::Custom(std::sync::Arc::new(move |_: &Chunk, _, _| custom)),
    };
    let mapped = mapper.map(&chunk, 3, buffer);
    let full = GridBox::full_range(buffer);
    for b in mapped.region.boxes() {
        assert!(
            full.covers(b),
            "{mapper:?} on {chunk:?}: {b:?} outside buffer {buffer:?}"
        );
    }
    if let Some(bounds) = mapper.bounds(&chunk, buffer) {
        for b in mapped.region.boxes() {
            assert!(
                bounds.covers(b),
                "{mapper:?}: {b:?} outside its bounds {bounds:?}"
            );
        }
    }
    let cb = chunk.as_box();
    let in_chunk = |p: &[usize; 3], d: usize, grow: usize| {
        !cb.is_empty()
            && p[d] + grow >= cb.min_arr()[d]
            && p[d] < cb.max_arr()[d].saturating_add(grow)
    };
    let sat = |o: usize, r: usize| o.saturating_add(r);
    for_points(|p| {
        if !full.contains(&p) {
            return;
        }
        let expected = match &mapper {
            RangeMapper::OneToOne => cb.contains(&p),
            RangeMapper::All => true,
            // FIXED and CUSTOM both yield `custom`, clamped (saturating: never wrapped).
            RangeMapper::Fixed(_) | RangeMapper::Custom(_) => (0..3)
                .all(|d| p[d] >= custom.offset[d] && p[d] < sat(custom.offset[d], custom.range[d])),
            RangeMapper::Slice(dim) => *dim < 3 && (0..3).all(|d| d == *dim || in_chunk(&p, d, 0)),
            RangeMapper::Neighborhood(n) => (0..3).all(|d| in_chunk(&p, d, n[d])),
            RangeMapper::NeighborhoodAlongAxes(n) => {
                (0..3).all(|d| in_chunk(&p, d, 0))
                    || (0..3).any(|g| {
                        n[g] > 0 && (0..3).all(|d| in_chunk(&p, d, if d == g { n[g] } else { 0 }))
                    })
            }
        };
        assert_eq!(
            mapped.region.contains_point(&p),
            expected,
            "{mapper:?} on chunk {chunk:?} of buffer {buffer:?} at {p:?}"
        );
    });
}

// ---- C API call sequences ------------------------------------------------------------------

extern "C" fn noop_kernel(_: *const celerity_kernel_context, _: *mut c_void) -> std::ffi::c_int {
    0
}

/// The runtime, started once per process (a process cannot re-initialise after shutdown).
fn ensure_runtime() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let mut cfg = std::ptr::null_mut();
        assert_eq!(celerity_config_create(&mut cfg), CELERITY_OK);
        for (key, value) in [("devices", "host:2"), ("log_level", "off")] {
            let (key, value) = (
                std::ffi::CString::new(key).unwrap(),
                std::ffi::CString::new(value).unwrap(),
            );
            assert_eq!(
                celerity_config_set(cfg, key.as_ptr(), value.as_ptr()),
                CELERITY_OK
            );
        }
        let status = celerity_runtime_init(std::ptr::null_mut(), std::ptr::null_mut(), cfg);
        celerity_config_destroy(cfg);
        assert_eq!(status, CELERITY_OK, "init");
    });
}

/// A handle argument: a live one, a released one, a forged one or NULL.
fn pick<T>(input: &mut Input, live: &[*mut T], released: &[*mut T]) -> *mut T {
    match input.below(8) {
        0 => std::ptr::null_mut(),
        1 => released
            .get(input.below(released.len()))
            .copied()
            .unwrap_or(std::ptr::null_mut()),
        2 => (input.size() ^ (input.byte() as usize) << 40) as *mut T,
        _ => live
            .get(input.below(live.len()))
            .copied()
            .unwrap_or(std::ptr::null_mut()),
    }
}

fn ok_or_refused(status: celerity_status, call: &str) {
    assert_ne!(
        status,
        CELERITY_ERROR_INTERNAL,
        "{call} panicked: {}",
        // SAFETY: celerity_last_error_message returns a valid NUL-terminated string.
        unsafe { std::ffi::CStr::from_ptr(celerity_last_error_message()) }.to_string_lossy()
    );
}

/// A sequence of C API calls; every call returns a status other than INTERNAL, nothing crashes,
/// and everything created is released at the end (the runtime stays usable for the next input).
pub fn c_api(data: &[u8]) {
    ensure_runtime();
    let mut input = Input::new(data);
    let mut buffers: Vec<*mut celerity_buffer> = Vec::new();
    let mut buffer_ranges: Vec<[usize; 3]> = Vec::new();
    let mut released_buffers: Vec<*mut celerity_buffer> = Vec::new();
    let mut groups: Vec<*mut celerity_cg> = Vec::new();
    let mut spent_groups: Vec<*mut celerity_cg> = Vec::new();
    let mut objects: Vec<*mut celerity_host_object> = Vec::new();
    let mut released_objects: Vec<*mut celerity_host_object> = Vec::new();
    let mut scratch = vec![0u8; 4096];
    let mut steps = 0;
    while !input.exhausted() && steps < 64 {
        steps += 1;
        match input.below(10) {
            0 => {
                let dims = input.below(5) as u32;
                let range = [input.size(), input.size(), input.size()];
                let elem = [0, 1, 4, 8, 1 << 40, usize::MAX][input.below(6)];
                let mut out = std::ptr::null_mut();
                let s = celerity_buffer_create(
                    dims,
                    range.as_ptr(),
                    elem,
                    1,
                    std::ptr::null(),
                    &mut out,
                );
                ok_or_refused(s, "celerity_buffer_create");
                if s == CELERITY_OK {
                    buffers.push(out);
                    buffer_ranges.push(range);
                }
            }
            1 => {
                if !buffers.is_empty() {
                    let i = input.below(buffers.len());
                    let b = buffers.swap_remove(i);
                    buffer_ranges.swap_remove(i);
                    ok_or_refused(celerity_buffer_release(b), "celerity_buffer_release");
                    released_buffers.push(b);
                } else {
                    let b = pick(&mut input, &buffers, &released_buffers);
                    ok_or_refused(celerity_buffer_release(b), "celerity_buffer_release");
                }
            }
            2 => {
                let b = pick(&mut input, &buffers, &released_buffers);
                let out = if input.byte() % 4 == 0 {
                    std::ptr::null_mut()
                } else {
                    scratch.as_mut_ptr().cast()
                };
                ok_or_refused(
                    celerity_buffer_get_range(b, out),
                    "celerity_buffer_get_range",
                );
            }
            3 => {
                let mut out = std::ptr::null_mut();
                let s = celerity_cg_create(&mut out);
                ok_or_refused(s, "celerity_cg_create");
                if s == CELERITY_OK {
                    groups.push(out);
                }
            }
            4 => {
                let cg = pick(&mut input, &groups, &spent_groups);
                let b = pick(&mut input, &buffers, &released_buffers);
                let mapper = celerity_range_mapper {
                    kind: input.below(8) as u32,
                    fixed: celerity_subrange {
                        offset: [input.size(), input.size(), input.size()],
                        range: [input.size(), input.size(), input.size()],
                    },
                    slice_dim: input.below(4) as u32,
                    neighborhood: [input.size(), input.size(), input.size()],
                    custom: None,
                    custom_user_data: std::ptr::null_mut(),
                };
                let mode = input.below(7) as u32;
                ok_or_refused(
                    celerity_cg_access(cg, b, mode, &mapper),
                    "celerity_cg_access",
                );
            }
            5 => {
                let cg = pick(&mut input, &groups, &spent_groups);
                let factor = [0, 1, 2, 4096, 4097, 1 << 28, u32::MAX][input.below(7)];
                ok_or_refused(
                    celerity_cg_hint_oversubscribe(cg, factor),
                    "celerity_cg_hint_oversubscribe",
                );
            }
            6 => {
                let cg = pick(&mut input, &groups, &spent_groups);
                let dims = input.below(5) as u32;
                // Only small iteration spaces run (the kernel is a no-op, but allocations are real).
                let range = if input.byte() % 2 == 0 {
                    [1 + input.below(32), 1, 1]
                } else {
                    [input.size(), input.size(), input.size()]
                };
                let offset = [input.size(), 0, 0];
                let offset_ptr = if input.byte() % 2 == 0 {
                    std::ptr::null()
                } else {
                    offset.as_ptr()
                };
                // Kernels only run while every live buffer is small: the kernel is a no-op, but
                // the allocations of the buffers it accesses are real.
                let fits = |r: &[usize; 3]| {
                    r[0].checked_mul(r[1])
                        .and_then(|x| x.checked_mul(r[2]))
                        .is_some_and(|n| n <= 4096)
                };
                let s = if buffer_ranges.iter().all(fits) {
                    celerity_submit_parallel_for(
                        cg,
                        dims,
                        range.as_ptr(),
                        offset_ptr,
                        Some(noop_kernel),
                        std::ptr::null_mut(),
                        None,
                    )
                } else {
                    celerity_cg_destroy(cg);
                    CELERITY_OK
                };
                ok_or_refused(s, "celerity_submit_parallel_for");
                if let Some(i) = groups.iter().position(|&g| g == cg) {
                    spent_groups.push(groups.swap_remove(i));
                }
            }
            7 => {
                let b = pick(&mut input, &buffers, &released_buffers);
                let region = celerity_subrange {
                    offset: [input.size(), 0, 0],
                    range: [input.size(), input.size(), input.size()],
                };
                let region_ptr = if input.byte() % 2 == 0 {
                    std::ptr::null()
                } else {
                    &region
                };
                let mut f = std::ptr::null_mut();
                let s = celerity_fence_buffer(
                    b,
                    region_ptr,
                    scratch.as_mut_ptr().cast(),
                    scratch.len(),
                    &mut f,
                );
                ok_or_refused(s, "celerity_fence_buffer");
                if s == CELERITY_OK {
                    ok_or_refused(celerity_future_wait(f), "celerity_future_wait");
                    celerity_future_release(f);
                }
            }
            8 => {
                if input.byte() % 2 == 0 {
                    let mut out = std::ptr::null_mut();
                    let s =
                        celerity_host_object_create(scratch.as_mut_ptr().cast(), None, &mut out);
                    ok_or_refused(s, "celerity_host_object_create");
                    if s == CELERITY_OK {
                        objects.push(out);
                    }
                } else {
                    let cg = pick(&mut input, &groups, &spent_groups);
                    let h = pick(&mut input, &objects, &released_objects);
                    ok_or_refused(celerity_cg_side_effect(cg, h), "celerity_cg_side_effect");
                }
            }
            _ => {
                if let Some(h) = objects.pop() {
                    ok_or_refused(
                        celerity_host_object_release(h),
                        "celerity_host_object_release",
                    );
                    released_objects.push(h);
                }
                ok_or_refused(celerity_wait(), "celerity_wait");
            }
        }
    }
    for cg in groups {
        celerity_cg_destroy(cg);
    }
    for b in buffers {
        ok_or_refused(celerity_buffer_release(b), "celerity_buffer_release");
    }
    for h in objects {
        ok_or_refused(
            celerity_host_object_release(h),
            "celerity_host_object_release",
        );
    }
    ok_or_refused(celerity_wait(), "celerity_wait");
}
