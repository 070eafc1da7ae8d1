//! Executor tests: the out-of-order engine (Celerity's `out_of_order_engine_tests.cc`), its view
//! of generated instruction graphs, and the receive arbiter over the in-process fabric.

mod engine;
mod engine_view;
mod receive_arbiter;
