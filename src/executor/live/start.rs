//! How the live executor starts each kind of instruction (C++ Celerity's `live_executor.cc`
//! issues each kind through its own function, too): allocations, frees and copies on the
//! backend, kernels and host tasks on their lanes, sends and receives through the communicator
//! and the receive arbiter, and the instructions that complete at once on the executor thread
//! (with small copies that are ready, see [`Executor::placed`]).

use smallvec::SmallVec;

use super::{Executor, launcher_of};
use crate::backend::event::AsyncEvent;
use crate::backend::interface::CopyLane;
use crate::backend::nd_memory::{StridedBox, copy_box_raw};
use crate::comm::Stride;
use crate::error::{Error, Result};
use crate::executor::engine::{Assignment, Target};
use crate::grid::{GridBox, Region, Subrange};
use crate::instruction::{CopyLayout, Instruction, InstructionGarbage, InstructionKind};
use crate::task::{EpochAction, Task};
use crate::types::{
    AllocationId, CollectiveGroupId, InstructionId, MessageId, NodeId, ReductionId, TransferId,
};

/// The events an instruction completes with.
pub(super) type Events = SmallVec<[AsyncEvent; 1]>;

/// What starting an instruction gives: its events and, for an alloc, the allocation to record.
pub(super) type Started = (Events, Option<AllocationId>);

/// Largest copy the executor does itself once its predecessors completed, where the host
/// reaches both ends: a 16 KiB memcpy (0.3-0.5 µs from cache, 1.8 µs from memory on the
/// development VM) costs about what handing the copy to a lane and noticing its completion
/// does (0.4-0.6 µs with a polling lane, about 5 µs more from a parked one on the GPU hosts),
/// and holds up the executor's other work no longer than that.
const INLINE_COPY_BYTES: usize = 16 * 1024;

/// Most contiguous runs per box of such a copy (a column of single elements is a call each).
const INLINE_COPY_RUNS: usize = 64;

/// Whether every box of a copy of `region` is at most [`INLINE_COPY_RUNS`] contiguous runs.
fn few_runs(
    region: &Region,
    source_layout: &CopyLayout,
    dest_layout: &CopyLayout,
    elem_size: usize,
) -> bool {
    let (mut source_cursor, mut dest_cursor) = (0, 0);
    region.boxes().iter().all(|b| {
        let source = locate(source_layout, b, 0, &mut source_cursor, elem_size);
        let dest = locate(dest_layout, b, 0, &mut dest_cursor, elem_size);
        let (Ok((source, _)), Ok((dest, _))) = (source, dest) else {
            // Enqueued, the copy reports the error.
            return false;
        };
        let layout = source.copy_layout_to(&dest, elem_size);
        layout.total_bytes() <= layout.contiguous_size.max(1) * INLINE_COPY_RUNS
    })
}

/// The lane a copy runs on: the device lane its assignment names, else a host lane.
fn copy_lane(assignment: Assignment) -> CopyLane {
    match (assignment.target, assignment.device, assignment.lane) {
        (Target::DeviceQueue, Some(device), Some(lane)) => CopyLane::Device(device, lane),
        (_, _, lane) => CopyLane::Host(lane.unwrap_or(0)),
    }
}

/// The internal error of a `start_*` function handed an instruction of another family.
fn not_started_here(kind: &InstructionKind, family: &str) -> Error {
    Error::internal(format!(
        "a {} instruction is not a {family} instruction",
        kind.name()
    ))
}

impl Executor {
    /// Starts an instruction; returns the events it completes with (none: already complete) and,
    /// for an alloc, the allocation to record once they complete. Kernels and host tasks,
    /// communication and the instructions that complete at once each have their own `start_*`.
    pub(super) fn start(
        &mut self,
        instruction: &Instruction,
        assignment: Assignment,
    ) -> Result<Started> {
        use InstructionKind as K;
        let kind = instruction.kind();
        let events = match kind {
            K::Alloc {
                allocation,
                size_bytes,
                align_bytes,
            } => {
                let event =
                    self.backend
                        .enqueue_alloc(allocation.memory(), *size_bytes, *align_bytes);
                return Ok((SmallVec::from_elem(event, 1), Some(*allocation)));
            }
            K::Free { allocation } => self.start_free(*allocation)?,
            K::Copy {
                source,
                dest,
                source_layout,
                dest_layout,
                region,
                elem_size,
            } => self.start_copy(
                (assignment.target != Target::Immediate).then(|| copy_lane(assignment)),
                (*source, source_layout),
                (*dest, dest_layout),
                region,
                *elem_size,
            )?,
            K::DeviceKernel { .. } | K::HostTask { .. } => {
                self.start_task(assignment.id, kind, assignment.lane.unwrap_or(0))?
            }
            K::Send { .. }
            | K::Receive { .. }
            | K::SplitReceive { .. }
            | K::AwaitReceive { .. }
            | K::GatherReceive { .. } => self.start_communication(kind)?,
            _ => {
                self.run_immediate(kind)?;
                SmallVec::new()
            }
        };
        Ok((events, None))
    }

