//! What the program hands to the runtime and the executor holds on its behalf: the promise a
//! fence or epoch fulfils, a reduction's operator, a host object's instance and the memory of a
//! user allocation. They sit on the ground floor because every stage between the application
//! thread and the executor carries them (C++ Celerity: `fence.h`, `reduction.h`,
//! `host_object.h`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::Result;

/// A one-shot promise that fences and epochs fulfil and the application thread waits on.
#[derive(Default)]
pub struct Promise {
    fulfilled: Mutex<Option<Result<()>>>,
    ready: Condvar,
}

impl Promise {
    /// A new, unfulfilled promise.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Fulfils the promise (successfully or with the error that prevents its result). Only the
    /// first fulfilment counts.
    pub fn fulfill(&self, outcome: Result<()>) {
        let mut fulfilled = self.fulfilled.lock();
        if fulfilled.is_none() {
            *fulfilled = Some(outcome);
            self.ready.notify_all();
        }
    }

    /// Whether the promise has been fulfilled.
    pub fn is_ready(&self) -> bool {
        self.fulfilled.lock().is_some()
    }

    /// Blocks until fulfilled; returns the outcome. `on_slow` is called after every `warn_after`
    /// of waiting (for diagnostics).
    pub fn wait(&self, warn_after: Duration, mut on_slow: impl FnMut(Duration)) -> Result<()> {
        let start = Instant::now();
        let mut fulfilled = self.fulfilled.lock();
        loop {
            if let Some(outcome) = fulfilled.as_ref() {
                return outcome.clone();
            }
            if self.ready.wait_for(&mut fulfilled, warn_after).timed_out() && fulfilled.is_none() {
                on_slow(start.elapsed());
            }
        }
    }
}

/// Combines the partial results of one reduction (C++ Celerity: `reducer` in `reduction.h`). Pointers are host pointers to
/// elements of [`Reducer::elem_size`] bytes.
pub trait Reducer: Send + Sync {
    /// Bytes per element.
    fn elem_size(&self) -> usize;

    /// Writes the identity into `count` consecutive elements at `dest`.
    ///
    /// # Safety
    /// `dest` must be valid for writes of `count` elements.
    unsafe fn fill_identity(&self, dest: *mut u8, count: usize);

    /// Writes the combination of the `count` consecutive elements at `source` to `dest`.
    ///
    /// # Safety
    /// `source` must be valid for reads of `count` elements and `dest` for writing one element;
    /// they must not overlap.
    unsafe fn reduce(&self, dest: *mut u8, source: *const u8, count: usize);
}

/// A host object's instance as the executor holds it: the address handed to host tasks and what
/// destroys it (run once, on the executor thread, after its last side effect).
pub struct HostObjectInstance {
    /// The instance pointer passed to tasks.
    pub instance: usize,
    /// Destroys the instance; `None` when the runtime does not own it.
    pub destroy: Option<Box<dyn FnOnce() + Send>>,
}

impl Drop for HostObjectInstance {
    fn drop(&mut self) {
        if let Some(destroy) = self.destroy.take() {
            destroy();
        }
    }
}

/// Memory of a user allocation (memory 0): either bytes the runtime copied and owns (a
/// host-initialised buffer's contents) or a pointer the program lends until a fence completes.
pub enum UserMemory {
    /// Owned by the executor until the allocation becomes garbage.
    Owned(Box<dyn OwnedMemory>),
    /// Borrowed from the program (a fence destination).
    Borrowed(usize),
}

impl UserMemory {
    /// The address of the first byte.
    pub fn address(&mut self) -> usize {
        match self {
            UserMemory::Owned(memory) => memory.address(),
            UserMemory::Borrowed(address) => *address,
        }
    }
}

/// Bytes the runtime owns for a user allocation (the backend's page-locked host copy, or plain
/// bytes), released when dropped.
pub trait OwnedMemory: Send {
    /// The address of the first byte.
    fn address(&mut self) -> usize;
}

impl OwnedMemory for Vec<u8> {
    fn address(&mut self) -> usize {
        self.as_mut_ptr() as usize
    }
}
