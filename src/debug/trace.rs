//! The trace of executed instructions (`trace_file`), in the Chrome trace event format that
//! Perfetto and `chrome://tracing` load.
//!
//! The executor thread records a slice per instruction: it starts when the instruction is
//! dispatched to its target and ends when the executor retires it. Instructions on an in-order
//! lane (device lanes, host lanes, the allocation queue) are shown from the later of dispatch and
//! the previous slice's end on that lane, so an eagerly assigned instruction does not overlap its
//! predecessor. Communication instructions (sends and receives) complete asynchronously and may
//! overlap, so they are async slices on the communication track. The scheduler thread records a
//! slice per task it turns into commands and per command it compiles into instructions.
//!
//! Tracks (`tid`): 1 executor, 2 scheduler, 3 allocation queue, 4 communication, 5 the
//! scheduler's command-graph thread, 6 the executor thread's busy time, `10 + d` device d's
//! submission thread (what it spent enqueueing each kernel or copy), `100 + k` host lane k,
//! `1000 + 100 d + k` lane k of device d. `pid` is the node id. Dependencies between
//! traced instructions are flow arrows (`ph` `s`/`f`). Timestamps are microseconds since the
//! runtime started.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::time::Instant;

use super::json_string;
use crate::instruction::{Instruction, InstructionKind};
use crate::types::{DeviceId, InstructionId, NodeId};

/// Track of the executor thread.
pub const EXECUTOR_TRACK: u64 = 1;
/// Track of the scheduler thread.
pub const SCHEDULER_TRACK: u64 = 2;
/// Track of the allocation queue.
pub const ALLOC_TRACK: u64 = 3;
/// Track of sends and receives.
pub const COMMUNICATION_TRACK: u64 = 4;
/// Track of the scheduler's command-graph thread (with `scheduler_threads` two).
pub const COMMAND_GRAPH_TRACK: u64 = 5;
/// Track of the executor thread's busy time: the loop iterations that made progress.
pub const EXECUTOR_BUSY_TRACK: u64 = 6;
/// Track of device `d`'s submission thread (CUDA): `SUBMISSION_TRACK + d`.
pub const SUBMISSION_TRACK: u64 = 10;

/// The kind of queue an instruction was dispatched to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchQueue {
    /// Run on the executor thread (communication instructions complete asynchronously).
    Immediate,
    /// The backend's allocation queue.
    Alloc,
    /// A host lane.
    Host,
    /// A lane of a device.
    Device,
}

/// Where the executor dispatched an instruction: the plain descriptor the trace draws (the
/// executor derives it from its engine's assignment).
#[derive(Debug, Clone, Copy)]
pub struct Dispatch {
    /// The queue.
    pub queue: DispatchQueue,
    /// The device of a device queue.
    pub device: Option<DeviceId>,
    /// The lane of an in-order queue.
    pub lane: Option<usize>,
}

