//! JSON printing of the three graphs (`graph_format=json`), for users' own tools. The schema
//! (stable field names) is documented in `docs/graphs.md`:
//!
//! ```text
//! {"graph": "task" | "command" | "instruction", "title": "...",
//!  "nodes": [{"id": 3, "label": "C3", "kind": "await_push", "name": "task name" | null,
//!             "node": 0, "task": 2 | null, "detail": "human-readable text", ...}],
//!  "edges": [{"from": 1, "to": 3, "node": 0, "kind": "true" | "anti" | null,
//!             "origin": "dataflow" | ...}]}
//! ```

use std::fmt::Write;

use super::{buffer_label, fmt_box, fmt_region, json_opt_string, json_string};
use crate::command::{CommandKind, CommandRecorder};
use crate::instruction::{
    DependencyOrigin as InstructionOrigin, InstructionKind, InstructionRecorder,
};
use crate::task::{DependencyKind, DependencyOrigin, EpochAction, TaskRecorder, TaskType};
use crate::types::NodeId;

/// Parts of a graph: node objects and edge objects, each already JSON.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct JsonParts {
    /// One JSON object per node.
    pub nodes: Vec<String>,
    /// One JSON object per edge.
    pub edges: Vec<String>,
}

impl JsonParts {
    /// The parts as bytes, for the gather onto node 0 (nodes and edges, one per line, separated
    /// by an empty line).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut text = self.nodes.join("\n");
        text.push_str("\n\n");
        text.push_str(&self.edges.join("\n"));
        text.into_bytes()
    }

    /// The inverse of [`Self::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let text = String::from_utf8_lossy(bytes);
        let (nodes, edges) = text.split_once("\n\n").unwrap_or((&text, ""));
        let lines = |s: &str| {
            s.lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect()
        };
        Self {
            nodes: lines(nodes),
            edges: lines(edges),
        }
    }
}

/// A whole graph document from the parts of one or more nodes.
pub fn document(graph: &str, title: &str, parts: &[JsonParts]) -> String {
    let nodes: Vec<&str> = parts
        .iter()
        .flat_map(|p| p.nodes.iter().map(String::as_str))
        .collect();
    let edges: Vec<&str> = parts
        .iter()
        .flat_map(|p| p.edges.iter().map(String::as_str))
        .collect();
    format!(
        "{{\"graph\":{},\"title\":{},\n\"nodes\":[\n{}\n],\n\"edges\":[\n{}\n]}}\n",
        json_string(graph),
        json_string(title),
        nodes.join(",\n"),
        edges.join(",\n")
    )
}

/// snake_case kind names: `await push` → `await_push`.
fn kind_name(name: &str) -> String {
    name.replace([' ', '-'], "_")
}

fn task_kind(ty: TaskType) -> &'static str {
    match ty {
        TaskType::DeviceCompute => "device_compute",
        TaskType::HostCompute => "host_compute",
        TaskType::Collective => "collective",
        TaskType::MasterNode => "master_node",
        TaskType::Horizon => "horizon",
        TaskType::Epoch => "epoch",
        TaskType::Fence => "fence",
    }
}

fn dependency_kind(kind: DependencyKind) -> &'static str {
    match kind {
        DependencyKind::True => "true",
        DependencyKind::Anti => "anti",
    }
}

fn dependency_origin(origin: DependencyOrigin) -> &'static str {
    match origin {
        DependencyOrigin::Dataflow => "dataflow",
        DependencyOrigin::SideEffect => "side_effect",
        DependencyOrigin::CollectiveGroupSerialization => "collective_group_serialization",
        DependencyOrigin::ExecutionFront => "execution_front",
        DependencyOrigin::LastEpoch => "last_epoch",
    }
}

fn instruction_origin(origin: InstructionOrigin) -> &'static str {
    match origin {
        InstructionOrigin::AllocationLifetime => "allocation_lifetime",
        InstructionOrigin::WriteToAllocation => "write_to_allocation",
        InstructionOrigin::ReadFromAllocation => "read_from_allocation",
        InstructionOrigin::SideEffect => "side_effect",
        InstructionOrigin::CollectiveGroupOrder => "collective_group_order",
        InstructionOrigin::LastEpoch => "last_epoch",
        InstructionOrigin::ExecutionFront => "execution_front",
        InstructionOrigin::SplitReceive => "split_receive",
    }
}

