//! Pieces of the end-to-end benchmark programs: their environment knobs and the million-task
//! program's task, shared by `million_tasks` (through the runtime) and `scheduler_stages`
//! (through the scheduler alone), so both measure the same program.
#![allow(dead_code)]

use celerity::grid::{Id, Range};
use celerity::task::{AccessMode, CommandGroup, RangeMapper, TaskSpec};
use celerity::types::BufferId;

/// The count in environment variable `name`, or `default` when it is unset or not a number.
pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An empty device kernel over `range`; with `chained`, it reads and writes `buffer` one to one
/// (a dependency on the previous such task), else it accesses nothing.
pub fn empty_kernel(range: Range, buffer: BufferId, chained: bool) -> (TaskSpec, CommandGroup) {
    let spec = TaskSpec::DeviceKernel {
        dims: 1,
        range,
        offset: Id::default(),
    };
    let cg = if chained {
        CommandGroup::new().access(buffer, AccessMode::ReadWrite, RangeMapper::OneToOne)
    } else {
        CommandGroup::new()
    };
    (spec, cg)
}
