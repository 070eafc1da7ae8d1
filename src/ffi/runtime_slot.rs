//! The process-wide runtime slot and the thread rule of API.md, shared by every `celerity_*`
//! function that needs the runtime: the running runtime and its thread, the re-entry guard for
//! program callbacks that run inside a call, and the callbacks deferred until the lock is free.
//! `runtime.rs` (init, shutdown) fills and empties the slot; the handle files only borrow it.

use std::cell::{Cell, RefCell};
use std::thread::ThreadId;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::runtime::Runtime;

pub(super) enum Slot {
    Uninitialized,
    Running {
        runtime: Box<Runtime>,
        thread: ThreadId,
    },
    ShutDown,
}

pub(super) static RUNTIME: Mutex<Slot> = Mutex::new(Slot::Uninitialized);

/// The runtime's thread, checked before taking the runtime lock: a kernel or callback that calls
/// back into celerity from a worker thread while the application thread holds the lock (waiting
/// in `celerity_wait`, say) is refused at once instead of deadlocking.
pub(super) static RUNTIME_THREAD: Mutex<Option<ThreadId>> = Mutex::new(None);

/// Names the calling thread by its role or name, never by a Rust thread id.
pub(super) fn wrong_thread() -> Error {
    let caller = match std::thread::current().name() {
        Some(name) => format!("thread \"{name}\""),
        None => "another thread".to_owned(),
    };
    Error::invalid_state(format!(
        "called from {caller}; only the application thread that initialised the runtime (the one that called celerity_runtime_init) may make this call"
    ))
}

thread_local! {
    /// Set while this thread holds the runtime lock: program code that runs then (a custom range
    /// mapper, a drop callback of a pruned task) must not take the lock again.
    static INSIDE_RUNTIME: Cell<bool> = const { Cell::new(false) };
    /// Drop callbacks that became due while this thread held the runtime lock; they run right
    /// after it is released, so that they may call the API.
    static DEFERRED_CALLBACKS: RefCell<Vec<Box<dyn FnOnce()>>> = const { RefCell::new(Vec::new()) };
}

/// Marks the calling thread as inside the runtime lock until dropped.
pub(super) struct InsideRuntime;

impl InsideRuntime {
    pub(super) fn enter() -> Result<Self> {
        if INSIDE_RUNTIME.replace(true) {
            return Err(Error::invalid_state(
                "called from a callback that runs inside another celerity call on this thread (a custom range mapper, say); call it after that call returns",
            ));
        }
        Ok(InsideRuntime)
    }
}

impl Drop for InsideRuntime {
    fn drop(&mut self) {
        INSIDE_RUNTIME.set(false);
    }
}

/// Runs the program's callback `f` now, or, when this thread holds the runtime lock, right after
/// the lock is released (so the callback may call the API instead of deadlocking on the lock).
pub(crate) fn run_program_callback(f: Box<dyn FnOnce()>) {
    if !INSIDE_RUNTIME.get() {
        return f();
    }
    // During process exit (the shutdown-at-exit hook) this thread's deferred list may already be
    // destroyed: then the callback runs at once, and an API call from it gets the re-entry
    // answer (INVALID_STATE) instead of a deadlock.
    let mut pending = Some(f);
    let _ = DEFERRED_CALLBACKS.try_with(|deferred| {
        if let (Ok(mut deferred), Some(f)) = (deferred.try_borrow_mut(), pending.take()) {
            deferred.push(f);
        }
    });
    if let Some(f) = pending {
        f();
    }
}

/// Runs the callbacks deferred while the lock was held (and any they defer in turn).
pub(super) fn run_deferred_callbacks() {
    let next = || {
        DEFERRED_CALLBACKS
            .try_with(|deferred| deferred.try_borrow_mut().ok().and_then(|mut d| d.pop()))
            .ok()
            .flatten()
    };
    while let Some(f) = next() {
        f();
    }
}

/// Runs `f` on the runtime after checking that it is running and that this is its thread.
pub(crate) fn with_runtime<T>(f: impl FnOnce(&mut Runtime) -> Result<T>) -> Result<T> {
    let result = with_runtime_locked(f);
    run_deferred_callbacks();
    result
}

fn with_runtime_locked<T>(f: impl FnOnce(&mut Runtime) -> Result<T>) -> Result<T> {
    if let Some(owner) = *RUNTIME_THREAD.lock()
        && owner != std::thread::current().id()
    {
        return Err(wrong_thread());
    }
    let _inside = InsideRuntime::enter()?;
    let mut slot = RUNTIME.lock();
    match &mut *slot {
        Slot::Uninitialized => Err(Error::invalid_state(
            "the runtime is not initialised (call celerity_runtime_init first)",
        )),
        Slot::ShutDown => Err(Error::invalid_state("the runtime has been shut down")),
        Slot::Running { runtime, thread } => {
            if *thread != std::thread::current().id() {
                return Err(wrong_thread());
            }
            f(runtime)
        }
    }
}

/// Whether the calling thread owns the runtime (for the any-thread future functions). Reads only
/// the thread id, never the runtime lock, so a helper thread's future wait does not queue behind
/// the application thread's `celerity_wait`.
pub(crate) fn is_runtime_thread() -> bool {
    *RUNTIME_THREAD.lock() == Some(std::thread::current().id())
}
