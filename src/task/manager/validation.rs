//! Turning a command group into a task: the checks [`TaskManager::submit`] runs before anything
//! changes (C++ Celerity: `task_manager.cc` and the `handler` checks of `cgf.h`). Every rule
//! that needs no iteration space lives on [`CommandGroup`], so the C ABI reports it with the
//! same words at the call that breaks it.

use std::sync::Arc;

use smallvec::SmallVec;

use super::TaskManager;
use crate::error::{Error, Result};
use crate::grid::{Id, Range};
use crate::task::access::{AccessMode, BufferAccess};
use crate::task::command_group::{CommandGroup, ReductionRequest, TaskSpec};
use crate::task::geometry::TaskGeometry;
use crate::task::range_mapper::{BufferLabel, RangeMapper};
use crate::task::task::{ReductionInfo, Task, TaskType};
use crate::types::{BufferId, CollectiveGroupId, HostObjectId, TaskId};

impl TaskManager {
    /// Validates a command group and turns it into a task without dependencies: the task's
    /// type and geometry from its spec, then its hints, side effects, accesses and reductions.
    /// The task is built in its final allocation; a refused one leaves it to the next task.
    /// What the task takes over is moved out of `cg` (not the whole group: it is large).
    #[inline]
    pub(super) fn build_command_group_task(
        &mut self,
        tid: TaskId,
        spec: TaskSpec,
        cg: &mut CommandGroup,
    ) -> Result<Arc<Task>> {
        let (ty, mut geometry, collective_group) = self.task_shape(spec)?;
        let variable_split = matches!(ty, TaskType::DeviceCompute | TaskType::HostCompute);
        if let Some(g) = cg.granularity {
            geometry.granularity = checked_granularity(g, &geometry, variable_split)?;
        }
        CommandGroup::check_oversubscribe(cg.hints.oversubscribe)?;
        let mut task = self.graph.allocate(tid, ty);
        let t = task.fill();
        let checked = self
            .check_side_effects(t, &cg.side_effects)
            .and_then(|()| self.check_accesses(t, &geometry, &mut cg.accesses))
            .and_then(|()| self.check_reductions(t, variable_split, &cg.reductions));
        if let Err(e) = checked {
            self.graph.recycle(task.into_task());
            return Err(e);
        }
        // every check passed: now the (possibly user-defined) mappers run
        t.access_map.finish(geometry);
        t.collective_group = collective_group;
        t.hints = cg.hints;
        t.name = cg.name.take().map(String::into_boxed_str);
        t.payload = cg.payload.take();
        Ok(task.into_task())
    }

    /// The type, geometry and collective group a spec asks for.
    #[inline]
    fn task_shape(&self, spec: TaskSpec) -> Result<(TaskType, TaskGeometry, CollectiveGroupId)> {
        Ok(match spec {
            TaskSpec::DeviceKernel {
                dims,
                range,
                offset,
            } => (
                TaskType::DeviceCompute,
                checked_geometry(dims, range, offset)?,
                CollectiveGroupId::NONE,
            ),
            TaskSpec::HostDistributed {
                dims,
                range,
                offset,
            } => (
                TaskType::HostCompute,
                checked_geometry(dims, range, offset)?,
                CollectiveGroupId::NONE,
            ),
            TaskSpec::HostOnce => (
                TaskType::HostCompute,
                TaskGeometry::default(),
                CollectiveGroupId::NONE,
            ),
            TaskSpec::MasterNode => (
                TaskType::MasterNode,
                TaskGeometry::default(),
                CollectiveGroupId::NONE,
            ),
            TaskSpec::Collective(group) => {
                if group == CollectiveGroupId::NONE {
                    return Err(Error::invalid_argument(
                        "collective host task: collective group CG0 means \"not collective\"",
                    ));
                }
                let nodes = Range::new(self.config.num_collective_nodes, 1, 1);
                (
                    TaskType::Collective,
                    TaskGeometry::new(1, nodes, Id::ZERO),
                    group,
                )
            }
        })
    }

