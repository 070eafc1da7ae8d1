//! Backends: host memory, emulated host devices and CUDA devices.
