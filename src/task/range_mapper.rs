//! Range mappers: from a chunk of a task's iteration space to the buffer region it accesses.
//!
//! The built-ins of the C ABI are enum variants evaluated without any indirect call; only
//! [`RangeMapper::Custom`] calls out (the ffi layer wraps the C function pointer in the closure).
//! Every result is clamped to the buffer. A custom mapper that returned something outside the
//! buffer reports it, so the caller can warn once per task.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::grid::{GridBox, Id, Range, Region, RegionBuilder, Subrange};
use crate::types::BufferId;

/// A chunk of a task's iteration space, as range mappers see it. Offsets include the task's
/// global offset; unused dimensions have offset 0 and range 1.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Dimensionality of the task's iteration space (0 to 3).
    pub dims: usize,
    /// First item of the chunk.
    pub offset: Id,
    /// Extent of the chunk.
    pub range: Range,
    /// Extent of the whole iteration space.
    pub global_range: Range,
}

impl Chunk {
    /// The chunk `[offset, offset + range)` of an iteration space of `global_range`.
    pub fn new(dims: usize, offset: Id, range: Range, global_range: Range) -> Self {
        Chunk {
            dims,
            offset,
            range,
            global_range,
        }
    }

    /// The chunk's items as a box.
    #[inline]
    pub fn as_box(&self) -> GridBox {
        saturating_box(Subrange::new(self.offset, self.range))
    }
}

/// A user-defined range mapper: `(chunk, buffer_dims, buffer_range) -> subrange`. It must be pure
/// and thread-safe: it is called on the application thread and on the scheduler thread.
pub type CustomMapperFn = dyn Fn(&Chunk, usize, Range) -> Subrange + Send + Sync;

/// What a buffer access touches for a given chunk (API.md, `celerity_range_mapper_kind`).
#[derive(Clone)]
pub enum RangeMapper {
    /// The chunk itself; kernel and buffer dimensionality must agree.
    OneToOne,
    /// The whole buffer.
    All,
    /// A fixed subrange, which must lie inside the buffer.
    Fixed(Subrange),
    /// The chunk, extended to the whole buffer along the given dimension.
    Slice(usize),
    /// The chunk grown by `n[d]` on both sides of every dimension `d` (a box, corners included).
    Neighborhood([usize; 3]),
    /// The chunk plus, per dimension `d`, the chunk grown by `n[d]` along `d` only (a cross).
    NeighborhoodAlongAxes([usize; 3]),
    /// A user function; its result is clamped to the buffer.
    Custom(Arc<CustomMapperFn>),
}

impl fmt::Debug for RangeMapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RangeMapper::Fixed(sr) => write!(f, "Fixed({:?}+{:?})", sr.offset, sr.range),
            RangeMapper::Slice(d) => write!(f, "Slice({d})"),
            RangeMapper::Neighborhood(n) => write!(f, "Neighborhood({n:?})"),
            RangeMapper::NeighborhoodAlongAxes(n) => write!(f, "NeighborhoodAlongAxes({n:?})"),
            other => f.write_str(other.kind_name()),
        }
    }
}

/// The outcome of evaluating a mapper: the clamped region, and whether a custom mapper's raw
/// result reached outside the buffer (and what it was).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapped {
    /// The accessed region, clamped to the buffer.
    pub region: Region,
    /// The raw subrange of a custom mapper that was clamped; `None` otherwise.
    pub clamped_from: Option<Subrange>,
}

/// A buffer's label for messages: `B3 "grid"` or `B3`.
#[derive(Copy, Clone, Debug)]
pub struct BufferLabel<'a> {
    /// The buffer.
    pub id: BufferId,
    /// Its debug name, if any.
    pub name: Option<&'a str>,
}

impl fmt::Display for BufferLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "{} \"{}\"", self.id, name),
            None => write!(f, "{}", self.id),
        }
    }
}

/// Formats a box over its first `dims` dimensions (at least one): `[0,2048)` or `[0,4)x[2,8)`.
pub fn fmt_box_dims(b: &GridBox, dims: usize) -> String {
    let (min, max) = (b.min_arr(), b.max_arr());
    (0..dims.clamp(1, 3))
        .map(|d| format!("[{},{})", min[d], max[d]))
        .collect::<Vec<_>>()
        .join("x")
}

/// `{[0,4)x[2,8), ...}` over the region's effective dimensions (at least one): the notation of
/// every diagnostic message.
pub fn fmt_region(region: &Region) -> String {
    let dims = region.effective_dims().max(1);
    let boxes: Vec<String> = region
        .boxes()
        .iter()
        .map(|b| fmt_box_dims(b, dims))
        .collect();
    format!("{{{}}}", boxes.join(", "))
}

/// `[offset, offset + range)`, saturating instead of overflowing.
#[inline]
pub(crate) fn saturating_box(sr: Subrange) -> GridBox {
    let (o, r) = (sr.offset.0, sr.range.0);
    GridBox::from_arrays(
        o,
        [
            o[0].saturating_add(r[0]),
            o[1].saturating_add(r[1]),
            o[2].saturating_add(r[2]),
        ],
    )
}

