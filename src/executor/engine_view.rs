//! How the executor sees the instruction graph's records: the out-of-order engine's view of an
//! instruction (its target queue and eligible devices, derived from the generator's
//! [`Placement`]) and the trace's view of an assignment. The instruction graph knows nothing of
//! the executor's queues (C++ Celerity: `out_of_order_engine.cc` does the same mapping).

use smallvec::SmallVec;

use super::engine::{Assignment, EngineInstruction, Target};
use crate::backend::system_info::SystemInfo;
use crate::debug::trace::{Dispatch, DispatchQueue};
use crate::instruction::{Instruction, Placement};

impl EngineInstruction {
    /// The engine's view of `instruction`: target queue and eligible devices. Copies touching
    /// device memory go to a device queue, the destination's device first.
    pub fn of(instruction: &Instruction, system: &SystemInfo) -> Self {
        let mut eligible_devices = SmallVec::new();
        let target = match instruction.placement() {
            Placement::Immediate => Target::Immediate,
            Placement::Allocation { memory } => {
                eligible_devices.extend(system.device_of(memory));
                Target::AllocQueue
            }
            Placement::Host => Target::HostQueue,
            Placement::Device { device } => {
                eligible_devices.push(device);
                Target::DeviceQueue
            }
            Placement::Copy { source, dest } => {
                eligible_devices.extend(system.device_of(dest));
                if let Some(d) = system.device_of(source)
                    && !eligible_devices.contains(&d)
                {
                    eligible_devices.push(d);
                }
                if eligible_devices.is_empty() {
                    Target::HostQueue
                } else {
                    Target::DeviceQueue
                }
            }
        };
        EngineInstruction {
            id: instruction.id(),
            priority: instruction.priority(),
            target,
            eligible_devices,
            dependencies: instruction.dependencies().iter().copied().collect(),
        }
    }
}

impl Assignment {
    /// The plain descriptor the trace records for this assignment.
    pub fn dispatch(&self) -> Dispatch {
        Dispatch {
            queue: match self.target {
                Target::Immediate => DispatchQueue::Immediate,
                Target::AllocQueue => DispatchQueue::Alloc,
                Target::HostQueue => DispatchQueue::Host,
                Target::DeviceQueue => DispatchQueue::Device,
            },
            device: self.device,
            lane: self.lane,
        }
    }
}
