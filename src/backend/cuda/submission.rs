//! What a device's submission thread does with one submission on a lane: enqueue it on the
//! lane's stream directly or capture it into the lane's open graph batch ([`graphs`]), and
//! record completion events only where the executor needs one (the last submission queued for
//! the lane, or every [`MAX_UNRECORDED`]th).
//!
//! [`graphs`]: super::graphs

use std::time::Instant;

use cudarc::driver::{result, sys};
use parking_lot::Mutex;

use super::graphs::{LaneGraphs, MAX_GRAPH_KERNELS};
use super::records::RecordSlab;
use super::{Handle, PendingEntry, PendingEvents, SpareEvents, device_error};
use crate::backend::event::EventCompleter;
use crate::backend::interface::SubmissionSlice;
use crate::error::{Error, Result};

/// What the submission threads spent on each enqueue, while the trace records it.
pub(super) struct SubmissionRecorder {
    pub epoch: Instant,
    pub slices: Mutex<Vec<SubmissionSlice>>,
}

impl SubmissionRecorder {
    pub fn now_us(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1e6
    }
}

/// A lane records a completion event at least every this many submissions, even while more
/// are queued behind (so completions keep flowing under a steady stream of work).
const MAX_UNRECORDED: usize = 32;

/// The state of one lane that only its device's submission thread touches.
#[derive(Default)]
pub(super) struct LaneSubmissions {
    /// Submissions pushed to the pending queue since the lane's last recorded event.
    unrecorded: usize,
    pub(super) graphs: LaneGraphs,
    /// The open batch's completers in stream order, each with its launcher's error if it
    /// failed: they reach the pending queue once the batch is launched.
    batch: Vec<(EventCompleter, Option<Error>)>,
    /// The device block of the lane's accessor boundary records.
    pub(super) records: RecordSlab,
}

/// One submission as the submission thread sees it.
pub(super) struct Submission<'a> {
    /// The (device, lane) key of the pending queue.
    pub key: (usize, usize),
    pub stream: Handle<sys::CUstream>,
    /// Whether more submissions for this lane are queued behind this one.
    pub more_queued: bool,
    /// Whether this submission may join a graph batch (`cuda_graphs` on, a plain kernel).
    pub capturable: bool,
    pub pending: &'a PendingEvents,
    pub spare: &'a SpareEvents,
}

impl LaneSubmissions {
    /// Enqueues `enqueue` on the lane's stream (or captures it) and hands `completer` to the
    /// pending queue, recording an event where needed. `enqueue` gets the stream and the lane's
    /// records block.
    pub(super) fn submit(
        &mut self,
        job: &Submission,
        completer: EventCompleter,
        enqueue: impl FnOnce(Handle<sys::CUstream>, &mut RecordSlab) -> Result<()>,
    ) {
        if self.graphs.is_capturing() && !job.capturable {
            self.launch_batch(job, false);
        }
        if job.capturable && job.more_queued && !self.graphs.is_capturing() {
            // A stream that cannot capture launches directly.
            if let Err(error) = self.graphs.begin(job.stream) {
                tracing::debug!("launching kernels one by one: {error}");
            }
        }
        if self.graphs.is_capturing() {
            let launched = enqueue(job.stream, &mut self.records);
            let failed = launched.is_err();
            self.batch.push((completer, launched.err()));
            if failed || !job.more_queued || self.batch.len() >= MAX_GRAPH_KERNELS {
                self.launch_batch(job, !job.more_queued);
            }
            return;
        }
        let record = !job.more_queued || self.unrecorded + 1 >= MAX_UNRECORDED;
        match enqueue(job.stream, &mut self.records)
            .and_then(|()| record.then(|| self.record(job)).transpose())
        {
            Ok(event) => {
                push(job, (event, Some(completer)));
                self.unrecorded = if record { 0 } else { self.unrecorded + 1 };
            }
            Err(error) => {
                completer.complete(Err(error));
                // Earlier submissions of this lane still need an event to complete by.
                if record && self.unrecorded > 0 {
                    if let Ok(carrier) = self.record(job) {
                        push(job, (Some(carrier), None));
                        self.unrecorded = 0;
                    }
                }
            }
        }
    }

    /// Launches the open batch as one graph; `record`: follow it with an event. A batch that
    /// cannot be launched fails all its submissions.
    fn launch_batch(&mut self, job: &Submission, record: bool) {
        if let Err(error) = self.graphs.end_and_launch(job.stream, self.batch.len()) {
            // The batch's own launcher errors, if any, follow from what failed it.
            for (completer, _) in self.batch.drain(..) {
                completer.complete(Err(error.clone()));
            }
            return;
        }
        let launched = self.batch.iter().filter(|(_, e)| e.is_none()).count();
        let waiting = self.unrecorded + launched;
        let record = (record || waiting >= MAX_UNRECORDED) && waiting > 0;
        let event = if record { self.record(job).ok() } else { None };
        self.unrecorded = if event.is_some() { 0 } else { waiting };
        let mut pending = job.pending.lock();
        let queue = pending.entry(job.key).or_default();
        for (completer, own_error) in self.batch.drain(..) {
            match own_error {
                Some(error) => completer.complete(Err(error)),
                None => queue.push_back((None, Some(completer))),
            }
        }
        // The event completes the batch's submissions and every unrecorded one before them.
        match (event, launched) {
            (Some(event), 0) => queue.push_back((Some(event), None)),
            (Some(event), _) => queue.back_mut().expect("the batch's entries").0 = Some(event),
            (None, _) => {}
        }
    }

    /// Records an event on the lane's stream (a spare one when there is one).
    fn record(&self, job: &Submission) -> Result<Handle<sys::CUevent>> {
        let reused = job.spare.lock().pop();
        let cu_event = match reused {
            Some(event) => event.0,
            None => result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(|e| device_error("cuEventCreate", e))?,
        };
        // SAFETY: event (this device's, created in its context) and stream belong to the
        // current context; the stream is not capturing (batches end before events).
        unsafe { result::event::record(cu_event, job.stream.0) }
            .map_err(|e| device_error("cuEventRecord", e))?;
        Ok(Handle(cu_event))
    }

    /// Launches an open batch and destroys the lane's executable graphs (at shutdown).
    pub(super) fn close(&mut self, job: &Submission) {
        if self.graphs.is_capturing() {
            self.launch_batch(job, true);
        }
        self.graphs.destroy();
    }
}

fn push(job: &Submission, entry: PendingEntry) {
    job.pending
        .lock()
        .entry(job.key)
        .or_default()
        .push_back(entry);
}
