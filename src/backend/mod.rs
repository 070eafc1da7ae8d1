//! Backends: host memory, emulated host devices and CUDA devices.

#[cfg(feature = "cuda")]
pub mod cuda;
