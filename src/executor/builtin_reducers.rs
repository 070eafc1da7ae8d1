//! The built-in reduction operators (sum, product, min, max) over the scalar types of API.md.

use std::marker::PhantomData;

use crate::user_objects::Reducer;

/// The operator of a built-in reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinOp {
    /// Sum.
    Sum,
    /// Product.
    Product,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

/// The scalar types built-in reductions support.
pub trait Scalar: Copy + PartialOrd + Send + Sync + 'static {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// The largest value (identity of min).
    const MAX: Self;
    /// The smallest value (identity of max).
    const MIN: Self;
    /// Wrapping for integers, IEEE for floats.
    fn add(self, other: Self) -> Self;
    /// Wrapping for integers, IEEE for floats.
    fn mul(self, other: Self) -> Self;
}

macro_rules! integer_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const MAX: Self = <$t>::MAX;
            const MIN: Self = <$t>::MIN;
            fn add(self, other: Self) -> Self { self.wrapping_add(other) }
            fn mul(self, other: Self) -> Self { self.wrapping_mul(other) }
        }
    )*};
}
integer_scalar!(i32, i64, u32, u64);

macro_rules! float_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const MAX: Self = <$t>::INFINITY;
            const MIN: Self = <$t>::NEG_INFINITY;
            fn add(self, other: Self) -> Self { self + other }
            fn mul(self, other: Self) -> Self { self * other }
        }
    )*};
}
float_scalar!(f32, f64);

/// A built-in reduction over `T`.
pub struct BuiltinReducer<T> {
    op: BuiltinOp,
    _scalar: PhantomData<T>,
}

impl<T: Scalar> BuiltinReducer<T> {
    /// The reducer of `op` over `T`.
    pub fn new(op: BuiltinOp) -> Self {
        Self {
            op,
            _scalar: PhantomData,
        }
    }

    /// The identity of the operator.
    pub fn identity(&self) -> T {
        match self.op {
            BuiltinOp::Sum => T::ZERO,
            BuiltinOp::Product => T::ONE,
            BuiltinOp::Min => T::MAX,
            BuiltinOp::Max => T::MIN,
        }
    }

    /// `a (+) b`.
    pub fn combine(&self, a: T, b: T) -> T {
        match self.op {
            BuiltinOp::Sum => a.add(b),
            BuiltinOp::Product => a.mul(b),
            BuiltinOp::Min => {
                if b < a {
                    b
                } else {
                    a
                }
            }
            BuiltinOp::Max => {
                if b > a {
                    b
                } else {
                    a
                }
            }
        }
    }
}

impl<T: Scalar> Reducer for BuiltinReducer<T> {
    fn elem_size(&self) -> usize {
        std::mem::size_of::<T>()
    }

    unsafe fn fill_identity(&self, dest: *mut u8, count: usize) {
        let identity = self.identity();
        for i in 0..count {
            // SAFETY: the caller guarantees `count` writable elements; unaligned writes keep
            // this correct for any allocation offset.
            unsafe { dest.cast::<T>().add(i).write_unaligned(identity) };
        }
    }

    unsafe fn reduce(&self, dest: *mut u8, source: *const u8, count: usize) {
        let mut accumulator = self.identity();
        for i in 0..count {
            // SAFETY: the caller guarantees `count` readable elements.
            let value = unsafe { source.cast::<T>().add(i).read_unaligned() };
            accumulator = self.combine(accumulator, value);
        }
        // SAFETY: the caller guarantees one writable element at `dest`.
        unsafe { dest.cast::<T>().write_unaligned(accumulator) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reduce<T: Scalar>(op: BuiltinOp, values: &[T]) -> T {
        let reducer = BuiltinReducer::<T>::new(op);
        let mut out = reducer.identity();
        // SAFETY: `values` and `out` are valid and distinct.
        unsafe {
            reducer.reduce(
                (&mut out as *mut T).cast(),
                values.as_ptr().cast(),
                values.len(),
            )
        };
        out
    }

    #[test]
    fn operators_and_identities() {
        assert_eq!(reduce(BuiltinOp::Sum, &[1i32, 2, 3]), 6);
        assert_eq!(reduce(BuiltinOp::Product, &[2u64, 3, 4]), 24);
        assert_eq!(reduce(BuiltinOp::Min, &[5.0f32, -1.0, 3.0]), -1.0);
        assert_eq!(reduce(BuiltinOp::Max, &[5i64, -1, 30]), 30);
        assert_eq!(reduce::<f64>(BuiltinOp::Sum, &[]), 0.0);
        assert_eq!(reduce::<u32>(BuiltinOp::Min, &[]), u32::MAX);
        let reducer = BuiltinReducer::<f64>::new(BuiltinOp::Max);
        let mut slots = [0.0f64; 3];
        // SAFETY: three writable doubles.
        unsafe { reducer.fill_identity(slots.as_mut_ptr().cast(), 3) };
        assert!(slots.iter().all(|&v| v == f64::NEG_INFINITY));
    }
}