fn epoch_action(action: EpochAction) -> &'static str {
    match action {
        EpochAction::Init => "init",
        EpochAction::None => "none",
        EpochAction::Barrier => "barrier",
        EpochAction::Shutdown => "shutdown",
    }
}

#[expect(clippy::too_many_arguments)]
fn node_object(
    id: u64,
    label: &str,
    kind: &str,
    name: Option<&str>,
    node: NodeId,
    task: Option<u64>,
    detail: &str,
    extra: &str,
) -> String {
    format!(
        "{{\"id\":{id},\"label\":{},\"kind\":{},\"name\":{},\"node\":{},\"task\":{},\"detail\":{}{extra}}}",
        json_string(label),
        json_string(kind),
        json_opt_string(name),
        node.0,
        task.map_or_else(|| "null".to_owned(), |t| t.to_string()),
        json_string(detail)
    )
}

fn edge_object(from: u64, to: u64, node: NodeId, kind: Option<&str>, origin: &str) -> String {
    format!(
        "{{\"from\":{from},\"to\":{to},\"node\":{},\"kind\":{},\"origin\":{}}}",
        node.0,
        json_opt_string(kind),
        json_string(origin)
    )
}

/// The task graph (recorded on `node`).
pub fn task_graph(recorder: &TaskRecorder, node: NodeId) -> JsonParts {
    let mut parts = JsonParts::default();
    for task in recorder.records() {
        let mut extra = format!(
            ",\"geometry\":{{\"dims\":{},\"box\":{}}}",
            task.geometry.dims,
            json_string(&fmt_box(&task.geometry.global_box()))
        );
        if let Some(action) = task.epoch_action {
            let _ = write!(
                extra,
                ",\"epoch_action\":{}",
                json_string(epoch_action(action))
            );
        }
        let accesses: Vec<String> = task
            .accesses
            .iter()
            .map(|a| {
                format!(
                    "{{\"buffer\":{},\"buffer_name\":{},\"mode\":{},\"region\":{}}}",
                    a.bid.0,
                    json_opt_string(a.buffer_name.as_deref()),
                    json_string(a.mode.name()),
                    json_string(&fmt_region(&a.region))
                )
            })
            .collect();
        let _ = write!(extra, ",\"accesses\":[{}]", accesses.join(","));
        let detail = plain_label(&super::graphviz::task_label(task));
        parts.nodes.push(node_object(
            task.id.0,
            &task.id.to_string(),
            task_kind(task.ty),
            task.name.as_deref(),
            node,
            Some(task.id.0),
            &detail,
            &extra,
        ));
        for d in &task.dependencies {
            parts.edges.push(edge_object(
                d.task.0,
                task.id.0,
                node,
                Some(dependency_kind(d.kind)),
                dependency_origin(d.origin),
            ));
        }
    }
    parts
}

/// Removes what remains of HTML markup in a label (`b`, `i`, `font` tags and entities).
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn plain_label(html: &str) -> String {
    strip_tags(&html.replace("<br/>", "; "))
}

