//! `celerity_runtime_*`: the process-wide runtime and the thread rule of API.md.
//!
//! One runtime per process. Every call except the status, version, error-message, config and
//! future functions must come from the thread that called `celerity_runtime_init`; others get
//! `CELERITY_ERROR_INVALID_STATE`. Calls before init or after shutdown are `INVALID_STATE` too. A
//! process cannot re-initialise after shutdown (MPI cannot be initialised twice).

use std::ffi::c_char;

use super::boundary::{self, OutPtr};
use super::config::{self, celerity_config};
use super::kernel::{CELERITY_BACKEND_CUDA, CELERITY_BACKEND_HOST, celerity_backend};
use super::runtime_slot::{
    InsideRuntime, RUNTIME, RUNTIME_THREAD, Slot, run_deferred_callbacks, with_runtime,
    wrong_thread,
};
use super::status::celerity_status;
use super::{buffer, command_group, future, host_object};
use crate::error::{Error, Result};
use crate::runtime::config::{ConfigBuilder, LogLevel};
use crate::runtime::{BackendKind, Runtime};
use crate::task::BufferLabel;

fn install_logging(level: LogLevel) {
    crate::debug::logging::install(level);
}

/// What `celerity_runtime_get_info` reports.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct celerity_runtime_info {
    /// This process's rank (node id).
    pub node: u32,
    /// Number of processes, or of simulated nodes in a dry run.
    pub num_nodes: u32,
    /// Local devices in use.
    pub num_devices: u32,
    /// Which backend runs kernels.
    pub backend: celerity_backend,
    /// Whether this is a dry run (`dry_run_nodes`): nothing is executed.
    pub dry_run: bool,
}

/// Starts the runtime: reads the configuration (`cfg`, which wins, then `CELERITY_*` environment
/// variables), initialises MPI when started by an MPI launcher (with `MPI_THREAD_MULTIPLE`,
/// unless the program did), selects devices, starts the scheduler and executor threads. The
/// calling thread becomes the runtime's thread. `argc`/`argv` may be NULL; they are not modified.
///
/// Errors: a second init, or init after shutdown → `CELERITY_ERROR_INVALID_STATE`; a malformed
/// environment variable → `CELERITY_ERROR_INVALID_ARGUMENT`; `devices=cuda` without a usable CUDA
/// driver → `CELERITY_ERROR_UNSUPPORTED`; MPI failures → `CELERITY_ERROR_COMMUNICATION`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_runtime_init(
    argc: *mut std::ffi::c_int,
    argv: *mut *mut *mut c_char,
    cfg: *const celerity_config,
) -> celerity_status {
    let _ = (argc, argv);
    init("celerity_runtime_init", cfg, true)
}

/// `celerity_runtime_init` for a program that says whether its accessor helpers were compiled
/// with the boundary check (`accessors_record`: the value of `CELERITY_ACCESSOR_BOUNDARY_CHECK`
/// where the runtime is started). The header routes `celerity_runtime_init` calls here; where
/// `accessors_record` is 0 (a build with `NDEBUG`) the runtime hands kernels no bounds records,
/// since nothing would write them, as with `accessor_boundary_check=off`.
///
/// Errors: as `celerity_runtime_init`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_runtime_init_for_program(
    argc: *mut std::ffi::c_int,
    argv: *mut *mut *mut c_char,
    cfg: *const celerity_config,
    accessors_record: std::ffi::c_int,
) -> celerity_status {
    let _ = (argc, argv);
    init("celerity_runtime_init", cfg, accessors_record != 0)
}

