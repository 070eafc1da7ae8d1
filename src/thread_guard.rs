//! Panic guards for the threads the runtime starts (scheduler, executor, backend lanes): a panic
//! on one of them is a bug in Celerity, and it must surface as `CELERITY_ERROR_INTERNAL` at the
//! program's next synchronising call, naming the thread and the panic, instead of leaving
//! `celerity_wait` waiting for a thread that is gone.
//!
//! Each thread catches panics around its unit of work ([`guarded`]) and, where later work would
//! otherwise wait on it, keeps draining its queue in a failed state (the scheduler fails every
//! later task; the executor fails every later fence and epoch).
//!
//! Test-only fault injection: in the crate's own tests (`cfg(test)`), a task whose debug name is
//! [`INJECT_PANIC_PREFIX`] followed by a thread role (`scheduler`, `executor`) makes that thread
//! panic while handling it. Release builds contain no hook.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{Error, Result};

/// The message of a caught panic (`&str` and `String` payloads; anything else is named so).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

/// The internal error that reports a panic on the `role` thread.
pub fn panic_error(role: &str, payload: &(dyn Any + Send)) -> Error {
    Error::internal(format!(
        "the {role} thread panicked (a bug in celerity, please report it): {}",
        panic_message(payload)
    ))
}

/// Runs `work`, turning a panic into [`panic_error`] for the `role` thread. State that `work`
/// touches may be half-updated afterwards: callers stop using it for anything but failing what
/// waits on them.
pub fn guarded<T>(role: &str, work: impl FnOnce() -> T) -> Result<T> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| panic_error(role, payload.as_ref()))
}

/// Task debug names starting with this (then a thread role) inject a panic in tests.
pub const INJECT_PANIC_PREFIX: &str = "celerity-test-panic:";

/// Test-only hook: panics when the task named `task_name` asks for a panic on the `role` thread.
#[cfg(test)]
pub fn inject_panic(role: &str, task_name: Option<&str>) {
    if let Some(name) = task_name
        && name.strip_prefix(INJECT_PANIC_PREFIX) == Some(role)
    {
        panic!("injected panic on the {role} thread (task {name})");
    }
}

/// Test-only hook; does nothing outside the crate's own tests.
#[cfg(not(test))]
#[inline(always)]
pub fn inject_panic(_role: &str, _task_name: Option<&str>) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_names_the_thread_and_the_message() {
        let error = guarded("executor", || panic!("lost track of allocation 7")).unwrap_err();
        assert_eq!(error.kind(), crate::ErrorKind::Internal);
        assert!(
            error.message().contains("executor thread panicked")
                && error.message().contains("lost track of allocation 7"),
            "{}",
            error.message()
        );
    }

    #[test]
    fn the_hook_fires_only_for_its_role() {
        inject_panic("executor", Some("celerity-test-panic:scheduler"));
        inject_panic("executor", Some("plain task"));
        inject_panic("executor", None);
        let fired = guarded("executor", || {
            inject_panic("executor", Some("celerity-test-panic:executor"))
        });
        assert!(fired.is_err());
    }
}
