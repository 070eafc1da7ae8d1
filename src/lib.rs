//! Celerity: a distributed runtime for programs written as if for one device.
//!
//! The pipeline, top to bottom: the C ABI ([`ffi`]) feeds the [`runtime`], which builds the task
//! graph ([`task`]); the [`scheduler`] thread turns tasks into the per-node command graph
//! ([`command`]) and instruction graph ([`instruction`]); the [`executor`] runs instructions on a
//! [`backend`] and exchanges data through a communicator ([`comm`]). Geometry ([`grid`]) is used by
//! every layer; [`debug`] prints graphs and traces. What several stages share sits on the ground
//! floor ([`error`], [`types`], [`policy`], [`user_objects`], [`thread_guard`]); imports run one
//! way along the pipeline (`docs/architecture.md`, checked by `tests/module_graph.rs`).

#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod backend;
pub mod comm;
pub mod command;
pub mod debug;
pub mod error;
pub mod executor;
pub mod ffi;
pub mod grid;
pub(crate) mod id_table;
pub mod instruction;
pub mod policy;
pub mod runtime;
pub mod scheduler;
pub mod task;
pub mod thread_guard;
pub mod types;
pub mod user_objects;

pub use error::{Error, ErrorKind, Result};

/// With feature `mimalloc`, the runtime's Rust allocations come from mimalloc: the scheduler
/// allocates instructions that the executor frees, and the executor allocates submissions that
/// a device thread frees; glibc returns such a block to its arena under that arena's lock, which
/// the allocating thread contends for (`__lll_lock_wait_private` in the H200 floor profile).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static RUNTIME_HEAP: backend::runtime_heap::RuntimeHeap = backend::runtime_heap::RuntimeHeap;