/// `b` grown by `n` on both sides of dimension `d`, saturating at 0 and at `usize::MAX`.
#[inline]
fn grow_along(b: &GridBox, d: usize, n: usize) -> GridBox {
    let (mut min, mut max) = (*b.min_arr(), *b.max_arr());
    min[d] = min[d].saturating_sub(n);
    max[d] = max[d].saturating_add(n);
    GridBox::from_arrays(min, max)
}

impl RangeMapper {
    /// The C enum's spelling, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            RangeMapper::OneToOne => "ONE_TO_ONE",
            RangeMapper::All => "ALL",
            RangeMapper::Fixed(_) => "FIXED",
            RangeMapper::Slice(_) => "SLICE",
            RangeMapper::Neighborhood(_) => "NEIGHBORHOOD",
            RangeMapper::NeighborhoodAlongAxes(_) => "NEIGHBORHOOD_ALONG_AXES",
            RangeMapper::Custom(_) => "CUSTOM",
        }
    }

    /// Checks what can be checked without the kernel: a FIXED subrange inside the buffer and a
    /// SLICE dimension below the buffer's dimensionality. Errors are `InvalidArgument` naming the
    /// mapper, the value and the buffer.
    pub fn validate_for_buffer(
        &self,
        buffer: BufferLabel<'_>,
        buffer_dims: usize,
        buffer_range: Range,
    ) -> Result<()> {
        match self {
            RangeMapper::Fixed(sr) => {
                let inside = (0..3).all(|d| {
                    sr.offset[d]
                        .checked_add(sr.range[d])
                        .is_some_and(|end| end <= buffer_range[d])
                });
                if !inside {
                    let shown_dims = buffer_dims.max(sr.range.effective_dims());
                    let raw: Vec<String> = (0..shown_dims.clamp(1, 3))
                        .map(|d| {
                            let end = sr.offset[d] as u128 + sr.range[d] as u128;
                            format!("[{},{end})", sr.offset[d])
                        })
                        .collect();
                    return Err(Error::invalid_argument(format!(
                        "range mapper FIXED subrange {} exceeds buffer {buffer} range {}",
                        raw.join("x"),
                        fmt_box_dims(&GridBox::full_range(buffer_range), shown_dims)
                    )));
                }
            }
            RangeMapper::Slice(dim) if *dim >= buffer_dims => {
                return Err(Error::invalid_argument(format!(
                    "range mapper SLICE dimension {dim} is not below the dimensionality {buffer_dims} of buffer {buffer}"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// All checks of [`RangeMapper::validate_for_buffer`], plus the ones that need the kernel's
    /// dimensionality: ONE_TO_ONE and the neighborhoods need kernel dims == buffer dims.
    // Inlined, calling out only for the two mappers `validate_for_buffer` checks: every access of
    // every submission passes here, and most mappers need no buffer check at all.
    #[inline]
    pub fn validate(
        &self,
        kernel_dims: usize,
        buffer: BufferLabel<'_>,
        buffer_dims: usize,
        buffer_range: Range,
    ) -> Result<()> {
        if matches!(self, RangeMapper::Fixed(_) | RangeMapper::Slice(_)) {
            self.validate_for_buffer(buffer, buffer_dims, buffer_range)?;
        }
        let needs_equal_dims = matches!(
            self,
            RangeMapper::OneToOne
                | RangeMapper::Neighborhood(_)
                | RangeMapper::NeighborhoodAlongAxes(_)
        );
        if needs_equal_dims && kernel_dims != buffer_dims {
            return Err(Error::invalid_argument(format!(
                "range mapper {} needs kernel and buffer of equal dimensionality, but the kernel is {kernel_dims}-D and buffer {buffer} is {buffer_dims}-D",
                self.kind_name()
            )));
        }
        Ok(())
    }

    /// The bounding box of [`RangeMapper::map`]'s region, computed without building the region
    /// for the built-in mappers; `None` for a custom mapper (call [`RangeMapper::map`]).
    pub fn bounds(&self, chunk: &Chunk, buffer_range: Range) -> Option<GridBox> {
        let full = GridBox::full_range(buffer_range);
        let interior = chunk.as_box();
        let bounds = match self {
            RangeMapper::OneToOne => interior,
            RangeMapper::All => full,
            RangeMapper::Fixed(sr) => saturating_box(*sr),
            RangeMapper::Slice(dim) => {
                if interior.is_empty() || *dim >= 3 {
                    GridBox::EMPTY
                } else {
                    let (mut min, mut max) = (*interior.min_arr(), *interior.max_arr());
                    min[*dim] = 0;
                    max[*dim] = buffer_range[*dim];
                    GridBox::from_arrays(min, max)
                }
            }
            // the cross's bounding box is the box grown along every axis
            RangeMapper::Neighborhood(n) | RangeMapper::NeighborhoodAlongAxes(n) => {
                if interior.is_empty() {
                    GridBox::EMPTY
                } else {
                    (0..3).fold(interior, |b, d| grow_along(&b, d, n[d]))
                }
            }
            RangeMapper::Custom(_) => return None,
        };
        Some(bounds.intersection(&full))
    }

    /// The chunks whose [`RangeMapper::bounds`] meet `target` (a box of the buffer), as a box of
    /// the iteration space: a non-empty chunk's bounds meet `target` exactly when the chunk meets
    /// the returned box. So a node finds the remote chunks that read its data by comparing
    /// coordinates instead of evaluating the mapper per chunk. `None` for a custom mapper, whose
    /// bounds are known only by evaluating it.
    pub fn chunks_reaching(&self, target: &GridBox, buffer_range: Range) -> Option<GridBox> {
        let target = match self {
            // before any work: the push search asks this of every custom access
            RangeMapper::Custom(_) => return None,
            _ => target.intersection(&GridBox::full_range(buffer_range)),
        };
        if target.is_empty() {
            return Some(GridBox::EMPTY);
        }
        let every_chunk = GridBox::from_arrays([0; 3], [usize::MAX; 3]);
        Some(match self {
            RangeMapper::OneToOne => target,
            // a chunk's bounds are the whole buffer, or a box of its own, for every chunk alike
            RangeMapper::All => every_chunk,
            RangeMapper::Fixed(sr) => {
                if saturating_box(*sr).intersects(&target) {
                    every_chunk
                } else {
                    GridBox::EMPTY
                }
            }
            RangeMapper::Slice(dim) if *dim >= 3 => GridBox::EMPTY,
            // along `dim` every chunk's bounds span the buffer, which meets `target`
            RangeMapper::Slice(dim) => {
                let (mut min, mut max) = (*target.min_arr(), *target.max_arr());
                min[*dim] = 0;
                max[*dim] = usize::MAX;
                GridBox::from_arrays(min, max)
            }
            // growing is symmetric: [a - n, b + n) meets [p, q) iff [a, b) meets [p - n, q + n)
            // (saturating at 0 changes neither side, as both boxes start at 0 or above)
            RangeMapper::Neighborhood(n) | RangeMapper::NeighborhoodAlongAxes(n) => {
                (0..3).fold(target, |b, d| grow_along(&b, d, n[d]))
            }
            RangeMapper::Custom(_) => return None,
        })
    }

    /// The region this mapper yields for `chunk` on a buffer of `buffer_range`, clamped to it.
    #[inline]
    pub fn map(&self, chunk: &Chunk, buffer_dims: usize, buffer_range: Range) -> Mapped {
        let full = GridBox::full_range(buffer_range);
        let clamp = |b: GridBox| Region::from_box(b.intersection(&full));
        let region = match self {
            RangeMapper::OneToOne => clamp(chunk.as_box()),
            RangeMapper::All => Region::from_box(full),
            RangeMapper::Fixed(sr) => clamp(saturating_box(*sr)),
            RangeMapper::Slice(dim) => {
                let b = chunk.as_box();
                if b.is_empty() || *dim >= 3 {
                    Region::new()
                } else {
                    let (mut min, mut max) = (*b.min_arr(), *b.max_arr());
                    min[*dim] = 0;
                    max[*dim] = buffer_range[*dim];
                    clamp(GridBox::from_arrays(min, max))
                }
            }
            RangeMapper::Neighborhood(n) => {
                let interior = chunk.as_box();
                if interior.is_empty() {
                    Region::new()
                } else {
                    clamp((0..3).fold(interior, |b, d| grow_along(&b, d, n[d])))
                }
            }
            RangeMapper::NeighborhoodAlongAxes(n) => {
                let interior = chunk.as_box();
                if interior.is_empty() {
                    Region::new()
                } else {
                    let core = interior.intersection(&full);
                    // an arm the buffer clamps back to the core (a chunk spanning the buffer
                    // along `d`) adds nothing: regions are canonical, so leaving it out builds
                    // the same region without normalising duplicates
                    let mut arms = [GridBox::EMPTY; 3];
                    let mut num_arms = 0;
                    for (d, &reach) in n.iter().enumerate() {
                        if reach > 0 {
                            let arm = grow_along(&interior, d, reach).intersection(&full);
                            if arm != core {
                                arms[num_arms] = arm;
                                num_arms += 1;
                            }
                        }
                    }
                    match num_arms {
                        0 => Region::from_box(core),
                        // every arm contains the core: one arm alone is the region (a stencil
                        // chunk of a 1-D split), without building and normalising two boxes
                        1 => Region::from_box(arms[0]),
                        _ => {
                            let mut builder = RegionBuilder::new();
                            builder.add_box(core);
                            for &arm in &arms[..num_arms] {
                                builder.add_box(arm);
                            }
                            builder.into_region()
                        }
                    }
                }
            }
            RangeMapper::Custom(f) => {
                let sr = f(chunk, buffer_dims, buffer_range);
                let raw = saturating_box(sr);
                let clamped_from = (!full.covers(&raw)).then_some(sr);
                return Mapped {
                    region: clamp(raw),
                    clamped_from,
                };
            }
        };
        Mapped {
            region,
            clamped_from: None,
        }
    }
}

#[cfg(test)]
#[path = "tests/range_mapper.rs"]
mod tests;