/// Both init entry points: `accessors_record` false turns boundary records off.
fn init(
    function: &'static str,
    cfg: *const celerity_config,
    accessors_record: bool,
) -> celerity_status {
    boundary::call(function, || {
        if let Some(owner) = *RUNTIME_THREAD.lock()
            && owner != std::thread::current().id()
        {
            return Err(Error::invalid_state(
                "the runtime is already initialised (by another thread)",
            ));
        }
        let mut slot = RUNTIME.lock();
        match &*slot {
            Slot::Running { .. } => {
                return Err(Error::invalid_state("the runtime is already initialised"));
            }
            Slot::ShutDown => {
                return Err(Error::invalid_state(
                    "the runtime was shut down and cannot be initialised again in this process",
                ));
            }
            Slot::Uninitialized => {}
        }
        let builder = if cfg.is_null() {
            ConfigBuilder::default()
        } else {
            config::snapshot(cfg, "cfg")?
        };
        let (mut configuration, warnings) = builder.build(crate::runtime::config::environment()?)?;
        if !accessors_record {
            configuration.accessor_boundary_check = crate::policy::ErrorPolicy::Ignore;
        }
        install_logging(configuration.log_level);
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        let runtime = Runtime::start(configuration)?;
        *slot = Slot::Running {
            runtime: Box::new(runtime),
            thread: std::thread::current().id(),
        };
        *RUNTIME_THREAD.lock() = Some(std::thread::current().id());
        register_exit_hook();
        Ok(())
    })
}

// The doc line tells cbindgen to keep this import out of the header.
#[expect(unused_doc_comments)]
/// cbindgen:ignore
unsafe extern "C" {
    /// The C library's `atexit` (imported, not part of celerity's ABI).
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// Shuts a runtime the program forgot to shut down when the process exits (from the runtime's
/// thread: returning from `main` or calling `exit` there), so work finishes, drop and destroy
/// callbacks run and MPI is finalised. A no-op after `celerity_runtime_shutdown`.
extern "C" fn shutdown_at_exit() {
    let owner = *RUNTIME_THREAD.lock();
    if owner != Some(std::thread::current().id()) {
        return;
    }
    let running = match &mut *RUNTIME.lock() {
        Slot::Running { runtime, .. } => {
            // In a distributed run the other nodes are told (they fail instead of waiting).
            runtime.depart_without_shutdown();
            true
        }
        _ => false,
    };
    if running {
        // By now this thread's thread-locals may already be destroyed (the log formatter keeps
        // its buffer in one, and touching it panics), so the shutdown runs on a fresh thread
        // that becomes the runtime's thread for it; the exiting thread waits.
        let outcome = std::thread::Builder::new()
            .name("celerity-exit".to_owned())
            .spawn(|| {
                let this_thread = std::thread::current().id();
                *RUNTIME_THREAD.lock() = Some(this_thread);
                if let Slot::Running { thread, .. } = &mut *RUNTIME.lock() {
                    *thread = this_thread;
                }
                tracing::warn!(
                    "the program exited without celerity_runtime_shutdown; shutting down now"
                );
                let status = celerity_runtime_shutdown();
                (status != super::status::CELERITY_OK)
                    .then(super::last_error::last_error_message_string)
            })
            .map(|thread| thread.join());
        match outcome {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(message))) => eprintln!("celerity: shutdown at exit failed: {message}"),
            Ok(Err(_)) => eprintln!("celerity: shutdown at exit panicked"),
            Err(error) => eprintln!("celerity: shutdown at exit could not start a thread: {error}"),
        }
    }
}

fn register_exit_hook() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: `atexit` only records the function pointer; `shutdown_at_exit` never unwinds
        // (celerity_runtime_shutdown catches panics) and only runs on the runtime's thread.
        if unsafe { atexit(shutdown_at_exit) } != 0 {
            tracing::warn!("could not register the shutdown-at-exit hook");
        }
    });
}

/// Shuts the runtime down: waits for all submitted work, releases buffers and host objects the
/// program did not release (destroying owned instances, running drop callbacks), stops the
/// threads, frees everything and finalises MPI if the runtime initialised it. Idempotent: a second
/// call returns `CELERITY_OK`. Reports an asynchronous failure no earlier call reported.
///
/// Errors: before init or from another thread → `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_runtime_shutdown() -> celerity_status {
    boundary::call("celerity_runtime_shutdown", || {
        if let Some(owner) = *RUNTIME_THREAD.lock()
            && owner != std::thread::current().id()
        {
            return Err(wrong_thread());
        }
        let outcome = shut_down_locked();
        run_deferred_callbacks();
        outcome
    })
}

