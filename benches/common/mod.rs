//! Helpers shared by the benchmarks.
pub mod contexts;
pub mod programs;
pub mod topologies;
