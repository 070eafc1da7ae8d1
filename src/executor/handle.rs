//! The application side of the executor thread: starting the live or dry-run executor under a
//! panic guard, sending it messages and joining it.
//!
//! A panic on the executor thread is reported through [`ExecutorDelegate::async_error`] as an
//! internal error naming the thread and the panic; the thread then fails the promise of every
//! fence and epoch it knows or receives later, until the shutdown epoch, so that the program's
//! next `wait` returns the error instead of waiting forever.

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::interface::{ExecutorConfig, ExecutorDelegate, ExecutorMessage};
use super::live::{Executor, fail_fence_or_epoch};
use crate::backend::interface::Backend;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::thread_guard::guarded;

/// The thread's role, as panic reports name it.
const ROLE: &str = "executor";

/// The application side of a running executor.
pub struct ExecutorHandle {
    sender: Sender<ExecutorMessage>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl ExecutorHandle {
    /// Starts the executor thread.
    pub fn start(
        backend: Box<dyn Backend>,
        communicator: Box<dyn Communicator>,
        delegate: Arc<dyn ExecutorDelegate>,
        config: ExecutorConfig,
    ) -> Result<Self> {
        let (sender, receiver) = unbounded();
        let thread = std::thread::Builder::new()
            .name("celerity-executor".into())
            .spawn(move || {
                let drain = receiver.clone();
                let mut executor =
                    Executor::new(backend, communicator, delegate.clone(), receiver, config);
                match guarded(ROLE, || executor.run()) {
                    Ok(outcome) => outcome,
                    Err(panic) => fail_after_panic(&drain, delegate.as_ref(), panic, |panic| {
                        let shutdown_held = executor.fail_pending(panic);
                        drop(executor);
                        shutdown_held
                    }),
                }
            })
            .map_err(|e| Error::internal(format!("cannot start the executor thread: {e}")))?;
        Ok(Self {
            sender,
            thread: Some(thread),
        })
    }

    /// Starts the dry-run executor thread (`dry_run_nodes`): nothing is executed.
    pub fn start_dry_run(delegate: Arc<dyn ExecutorDelegate>) -> Result<Self> {
        let (sender, receiver) = unbounded();
        let thread = std::thread::Builder::new()
            .name("celerity-executor".into())
            .spawn(move || {
                let drain = receiver.clone();
                let mut unprocessed = VecDeque::new();
                guarded(ROLE, || {
                    super::dry_run::run(receiver, delegate.clone(), &mut unprocessed)
                })
                .unwrap_or_else(|panic| {
                    fail_after_panic(&drain, delegate.as_ref(), panic, |panic| {
                        unprocessed
                            .iter()
                            .any(|instruction| fail_fence_or_epoch(instruction, panic))
                    })
                })
            })
            .map_err(|e| Error::internal(format!("cannot start the executor thread: {e}")))?;
        Ok(Self {
            sender,
            thread: Some(thread),
        })
    }

    /// A sender for messages (the scheduler's sink sends batches through it).
    pub fn sender(&self) -> Sender<ExecutorMessage> {
        self.sender.clone()
    }

    /// The executor thread, to unpark after sending.
    pub fn thread_handle(&self) -> std::thread::Thread {
        self.thread
            .as_ref()
            .map_or_else(std::thread::current, |t| t.thread().clone())
    }

    /// Sends `message` and wakes the executor.
    pub fn send(&self, message: ExecutorMessage) {
        // The executor only stops after the shutdown epoch, after which nothing is sent.
        let _ = self.sender.send(message);
        if let Some(thread) = &self.thread {
            thread.thread().unpark();
        }
    }

    /// Waits for the executor thread to finish (after the shutdown epoch) and returns what it
    /// found at shutdown (e.g. leaked allocations).
    pub fn join(&mut self) -> Result<()> {
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(Error::internal("the executor thread panicked"))),
            None => Ok(()),
        }
    }
}

/// The executor panicked: reports `panic` once, fails what the executor already held
/// (`fail_held`, which tells whether the shutdown epoch was among it), then fails every fence and
/// epoch that arrives until the shutdown epoch, an abort, or the runtime going away. Host objects
/// and user memory that arrive are dropped (and so released) at once: nothing will use them.
fn fail_after_panic(
    receiver: &Receiver<ExecutorMessage>,
    delegate: &dyn ExecutorDelegate,
    panic: Error,
    fail_held: impl FnOnce(&Error) -> bool,
) -> Result<()> {
    delegate.async_error(panic.clone());
    if fail_held(&panic) {
        return Ok(());
    }
    while let Ok(message) = receiver.recv() {
        let instructions = match message {
            ExecutorMessage::Submit(instructions, _pilots) => instructions,
            ExecutorMessage::Abort => return Ok(()),
            _ => continue,
        };
        for instruction in instructions {
            if fail_fence_or_epoch(&instruction, &panic) {
                return Ok(());
            }
        }
    }
    Ok(())
}
