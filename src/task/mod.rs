//! The task layer: tasks, buffer accesses, range mappers and the task graph (TDAG).
//!
//! The first stage of the pipeline. Every node builds the same task graph from the same sequence
//! of calls, so ids and edges agree across processes.
//!
//! # Protocol
//!
//! 1. The runtime creates a [`TaskManager`] (which creates the init epoch, task 0) with an optional
//!    [`TaskDelegate`] that receives every created task as an `Arc<Task>`, in creation order:
//!    the command graph generator's input.
//! 2. Buffers and host objects are announced before use
//!    ([`TaskManager::notify_buffer_created`], [`TaskManager::notify_host_object_created`]).
//! 3. Each submission ([`TaskManager::submit`] with a [`TaskSpec`] and a [`CommandGroup`]),
//!    fence or epoch validates its input, computes the dependencies, creates one immutable
//!    [`Task`] and hands it to the delegate. After a command-group task the manager may add a
//!    horizon: when the critical path has grown by `horizon_step` since the last one, or the
//!    execution front holds `horizon_max_parallelism` tasks. A new horizon applies the previous
//!    one: it becomes the epoch for new tasks and replaces every older entry of the tracking state.
//!    A failing call changes nothing.
//! 4. When the executor reports a horizon or epoch reached, the runtime feeds an
//!    [`EpochTracker`] and calls [`TaskManager::prune_before_epoch`] with its result (on the
//!    application thread), which frees the older tasks; memory stays bounded.
//! 5. The shutdown epoch ends the graph; later calls fail with `InvalidState`.
//!
//! Dependencies point backward only and are final when a task is created; the forward edges
//! (dependents) live in the manager's [`TaskGraph`]. Every edge carries a [`DependencyKind`] and a
//! [`DependencyOrigin`]; with `record` set, a [`TaskRecorder`] keeps a [`TaskRecord`] of every
//! task for tests and graph printing.
//!
//! Threads: the manager lives on the application thread. Tasks are `Send + Sync` and may be read
//! on any thread; custom range mappers are called from the application thread and, through
//! chunk queries, from the scheduler thread.

mod access;
mod command_group;
mod epoch_tracker;
mod geometry;
mod graph;
mod last_writers;
mod manager;
mod range_mapper;
mod recorder;
pub mod spmd;
#[expect(clippy::module_inception)]
mod task;

#[cfg(test)]
mod tests;

pub use access::{AccessMode, BufferAccess, BufferAccessMap};
pub use command_group::{CommandGroup, HostTaskKind, ReductionRequest, TaskSpec};
pub use epoch_tracker::EpochTracker;
pub use geometry::TaskGeometry;
pub use graph::TaskGraph;
pub use last_writers::LastWriterMap;
pub use manager::{TaskDelegate, TaskManager, TaskManagerConfig};
pub use range_mapper::{
    BufferLabel, Chunk, CustomMapperFn, Mapped, RangeMapper, fmt_box_dims, fmt_region,
};
pub use recorder::{AccessRecord, ReductionRecord, TaskRecord, TaskRecorder};
pub use task::{
    Dependencies, Dependency, DependencyKind, DependencyOrigin, EpochAction, ExecutionTarget,
    Hints, ReductionInfo, Task, TaskLabel, TaskPayload, TaskType,
};
