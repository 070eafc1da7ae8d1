//! Completion events of asynchronous backend operations.
//!
//! The executor polls events in its loop, so `is_complete` is one atomic load. An operation's
//! outcome (an error, or the pointer of an allocation) is stored once by whoever completes it
//! and taken by the executor when it retires the instruction.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, Result};

/// What a completed operation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// Nothing besides having finished.
    Done,
    /// The address of a new allocation (allocations only).
    Allocation(usize),
}

#[derive(Debug, Default)]
struct EventState {
    complete: AtomicBool,
    outcome: Mutex<Option<Result<Completion>>>,
}

/// The completing side of an event; dropping it without completing reports an internal error,
/// so a lost operation never leaves the executor waiting forever. Completing wakes the thread
/// that created the event (the executor parks while it waits for completions).
#[derive(Debug)]
pub struct EventCompleter {
    state: Option<Arc<EventState>>,
    waiter: std::thread::Thread,
}

/// The polling side of an event.
#[derive(Debug, Clone)]
pub struct AsyncEvent {
    state: Arc<EventState>,
}

impl AsyncEvent {
    /// A new pending event and the handle that completes it.
    pub fn pending() -> (AsyncEvent, EventCompleter) {
        let state = Arc::new(EventState::default());
        (
            AsyncEvent {
                state: state.clone(),
            },
            EventCompleter {
                state: Some(state),
                waiter: std::thread::current(),
            },
        )
    }

    /// An event that is already complete with `outcome`.
    pub fn ready(outcome: Result<Completion>) -> AsyncEvent {
        let (event, completer) = Self::pending();
        completer.complete(outcome);
        event
    }

    /// Whether the operation has finished (successfully or not). Monotonic.
    #[inline]
    pub fn is_complete(&self) -> bool {
        self.state.complete.load(Ordering::Acquire)
    }

    /// The outcome, once complete; `None` while pending or after it was taken.
    pub fn take_outcome(&self) -> Option<Result<Completion>> {
        if !self.is_complete() {
            return None;
        }
        self.state.outcome.lock().take()
    }
}

impl EventCompleter {
    /// Records the outcome and marks the event complete.
    pub fn complete(mut self, outcome: Result<Completion>) {
        if let Some(state) = self.state.take() {
            *state.outcome.lock() = Some(outcome);
            state.complete.store(true, Ordering::Release);
            self.waiter.unpark();
        }
    }
}

impl Drop for EventCompleter {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            *state.outcome.lock() = Some(Err(Error::internal(
                "an asynchronous operation was dropped before it completed",
            )));
            state.complete.store(true, Ordering::Release);
            self.waiter.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_once_with_its_outcome() {
        let (event, completer) = AsyncEvent::pending();
        assert!(!event.is_complete());
        assert_eq!(event.take_outcome(), None);
        completer.complete(Ok(Completion::Allocation(0x1000)));
        assert!(event.is_complete());
        assert_eq!(
            event.take_outcome(),
            Some(Ok(Completion::Allocation(0x1000)))
        );
        assert_eq!(event.take_outcome(), None);
        assert!(event.is_complete());
    }

    #[test]
    fn a_dropped_completer_reports_an_internal_error() {
        let (event, completer) = AsyncEvent::pending();
        drop(completer);
        let outcome = event.take_outcome().unwrap().unwrap_err();
        assert_eq!(outcome.kind(), crate::ErrorKind::Internal);
    }

    #[test]
    fn completion_is_visible_across_threads() {
        let (event, completer) = AsyncEvent::pending();
        let t = std::thread::spawn(move || completer.complete(Ok(Completion::Done)));
        t.join().unwrap();
        assert!(event.is_complete());
        assert_eq!(event.take_outcome(), Some(Ok(Completion::Done)));
    }
}
