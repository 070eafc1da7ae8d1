//! Reduction operators as C describes them.

use std::ffi::c_void;

/// The operator of a reduction.
pub type celerity_reduction_kind = u32;
/// Sum.
pub const CELERITY_REDUCE_SUM: celerity_reduction_kind = 0;
/// Product.
pub const CELERITY_REDUCE_PRODUCT: celerity_reduction_kind = 1;
/// Minimum.
pub const CELERITY_REDUCE_MIN: celerity_reduction_kind = 2;
/// Maximum.
pub const CELERITY_REDUCE_MAX: celerity_reduction_kind = 3;
/// A user-defined operator (`combine`, `identity`, `elem_size`).
pub const CELERITY_REDUCE_CUSTOM: celerity_reduction_kind = 4;

/// The element type of a built-in reduction.
pub type celerity_scalar_type = u32;
/// `int32_t`.
pub const CELERITY_TYPE_I32: celerity_scalar_type = 0;
/// `int64_t`.
pub const CELERITY_TYPE_I64: celerity_scalar_type = 1;
/// `uint32_t`.
pub const CELERITY_TYPE_U32: celerity_scalar_type = 2;
/// `uint64_t`.
pub const CELERITY_TYPE_U64: celerity_scalar_type = 3;
/// `float`.
pub const CELERITY_TYPE_F32: celerity_scalar_type = 4;
/// `double`.
pub const CELERITY_TYPE_F64: celerity_scalar_type = 5;

/// Combines `value` into `accumulator` (`accumulator = accumulator (+) value`) for a CUSTOM
/// reduction. Must be associative and commutative, pure and thread-safe.
pub type celerity_reduction_combine_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, accumulator: *mut c_void, value: *const c_void),
>;

/// A reduction operator: a built-in kind over a scalar type, or a CUSTOM operator.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct celerity_reduction_op {
    /// The operator.
    pub kind: celerity_reduction_kind,
    /// Built-in kinds: the element type.
    pub r#type: celerity_scalar_type,
    /// CUSTOM: bytes per element.
    pub elem_size: usize,
    /// CUSTOM: the identity element (`elem_size` bytes, copied at submission).
    pub identity: *const c_void,
    /// CUSTOM: the combiner.
    pub combine: celerity_reduction_combine_fn,
    /// CUSTOM: user data for `combine`; must stay valid until shutdown.
    pub user_data: *mut c_void,
}