/// One node's command graph.
pub fn command_graph(recorder: &CommandRecorder) -> JsonParts {
    let node = recorder.node();
    let mut parts = JsonParts::default();
    for command in recorder.records() {
        let (_, _, html) = super::graphviz::command_label(command);
        let mut extra = String::new();
        if let Some(transfer) = command.kind.transfer() {
            let _ = write!(
                extra,
                ",\"transfer\":{},\"buffer\":{}",
                json_string(&transfer.to_string()),
                json_string(&buffer_label(
                    transfer.buffer,
                    command.buffer_name.as_deref()
                ))
            );
        }
        match &command.kind {
            CommandKind::Execution {
                execution_range, ..
            } => {
                let _ = write!(
                    extra,
                    ",\"execution_range\":{}",
                    json_string(&fmt_box(execution_range))
                );
            }
            CommandKind::Push { targets, .. } => {
                let targets: Vec<String> = targets
                    .iter()
                    .map(|(n, r)| {
                        format!(
                            "{{\"node\":{},\"region\":{}}}",
                            n.0,
                            json_string(&fmt_region(r))
                        )
                    })
                    .collect();
                let _ = write!(extra, ",\"targets\":[{}]", targets.join(","));
            }
            CommandKind::AwaitPush { region, .. } => {
                let _ = write!(extra, ",\"region\":{}", json_string(&fmt_region(region)));
            }
            _ => {}
        }
        parts.nodes.push(node_object(
            command.id.0,
            &command.id.to_string(),
            &kind_name(command.kind.name()),
            command.task_name.as_deref(),
            node,
            Some(command.task.0),
            &plain_label(&html),
            &extra,
        ));
        for d in &command.dependencies {
            parts.edges.push(edge_object(
                d.node.0,
                command.id.0,
                node,
                Some(dependency_kind(d.kind)),
                dependency_origin(d.origin),
            ));
        }
    }
    parts
}

/// One node's instruction graph (pilots are not nodes; sends carry their message id).
pub fn instruction_graph(
    recorder: &InstructionRecorder,
    node: NodeId,
    names: super::graphviz::BufferNames<'_>,
) -> JsonParts {
    let mut parts = JsonParts::default();
    for record in recorder.instructions() {
        let (_, _, html) = super::graphviz::instruction_label(record, recorder, names);
        let (task, name) = match record.kind() {
            InstructionKind::DeviceKernel { task, .. }
            | InstructionKind::HostTask { task, .. }
            | InstructionKind::Fence { task }
            | InstructionKind::Epoch { task, .. } => (Some(task.id().0), task.name()),
            InstructionKind::Horizon { task, .. } => (Some(task.0), None),
            _ => (None, None),
        };
        let mut extra = String::new();
        match record.kind() {
            InstructionKind::Send { to, message, .. } => {
                let _ = write!(extra, ",\"peer\":{},\"message\":{}", to.0, message.0);
            }
            InstructionKind::Receive { transfer, .. }
            | InstructionKind::SplitReceive { transfer, .. }
            | InstructionKind::AwaitReceive { transfer, .. }
            | InstructionKind::GatherReceive { transfer, .. } => {
                let _ = write!(
                    extra,
                    ",\"transfer\":{}",
                    json_string(&transfer.to_string())
                );
            }
            _ => {}
        }
        parts.nodes.push(node_object(
            record.id().0,
            &record.id().to_string(),
            &kind_name(record.kind().name()),
            name,
            node,
            task,
            &plain_label(&html),
            &extra,
        ));
        for (dependency, origin) in &record.dependencies {
            parts.edges.push(edge_object(
                dependency.0,
                record.id().0,
                node,
                None,
                instruction_origin(*origin),
            ));
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_survive_the_byte_round_trip_and_documents_concatenate_nodes() {
        let a = JsonParts {
            nodes: vec!["{\"id\":1}".into(), "{\"id\":2}".into()],
            edges: vec!["{\"from\":1,\"to\":2}".into()],
        };
        let b = JsonParts {
            nodes: vec!["{\"id\":1,\"node\":1}".into()],
            edges: vec![],
        };
        assert_eq!(JsonParts::from_bytes(&a.to_bytes()), a);
        assert_eq!(JsonParts::from_bytes(&b.to_bytes()), b);
        assert_eq!(
            document("command", "t", &[a, b]),
            "{\"graph\":\"command\",\"title\":\"t\",\n\"nodes\":[\n{\"id\":1},\n{\"id\":2},\n{\"id\":1,\"node\":1}\n],\n\"edges\":[\n{\"from\":1,\"to\":2}\n]}\n"
        );
        assert_eq!(kind_name("await push"), "await_push");
        assert_eq!(strip_tags("<b>x</b> &quot;y&quot;"), "x \"y\"");
    }
}
