//! Celerity: a distributed runtime for programs written as if for one device.

pub mod backend;
pub mod comm;
pub mod command;
pub mod debug;
pub mod executor;
pub mod ffi;
pub mod grid;
pub mod instruction;
pub mod runtime;
pub mod scheduler;
pub mod task;
