//! Helpers shared by the benchmarks.
pub mod contexts;
pub mod digest;
pub mod direct_run;
pub mod programs;
pub mod topologies;
