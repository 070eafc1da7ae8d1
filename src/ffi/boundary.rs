//! The one place where Rust results and panics become `celerity_status` values.
//!
//! Protocol: every exported function calls [`call`] (or [`call_void`]) exactly once with the
//! C name of the function and a closure doing the work. On success the calling thread's last
//! error message becomes `""`; on an error or a caught panic it becomes
//! `"<function>: <message>"` and the matching status is returned. No panic unwinds into C.

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

use super::last_error::{clear_last_error, last_error_message_string, set_last_error};
use super::status::{CELERITY_OK, celerity_status, status_of};
use crate::error::{Error, Result};
use crate::thread_guard::panic_message;

/// Runs `body` as the exported function `function`, converting its outcome into a status and
/// recording the message for `celerity_last_error_message`.
pub(crate) fn call(function: &'static str, body: impl FnOnce() -> Result<()>) -> celerity_status {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(Error::internal(format!(
            "panic inside celerity (a bug, please report it): {}",
            panic_message(payload.as_ref())
        )))
    });
    match outcome {
        Ok(()) => {
            clear_last_error();
            CELERITY_OK
        }
        Err(error) => {
            set_last_error(&format!("{function}: {}", error.message()));
            status_of(error.kind())
        }
    }
}

/// [`call`] for exported functions that return nothing (`_destroy`, `_release` of futures):
/// the error is still recorded for `celerity_last_error_message` and logged as a warning.
pub(crate) fn call_void(function: &'static str, body: impl FnOnce() -> Result<()>) {
    if call(function, body) != CELERITY_OK {
        tracing::warn!("{}", last_error_message_string());
    }
}

/// An out-pointer checked for NULL up front and written only when the call succeeds.
pub(crate) struct OutPtr<T>(NonNull<T>);

impl<T> OutPtr<T> {
    /// Checks that the out-pointer argument `name` is not NULL.
    pub(crate) fn new(ptr: *mut T, name: &str) -> Result<Self> {
        NonNull::new(ptr)
            .map(Self)
            .ok_or_else(|| Error::invalid_argument(format!("argument `{name}` is NULL")))
    }

    /// Stores the result. Consumes the pointer so a result is written at most once.
    pub(crate) fn write(self, value: T) {
        // SAFETY: the C caller guarantees that a non-NULL out-pointer points to writable
        // storage for a `T` (API.md conventions); NULL was rejected in `new`. `write` does not
        // drop the previous (possibly uninitialised) contents.
        unsafe { self.0.as_ptr().write(value) }
    }
}

/// Reads the NUL-terminated UTF-8 string argument `name`.
///
/// The C caller guarantees that a non-NULL `ptr` points to a NUL-terminated string that stays
/// valid for the duration of the call.
pub(crate) fn str_arg<'a>(ptr: *const c_char, name: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::invalid_argument(format!(
            "argument `{name}` is NULL"
        )));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract (see above).
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes.to_str().map_err(|_| {
        Error::invalid_argument(format!(
            "argument `{name}` (\"{}\") is not valid UTF-8",
            bytes.to_string_lossy()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::last_error::last_error_message_ptr;
    use crate::ffi::status::{CELERITY_ERROR_INTERNAL, CELERITY_ERROR_INVALID_ARGUMENT};

    fn last_error() -> String {
        // SAFETY: the pointer refers to this thread's message, unchanged until the next call.
        unsafe { CStr::from_ptr(last_error_message_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn errors_become_status_and_message_and_success_clears_it() {
        let status = call("celerity_test_fn", || {
            Err(Error::invalid_argument(
                "argument `dims` is 4, at most 3 allowed",
            ))
        });
        assert_eq!(status, CELERITY_ERROR_INVALID_ARGUMENT);
        assert_eq!(
            last_error(),
            "celerity_test_fn: argument `dims` is 4, at most 3 allowed"
        );
        assert_eq!(call("celerity_test_fn", || Ok(())), CELERITY_OK);
        assert_eq!(last_error(), "");
    }

    #[test]
    fn a_panic_becomes_internal_with_its_message() {
        let status = call("celerity_test_fn", || panic!("invariant broken: {}", 42));
        assert_eq!(status, CELERITY_ERROR_INTERNAL);
        let message = last_error();
        assert!(
            message.starts_with("celerity_test_fn: panic inside celerity"),
            "{message}"
        );
        assert!(message.ends_with("invariant broken: 42"), "{message}");
    }

    #[test]
    fn messages_are_per_thread() {
        call("celerity_test_fn", || {
            Err(Error::invalid_state("main thread error"))
        });
        let other = std::thread::spawn(|| {
            let before = last_error();
            call("celerity_test_fn", || {
                Err(Error::invalid_state("other thread error"))
            });
            (before, last_error())
        })
        .join()
        .unwrap();
        assert_eq!(other.0, "");
        assert_eq!(other.1, "celerity_test_fn: other thread error");
        assert_eq!(last_error(), "celerity_test_fn: main thread error");
    }

    #[test]
    fn null_out_pointer_and_string_are_rejected_by_name() {
        let error = OutPtr::<u32>::new(std::ptr::null_mut(), "out")
            .err()
            .unwrap();
        assert_eq!(error.message(), "argument `out` is NULL");
        let error = str_arg(std::ptr::null(), "key").unwrap_err();
        assert_eq!(error.message(), "argument `key` is NULL");
        let bad = [0xffu8 as c_char, 0];
        let error = str_arg(bad.as_ptr(), "key").unwrap_err();
        assert!(error.message().contains("not valid UTF-8"));
    }

    #[test]
    fn a_message_with_interior_nul_survives() {
        call("celerity_test_fn", || Err(Error::invalid_argument("a\0b")));
        assert_eq!(last_error(), "celerity_test_fn: a\\0b");
    }
}
