//! The application side of the executor thread: starting the live or dry-run executor under a
//! panic guard, sending it messages and joining it.
//!
//! A panic on the executor thread is reported through [`ExecutorDelegate::async_error`] as an
//! internal error naming the thread and the panic; the thread then fails the promise of every
//! fence and epoch it knows or receives later, until the shutdown epoch, so that the program's
//! next `wait` returns the error instead of waiting forever.

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::interface::{ExecutorConfig, ExecutorDelegate, ExecutorMessage};
use super::live::Executor;
use crate::backend::interface::Backend;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::instruction::InstructionKind;
use crate::task::EpochAction;
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
                        executor.fail_pending(panic);
                        drop(executor);
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
                guarded(ROLE, || super::dry_run::run(receiver, delegate.clone())).unwrap_or_else(
                    |panic| fail_after_panic(&drain, delegate.as_ref(), panic, |_| {}),
                )
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
/// (`fail_held`), then fails every fence and epoch that arrives until the shutdown epoch, an
/// abort, or the runtime going away. Host objects and user memory that arrive are dropped (and so
/// released) at once: nothing will use them.
fn fail_after_panic(
    receiver: &Receiver<ExecutorMessage>,
    delegate: &dyn ExecutorDelegate,
    panic: Error,
    fail_held: impl FnOnce(&Error),
) -> Result<()> {
    delegate.async_error(panic.clone());
    fail_held(&panic);
    while let Ok(message) = receiver.recv() {
        let instructions = match message {
            ExecutorMessage::Submit(instructions, _pilots) => instructions,
            ExecutorMessage::Abort => return Ok(()),
            _ => continue,
        };
        for instruction in instructions {
            let (task, shutdown) = match instruction.kind() {
                InstructionKind::Epoch { task, action, .. } => {
                    (task, *action == EpochAction::Shutdown)
                }
                InstructionKind::Fence { task } => (task, false),
                _ => continue,
            };
            if let Some(promise) = task.promise() {
                promise.fulfill(Err(panic.clone()));
            }
            if shutdown {
                return Ok(());
            }
        }
    }
    Ok(())
}