/// One slice of a track.
#[derive(Debug, Clone)]
pub struct Slice {
    /// Shown name.
    pub name: String,
    /// Category (the instruction kind, or `scheduler`).
    pub cat: &'static str,
    /// Track.
    pub tid: u64,
    /// Start, µs since the runtime started.
    pub start_us: f64,
    /// End (equal to start while still open).
    pub end_us: f64,
    /// Async slice (may overlap others on its track).
    pub asynchronous: bool,
    /// Arguments: name and JSON value.
    pub args: Vec<(&'static str, String)>,
}

/// The trace of one node: slices, track names and flow arrows.
#[derive(Debug)]
pub struct TraceLog {
    epoch: Instant,
    node: NodeId,
    slices: Vec<Slice>,
    tracks: BTreeMap<u64, String>,
    /// Slice index of every dispatched instruction.
    index: HashMap<InstructionId, usize>,
    open: HashMap<InstructionId, usize>,
    flows: Vec<(usize, usize)>,
    track_end: HashMap<u64, f64>,
    /// The last slice of each busy track, which [`TraceLog::busy`] extends.
    last_busy: HashMap<u64, usize>,
}

/// The track of a dispatch, its name, and whether the slice is asynchronous.
pub fn track_of(assignment: &Dispatch, kind: &InstructionKind) -> (u64, String, bool) {
    use InstructionKind as K;
    match assignment.queue {
        DispatchQueue::Immediate => match kind {
            K::Send { .. }
            | K::Receive { .. }
            | K::SplitReceive { .. }
            | K::AwaitReceive { .. }
            | K::GatherReceive { .. } => (COMMUNICATION_TRACK, "communication".into(), true),
            _ => (EXECUTOR_TRACK, "executor".into(), false),
        },
        DispatchQueue::Alloc => (ALLOC_TRACK, "allocation queue".into(), false),
        DispatchQueue::Host => {
            let lane = assignment.lane.unwrap_or(0) as u64;
            (100 + lane, format!("host lane {lane}"), false)
        }
        DispatchQueue::Device => {
            let lane = assignment.lane.unwrap_or(0) as u64;
            let device = assignment.device.map_or(0, |d| d.0);
            (
                1000 + 100 * device + lane,
                format!("D{device} lane {lane}"),
                false,
            )
        }
    }
}

fn s(text: impl AsRef<str>) -> String {
    json_string(text.as_ref())
}

/// Name, category and arguments of an instruction's slice.
pub fn describe(instruction: &Instruction) -> (String, &'static str, Vec<(&'static str, String)>) {
    use InstructionKind as K;
    let id = instruction.id();
    let mut args = vec![("instruction", s(id.to_string()))];
    let task_args = |args: &mut Vec<(&'static str, String)>, task: &crate::task::Task| {
        args.push(("task", s(task.id().to_string())));
        if let Some(name) = task.name() {
            args.push(("task_name", s(name)));
        }
    };
    let (name, cat) = match instruction.kind() {
        K::Alloc {
            allocation,
            size_bytes,
            ..
        } => {
            args.push(("allocation", s(allocation.to_string())));
            args.push(("bytes", size_bytes.to_string()));
            (format!("alloc {allocation}"), "alloc")
        }
        K::Free { allocation } => {
            args.push(("allocation", s(allocation.to_string())));
            (format!("free {allocation}"), "free")
        }
        K::Copy {
            source,
            dest,
            region,
            elem_size,
            ..
        } => {
            args.push(("bytes", (region.area() * elem_size).to_string()));
            args.push(("from", s(source.to_string())));
            args.push(("to", s(dest.to_string())));
            (format!("copy {source} -> {dest}"), "copy")
        }
        K::DeviceKernel { task, device, .. } => {
            task_args(&mut args, task);
            args.push(("device", s(device.to_string())));
            (format!("kernel {}", task.label()), "kernel")
        }
        K::HostTask { task, .. } => {
            task_args(&mut args, task);
            (format!("host task {}", task.label()), "host_task")
        }
        K::Send { .. }
        | K::Receive { .. }
        | K::SplitReceive { .. }
        | K::AwaitReceive { .. }
        | K::GatherReceive { .. } => describe_communication(instruction.kind(), &mut args),
        K::FillIdentity { reduction, .. } => (format!("fill identity {reduction}"), "reduction"),
        K::Reduce { reduction, .. } => (format!("reduce {reduction}"), "reduction"),
        K::Fence { task } => {
            task_args(&mut args, task);
            (format!("fence {}", task.id()), "fence")
        }
        K::DestroyHostObject { host_object } => (format!("destroy {host_object}"), "host_object"),
        K::CloneCollectiveGroup { new, .. } => (format!("clone {new}"), "collective"),
        K::Horizon { task, .. } => {
            args.push(("task", s(task.to_string())));
            (format!("horizon {task}"), "horizon")
        }
        K::Epoch { task, action, .. } => {
            task_args(&mut args, task);
            args.push(("action", s(format!("{action:?}").to_lowercase())));
            (format!("epoch {}", task.id()), "epoch")
        }
    };
    (name, cat, args)
}

