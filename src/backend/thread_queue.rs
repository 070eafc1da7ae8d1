//! An in-order worker thread: jobs run one after another on a named thread, each completing an
//! [`AsyncEvent`]. Host lanes, emulated devices and the allocation queue are thread queues.
//!
//! A job that panics completes its event with an internal error naming the thread and the
//! panic; the thread keeps serving later jobs. Dropping the queue lets queued jobs finish, then
//! joins the thread.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::JoinHandle;

use crossbeam_channel::{Sender, unbounded};

use super::event::{AsyncEvent, Completion, EventCompleter};
use crate::error::{Error, Result};
use crate::thread_guard::panic_message;

type Job = Box<dyn FnOnce() -> Result<Completion> + Send>;

/// An in-order job queue served by one thread.
pub struct ThreadQueue {
    name: String,
    sender: Option<Sender<(Job, EventCompleter)>>,
    thread: Option<JoinHandle<()>>,
}

impl ThreadQueue {
    /// Starts the thread `name` (visible in debuggers and profilers).
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        let (sender, receiver) = unbounded::<(Job, EventCompleter)>();
        let thread_name = name.clone();
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                for (job, completer) in receiver {
                    let outcome = catch_unwind(AssertUnwindSafe(job)).unwrap_or_else(|payload| {
                        let message = panic_message(payload.as_ref());
                        Err(Error::internal(format!(
                            "panic on thread {thread_name}: {message}"
                        )))
                    });
                    completer.complete(outcome);
                }
            })
            .map_err(|e| Error::internal(format!("cannot start thread {name}: {e}")))?;
        Ok(Self {
            name,
            sender: Some(sender),
            thread: Some(thread),
        })
    }

    /// The thread's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues `job` behind every job submitted before it.
    pub fn submit(&self, job: impl FnOnce() -> Result<Completion> + Send + 'static) -> AsyncEvent {
        let (event, completer) = AsyncEvent::pending();
        if let Some(sender) = &self.sender {
            // A send only fails once the thread is gone; the completer's drop then reports it.
            let _ = sender.send((Box::new(job), completer));
        }
        event
    }
}

impl Drop for ThreadQueue {
    fn drop(&mut self) {
        self.sender.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A pool of lanes (in-order thread queues), created on first use and named
/// `<prefix>-<index>`.
pub(crate) struct Lanes {
    prefix: String,
    lanes: Vec<ThreadQueue>,
}

impl Lanes {
    /// An empty pool whose threads are named `<prefix>-<index>`.
    pub(crate) fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            lanes: Vec::new(),
        }
    }

    /// Queues `job` on lane `index` (creating lanes up to it); a lane that cannot be started
    /// fails the returned event.
    pub(crate) fn submit(
        &mut self,
        index: usize,
        job: impl FnOnce() -> Result<Completion> + Send + 'static,
    ) -> AsyncEvent {
        while self.lanes.len() <= index {
            match ThreadQueue::new(format!("{}-{}", self.prefix, self.lanes.len())) {
                Ok(lane) => self.lanes.push(lane),
                Err(error) => return AsyncEvent::ready(Err(error)),
            }
        }
        self.lanes[index].submit(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn wait(event: &AsyncEvent) {
        while !event.is_complete() {
            std::thread::yield_now();
        }
    }

    #[test]
    fn jobs_run_in_submission_order_on_the_named_thread() {
        let queue = ThreadQueue::new("celerity-test-lane").unwrap();
        let order = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let events: Vec<_> = (0..50)
            .map(|i| {
                let order = order.clone();
                queue.submit(move || {
                    assert_eq!(std::thread::current().name(), Some("celerity-test-lane"));
                    order.lock().push(i);
                    Ok(Completion::Done)
                })
            })
            .collect();
        wait(events.last().unwrap());
        assert!(events.iter().all(AsyncEvent::is_complete));
        assert_eq!(*order.lock(), (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_job_fails_its_event_and_the_queue_survives() {
        let queue = ThreadQueue::new("celerity-test-panic").unwrap();
        let failing = queue.submit(|| panic!("kernel exploded"));
        let counter = Arc::new(AtomicUsize::new(0));
        let c = counter.clone();
        let next = queue.submit(move || {
            c.fetch_add(1, Ordering::SeqCst);
            Ok(Completion::Done)
        });
        wait(&next);
        let error = failing.take_outcome().unwrap().unwrap_err();
        assert!(
            error.message().contains("kernel exploded"),
            "{}",
            error.message()
        );
        assert!(error.message().contains("celerity-test-panic"));
        assert_eq!(counter.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn drop_finishes_queued_jobs() {
        let counter = Arc::new(AtomicUsize::new(0));
        {
            let queue = ThreadQueue::new("celerity-test-drop").unwrap();
            for _ in 0..10 {
                let c = counter.clone();
                queue.submit(move || {
                    c.fetch_add(1, Ordering::SeqCst);
                    Ok(Completion::Done)
                });
            }
        }
        assert_eq!(counter.load(Ordering::SeqCst), 10);
    }
}