fn shut_down_locked() -> Result<()> {
    {
        let inside = InsideRuntime::enter()?;
        let mut slot = RUNTIME.lock();
        match &mut *slot {
            Slot::Uninitialized => Err(Error::invalid_state("the runtime is not initialised")),
            Slot::ShutDown => Ok(()),
            Slot::Running { runtime, thread } => {
                if *thread != std::thread::current().id() {
                    return Err(Error::invalid_state(
                        "celerity_runtime_shutdown must be called from the thread that called celerity_runtime_init",
                    ));
                }
                release_leaked_handles(runtime);
                let outcome = runtime.shutdown();
                let Slot::Running { runtime, .. } = std::mem::replace(&mut *slot, Slot::ShutDown)
                else {
                    unreachable!("checked above")
                };
                drop(slot);
                drop(inside);
                // Drop outside the lock: dropping finalises MPI and joins nothing further.
                drop(runtime);
                outcome
            }
        }
    }
}

/// `n thing(s)`, with the plural spelled out.
fn counted(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// Names, in one warning line, the handles the program never released (buffers, host objects,
/// collective groups, futures, command groups never submitted) and invalidates them; the
/// runtime's shutdown then releases what they stood for.
fn release_leaked_handles(runtime: &Runtime) {
    let mut parts = Vec::new();
    let buffers = buffer::take_unreleased();
    if !buffers.is_empty() {
        let names: Vec<String> = buffers
            .iter()
            .map(|b| {
                let name = runtime
                    .buffer(b.bid)
                    .ok()
                    .and_then(|info| info.name.clone());
                BufferLabel {
                    id: b.bid,
                    name: name.as_deref(),
                }
                .to_string()
            })
            .collect();
        parts.push(format!(
            "{} ({})",
            counted(buffers.len(), "buffer", "buffers"),
            names.join(", ")
        ));
    }
    let (host_objects, groups) = host_object::take_unreleased();
    if host_objects > 0 {
        parts.push(counted(host_objects, "host object", "host objects"));
    }
    if groups > 0 {
        parts.push(counted(groups, "collective group", "collective groups"));
    }
    let futures = future::take_unreleased();
    if futures > 0 {
        parts.push(counted(futures, "future", "futures"));
    }
    let cgs = command_group::take_unsubmitted();
    if !cgs.is_empty() {
        let names: Vec<String> = cgs
            .iter()
            .map(|n| {
                n.as_ref()
                    .map_or("unnamed".to_owned(), |n| format!("\"{n}\""))
            })
            .collect();
        parts.push(format!(
            "{} never submitted ({})",
            counted(cgs.len(), "command group", "command groups"),
            names.join(", ")
        ));
    }
    if parts.is_empty() {
        return;
    }
    let list = match parts.len() {
        1 => parts.remove(0),
        _ => {
            let last = parts.pop().unwrap_or_default();
            format!("{} and {last}", parts.join(", "))
        }
    };
    tracing::warn!(
        "celerity_runtime_shutdown: the program did not release {list}; releasing them now"
    );
}

/// Writes node, node count, device count, backend and dry-run flag to `*out`.
///
/// Errors: `out` NULL → `CELERITY_ERROR_INVALID_ARGUMENT`; not running or another thread →
/// `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_runtime_get_info(out: *mut celerity_runtime_info) -> celerity_status {
    boundary::call("celerity_runtime_get_info", || {
        let out = OutPtr::new(out, "out")?;
        let info = with_runtime(|rt| Ok(rt.info()))?;
        out.write(celerity_runtime_info {
            node: info.node,
            num_nodes: info.num_nodes,
            num_devices: info.num_devices,
            backend: match info.backend {
                BackendKind::Host => CELERITY_BACKEND_HOST,
                BackendKind::Cuda => CELERITY_BACKEND_CUDA,
            },
            dry_run: info.dry_run,
        });
        Ok(())
    })
}
