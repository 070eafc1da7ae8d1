//! The out-of-order engine: decides when and where each instruction runs (C++ Celerity:
//! `out_of_order_engine.cc`).
//!
//! Instructions arrive in topological order with their dependencies; a dependency the engine does
//! not know has already completed. Each instruction has a *target*:
//!
//! * `Immediate`: runs on the executor thread or completes through the communicator (sends,
//!   receives, horizons, epochs, fences, reductions...);
//! * `AllocQueue`: the single in-order allocation thread (alloc / free), with the device that owns
//!   the memory, if any;
//! * `HostQueue`: a host lane (host tasks, host↔host copies);
//! * `DeviceQueue`: a device lane (kernels, copies touching device memory), on one of the eligible
//!   devices (destination memory's device first, then the source's).
//!
//! Ready instructions are handed out by priority. An instruction whose incomplete predecessors
//! all sit on one lane, one of them being that lane's last submission, is *eagerly* assigned to
//! that lane: the lane's in-order semantics fulfil the dependencies and launch latency is hidden.
//! If another instruction is queued on that lane first, eager assignment is abandoned for good and
//! the instruction waits for its predecessors to complete. Lanes are reused when idle and created
//! on demand otherwise, device lanes up to [`MAX_DEVICE_LANES`] per device (then the least busy
//! one takes the instruction). Completions may be reported in any order. The executor does a
//! small copy assigned with every predecessor complete itself instead of on its lane (where the
//! host reaches both ends): the hand-off would cost more than the copy.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use smallvec::SmallVec;

use super::id_window::IdWindow;
use crate::types::{DeviceId, IdSet, InstructionId};

/// Most lanes (CUDA streams, or threads of an emulated device) the engine opens per device:
/// enough for independent kernels to overlap, few enough that a burst of short kernels neither
/// opens a stream per kernel nor pays a stream wait or thread wake-up per lane.
pub const MAX_DEVICE_LANES: usize = 4;

/// Where an instruction executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// On the executor thread, or asynchronously through the communicator / receive arbiter.
    Immediate,
    /// The in-order allocation thread.
    AllocQueue,
    /// A host lane.
    HostQueue,
    /// A device lane.
    DeviceQueue,
}

/// An instruction as the engine sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineInstruction {
    /// Its id.
    pub id: InstructionId,
    /// Higher runs first among ready instructions.
    pub priority: i32,
    /// Where it runs.
    pub target: Target,
    /// Devices that may run it (`DeviceQueue`: preference order; `AllocQueue`: the memory's
    /// device, if any). Empty for other targets.
    pub eligible_devices: SmallVec<[DeviceId; 2]>,
    /// Predecessors.
    pub dependencies: SmallVec<[InstructionId; 4]>,
}

/// Directions for running one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assignment {
    /// The instruction.
    pub id: InstructionId,
    /// Its target.
    pub target: Target,
    /// `DeviceQueue`: the device to submit to; `AllocQueue`: the device that allocates.
    pub device: Option<DeviceId>,
    /// `HostQueue` / `DeviceQueue`: the lane (per device for device queues).
    pub lane: Option<usize>,
    /// Every predecessor had completed when it was assigned: it may run anywhere at once, not
    /// only in order behind its lane's earlier submissions.
    pub predecessors_complete: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for predecessors. `probe_eager` is false when eager assignment cannot succeed.
    Unassigned { probe_eager: bool },
    /// In the assignment queue, eagerly assignable behind `expected_last` on that lane.
    EagerlyAssignable {
        device: Option<DeviceId>,
        lane: usize,
        expected_last: InstructionId,
    },
    /// In the assignment queue, all predecessors complete.
    Assignable,
    /// Handed out, awaiting completion.
    Assigned {
        device: Option<DeviceId>,
        lane: Option<usize>,
    },
}

