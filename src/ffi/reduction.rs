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

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::executor::builtin_reducers::{BuiltinOp, BuiltinReducer};
use crate::user_objects::Reducer;

/// A CUSTOM reduction: identity bytes and the program's combiner.
struct CustomReducer {
    identity: Vec<u8>,
    combine: unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void),
    user_data: usize,
}

impl Reducer for CustomReducer {
    fn elem_size(&self) -> usize {
        self.identity.len()
    }

    unsafe fn fill_identity(&self, dest: *mut u8, count: usize) {
        for i in 0..count {
            // SAFETY: the caller guarantees `count` writable elements.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.identity.as_ptr(),
                    dest.add(i * self.identity.len()),
                    self.identity.len(),
                )
            };
        }
    }

    unsafe fn reduce(&self, dest: *mut u8, source: *const u8, count: usize) {
        let size = self.identity.len();
        let mut accumulator = self.identity.clone();
        for i in 0..count {
            // SAFETY: the program's combiner (pure, thread-safe per API.md) on valid elements.
            unsafe {
                (self.combine)(
                    self.user_data as *mut c_void,
                    accumulator.as_mut_ptr().cast(),
                    source.add(i * size).cast(),
                )
            };
        }
        // SAFETY: the caller guarantees one writable element at `dest`.
        unsafe { std::ptr::copy_nonoverlapping(accumulator.as_ptr(), dest, size) };
    }
}

/// The reducer described by `op`.
pub(crate) fn reducer_of(op: &celerity_reduction_op) -> Result<Arc<dyn Reducer>> {
    let builtin = match op.kind {
        CELERITY_REDUCE_SUM => BuiltinOp::Sum,
        CELERITY_REDUCE_PRODUCT => BuiltinOp::Product,
        CELERITY_REDUCE_MIN => BuiltinOp::Min,
        CELERITY_REDUCE_MAX => BuiltinOp::Max,
        CELERITY_REDUCE_CUSTOM => {
            let combine = op.combine.ok_or_else(|| {
                Error::invalid_argument("argument `op`: CUSTOM reduction with a NULL `combine`")
            })?;
            if op.identity.is_null() || op.elem_size == 0 {
                return Err(Error::invalid_argument(format!(
                    "argument `op`: CUSTOM reduction needs an `identity` and a non-zero `elem_size` (got {})",
                    op.elem_size
                )));
            }
            // SAFETY: the caller guarantees `identity` points to `elem_size` readable bytes.
            let identity =
                unsafe { std::slice::from_raw_parts(op.identity.cast::<u8>(), op.elem_size) }
                    .to_vec();
            return Ok(Arc::new(CustomReducer {
                identity,
                combine,
                user_data: op.user_data as usize,
            }));
        }
        kind => {
            return Err(Error::invalid_argument(format!(
                "argument `op`: kind {kind} is not a celerity_reduction_kind (0 to 4)"
            )));
        }
    };
    Ok(match op.r#type {
        CELERITY_TYPE_I32 => Arc::new(BuiltinReducer::<i32>::new(builtin)),
        CELERITY_TYPE_I64 => Arc::new(BuiltinReducer::<i64>::new(builtin)),
        CELERITY_TYPE_U32 => Arc::new(BuiltinReducer::<u32>::new(builtin)),
        CELERITY_TYPE_U64 => Arc::new(BuiltinReducer::<u64>::new(builtin)),
        CELERITY_TYPE_F32 => Arc::new(BuiltinReducer::<f32>::new(builtin)),
        CELERITY_TYPE_F64 => Arc::new(BuiltinReducer::<f64>::new(builtin)),
        other => {
            return Err(Error::invalid_argument(format!(
                "argument `op`: type {other} is not a celerity_scalar_type (0 to 5)"
            )));
        }
    })
}
