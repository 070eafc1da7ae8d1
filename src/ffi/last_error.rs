//! The calling thread's last error message, read by `celerity_last_error_message`: written by
//! the call boundary, read by the status functions and the runtime's shutdown report.

use std::cell::RefCell;
use std::ffi::{CString, c_char};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` (NUL bytes escaped) as the calling thread's last error.
pub(crate) fn set_last_error(message: &str) {
    let sanitized = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // try_with: a call during thread teardown must not panic; it just loses the message.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = sanitized);
}

/// Clears the calling thread's last error; no allocation when it is already empty.
pub(crate) fn clear_last_error() {
    let _ = LAST_ERROR.try_with(|slot| {
        let mut slot = slot.borrow_mut();
        if !slot.as_bytes().is_empty() {
            *slot = CString::default();
        }
    });
}

/// Pointer to the calling thread's last error message, valid until its next celerity call.
pub(crate) fn last_error_message_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| slot.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// The calling thread's last error message as a Rust string.
pub(crate) fn last_error_message_string() -> String {
    LAST_ERROR
        .try_with(|slot| slot.borrow().to_string_lossy().into_owned())
        .unwrap_or_default()
}