struct Node {
    instruction: EngineInstruction,
    successors: SmallVec<[InstructionId; 4]>,
    incomplete_predecessors: usize,
    unassigned_predecessors: usize,
    state: State,
}

#[derive(Default)]
struct Lane {
    in_flight: usize,
    last_incomplete_submission: Option<InstructionId>,
}

/// The out-of-order engine of one executor.
pub struct OutOfOrderEngine {
    host_lanes: Vec<Lane>,
    device_lanes: Vec<Vec<Lane>>,
    incomplete: IdWindow<Node>,
    execution_front: IdSet<InstructionId>,
    /// Max-heap by priority; among equal priorities the older instruction first.
    assignment_queue: BinaryHeap<(i32, Reverse<InstructionId>)>,
}

impl OutOfOrderEngine {
    /// An engine for a node with `num_devices` local devices.
    pub fn new(num_devices: usize) -> Self {
        Self {
            host_lanes: Vec::new(),
            device_lanes: (0..num_devices).map(|_| Vec::new()).collect(),
            incomplete: IdWindow::default(),
            execution_front: IdSet::default(),
            assignment_queue: BinaryHeap::new(),
        }
    }

    /// True when every submitted instruction has completed.
    pub fn is_idle(&self) -> bool {
        self.incomplete.is_empty()
    }

    /// Assigned, incomplete instructions without incomplete predecessors: what is running now.
    pub fn execution_front(&self) -> &IdSet<InstructionId> {
        &self.execution_front
    }

    /// Instructions waiting in the assignment queue (diagnostics).
    pub fn assignment_queue_len(&self) -> usize {
        self.assignment_queue.len()
    }

    /// Ids of all incomplete instructions and, for each, its incomplete predecessors (for the
    /// stall detector).
    pub fn incomplete_instructions(&self) -> Vec<(InstructionId, Vec<InstructionId>)> {
        let mut list: Vec<_> = self
            .incomplete
            .iter()
            .map(|(id, node)| {
                let waiting_on = node
                    .instruction
                    .dependencies
                    .iter()
                    .copied()
                    .filter(|d| self.incomplete.contains_key(d))
                    .collect();
                (id, waiting_on)
            })
            .collect();
        list.sort();
        list
    }

    /// Where `id` was assigned, if it has been (for the stall detector).
    pub fn assignment_of(&self, id: InstructionId) -> Option<Assignment> {
        let node = self.incomplete.get(&id)?;
        match node.state {
            State::Assigned { device, lane } => Some(Assignment {
                id,
                target: node.instruction.target,
                device,
                lane,
                predecessors_complete: node.incomplete_predecessors == 0,
            }),
            _ => None,
        }
    }

    fn lanes(&mut self, target: Target, device: Option<DeviceId>) -> &mut Vec<Lane> {
        match (target, device) {
            (Target::HostQueue, _) => &mut self.host_lanes,
            (Target::DeviceQueue, Some(device)) => &mut self.device_lanes[device.0 as usize],
            _ => unreachable!("{target:?} on {device:?} has no lanes"),
        }
    }

    fn lane(&self, target: Target, device: Option<DeviceId>, lane: usize) -> &Lane {
        match (target, device) {
            (Target::HostQueue, _) => &self.host_lanes[lane],
            (Target::DeviceQueue, Some(device)) => &self.device_lanes[device.0 as usize][lane],
            _ => unreachable!("{target:?} on {device:?} has no lanes"),
        }
    }

    /// An idle lane; else a new one, up to [`MAX_DEVICE_LANES`] per device, beyond which the
    /// device lane with the least work in flight (the lowest such index). Host lanes are not
    /// bounded: a host task may block until its peers on other nodes run theirs (collective
    /// host tasks), which a shared in-order lane could turn into a deadlock.
    fn free_lane(&mut self, target: Target, device: Option<DeviceId>) -> usize {
        let lanes = self.lanes(target, device);
        if let Some(index) = lanes.iter().position(|lane| lane.in_flight == 0) {
            return index;
        }
        if target == Target::DeviceQueue && lanes.len() >= MAX_DEVICE_LANES {
            return (0..lanes.len())
                .min_by_key(|&index| lanes[index].in_flight)
                .expect("at least one lane");
        }
        lanes.push(Lane::default());
        lanes.len() - 1
    }

