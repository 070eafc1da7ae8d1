//! The C ABI: the only module that speaks C.
//!
//! Every exported function's body is a single call to `boundary::call` (or one of its
//! siblings), which catches panics, turns [`crate::Error`] values into `celerity_status` and
//! records the message that `celerity_last_error_message` returns. Handles handed to C are
//! never dereferenced: their bits name a slot in a per-kind `handle::Registry`, so a released,
//! stale, forged or wrong-kind handle is reported as an error instead of being undefined
//! behaviour. One file per C concept; `boundary`, `handle` and `status` are the shared plumbing.
//!
//! Items here are named exactly as C sees them (cbindgen copies names and doc comments into
//! `include/celerity.h`), hence the non-Rust casing.
#![expect(non_camel_case_types)]
// Exported functions take raw pointers from C by design; their validity is the C caller's
// contract (documented per function), and each dereference carries a SAFETY comment.
#![expect(clippy::not_unsafe_ptr_arg_deref)]

// The modules are declared in the order of a program's lifecycle, which is the order of the
// generated header (cbindgen follows the declarations): status and errors, runtime and config,
// buffers and geometry, command groups (range mappers, reductions, kernels), submission, fences,
// host objects. Blank-line groups keep rustfmt from sorting them.
pub mod status;

pub mod runtime;

pub mod config;

pub mod buffer;

pub mod geometry;

pub mod range_mapper;

pub mod reduction;

pub mod command_group;

pub mod kernel;

pub mod future;

pub mod host_object;

pub(crate) mod boundary;
pub(crate) mod handle;
pub(crate) mod last_error;
pub(crate) mod runtime_slot;

#[cfg(not(target_pointer_width = "64"))]
compile_error!("celerity's handle encoding needs 64-bit pointers");

// The C side asserts the same sizes (c_tests/test_inline_helpers.c), so a layout change on either
// side fails the build instead of corrupting memory.
const _: () = {
    use std::mem::size_of;
    assert!(size_of::<geometry::celerity_subrange>() == 48);
    assert!(size_of::<geometry::celerity_chunk>() == 80);
    assert!(size_of::<range_mapper::celerity_range_mapper>() == 104);
    assert!(size_of::<kernel::celerity_accessor>() == 120);
    assert!(size_of::<kernel::celerity_accessor_record>() == 72);
    assert!(size_of::<kernel::celerity_kernel_context>() == 184);
    assert!(size_of::<reduction::celerity_reduction_op>() == 40);
};

// The runtime writes records as `BoundsRecord` and C reads them as `celerity_accessor_record`.
const _: () = {
    use std::mem::{align_of, offset_of, size_of};

    use crate::backend::bounds::BoundsRecord;
    use kernel::celerity_accessor_record as C;
    assert!(size_of::<BoundsRecord>() == size_of::<C>());
    assert!(align_of::<BoundsRecord>() == align_of::<C>());
    assert!(offset_of!(BoundsRecord, count) == offset_of!(C, count));
    assert!(offset_of!(BoundsRecord, min) == offset_of!(C, min));
    assert!(offset_of!(BoundsRecord, max) == offset_of!(C, max));
    assert!(offset_of!(BoundsRecord, fallback) == offset_of!(C, fallback));
    assert!(offset_of!(BoundsRecord, fallback_size) == offset_of!(C, fallback_size));
};
