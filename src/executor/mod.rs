//! The executor thread: out-of-order engine, receive arbiter and dry-run executor.