    /// Moves `id` towards the assignment queue after a submission, completion or assignment of
    /// one of its predecessors.
    fn try_mark_for_assignment(&mut self, id: InstructionId) {
        let node = &self.incomplete[&id];
        if node.unassigned_predecessors > 0 {
            return;
        }
        match node.state {
            State::Assigned { .. } | State::Assignable => return,
            State::EagerlyAssignable { .. } => {
                if node.incomplete_predecessors == 0 {
                    self.incomplete.get_mut(&id).expect("present").state = State::Assignable;
                }
                return;
            }
            State::Unassigned { probe_eager } => {
                if node.incomplete_predecessors == 0 {
                    let priority = node.instruction.priority;
                    self.incomplete.get_mut(&id).expect("present").state = State::Assignable;
                    self.assignment_queue.push((priority, Reverse(id)));
                    return;
                }
                if !probe_eager {
                    return;
                }
            }
        }
        if let Some(state) = self.eager_assignment(node) {
            let priority = node.instruction.priority;
            self.incomplete.get_mut(&id).expect("present").state = state;
            self.assignment_queue.push((priority, Reverse(id)));
        }
    }

    /// The eager assignment of `node`, if all its incomplete predecessors sit on one lane of an
    /// eligible device and one of them is that lane's last submission.
    fn eager_assignment(&self, node: &Node) -> Option<State> {
        let target = node.instruction.target;
        let mut lane_of_all: Option<(Option<DeviceId>, usize)> = None;
        let mut expected_last = None;
        for dependency in &node.instruction.dependencies {
            let Some(predecessor) = self.incomplete.get(dependency) else {
                continue;
            };
            let State::Assigned { device, lane } = predecessor.state else {
                unreachable!("predecessors are assigned when unassigned_predecessors == 0");
            };
            if predecessor.instruction.target != target {
                return None;
            }
            if let Some(device) = device
                && !node.instruction.eligible_devices.contains(&device)
            {
                return None;
            }
            let lane = lane.expect("host and device queue instructions have lanes");
            match lane_of_all {
                Some(existing) if existing != (device, lane) => return None,
                _ => lane_of_all = Some((device, lane)),
            }
            if self.lane(target, device, lane).last_incomplete_submission == Some(*dependency) {
                expected_last = Some(*dependency);
            }
        }
        let (device, lane) = lane_of_all?;
        Some(State::EagerlyAssignable {
            device,
            lane,
            expected_last: expected_last?,
        })
    }

    /// Starts tracking `instruction`. Instructions must be submitted in topological order.
    pub fn submit(&mut self, instruction: EngineInstruction) {
        let id = instruction.id;
        let probe_eager = matches!(instruction.target, Target::HostQueue | Target::DeviceQueue);
        let mut incomplete_predecessors = 0;
        let mut unassigned_predecessors = 0;
        for dependency in &instruction.dependencies {
            if let Some(predecessor) = self.incomplete.get_mut(dependency) {
                predecessor.successors.push(id);
                incomplete_predecessors += 1;
                if !matches!(predecessor.state, State::Assigned { .. }) {
                    unassigned_predecessors += 1;
                }
            }
        }
        let previous = self.incomplete.insert(
            id,
            Node {
                instruction,
                successors: SmallVec::new(),
                incomplete_predecessors,
                unassigned_predecessors,
                state: State::Unassigned { probe_eager },
            },
        );
        debug_assert!(previous.is_none(), "{id} submitted twice");
        self.try_mark_for_assignment(id);
    }

