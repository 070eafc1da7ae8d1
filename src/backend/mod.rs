//! Backends: host memory, emulated host devices and CUDA devices.
//!
//! [`interface`] is what the executor asks of any backend; [`host`] implements it with host
//! memory and emulated devices. Building blocks shared by every backend: [`event`] (completion
//! of asynchronous operations), [`thread_queue`] (in-order worker threads for lanes, emulated
//! devices and allocations), [`host_memory`] (aligned host allocations), [`nd_memory`] (n-D box
//! copies), [`parallel_copy`] (large host copies on several threads), [`pinned_pool`] (reused
//! page-locked host memory) and [`system_info`] (the memories and devices the instruction graph
//! plans against).

pub mod bounds;
mod copy_crew;
mod copy_stores;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod cuda_error_names;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub mod device_cache;
pub mod event;
pub mod host;
pub mod host_copy;
pub mod host_memory;
pub mod interface;
pub mod nd_memory;
pub mod parallel_copy;
pub mod pinned_pool;
#[cfg(feature = "mimalloc")]
pub mod runtime_heap;
pub mod system_info;
pub mod thread_queue;

/// A raw allocation pointer handed between the executor's threads.
///
/// The runtime's instruction graph orders every access to an allocation, so a pointer may move
/// to the thread that performs the next access; the dependencies, not the type system, rule out
/// concurrent conflicting access.
#[derive(Debug, Clone, Copy)]
pub struct SendPtr(pub *mut u8);

// SAFETY: see the type's documentation: accesses through the pointer are serialised by the
// instruction graph's dependencies, and the allocation outlives every instruction using it.
unsafe impl Send for SendPtr {}
// SAFETY: sharing the pointer value itself is harmless; dereferencing follows the same rule.
unsafe impl Sync for SendPtr {}