    /// A kernel on its device's lane `lane`, or a host task on host lane `lane`.
    fn start_task(
        &mut self,
        id: InstructionId,
        kind: &InstructionKind,
        lane: usize,
    ) -> Result<Events> {
        use InstructionKind as K;
        let event = match kind {
            K::DeviceKernel {
                device,
                task,
                execution_box,
                accesses,
                reductions,
                ..
            } => {
                let mut invocation = self.invocation(
                    task,
                    *execution_box,
                    accesses,
                    reductions,
                    Some(*device),
                    CollectiveGroupId::NONE,
                )?;
                self.arm_bounds_check(id, &mut invocation)?;
                let launcher = launcher_of(task)?;
                self.backend
                    .enqueue_device_kernel(*device, lane, launcher, invocation)
            }
            K::HostTask {
                task,
                execution_box,
                accesses,
                collective_group,
                ..
            } => {
                let mut invocation =
                    self.invocation(task, *execution_box, accesses, &[], None, *collective_group)?;
                self.arm_bounds_check(id, &mut invocation)?;
                let launcher = launcher_of(task)?;
                self.backend.enqueue_host_task(lane, launcher, invocation)
            }
            other => return Err(not_started_here(other, "kernel or host task")),
        };
        Ok(SmallVec::from_elem(event, 1))
    }

    /// Sends and receives, through the communicator and the receive arbiter.
    fn start_communication(&mut self, kind: &InstructionKind) -> Result<Events> {
        use InstructionKind as K;
        Ok(match kind {
            K::Send {
                to,
                message,
                source,
                allocation_range,
                offset_in_allocation,
                send_range,
                elem_size,
            } => {
                let stride = Stride {
                    allocation_range: *allocation_range,
                    transfer: Subrange::new(*offset_in_allocation, *send_range),
                    elem_size: *elem_size,
                };
                self.start_send(*to, *message, *source, stride)?
            }
            K::Receive {
                transfer,
                region,
                dest,
                allocated_box,
                elem_size,
            } => self.start_receive(*transfer, region, *dest, *allocated_box, *elem_size)?,
            K::SplitReceive {
                transfer,
                region,
                dest,
                allocated_box,
                elem_size,
            } => {
                self.start_split_receive(*transfer, region, *dest, *allocated_box, *elem_size)?;
                SmallVec::new()
            }
            K::AwaitReceive { transfer, region } => SmallVec::from_elem(
                self.arbiter
                    .await_split_receive_subregion(*transfer, region.clone()),
                1,
            ),
            K::GatherReceive {
                transfer,
                dest,
                node_chunk_bytes,
            } => self.start_gather_receive(*transfer, *dest, *node_chunk_bytes)?,
            other => return Err(not_started_here(other, "communication")),
        })
    }

    /// The instructions that run to completion on the executor thread.
    fn run_immediate(&mut self, kind: &InstructionKind) -> Result<()> {
        use InstructionKind as K;
        match kind {
            K::FillIdentity {
                reduction,
                allocation,
                num_values,
            } => self.fill_identity(*reduction, *allocation, *num_values)?,
            K::Reduce {
                reduction,
                source,
                num_source_values,
                dest,
            } => self.reduce(*reduction, *source, *num_source_values, *dest)?,
            K::Fence { task } => {
                if let Some(promise) = task.promise() {
                    promise.fulfill(self.outcome());
                }
            }
            K::DestroyHostObject { host_object } => {
                self.host_objects.remove(host_object);
            }
            K::CloneCollectiveGroup { original, new } => {
                self.clone_collective_group(*original, *new)?
            }
            K::Horizon { task, garbage } => {
                self.delegate.horizon_reached(*task);
                self.collect(garbage);
            }
            K::Epoch {
                task,
                action,
                garbage,
            } => self.run_epoch(task, *action, garbage)?,
            other => return Err(not_started_here(other, "immediate")),
        }
        Ok(())
    }

