//! Backends: host memory, emulated host devices and CUDA devices.
//!
//! Building blocks shared by every backend: [`event`] (completion of asynchronous operations),
//! [`thread_queue`] (in-order worker threads for lanes, emulated devices and allocations),
//! [`host_memory`] (aligned host allocations) and [`nd_memory`] (n-D box copies).

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod event;
pub mod host_memory;
pub mod nd_memory;
pub mod thread_queue;