/// Name and category of a send or receive slice; adds its arguments.
fn describe_communication(
    kind: &InstructionKind,
    args: &mut Vec<(&'static str, String)>,
) -> (String, &'static str) {
    use InstructionKind as K;
    match kind {
        K::Send {
            to,
            message,
            send_range,
            elem_size,
            ..
        } => {
            let bytes = send_range.size() * elem_size;
            args.push(("peer", to.0.to_string()));
            args.push(("message", message.0.to_string()));
            args.push(("bytes", bytes.to_string()));
            (format!("send {bytes} B to {to}"), "send")
        }
        K::Receive {
            transfer,
            region,
            elem_size,
            ..
        }
        | K::SplitReceive {
            transfer,
            region,
            elem_size,
            ..
        } => {
            let bytes = region.area() * elem_size;
            args.push(("transfer", s(transfer.to_string())));
            args.push(("bytes", bytes.to_string()));
            (format!("receive {bytes} B of {transfer}"), "receive")
        }
        K::AwaitReceive { transfer, region } => {
            args.push(("transfer", s(transfer.to_string())));
            args.push(("elements", region.area().to_string()));
            (format!("await receive {transfer}"), "receive")
        }
        K::GatherReceive {
            transfer,
            node_chunk_bytes,
            ..
        } => {
            args.push(("transfer", s(transfer.to_string())));
            args.push(("bytes_per_node", node_chunk_bytes.to_string()));
            (format!("gather receive {transfer}"), "receive")
        }
        other => (other.name().to_owned(), "communication"),
    }
}

impl TraceLog {
    /// An empty trace of `node`; timestamps count from `epoch`.
    pub fn new(node: NodeId, epoch: Instant) -> Self {
        Self {
            epoch,
            node,
            slices: Vec::new(),
            tracks: BTreeMap::new(),
            index: HashMap::new(),
            open: HashMap::new(),
            flows: Vec::new(),
            track_end: HashMap::new(),
            last_busy: HashMap::new(),
        }
    }

    /// An empty trace of the same node and epoch, for another thread to record into and
    /// [`merge`](Self::merge) back.
    pub fn sibling(&self) -> Self {
        Self::new(self.node, self.epoch)
    }

    /// Microseconds since the epoch.
    pub fn now_us(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1e6
    }

    /// The slices recorded so far.
    pub fn slices(&self) -> &[Slice] {
        &self.slices
    }

    /// Names a track.
    pub fn name_track(&mut self, tid: u64, name: &str) {
        self.tracks.entry(tid).or_insert_with(|| name.to_owned());
    }

    /// `instruction` was handed to its target now.
    pub fn instruction_dispatched(&mut self, instruction: &Instruction, assignment: &Dispatch) {
        let (tid, track_name, asynchronous) = track_of(assignment, instruction.kind());
        self.name_track(tid, &track_name);
        let (name, cat, mut args) = describe(instruction);
        if let Some(lane) = assignment.lane {
            args.push(("lane", lane.to_string()));
        }
        let now = self.now_us();
        let slice = self.slices.len();
        for dependency in instruction.dependencies() {
            if let Some(&predecessor) = self.index.get(dependency) {
                self.flows.push((predecessor, slice));
            }
        }
        self.slices.push(Slice {
            name,
            cat,
            tid,
            start_us: now,
            end_us: now,
            asynchronous,
            args,
        });
        self.index.insert(instruction.id(), slice);
        self.open.insert(instruction.id(), slice);
    }

    /// Instruction `id` was retired now.
    pub fn instruction_retired(&mut self, id: InstructionId) {
        let Some(index) = self.open.remove(&id) else {
            return;
        };
        let now = self.now_us();
        let slice = &mut self.slices[index];
        if !slice.asynchronous && slice.tid != EXECUTOR_TRACK {
            let lane_free = self.track_end.get(&slice.tid).copied().unwrap_or(0.0);
            slice.start_us = slice.start_us.max(lane_free);
        }
        slice.end_us = now.max(slice.start_us);
        if !slice.asynchronous {
            self.track_end.insert(slice.tid, slice.end_us);
        }
    }

    /// A finished slice on `tid` (scheduler work).
    pub fn span(
        &mut self,
        tid: u64,
        name: String,
        start_us: f64,
        args: Vec<(&'static str, String)>,
    ) {
        let end_us = self.now_us();
        self.slices.push(Slice {
            name,
            cat: "scheduler",
            tid,
            start_us,
            end_us,
            asynchronous: false,
            args,
        });
    }

    /// A thread on `tid` worked from `start_us` until `end_us`. Work that starts within a
    /// microsecond of the previous busy slice's end extends that slice, so a busy loop is a few
    /// long slices rather than one per iteration.
    pub fn busy(&mut self, tid: u64, start_us: f64, end_us: f64) {
        if let Some(&last) = self.last_busy.get(&tid) {
            let slice = &mut self.slices[last];
            if start_us - slice.end_us < 1.0 {
                slice.end_us = slice.end_us.max(end_us);
                return;
            }
        }
        self.last_busy.insert(tid, self.slices.len());
        self.work(tid, "busy", "busy", start_us, end_us);
    }

    /// A finished slice of work on `tid` (a thread's own track) with times already taken.
    pub fn work(&mut self, tid: u64, name: &str, cat: &'static str, start_us: f64, end_us: f64) {
        self.slices.push(Slice {
            name: name.to_owned(),
            cat,
            tid,
            start_us,
            end_us,
            asynchronous: false,
            args: Vec::new(),
        });
    }

    /// Appends the slices and tracks of `other` (of the same node), e.g. the scheduler's.
    pub fn merge(&mut self, other: TraceLog) {
        let offset = self.slices.len();
        self.slices.extend(other.slices);
        self.flows.extend(
            other
                .flows
                .into_iter()
                .map(|(a, b)| (a + offset, b + offset)),
        );
        for (tid, name) in other.tracks {
            self.tracks.entry(tid).or_insert(name);
        }
    }

    /// The trace as a Chrome trace event JSON document.
    pub fn to_json(&self) -> String {
        document(&self.to_events())
    }

    /// The trace's events, one JSON object each (no newlines inside). Async-slice and flow ids
    /// carry the node in their upper 32 bits, so the events of several nodes can share a file.
    pub fn to_events(&self) -> Vec<String> {
        let pid = self.node.0;
        let id_base = pid << 32;
        let mut events: Vec<String> = Vec::with_capacity(self.slices.len() + 8);
        events.push(format!(
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":{}}}}}",
            s(format!("celerity N{pid}"))
        ));
        for (tid, name) in &self.tracks {
            events.push(format!(
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                s(name)
            ));
            events.push(format!(
                "{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{tid}}}}}"
            ));
        }
        for (n, slice) in self.slices.iter().enumerate() {
            let mut args = String::new();
            for (i, (key, value)) in slice.args.iter().enumerate() {
                let _ = write!(args, "{}{}:{value}", if i > 0 { "," } else { "" }, s(key));
            }
            let common = format!(
                "\"name\":{},\"cat\":\"{}\",\"pid\":{pid},\"tid\":{}",
                s(&slice.name),
                slice.cat,
                slice.tid
            );
            if slice.asynchronous {
                let id = id_base | n as u64;
                events.push(format!(
                    "{{{common},\"ph\":\"b\",\"id\":{id},\"ts\":{:.3},\"args\":{{{args}}}}}",
                    slice.start_us
                ));
                events.push(format!(
                    "{{{common},\"ph\":\"e\",\"id\":{id},\"ts\":{:.3}}}",
                    slice.end_us
                ));
            } else {
                events.push(format!(
                    "{{{common},\"ph\":\"X\",\"ts\":{:.3},\"dur\":{:.3},\"args\":{{{args}}}}}",
                    slice.start_us,
                    slice.end_us - slice.start_us
                ));
            }
        }
        for (flow, &(from, to)) in self.flows.iter().enumerate() {
            let flow = id_base | flow as u64;
            let (a, b) = (&self.slices[from], &self.slices[to]);
            // The arrow leaves the predecessor just before its end and enters the successor
            // at its start.
            let leave = (a.end_us - 0.001).max(a.start_us);
            events.push(format!(
                "{{\"name\":\"dependency\",\"cat\":\"dependency\",\"ph\":\"s\",\"id\":{flow},\"pid\":{pid},\"tid\":{},\"ts\":{leave:.3}}}",
                a.tid
            ));
            events.push(format!(
                "{{\"name\":\"dependency\",\"cat\":\"dependency\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{flow},\"pid\":{pid},\"tid\":{},\"ts\":{:.3}}}",
                b.tid,
                b.start_us.max(leave)
            ));
        }
        events
    }
}

/// A Chrome trace event JSON document of `events`.
pub fn document(events: &[String]) -> String {
    format!(
        "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{}\n]}}\n",
        events.join(",\n")
    )
}

/// How one node's trace timestamps map onto node 0's timeline in a merged trace:
/// `t0 = t * scale + shift_us`, known to ± `uncertainty_us` (see `runtime::clock_sync`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockMap {
    /// Node 0's microseconds per microsecond of this node (1 minus the drift).
    pub scale: f64,
    /// Added after scaling, in microseconds.
    pub shift_us: f64,
    /// How far off node 0's timeline a mapped timestamp may be, at most.
    pub uncertainty_us: f64,
}

impl ClockMap {
    /// Node 0's own timeline.
    pub const IDENTITY: ClockMap = ClockMap {
        scale: 1.0,
        shift_us: 0.0,
        uncertainty_us: 0.0,
    };

    /// `t_us` of this node on node 0's timeline.
    pub fn apply(&self, t_us: f64) -> f64 {
        t_us * self.scale + self.shift_us
    }
}

/// `event` with its `ts` mapped by `map` and its `dur` scaled by it.
pub fn map_times(event: &str, map: &ClockMap) -> String {
    let mut out = String::with_capacity(event.len());
    let mut rest = event;
    while let Some(at) = ["\"ts\":", "\"dur\":"]
        .iter()
        .filter_map(|key| rest.find(key).map(|i| (i, key.len())))
        .min()
    {
        let (index, key_len) = at;
        let start = index + key_len;
        out.push_str(&rest[..start]);
        let len = rest[start..]
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
            .unwrap_or(rest.len() - start);
        match rest[start..start + len].parse::<f64>() {
            Ok(value) => {
                let mapped = if key_len == "\"ts\":".len() {
                    map.apply(value)
                } else {
                    value * map.scale
                };
                let _ = write!(out, "{mapped:.3}");
            }
            Err(_) => out.push_str(&rest[start..start + len]),
        }
        rest = &rest[start + len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_maps_touch_only_timestamps_and_durations() {
        let event = r#"{"name":"a \"ts\":5","cat":"kernel","ph":"X","ts":100.000,"dur":10.500,"args":{"bytes":64}}"#;
        let map = ClockMap {
            scale: 2.0,
            shift_us: -50.0,
            uncertainty_us: 0.0,
        };
        assert_eq!(
            map_times(event, &map),
            r#"{"name":"a \"ts\":5","cat":"kernel","ph":"X","ts":150.000,"dur":21.000,"args":{"bytes":64}}"#
        );
        assert_eq!(map_times(r#"{"ph":"M"}"#, &map), r#"{"ph":"M"}"#);
    }

    #[test]
    fn busy_work_close_to_the_last_busy_slice_extends_it_and_a_gap_starts_a_new_one() {
        let mut trace = TraceLog::new(NodeId(0), Instant::now());
        trace.busy(EXECUTOR_BUSY_TRACK, 10.0, 12.0);
        trace.busy(EXECUTOR_BUSY_TRACK, 12.5, 14.0);
        trace.busy(EXECUTOR_BUSY_TRACK, 20.0, 21.0);
        trace.work(SUBMISSION_TRACK, "kernel", "submission", 14.0, 15.0);
        trace.busy(EXECUTOR_BUSY_TRACK, 21.5, 22.0);
        let spans: Vec<(u64, f64, f64)> = trace
            .slices()
            .iter()
            .map(|s| (s.tid, s.start_us, s.end_us))
            .collect();
        assert_eq!(
            spans,
            [
                (EXECUTOR_BUSY_TRACK, 10.0, 14.0),
                (EXECUTOR_BUSY_TRACK, 20.0, 22.0),
                (SUBMISSION_TRACK, 14.0, 15.0)
            ]
        );
    }
}