    fn start_free(&mut self, allocation: AllocationId) -> Result<Events> {
        // The alloc failed and was reported: nothing to free.
        if self.failed_allocations.remove(&allocation) {
            return Ok(SmallVec::new());
        }
        let address = self
            .allocations
            .remove(&allocation)
            .ok_or_else(|| Error::internal(format!("free of {allocation}, which is not live")))?;
        // SAFETY: the address came from this allocation's alloc instruction, and the instruction
        // graph orders the free after every access to it.
        let event = unsafe {
            self.backend
                .enqueue_free(allocation.memory(), address as *mut u8)
        };
        Ok(SmallVec::from_elem(event, 1))
    }

    /// The assignment `instruction` runs under: a small copy whose predecessors all completed,
    /// with both ends in memory the host reaches, on this thread (target `Immediate`) instead of
    /// its lane; every other instruction as assigned.
    pub(super) fn placed(&self, instruction: &Instruction, assignment: Assignment) -> Assignment {
        let InstructionKind::Copy {
            source_layout,
            dest_layout,
            region,
            elem_size,
            ..
        } = instruction.kind()
        else {
            return assignment;
        };
        let here = assignment.predecessors_complete
            && region.area() * elem_size <= INLINE_COPY_BYTES
            && self.backend.host_reaches_copies_on(copy_lane(assignment))
            && few_runs(region, source_layout, dest_layout, *elem_size);
        if !here {
            return assignment;
        }
        Assignment {
            target: Target::Immediate,
            device: None,
            lane: None,
            ..assignment
        }
    }

    /// One copy per box of `region`, from `source` to `dest` (each an allocation and the layout
    /// of the copied data in it): on the backend's `lane`, or with `None` at once on this thread
    /// ([`Executor::placed`]).
    fn start_copy(
        &mut self,
        lane: Option<CopyLane>,
        (source, source_layout): (AllocationId, &CopyLayout),
        (dest, dest_layout): (AllocationId, &CopyLayout),
        region: &Region,
        elem_size: usize,
    ) -> Result<Events> {
        let (source_base, dest_base) = (self.pointer(source)?, self.pointer(dest)?);
        let mut source_offset = 0;
        let mut dest_offset = 0;
        let mut events = SmallVec::new();
        for b in region.boxes() {
            let (source_box, source_ptr) =
                locate(source_layout, b, source_base, &mut source_offset, elem_size)?;
            let (dest_box, dest_ptr) =
                locate(dest_layout, b, dest_base, &mut dest_offset, elem_size)?;
            let Some(lane) = lane else {
                // SAFETY: as below; the host reaches both ends, and with every predecessor
                // complete nothing earlier still touches the copied elements.
                unsafe {
                    copy_box_raw(
                        source_ptr as *const u8,
                        source_box,
                        dest_ptr as *mut u8,
                        dest_box,
                        elem_size,
                    )
                };
                continue;
            };
            // SAFETY: both allocations are live (the graph orders the copy between their alloc
            // and free) and cover the located boxes; nothing else accesses the copied elements
            // until the copy's successors run.
            events.push(unsafe {
                self.backend.enqueue_copy(
                    lane,
                    source_ptr as *const u8,
                    source_box,
                    dest_ptr as *mut u8,
                    dest_box,
                    elem_size,
                )
            });
        }
        Ok(events)
    }

    fn start_send(
        &mut self,
        to: NodeId,
        message: MessageId,
        source: AllocationId,
        stride: Stride,
    ) -> Result<Events> {
        let base = self.pointer(source)?;
        // SAFETY: the host allocation is live and not written until the send completes (the
        // graph orders later writers after the send).
        let event = unsafe {
            self.comm
                .send_payload(to, message, base as *const u8, stride)
        }?;
        Ok(SmallVec::from_elem(event, 1))
    }

    fn start_receive(
        &mut self,
        transfer: TransferId,
        region: &Region,
        dest: AllocationId,
        allocated_box: GridBox,
        elem_size: usize,
    ) -> Result<Events> {
        let base = self.pointer(dest)?;
        // SAFETY: the allocation is live and reserved for this receive until it completes.
        let event = unsafe {
            self.arbiter.begin_receive(
                self.comm.as_mut(),
                transfer,
                region.clone(),
                base as *mut u8,
                allocated_box,
                elem_size,
            )
        }?;
        Ok(SmallVec::from_elem(event, 1))
    }

    fn start_split_receive(
        &mut self,
        transfer: TransferId,
        region: &Region,
        dest: AllocationId,
        allocated_box: GridBox,
        elem_size: usize,
    ) -> Result<()> {
        let base = self.pointer(dest)?;
        // SAFETY: as for Receive, until every await of the transfer completed.
        unsafe {
            self.arbiter.begin_split_receive(
                self.comm.as_mut(),
                transfer,
                region.clone(),
                base as *mut u8,
                allocated_box,
                elem_size,
            )
        }
    }

