//! The executor thread: out-of-order engine, receive arbiter and dry-run executor.

pub mod engine;
pub mod receive_arbiter;

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod receive_arbiter_tests;
