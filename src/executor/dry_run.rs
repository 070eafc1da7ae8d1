//! The dry-run executor (`dry_run_nodes=N`; C++ Celerity: `dry_run_executor.cc`): the runtime
//! builds every graph for node 0 of N nodes but executes nothing. Epochs and horizons are reported
//! (so pruning and `wait` work), fences are fulfilled without data (with a warning) and owned host
//! objects are destroyed at their last use; everything else is dropped.

use std::collections::VecDeque;
use std::sync::Arc;

use crossbeam_channel::Receiver;

use super::interface::{ExecutorDelegate, ExecutorMessage};
use crate::error::Result;
use crate::instruction::{Instruction, InstructionKind};
use crate::task::EpochAction;
use crate::types::{HostObjectId, IdMap};
use crate::user_objects::HostObjectInstance;

/// Runs the dry-run loop until the shutdown epoch arrives. `unprocessed` holds the rest of the
/// batch being processed, so that after a panic its fences and epochs can still be failed.
pub(super) fn run(
    receiver: Receiver<ExecutorMessage>,
    delegate: Arc<dyn ExecutorDelegate>,
    unprocessed: &mut VecDeque<Arc<Instruction>>,
) -> Result<()> {
    let mut host_objects: IdMap<HostObjectId, HostObjectInstance> = IdMap::default();
    let mut warned_about_fences = false;
    while let Ok(message) = receiver.recv() {
        let ExecutorMessage::Submit(instructions, _pilots) = message else {
            if let ExecutorMessage::TrackHostObject(id, instance) = message {
                host_objects.insert(id, instance);
            }
            continue;
        };
        unprocessed.extend(instructions);
        while !unprocessed.is_empty() {
            // The instruction stays in `unprocessed` while it may panic.
            #[cfg(test)]
            crate::thread_guard::inject_panic(
                "executor",
                unprocessed[0].kind().task().and_then(|t| t.name()),
            );
            let instruction = unprocessed.pop_front().expect("non-empty");
            match instruction.kind() {
                InstructionKind::Horizon { task, .. } => delegate.horizon_reached(*task),
                InstructionKind::Epoch { task, action, .. } => {
                    delegate.epoch_reached(task.id());
                    if let Some(promise) = task.promise() {
                        promise.fulfill(Ok(()));
                    }
                    if *action == EpochAction::Shutdown {
                        return Ok(());
                    }
                }
                InstructionKind::Fence { task } => {
                    if !warned_about_fences {
                        tracing::warn!(
                            "dry run: fences return no data (first: task {})",
                            task.label()
                        );
                        warned_about_fences = true;
                    }
                    if let Some(promise) = task.promise() {
                        promise.fulfill(Ok(()));
                    }
                }
                InstructionKind::DestroyHostObject { host_object } => {
                    host_objects.remove(host_object);
                }
                _ => {}
            }
        }
    }
    Ok(())
}
