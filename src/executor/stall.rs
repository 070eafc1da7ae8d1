//! The stall report: when no instruction completed for `stall_timeout`, the executor lists
//! every pending instruction with what it waits for (see `docs/stall-detector.md`).
//!
//! ```text
//! stall on N1: no instruction completed for 1.0s; 2 instructions pending
//!   I9 receive of transfer T2.B0: running; awaits transfer T2.B0: pilot msg3 from N0 for [0,0,0] - [8,1,1] received, payload not arrived
//!   I11 host task of task T2 "consume": waiting on I9
//! ```

use std::fmt::Write;
use std::time::Duration;

use super::engine::{OutOfOrderEngine, Target};
use super::receive_arbiter::TransferStatus;
use crate::debug::{fmt_box, fmt_region};
use crate::instruction::{Instruction, InstructionKind};
use crate::types::{IdMap, InstructionId, NodeId, TransferId};

/// At most this many instructions are listed.
pub const MAX_LISTED: usize = 64;

fn task_text(task: &crate::task::Task) -> String {
    format!("task {}", task.label())
}

/// What an instruction is, in one phrase.
pub fn describe(instruction: &Instruction) -> String {
    use InstructionKind as K;
    let name = instruction.kind().name();
    match instruction.kind() {
        K::DeviceKernel { task, device, .. } => {
            format!("{name} of {} on {device}", task_text(task))
        }
        K::HostTask { task, .. } | K::Fence { task } => format!("{name} of {}", task_text(task)),
        K::Epoch { task, action, .. } => {
            format!("{name} {} ({})", task.id(), action.description())
        }
        K::Horizon { task, .. } => format!("{name} {task}"),
        K::Receive { transfer, .. }
        | K::SplitReceive { transfer, .. }
        | K::AwaitReceive { transfer, .. }
        | K::GatherReceive { transfer, .. } => format!("{name} of transfer {transfer}"),
        K::Send {
            to,
            message,
            send_range,
            elem_size,
            ..
        } => format!(
            "send of {message} ({} bytes) to {to}",
            send_range.size() * elem_size
        ),
        K::Alloc {
            allocation,
            size_bytes,
            ..
        } => format!("alloc {allocation} ({size_bytes} bytes)"),
        K::Free { allocation } => format!("free {allocation}"),
        K::Copy { source, dest, .. } => format!("copy {source} -> {dest}"),
        _ => name.to_owned(),
    }
}

fn transfer_of(instruction: &Instruction) -> Option<TransferId> {
    use InstructionKind as K;
    match instruction.kind() {
        K::Receive { transfer, .. }
        | K::SplitReceive { transfer, .. }
        | K::AwaitReceive { transfer, .. }
        | K::GatherReceive { transfer, .. } => Some(*transfer),
        _ => None,
    }
}

/// What a transfer waits for, in one phrase: pilots received or not, from which peer, and
/// which payloads have not arrived.
pub fn describe_transfer(status: &TransferStatus) -> String {
    let mut parts = Vec::new();
    if !status.receive_posted {
        parts.push("no receive posted yet".to_owned());
    }
    for (from, message, b) in &status.payloads_outstanding {
        let what = if b.is_empty() {
            String::new()
        } else {
            format!(" for {}", fmt_box(b))
        };
        parts.push(format!(
            "pilot {message} from {from}{what} received, payload not arrived"
        ));
    }
    for (from, message, b) in &status.unmatched_pilots {
        parts.push(format!(
            "pilot {message} from {from} for {} received, matches no posted receive",
            fmt_box(b)
        ));
    }
    if !status.missing_pilots_for.is_empty() {
        parts.push(format!(
            "no pilot received yet for {}",
            fmt_region(&status.missing_pilots_for)
        ));
    }
    if !status.gather_peers_missing.is_empty() {
        let peers: Vec<String> = status
            .gather_peers_missing
            .iter()
            .map(NodeId::to_string)
            .collect();
        parts.push(format!("no pilot received yet from {}", peers.join(", ")));
    }
    format!("transfer {}: {}", status.transfer, parts.join("; "))
}

fn target_text(
    target: Target,
    device: Option<crate::types::DeviceId>,
    lane: Option<usize>,
) -> String {
    match (target, device, lane) {
        (Target::Immediate, ..) => "the executor / communicator".to_owned(),
        (Target::AllocQueue, ..) => "the allocation queue".to_owned(),
        (Target::HostQueue, _, lane) => format!("host lane {}", lane.unwrap_or(0)),
        (Target::DeviceQueue, device, lane) => format!(
            "{} lane {}",
            device.map_or("D?".to_owned(), |d| d.to_string()),
            lane.unwrap_or(0)
        ),
    }
}

/// The report of a stall on `node`.
pub fn report(
    node: NodeId,
    stalled_for: Duration,
    engine: &OutOfOrderEngine,
    instructions: &IdMap<InstructionId, std::sync::Arc<Instruction>>,
    transfers: &[TransferStatus],
) -> String {
    let pending = engine.incomplete_instructions();
    let mut text = format!(
        "stall on {node}: no instruction completed for {stalled_for:.1?}; {} instruction(s) pending",
        pending.len()
    );
    for (id, waiting_on) in pending.iter().take(MAX_LISTED) {
        let instruction = instructions.get(id);
        let description = instruction.map_or_else(|| "?".to_owned(), |i| describe(i));
        let state = if !waiting_on.is_empty() {
            let ids: Vec<String> = waiting_on.iter().map(InstructionId::to_string).collect();
            format!("waiting on {}", ids.join(", "))
        } else if let Some(assignment) = engine.assignment_of(*id) {
            format!(
                "running on {}",
                target_text(assignment.target, assignment.device, assignment.lane)
            )
        } else {
            "ready, not yet assigned".to_owned()
        };
        let _ = write!(text, "\n  {id} {description}: {state}");
        if let Some(transfer) = instruction.and_then(|i| transfer_of(i)) {
            match transfers.iter().find(|s| s.transfer == transfer) {
                Some(status) => {
                    let _ = write!(text, "; awaits {}", describe_transfer(status));
                }
                None if waiting_on.is_empty() => {
                    let _ = write!(text, "; awaits transfer {transfer}: data received");
                }
                None => {}
            }
        }
    }
    if pending.len() > MAX_LISTED {
        let _ = write!(text, "\n  ... and {} more", pending.len() - MAX_LISTED);
    }
    // Transfers no pending instruction refers to yet (pilots that arrived early).
    for status in transfers {
        let referenced = pending.iter().any(|(id, _)| {
            instructions
                .get(id)
                .and_then(|i| transfer_of(i))
                .is_some_and(|t| t == status.transfer)
        });
        if !referenced {
            let _ = write!(text, "\n  {}", describe_transfer(status));
        }
    }
    text
}
