//! Accessor boundary checking on the executor side: hands each accessor of a kernel or host-task
//! chunk a [`BoundsRecord`](crate::backend::bounds::BoundsRecord) and, once the chunk completed,
//! reports every accessor that was used outside its declared box, once, naming the task, the
//! chunk, the accessor, the buffer and both boxes.

use crate::backend::bounds::BoundsRecords;
use crate::backend::interface::{Backend, KernelInvocation};
use crate::error::{Error, ErrorKind, Result};
use crate::instruction::InstructionKind;
use crate::policy::ErrorPolicy;
use crate::task::{BufferLabel, fmt_box_dims};
use crate::types::{BufferId, DeviceId};

/// The records of one running chunk. Its chunk and declared boxes are not copied here: the
/// report, which is rare, reads them from the chunk's instruction. (Copying them made the
/// record about 300 bytes, moved into and out of the executor's map on every chunk.)
pub(super) struct ArmedCheck {
    records: BoundsRecords,
    device: Option<DeviceId>,
}

impl ArmedCheck {
    /// Whether some accessor was used outside its declared box.
    pub(super) fn violated(&self) -> bool {
        self.records.any_violation()
    }
}

/// Most record blocks kept for reuse. The executor arms a chunk when it hands it to a lane, and
/// an in-order lane takes a whole chain of dependent chunks at once, so a program that submits
/// a long loop has as many chunks armed as it submitted before the first completes: with room
/// for only 32 spare blocks, every chunk of the next burst allocated its block again (about
/// 1,100 instructions, most of it the 256-byte-aligned allocation). A host block of one
/// accessor's records takes about 330 bytes, so the spares of a burst of a thousand chunks stay
/// well under a megabyte; on CUDA devices the blocks are page-sized blocks of the pinned pool,
/// so at most 8 MiB of it stays with the spares.
const MAX_SPARE_RECORDS: usize = 2048;

/// Record blocks of completed chunks, reset and kept for the next chunks with as many
/// accessors: arming a chunk then neither allocates nor asks the backend. Device kernels' and
/// host tasks' records are kept apart (a backend may place device records in pinned memory, or
/// have none to offer).
#[derive(Default)]
pub(super) struct SpareRecords {
    /// Per (device records, accessor count): the spare blocks.
    buckets: Vec<((bool, usize), Vec<BoundsRecords>)>,
    count: usize,
}

impl SpareRecords {
    fn take(&mut self, device: bool, len: usize) -> Option<BoundsRecords> {
        let (_, bucket) = self.buckets.iter_mut().find(|(k, _)| *k == (device, len))?;
        let records = bucket.pop()?;
        self.count -= 1;
        Some(records)
    }

    /// Keeps the records of a completed chunk for reuse.
    pub(super) fn give_back(&mut self, check: ArmedCheck) {
        if self.count >= MAX_SPARE_RECORDS {
            return;
        }
        let mut records = check.records;
        records.reset();
        let key = (check.device.is_some(), records.len());
        match self.buckets.iter_mut().find(|(k, _)| *k == key) {
            Some((_, bucket)) => bucket.push(records),
            None => self.buckets.push((key, vec![records])),
        }
        self.count += 1;
    }
}

/// Gives every accessor of `invocation` a fresh record, if the backend can place records where
/// the chunk's code writes (device kernels ask the backend; host tasks always run on the host).
pub(super) fn arm(
    backend: &dyn Backend,
    spare: &mut SpareRecords,
    invocation: &mut KernelInvocation,
) -> Result<Option<ArmedCheck>> {
    if invocation.accessors.is_empty() {
        return Ok(None);
    }
    let len = invocation.accessors.len();
    let on_device = invocation.device.is_some();
    let records = match spare.take(on_device, len) {
        Some(records) => records,
        None if on_device => match backend.device_bounds_records(len)? {
            Some(records) => records,
            None => return Ok(None),
        },
        None => BoundsRecords::new_host(len)?,
    };
    for (i, accessor) in invocation.accessors.iter_mut().enumerate() {
        accessor.bounds = records.pointer(i);
    }
    Ok(Some(ArmedCheck {
        records,
        device: invocation.device,
    }))
}