    /// Pops the highest-priority instruction that can still be assigned.
    fn pop_assignable(&mut self) -> Option<InstructionId> {
        while let Some((_, Reverse(id))) = self.assignment_queue.pop() {
            let node = &self.incomplete[&id];
            match node.state {
                State::Assignable => return Some(id),
                State::EagerlyAssignable {
                    device,
                    lane,
                    expected_last,
                } => {
                    let lane = self.lane(node.instruction.target, device, lane);
                    if lane.last_incomplete_submission == Some(expected_last) {
                        return Some(id);
                    }
                    // Another instruction went onto that lane first (or the expected predecessor
                    // already completed): wait for the predecessors instead, never eagerly again.
                    self.incomplete.get_mut(&id).expect("present").state =
                        State::Unassigned { probe_eager: false };
                }
                State::Unassigned { .. } | State::Assigned { .. } => {
                    unreachable!("{id} in the assignment queue in state {:?}", node.state)
                }
            }
        }
        None
    }

    /// The next instruction to run, if any is ready (or eagerly assignable).
    pub fn assign_one(&mut self) -> Option<Assignment> {
        let id = self.pop_assignable()?;
        let node = &self.incomplete[&id];
        let target = node.instruction.target;
        let (device, lane) = match node.state {
            State::EagerlyAssignable { device, lane, .. } => (device, Some(lane)),
            _ => {
                let device = node.instruction.eligible_devices.first().copied();
                let lane = matches!(target, Target::HostQueue | Target::DeviceQueue)
                    .then(|| self.free_lane(target, device));
                (device, lane)
            }
        };
        if let Some(lane) = lane {
            let lane = &mut self.lanes(target, device)[lane];
            lane.in_flight += 1;
            lane.last_incomplete_submission = Some(id);
        }
        let node = self.incomplete.get_mut(&id).expect("present");
        node.state = State::Assigned { device, lane };
        let predecessors_complete = node.incomplete_predecessors == 0;
        if predecessors_complete {
            self.execution_front.insert(id);
        }
        // Taken out while the successors are updated (none of them looks at this list), then
        // put back: no copy of the list per assignment.
        let successors = std::mem::take(&mut node.successors);
        for &successor in &successors {
            let successor_node = self
                .incomplete
                .get_mut(&successor)
                .expect("successors are incomplete");
            successor_node.unassigned_predecessors -= 1;
            if successor_node.unassigned_predecessors == 0 {
                self.try_mark_for_assignment(successor);
            }
        }
        self.incomplete
            .get_mut(&id)
            .expect("assigned, not complete")
            .successors = successors;
        Some(Assignment {
            id,
            target,
            device,
            lane,
            predecessors_complete,
        })
    }

    /// Records that the assigned instruction `id` has completed (in any order).
    pub fn complete_assigned(&mut self, id: InstructionId) {
        let (state, target, successors) = self
            .incomplete
            .remove_with(&id, |node| {
                let successors = std::mem::take(&mut node.successors);
                (node.state, node.instruction.target, successors)
            })
            .unwrap_or_else(|| panic!("{id} completed but was not incomplete"));
        self.execution_front.remove(&id);
        let State::Assigned { device, lane } = state else {
            panic!("{id} completed before it was assigned");
        };
        if let Some(lane) = lane {
            let lane = &mut self.lanes(target, device)[lane];
            lane.in_flight -= 1;
            if lane.last_incomplete_submission == Some(id) {
                lane.last_incomplete_submission = None;
            }
        }
        for successor in successors {
            // Completions may arrive out of dependency order, so a successor may be gone.
            let Some(successor_node) = self.incomplete.get_mut(&successor) else {
                continue;
            };
            successor_node.incomplete_predecessors -= 1;
            if matches!(successor_node.state, State::Assigned { .. }) {
                if successor_node.incomplete_predecessors == 0 {
                    self.execution_front.insert(successor);
                }
            } else {
                self.try_mark_for_assignment(successor);
            }
        }
    }
}
