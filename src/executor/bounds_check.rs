//! Accessor boundary checking on the executor side: hands each accessor of a kernel or host-task
//! chunk a [`BoundsRecord`](crate::backend::bounds::BoundsRecord) and, once the chunk completed,
//! reports every accessor that was used outside its declared box, once, naming the task, the
//! chunk, the accessor, the buffer and both boxes.

use smallvec::SmallVec;

use crate::backend::bounds::BoundsRecords;
use crate::backend::interface::{Backend, KernelInvocation};
use crate::error::{Error, ErrorKind, Result};
use crate::grid::GridBox;
use crate::policy::ErrorPolicy;
use crate::task::{BufferLabel, Task, fmt_box_dims};
use crate::types::{BufferId, DeviceId};

/// The records of one running chunk and what its report needs.
pub(super) struct ArmedCheck {
    records: BoundsRecords,
    chunk: GridBox,
    device: Option<DeviceId>,
    declared: SmallVec<[GridBox; 4]>,
}

/// Most record blocks kept for reuse: more than the chunks a burst keeps in flight on a few
/// lanes, few enough that the memory they hold does not matter.
const MAX_SPARE_RECORDS: usize = 32;

/// Record blocks of completed chunks, reset and kept for the next chunks with as many
/// accessors: arming a chunk then neither allocates nor asks the backend. Device kernels' and
/// host tasks' records are kept apart (a backend may place device records in pinned memory, or
/// have none to offer).
#[derive(Default)]
pub(super) struct SpareRecords {
    spare: Vec<(bool, BoundsRecords)>,
}

impl SpareRecords {
    fn take(&mut self, device: bool, len: usize) -> Option<BoundsRecords> {
        let index = self
            .spare
            .iter()
            .position(|(d, records)| *d == device && records.len() == len)?;
        Some(self.spare.swap_remove(index).1)
    }

    /// Keeps the records of a completed chunk for reuse.
    pub(super) fn give_back(&mut self, check: ArmedCheck) {
        if self.spare.len() < MAX_SPARE_RECORDS {
            let mut records = check.records;
            records.reset();
            self.spare.push((check.device.is_some(), records));
        }
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
        chunk: invocation.chunk,
        device: invocation.device,
        declared: invocation
            .accessors
            .iter()
            .map(|a| a.accessed_box)
            .collect(),
    }))
}

/// After the chunk completed: one message per violated accessor, joined into one report.
pub(super) fn violations(
    check: &ArmedCheck,
    task: &Task,
    buffer_name: &dyn Fn(BufferId) -> Option<String>,
) -> Option<String> {
    let violations = check.records.violations();
    if violations.is_empty() {
        return None;
    }
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
                fmt_box_dims(&check.declared[*index], buffer_dims),
            )
        })
        .collect();
    Some(format!(
        "{} (chunk {}{place}): {}; the range mapper declares what each chunk may access",
        task.title(),
        fmt_box_dims(&check.chunk, dims),
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
