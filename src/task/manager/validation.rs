//! Turning a command group into a task: the checks [`TaskManager::submit`] runs before anything
//! changes (C++ Celerity: `task_manager.cc` and the `handler` checks of `cgf.h`). Every rule
//! that needs no iteration space lives on [`CommandGroup`], so the C ABI reports it with the
//! same words at the call that breaks it.

use std::sync::Arc;

use smallvec::SmallVec;

use super::TaskManager;
use crate::error::{Error, Result};
use crate::grid::{Id, Range};
use crate::task::access::{AccessMode, BufferAccess, BufferAccessMap};
use crate::task::command_group::{CommandGroup, ReductionRequest, TaskSpec};
use crate::task::geometry::TaskGeometry;
use crate::task::range_mapper::RangeMapper;
use crate::task::task::{Dependencies, ReductionInfo, Task, TaskType};
use crate::types::{BufferId, CollectiveGroupId, HostObjectId, TaskId};

impl TaskManager {
    /// Validates a command group and turns it into a task without dependencies: the task's
    /// type and geometry from its spec, then its hints, side effects, accesses and reductions.
    pub(super) fn build_command_group_task(
        &mut self,
        tid: TaskId,
        spec: TaskSpec,
        cg: CommandGroup,
    ) -> Result<Arc<Task>> {
        let (ty, mut geometry, collective_group) = self.task_shape(spec)?;
        let variable_split = matches!(ty, TaskType::DeviceCompute | TaskType::HostCompute);
        if let Some(g) = cg.granularity {
            geometry.granularity = checked_granularity(g, &geometry, variable_split)?;
        }
        CommandGroup::check_oversubscribe(cg.hints.oversubscribe)?;
        let side_effects = self.checked_side_effects(ty, &cg.side_effects)?;
        let accesses = self.checked_accesses(&geometry, cg.accesses)?;
        let reductions = self.checked_reductions(ty, variable_split, &cg.reductions, &accesses)?;
        Ok(self.graph.allocate(Task {
            id: tid,
            ty,
            epoch_action: None,
            collective_group,
            geometry,
            access_map: BufferAccessMap::new(tid, accesses, geometry),
            side_effects,
            reductions,
            hints: cg.hints,
            name: cg.name.map(String::into_boxed_str),
            payload: cg.payload,
            dependencies: Dependencies::new(),
            critical_path_length: 0,
        }))
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
    fn checked_side_effects(
        &self,
        ty: TaskType,
        requested: &[HostObjectId],
    ) -> Result<SmallVec<[HostObjectId; 2]>> {
        let mut side_effects: SmallVec<[HostObjectId; 2]> = SmallVec::new();
        for &hoid in requested {
            if ty == TaskType::DeviceCompute {
                return Err(Error::invalid_argument(format!(
                    "side_effect: {hoid} in a device kernel (side effects need a host task)"
                )));
            }
            self.check_host_object("side_effect", hoid)?;
            if !side_effects.contains(&hoid) {
                side_effects.push(hoid);
            }
        }
        Ok(side_effects)
    }

    /// The accesses with their buffers' shapes, each mapper checked against its buffer.
    #[inline]
    fn checked_accesses(
        &self,
        geometry: &TaskGeometry,
        requested: SmallVec<[(BufferId, AccessMode, RangeMapper); 2]>,
    ) -> Result<SmallVec<[BufferAccess; 2]>> {
        let mut accesses: SmallVec<[BufferAccess; 2]> = SmallVec::with_capacity(requested.len());
        for (bid, mode, mapper) in requested {
            let buffer = self.buffer("access", bid)?;
            mapper.validate(
                geometry.dims,
                self.buffer_label(bid),
                buffer.dims,
                buffer.range,
            )?;
            accesses.push(BufferAccess {
                bid,
                mode,
                mapper,
                buffer_dims: buffer.dims,
                buffer_range: buffer.range,
            });
        }
        Ok(accesses)
    }

    /// The reductions, checked against the task type, their buffers and the group's accesses.
    #[inline]
    fn checked_reductions(
        &self,
        ty: TaskType,
        variable_split: bool,
        requested: &[ReductionRequest],
        accesses: &[BufferAccess],
    ) -> Result<SmallVec<[ReductionInfo; 1]>> {
        let mut reductions: SmallVec<[ReductionInfo; 1]> = SmallVec::new();
        for red in requested {
            if !variable_split {
                return Err(Error::invalid_argument(format!(
                    "reduction: a {} cannot reduce (only kernels and distributed host tasks can)",
                    ty.description()
                )));
            }
            let buffer = self.buffer("reduction", red.bid)?;
            CommandGroup::check_reduction(
                self.buffer_label(red.bid),
                buffer.range.size(),
                reductions.iter().any(|r| r.bid == red.bid),
                accesses.iter().any(|a| a.bid == red.bid),
            )?;
            reductions.push(ReductionInfo {
                rid: red.rid,
                bid: red.bid,
                init_from_buffer: !red.initialize_to_identity,
            });
        }
        Ok(reductions)
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
