//! Completion events of asynchronous backend operations.
//!
//! The executor polls events in its loop, so `is_complete` is one atomic load. An operation's
//! outcome (an error, or the pointer of an allocation) is stored once by whoever completes it
//! and taken by the executor when it retires the instruction.
//!
//! Two kinds of event share the type: a *standalone* event owns its state (one allocation), for
//! operations that complete in any order (communication, CUDA streams); an *in-order* event is a
//! sequence number in the [`InOrderProgress`] of a thread queue, whose jobs complete one after
//! another, so that handing out an event allocates nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

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

/// How far the jobs of one in-order queue have run: job `n` (counted from 0) is complete once
/// `completed > n`. Outcomes other than [`Completion::Done`] wait in `outcomes` until taken;
/// `stored` counts them, so that taking a `Done` outcome neither locks nor writes the line that
/// the completing thread writes. The two halves sit on separate cache lines.
#[derive(Debug, Default)]
pub struct InOrderProgress {
    completed: CacheLine<AtomicU64>,
    stored: CacheLine<StoredOutcomes>,
}

#[derive(Debug, Default)]
struct StoredOutcomes {
    count: AtomicUsize,
    outcomes: Mutex<Vec<(u64, Result<Completion>)>>,
}

/// A value alone on its cache line (128 bytes: adjacent-line prefetching pairs lines).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CacheLine<T>(pub(crate) T);

impl InOrderProgress {
    /// Records the outcome of job `sequence`, which must be the job after the last completed
    /// one, and marks it complete.
    pub fn complete(&self, sequence: u64, outcome: Result<Completion>) {
        debug_assert_eq!(self.completed.0.load(Ordering::Relaxed), sequence);
        if !matches!(outcome, Ok(Completion::Done)) {
            let stored = &self.stored.0;
            stored.outcomes.lock().push((sequence, outcome));
            stored.count.fetch_add(1, Ordering::Relaxed);
        }
        // Release: whoever sees the job complete also sees its stored outcome and count.
        self.completed.0.store(sequence + 1, Ordering::Release);
    }
}

#[derive(Debug, Clone)]
enum EventKind {
    Standalone(Arc<EventState>),
    InOrder {
        progress: Arc<InOrderProgress>,
        sequence: u64,
    },
}

/// The polling side of an event.
#[derive(Debug, Clone)]
pub struct AsyncEvent {
    kind: EventKind,
}

impl AsyncEvent {
    /// A new pending event and the handle that completes it.
    pub fn pending() -> (AsyncEvent, EventCompleter) {
        let state = Arc::new(EventState::default());
        (
            AsyncEvent {
                kind: EventKind::Standalone(state.clone()),
            },
            EventCompleter {
                state: Some(state),
                waiter: std::thread::current(),
            },
        )
    }

    /// The event of job `sequence` of the in-order queue whose progress is `progress`.
    pub fn in_order(progress: Arc<InOrderProgress>, sequence: u64) -> AsyncEvent {
        AsyncEvent {
            kind: EventKind::InOrder { progress, sequence },
        }
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
        match &self.kind {
            EventKind::Standalone(state) => state.complete.load(Ordering::Acquire),
            EventKind::InOrder { progress, sequence } => {
                progress.completed.0.load(Ordering::Acquire) > *sequence
            }
        }
    }

    /// The outcome, once complete; `None` while pending. A standalone event's outcome can be
    /// taken once (`None` afterwards); an in-order event that completed with
    /// [`Completion::Done`] keeps reporting it.
    pub fn take_outcome(&self) -> Option<Result<Completion>> {
        if !self.is_complete() {
            return None;
        }
        match &self.kind {
            EventKind::Standalone(state) => state.outcome.lock().take(),
            EventKind::InOrder { progress, sequence } => {
                let stored = &progress.stored.0;
                if stored.count.load(Ordering::Relaxed) == 0 {
                    return Some(Ok(Completion::Done));
                }
                let mut outcomes = stored.outcomes.lock();
                match outcomes.iter().position(|(s, _)| s == sequence) {
                    Some(index) => {
                        stored.count.fetch_sub(1, Ordering::Relaxed);
                        Some(outcomes.swap_remove(index).1)
                    }
                    None => Some(Ok(Completion::Done)),
                }
            }
        }
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
    fn in_order_events_complete_with_their_own_outcomes() {
        let progress = Arc::new(InOrderProgress::default());
        let events: Vec<_> = (0..3)
            .map(|n| AsyncEvent::in_order(progress.clone(), n))
            .collect();
        assert!(events.iter().all(|e| !e.is_complete()));
        progress.complete(0, Ok(Completion::Done));
        progress.complete(1, Err(Error::internal("copy failed")));
        assert!(events[0].is_complete() && events[1].is_complete());
        assert!(!events[2].is_complete());
        assert_eq!(events[2].take_outcome(), None);
        progress.complete(2, Ok(Completion::Allocation(0x2000)));
        assert_eq!(
            events[2].take_outcome(),
            Some(Ok(Completion::Allocation(0x2000)))
        );
        assert_eq!(events[0].take_outcome(), Some(Ok(Completion::Done)));
        let error = events[1].take_outcome().unwrap().unwrap_err();
        assert_eq!(error.message(), "copy failed");
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
