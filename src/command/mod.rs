//! Command graph generation (CDAG): the second stage of the pipeline (C++ Celerity:
//! `command_graph_generator.cc`).
//!
//! Every node builds its own command graph from the (identical) task graph, deterministically and
//! without talking to the other nodes; because all nodes run the same algorithm on the same
//! input, they agree on who sends what to whom.
//!
//! # Protocol
//!
//! 1. Create a [`CommandGraphGenerator`] for `(num_nodes, local_nid, policies)`.
//! 2. Feed it every task in creation order through [`CommandGraphGenerator::build_task`],
//!    starting with the init epoch; announce buffers and host objects (creation, debug name,
//!    destruction) in the same order relative to the tasks as the task manager saw them.
//! 3. Each `build_task` returns the task's commands for this node as a topologically sorted
//!    batch of immutable [`CommandRef`]s: the instruction graph generator consumes them in order.
//!
//! # What the commands mean
//!
//! * A task is split into chunks ([`assignment`]); every node computes the same split and
//!   assignment, the requirements of its own chunks, and the reads of those remote chunks that
//!   can involve data it has to send (found without visiting every remote chunk).
//! * Per buffer each node tracks its local last writer of every element, with a *fresh* bit (the
//!   newest version is here) and a *replicated* bit (we received it; only original producers
//!   push), and for data it produced the set of nodes that already have a copy.
//! * For every remote chunk's reads, the producer emits one [`CommandKind::Push`] per buffer and
//!   task listing the exact region per target; every reader emits one
//!   [`CommandKind::AwaitPush`] per buffer and task for the union of what it misses. Both carry
//!   the same [`TransferId`](crate::types::TransferId) `(consumer task, buffer, reduction)`;
//!   what node `a` pushes to `b` is exactly what `b` awaits from `a`, and data already
//!   transferred is never transferred again.
//! * Reductions over several nodes stay pending until read: contributors push partial results
//!   to the readers (non-contributors an empty notification), and each reader runs a
//!   [`CommandKind::Reduction`] after awaiting them.
//! * Horizons and epochs collect the execution front; a horizon applies the previous horizon as
//!   the effective epoch, which replaces older last writers and bounds all tracking state.

pub mod assignment;
mod buffer_state;
#[expect(clippy::module_inception)]
mod command;
mod diagnostics;
mod generator;
mod graph;
mod node_bitset;
mod recorder;
mod reduction;
mod replication;
mod transfers;

#[cfg(test)]
mod tests;

pub use buffer_state::{SCALAR_BOX, WriteState};
pub use command::{
    Command, CommandBatch, CommandDependencies, CommandDependency, CommandKind, CommandRef,
};
pub use generator::{CommandGraphGenerator, CommandPolicies};
pub use node_bitset::NodeBitset;
pub use recorder::{CommandRecord, CommandRecorder};
