//! Range mappers as C describes them: a kind plus the parameters of that kind.

use std::ffi::c_void;

use super::geometry::{celerity_chunk, celerity_subrange};

/// Which range mapper a `celerity_range_mapper` describes.
pub type celerity_range_mapper_kind = u32;
/// Chunk → the same subrange (kernel and buffer dimensions must agree).
pub const CELERITY_RANGE_MAPPER_ONE_TO_ONE: celerity_range_mapper_kind = 0;
/// Chunk → the whole buffer.
pub const CELERITY_RANGE_MAPPER_ALL: celerity_range_mapper_kind = 1;
/// Chunk → `fixed`.
pub const CELERITY_RANGE_MAPPER_FIXED: celerity_range_mapper_kind = 2;
/// The chunk extended to the whole buffer along `slice_dim`.
pub const CELERITY_RANGE_MAPPER_SLICE: celerity_range_mapper_kind = 3;
/// The chunk grown by `neighborhood[d]` on both sides, clamped (a box, corners included).
pub const CELERITY_RANGE_MAPPER_NEIGHBORHOOD: celerity_range_mapper_kind = 4;
/// The chunk plus, per dimension d, the chunk grown by `neighborhood[d]` along d only (a cross:
/// no corners), clamped.
pub const CELERITY_RANGE_MAPPER_NEIGHBORHOOD_ALONG_AXES: celerity_range_mapper_kind = 5;
/// `custom(custom_user_data, ...)`, the result clamped to the buffer.
pub const CELERITY_RANGE_MAPPER_CUSTOM: celerity_range_mapper_kind = 6;

/// A custom range mapper: writes the subrange of a buffer (of `buffer_dims` dimensions and
/// extent `buffer_range`) that `chunk` accesses into `*out`. Must be pure and thread-safe: the
/// runtime calls it on several of its threads. Must be monotonic, as in C++ Celerity: a chunk
/// inside a larger one accesses at most what the larger one accesses (dependencies and
/// transfers are derived from results for whole tasks and for runs of chunks).
pub type celerity_range_mapper_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        chunk: *const celerity_chunk,
        buffer_dims: u32,
        buffer_range: *const usize,
        out: *mut celerity_subrange,
    ),
>;

/// A range mapper: which part of a buffer each chunk of a kernel accesses. Build one with the
/// static inline constructors (`celerity_one_to_one()`, `celerity_neighborhood(...)`, ...).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct celerity_range_mapper {
    /// The mapper kind; selects which fields below are read.
    pub kind: celerity_range_mapper_kind,
    /// FIXED: the subrange every chunk accesses.
    pub fixed: celerity_subrange,
    /// SLICE: the dimension extended to the whole buffer.
    pub slice_dim: u32,
    /// NEIGHBORHOOD and NEIGHBORHOOD_ALONG_AXES: the border per dimension.
    pub neighborhood: [usize; 3],
    /// CUSTOM: the mapper function.
    pub custom: celerity_range_mapper_fn,
    /// CUSTOM: its user data; must stay valid until `celerity_runtime_shutdown` returns.
    pub custom_user_data: *mut c_void,
}
