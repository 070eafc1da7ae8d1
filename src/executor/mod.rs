//! The executor thread: out-of-order engine, receive arbiter, live and dry-run executors.
//!
//! [`handle`] starts the thread and speaks [`interface`]'s messages to it; [`live`] runs
//! instructions on a backend and a communicator, `dry_run` only reports epochs and horizons;
//! [`engine`] decides when and where each instruction runs.

mod bounds_check;
pub mod builtin_reducers;
pub mod control;
mod dry_run;
pub mod engine;
mod engine_view;
pub mod handle;
mod id_window;
pub mod interface;
pub mod live;
pub mod receive_arbiter;
pub mod stall;

pub use handle::ExecutorHandle;
pub use interface::{ExecutorConfig, ExecutorDelegate, ExecutorMessage};

#[cfg(test)]
mod tests;
