//! Status codes, error messages and version queries.

use std::ffi::c_char;

use super::last_error;
use crate::error::ErrorKind;

/// The result of every fallible celerity function. `CELERITY_OK` (0) is success; every other
/// value is an error class, and `celerity_last_error_message()` describes the failure.
///
/// Declared as a fixed-width integer (not a C enum) so that any value crossing the ABI is
/// well-defined; the `CELERITY_*` constants below are its values.
pub type celerity_status = u32;

/// Success.
pub const CELERITY_OK: celerity_status = 0;
/// NULL handle or out-pointer, bad dimensions, subrange outside the buffer, bad enum value, ...
pub const CELERITY_ERROR_INVALID_ARGUMENT: celerity_status = 1;
/// Not initialised, already shut down, wrong thread, released or forged handle.
pub const CELERITY_ERROR_INVALID_STATE: celerity_status = 2;
/// Feature absent in this build or on this system.
pub const CELERITY_ERROR_UNSUPPORTED: celerity_status = 3;
/// A host or device allocation failed.
pub const CELERITY_ERROR_OUT_OF_MEMORY: celerity_status = 4;
/// CUDA reported an error.
pub const CELERITY_ERROR_DEVICE: celerity_status = 5;
/// MPI reported an error or a peer was lost.
pub const CELERITY_ERROR_COMMUNICATION: celerity_status = 6;
/// Uninitialised read or overlapping write under policy "error".
pub const CELERITY_ERROR_ACCESS_PATTERN: celerity_status = 7;
/// A kernel or host task returned non-zero.
pub const CELERITY_ERROR_TASK_FAILED: celerity_status = 8;
/// A bug in celerity: a caught panic or a broken invariant.
pub const CELERITY_ERROR_INTERNAL: celerity_status = 9;

/// The ABI version this header describes. Compare with `celerity_abi_version()` at run time to
/// detect a program built against a different library than the one it loaded.
/// 2: `celerity_accessor` gained `record` (accessor boundary checking).
pub const CELERITY_ABI_VERSION: u32 = 2;

/// The status that reports errors of `kind`.
pub(crate) fn status_of(kind: ErrorKind) -> celerity_status {
    match kind {
        ErrorKind::InvalidArgument => CELERITY_ERROR_INVALID_ARGUMENT,
        ErrorKind::InvalidState => CELERITY_ERROR_INVALID_STATE,
        ErrorKind::Unsupported => CELERITY_ERROR_UNSUPPORTED,
        ErrorKind::OutOfMemory => CELERITY_ERROR_OUT_OF_MEMORY,
        ErrorKind::Device => CELERITY_ERROR_DEVICE,
        ErrorKind::Communication => CELERITY_ERROR_COMMUNICATION,
        ErrorKind::AccessPattern => CELERITY_ERROR_ACCESS_PATTERN,
        ErrorKind::TaskFailed => CELERITY_ERROR_TASK_FAILED,
        ErrorKind::Internal => CELERITY_ERROR_INTERNAL,
    }
}

/// NUL-terminated name of each status, indexed by its value.
const STATUS_NAMES: [&std::ffi::CStr; 10] = [
    c"CELERITY_OK",
    c"CELERITY_ERROR_INVALID_ARGUMENT",
    c"CELERITY_ERROR_INVALID_STATE",
    c"CELERITY_ERROR_UNSUPPORTED",
    c"CELERITY_ERROR_OUT_OF_MEMORY",
    c"CELERITY_ERROR_DEVICE",
    c"CELERITY_ERROR_COMMUNICATION",
    c"CELERITY_ERROR_ACCESS_PATTERN",
    c"CELERITY_ERROR_TASK_FAILED",
    c"CELERITY_ERROR_INTERNAL",
];

/// The name of status `s` (e.g. `"CELERITY_ERROR_INVALID_ARGUMENT"`), or
/// `"CELERITY_UNKNOWN_STATUS"` for a value that is not a status.
///
/// Ownership: the string is static; never free it. Thread: any thread. Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_status_string(s: celerity_status) -> *const c_char {
    STATUS_NAMES
        .get(s as usize)
        .copied()
        .unwrap_or(c"CELERITY_UNKNOWN_STATUS")
        .as_ptr()
}

/// The message of the last failing celerity call on the calling thread, naming the function,
/// the offending argument and its value; `""` when the last call succeeded.
///
/// Ownership: owned by the library; valid until the next celerity call on this thread.
/// Thread: any thread (each thread has its own message). Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_last_error_message() -> *const c_char {
    last_error::last_error_message_ptr()
}

/// The library version, `"MAJOR.MINOR.PATCH"` (equal to `CELERITY_VERSION_STRING` of the
/// header the library was built with).
///
/// Ownership: static; never free it. Thread: any thread. Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_version_string() -> *const c_char {
    const VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
    ) {
        Ok(v) => v,
        Err(_) => panic!("version contains NUL"),
    };
    VERSION.as_ptr()
}

/// The ABI version of the loaded library; equals `CELERITY_ABI_VERSION` when the program was
/// compiled against the matching header.
///
/// Thread: any thread.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_abi_version() -> u32 {
    CELERITY_ABI_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn string_of(s: celerity_status) -> String {
        // SAFETY: celerity_status_string returns a pointer to a static NUL-terminated string.
        unsafe { CStr::from_ptr(celerity_status_string(s)) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn every_error_kind_has_a_distinct_named_status() {
        let mut seen = std::collections::HashSet::new();
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_code(u64::from(kind.code())), kind);
            let status = status_of(kind);
            assert_ne!(status, CELERITY_OK);
            assert!(seen.insert(status), "{kind:?} shares a status");
            assert!(string_of(status).starts_with("CELERITY_ERROR_"));
        }
        assert_eq!(string_of(CELERITY_OK), "CELERITY_OK");
        assert_eq!(
            string_of(CELERITY_ERROR_TASK_FAILED),
            "CELERITY_ERROR_TASK_FAILED"
        );
        assert_eq!(string_of(10), "CELERITY_UNKNOWN_STATUS");
        assert_eq!(string_of(u32::MAX), "CELERITY_UNKNOWN_STATUS");
    }

    #[test]
    fn version_matches_the_crate() {
        // SAFETY: static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(celerity_version_string()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert_eq!(celerity_abi_version(), CELERITY_ABI_VERSION);
    }
}
