//! The executor thread: out-of-order engine, receive arbiter, live and dry-run executors.

mod bounds_check;
pub mod builtin_reducers;
mod dry_run;
pub mod engine;
pub mod live;
pub mod payload;
pub mod receive_arbiter;
pub mod stall;

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod receive_arbiter_tests;