    /// The host objects of the side effects, each once; device kernels have none.
    #[inline]
    fn check_side_effects(&self, t: &mut Task, requested: &[HostObjectId]) -> Result<()> {
        for &hoid in requested {
            if t.ty == TaskType::DeviceCompute {
                return Err(Error::invalid_argument(format!(
                    "side_effect: {hoid} in a device kernel (side effects need a host task)"
                )));
            }
            self.check_host_object("side_effect", hoid)?;
            if !t.side_effects.contains(&hoid) {
                t.side_effects.push(hoid);
            }
        }
        Ok(())
    }

    /// The accesses with their buffers' shapes, each mapper checked against its buffer.
    #[inline]
    fn check_accesses(
        &self,
        t: &mut Task,
        geometry: &TaskGeometry,
        requested: &mut SmallVec<[(BufferId, AccessMode, RangeMapper); 4]>,
    ) -> Result<()> {
        for (bid, mode, mapper) in requested.drain(..) {
            let buffer = self.buffer("access", bid)?;
            let label = BufferLabel {
                id: bid,
                name: buffer.name.as_deref(),
            };
            mapper.validate(geometry.dims, label, buffer.dims, buffer.range)?;
            t.access_map.push(BufferAccess {
                bid,
                mode,
                mapper,
                buffer_dims: buffer.dims,
                buffer_range: buffer.range,
            });
        }
        Ok(())
    }

    /// The reductions, checked against the task type, their buffers and the group's accesses.
    #[inline]
    fn check_reductions(
        &self,
        t: &mut Task,
        variable_split: bool,
        requested: &[ReductionRequest],
    ) -> Result<()> {
        for red in requested {
            if !variable_split {
                return Err(Error::invalid_argument(format!(
                    "reduction: a {} cannot reduce (only kernels and distributed host tasks can)",
                    t.ty.description()
                )));
            }
            let buffer = self.buffer("reduction", red.bid)?;
            let label = BufferLabel {
                id: red.bid,
                name: buffer.name.as_deref(),
            };
            CommandGroup::check_reduction(
                label,
                buffer.range.size(),
                t.reductions.iter().any(|r| r.bid == red.bid),
                t.access_map.accesses().iter().any(|a| a.bid == red.bid),
            )?;
            t.reductions.push(ReductionInfo {
                rid: red.rid,
                bid: red.bid,
                init_from_buffer: !red.initialize_to_identity,
            });
        }
        Ok(())
    }
}

/// A split granularity `g` for a task of `geometry`: only kernels and distributed host tasks
/// (`variable_split`) take one other than 1, and it must divide the range.
#[inline]
fn checked_granularity(g: Range, geometry: &TaskGeometry, variable_split: bool) -> Result<Range> {
    let divides = (0..3).all(|d| g[d] > 0 && geometry.global_size[d] % g[d] == 0);
    if !variable_split && g != Range::ONE {
        return Err(Error::invalid_argument(format!(
            "constrain_split: granularity {g:?} applies only to kernels and distributed host tasks"
        )));
    }
    if !divides {
        return Err(Error::invalid_argument(format!(
            "constrain_split: granularity {g:?} does not divide the range {:?}",
            geometry.global_size
        )));
    }
    Ok(g)
}

// Inline: its caller runs it once per task and most of it folds away for valid input.
#[inline]
fn checked_geometry(dims: usize, range: Range, offset: Id) -> Result<TaskGeometry> {
    if dims > 3 {
        return Err(Error::invalid_argument(format!(
            "dims {dims} is more than 3"
        )));
    }
    if range.is_empty() {
        return Err(Error::invalid_argument(format!(
            "range {range:?} is empty: kernels and distributed host tasks need at least one item"
        )));
    }
    if range.checked_size().is_none() {
        return Err(Error::invalid_argument(format!(
            "range {range:?}: the item count overflows 64 bits"
        )));
    }
    if let Some(d) = (0..3).find(|&d| offset[d].checked_add(range[d]).is_none()) {
        return Err(Error::invalid_argument(format!(
            "offset {offset:?} + range {range:?} overflows 64 bits in dimension {d}"
        )));
    }
    Ok(TaskGeometry::new(dims, range, offset))
}