    fn start_gather_receive(
        &mut self,
        transfer: TransferId,
        dest: AllocationId,
        node_chunk_bytes: usize,
    ) -> Result<Events> {
        let base = self.pointer(dest)?;
        // SAFETY: the gather allocation holds one chunk per node and is reserved for it.
        let event = unsafe {
            self.arbiter.gather_receive(
                self.comm.as_mut(),
                transfer,
                base as *mut u8,
                node_chunk_bytes,
            )
        }?;
        Ok(SmallVec::from_elem(event, 1))
    }

    fn fill_identity(
        &mut self,
        reduction: ReductionId,
        allocation: AllocationId,
        num_values: usize,
    ) -> Result<()> {
        let reducer = self.reducer(reduction)?;
        let base = self.pointer(allocation)?;
        // SAFETY: a host allocation of at least `num_values` elements, exclusively ours while
        // this instruction runs.
        unsafe { reducer.fill_identity(base as *mut u8, num_values) };
        Ok(())
    }

    fn reduce(
        &mut self,
        reduction: ReductionId,
        source: AllocationId,
        num_source_values: usize,
        dest: AllocationId,
    ) -> Result<()> {
        let reducer = self.reducer(reduction)?;
        let (source, dest) = (self.pointer(source)?, self.pointer(dest)?);
        // SAFETY: host allocations holding `num_source_values` values and one value.
        unsafe { reducer.reduce(dest as *mut u8, source as *const u8, num_source_values) };
        Ok(())
    }

    fn clone_collective_group(
        &mut self,
        original: CollectiveGroupId,
        new: CollectiveGroupId,
    ) -> Result<()> {
        let clone = if original == CollectiveGroupId::ROOT {
            self.comm.collective_clone()?
        } else {
            self.collective_comms
                .get_mut(&original)
                .ok_or_else(|| {
                    Error::internal(format!("collective group {original} was never cloned"))
                })?
                .collective_clone()?
        };
        self.collective_comms.insert(new, clone);
        Ok(())
    }

    /// An epoch: the SPMD comparison (`check_spmd`), the barrier (if any, and only while the job
    /// has not failed), garbage collection, the report (before the promise, so that pruning is
    /// visible when `wait` returns), then the promise.
    fn run_epoch(
        &mut self,
        task: &Task,
        action: EpochAction,
        garbage: &InstructionGarbage,
    ) -> Result<()> {
        self.await_spmd_comparison(task.id());
        // After a failure no barrier is entered: a failed peer may never arrive.
        let entered_barrier = action == EpochAction::Barrier && self.failure.is_none();
        let barrier = if entered_barrier {
            self.comm.collective_barrier()
        } else {
            self.outcome()
        };
        // Garbage first: a failed free is then recorded before the epoch is reported reached,
        // and so returned by the wait on this epoch (see `AsyncErrors` in the runtime).
        self.collect(garbage);
        self.delegate.epoch_reached(task.id());
        if let Some(promise) = task.promise() {
            promise.fulfill(barrier.clone());
        }
        if action == EpochAction::Shutdown {
            self.shutdown_reached = true;
        }
        if entered_barrier {
            barrier?;
        }
        Ok(())
    }
}

/// Where box `b` of a copy lives under `layout`: its strided description and base address.
/// Linearised layouts pack the region's boxes back to back; `cursor` tracks the bytes used.
fn locate(
    layout: &CopyLayout,
    b: &GridBox,
    base: usize,
    cursor: &mut usize,
    elem_size: usize,
) -> Result<(StridedBox, usize)> {
    match layout {
        CopyLayout::Strided { allocation } => {
            if !allocation.covers(b) {
                return Err(Error::internal(format!(
                    "copy box {b:?} is outside its allocation {allocation:?}"
                )));
            }
            let offset = [0, 1, 2].map(|d| b.min().0[d] - allocation.min().0[d]);
            Ok((
                StridedBox {
                    allocation_range: allocation.range().0,
                    offset,
                    range: b.range().0,
                },
                base,
            ))
        }
        CopyLayout::Linearized { offset_bytes } => {
            let address = base + offset_bytes + *cursor;
            *cursor += b.area() * elem_size;
            Ok((
                StridedBox {
                    allocation_range: b.range().0,
                    offset: [0; 3],
                    range: b.range().0,
                },
                address,
            ))
        }
    }
}
