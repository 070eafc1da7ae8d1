//! The runtime: owns the task layer, the scheduler and the executor (application-thread side).

pub mod config;