/// After the chunk completed: one message per violated accessor, joined into one report.
/// `kernel` is the chunk's instruction (a device kernel or a host task): the report names its
/// chunk and, per accessor, the declared box of the access it stands for.
pub(super) fn violations(
    check: &ArmedCheck,
    kernel: &InstructionKind,
    buffer_name: &dyn Fn(BufferId) -> Option<String>,
) -> Option<String> {
    let violations = check.records.violations();
    if violations.is_empty() {
        return None;
    }
    let (task, chunk, declared) = match kernel {
        InstructionKind::DeviceKernel {
            task,
            execution_box,
            accesses,
            ..
        }
        | InstructionKind::HostTask {
            task,
            execution_box,
            accesses,
            ..
        } => (task, execution_box, accesses),
        _ => return None,
    };
    let dims = task.geometry().dims;
    let place = match check.device {
        Some(device) => format!(" on {device}"),
        None => String::new(),
    };
    let accesses = task.access_map().accesses();
    let lines: Vec<String> = violations
        .iter()
        .map(|(index, offending)| {
            let access = &accesses[*index];
            let name = buffer_name(access.bid);
            let buffer = BufferLabel {
                id: access.bid,
                name: name.as_deref(),
            };
            let buffer_dims = access.buffer_dims;
            format!(
                "accessor {index} ({} access of buffer {buffer}) used {} ({} element access{}) outside its declared box {}",
                access.mode.name(),
                offending.display(buffer_dims),
                offending.count,
                if offending.count == 1 { "" } else { "es" },
                fmt_box_dims(&declared[*index].accessed_box, buffer_dims),
            )
        })
        .collect();
    Some(format!(
        "{} (chunk {}{place}): {}; the range mapper declares what each chunk may access",
        task.title(),
        fmt_box_dims(chunk, dims),
        lines.join("; ")
    ))
}

/// Applies the `accessor_boundary_check` policy to a report: logged at error level, or returned
/// as the task's `AccessPattern` failure (which the runtime logs, once).
pub(super) fn apply(policy: ErrorPolicy, report: String) -> Option<Error> {
    match policy {
        ErrorPolicy::Ignore => None,
        ErrorPolicy::Log => {
            tracing::error!("{report}");
            None
        }
        ErrorPolicy::Error => Some(Error::new(ErrorKind::AccessPattern, report)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completed(len: usize, device: Option<DeviceId>) -> ArmedCheck {
        ArmedCheck {
            records: BoundsRecords::new_host(len).unwrap(),
            device,
        }
    }

    /// A burst of chunks armed before any completed comes back whole: the next burst of the same
    /// shape finds a spare block for every chunk (it found one for 32 of them before).
    #[test]
    fn the_blocks_of_a_burst_of_a_thousand_chunks_are_all_reused() {
        let mut spare = SpareRecords::default();
        for _ in 0..1000 {
            spare.give_back(completed(1, Some(DeviceId(0))));
        }
        spare.give_back(completed(2, None));
        for _ in 0..1000 {
            assert!(spare.take(true, 1).is_some());
        }
        assert!(spare.take(true, 1).is_none());
        assert!(
            spare.take(true, 2).is_none(),
            "kept apart by accessor count and kind"
        );
        assert!(spare.take(false, 2).is_some());
        assert_eq!(spare.count, 0);
    }

    #[test]
    fn spare_blocks_are_bounded() {
        let mut spare = SpareRecords::default();
        for _ in 0..MAX_SPARE_RECORDS + 10 {
            spare.give_back(completed(1, None));
        }
        assert_eq!(spare.count, MAX_SPARE_RECORDS);
    }
}
