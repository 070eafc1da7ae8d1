//! Graphviz (`dot`) printing of the task graph, of one node's command graph and of one node's
//! instruction graph, from their recorders. Labels follow Celerity's conventions (`T12 "name"`,
//! `C7 on N1`, `I42`, `M2.A5`); edge colours and styles tell dependency kinds and origins apart
//! (the legend is in `docs/graphs.md`). One statement per line, so outputs diff well.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{buffer_label, escape_html, fmt_box, fmt_region};
use crate::command::{CommandKind, CommandRecord, CommandRecorder};
use crate::instruction::{
    AllocOrigin, CopyLayout, CopyOrigin, DependencyOrigin as InstructionOrigin, InstructionKind,
    InstructionRecord, InstructionRecorder, RecordDetail, ReductionScope,
};
use crate::task::{
    AccessMode, DependencyKind, DependencyOrigin, EpochAction, TaskRecord, TaskRecorder, TaskType,
};
use crate::types::{BufferId, CommandId, InstructionId, NodeId, TaskId, TransferId};

/// Resolves a buffer's debug name (from the task records).
pub type BufferNames<'a> = &'a dyn Fn(BufferId) -> Option<String>;

fn preamble(title: &str) -> String {
    format!("digraph G{{label=<{}>;pad=0.2;\n", escape_html(title))
}

/// Style of a task or command edge.
pub fn dependency_style(kind: DependencyKind, origin: DependencyOrigin) -> &'static str {
    if kind == DependencyKind::Anti {
        return "color=limegreen";
    }
    match origin {
        DependencyOrigin::Dataflow => "",
        DependencyOrigin::SideEffect => "style=dashed",
        DependencyOrigin::CollectiveGroupSerialization => "color=blue",
        DependencyOrigin::ExecutionFront => "color=orange",
        DependencyOrigin::LastEpoch => "color=orchid",
    }
}

/// Style of an instruction edge.
pub fn instruction_dependency_style(origin: InstructionOrigin) -> &'static str {
    match origin {
        InstructionOrigin::AllocationLifetime => "color=cyan3",
        InstructionOrigin::WriteToAllocation => "color=limegreen",
        InstructionOrigin::ReadFromAllocation => "",
        InstructionOrigin::SideEffect => "style=dashed",
        InstructionOrigin::CollectiveGroupOrder => "color=blue",
        InstructionOrigin::LastEpoch => "color=orchid",
        InstructionOrigin::ExecutionFront => "color=orange",
        InstructionOrigin::SplitReceive => "color=gray",
    }
}

/// How task types are named in graph labels.
pub fn task_type_name(ty: TaskType) -> &'static str {
    match ty {
        TaskType::DeviceCompute => "device-compute",
        TaskType::HostCompute => "host-compute",
        TaskType::Collective => "collective host",
        TaskType::MasterNode => "master-node host",
        TaskType::Horizon => "horizon",
        TaskType::Epoch => "epoch",
        TaskType::Fence => "fence",
    }
}

fn epoch_label(action: EpochAction) -> &'static str {
    match action {
        EpochAction::Init => "<b>epoch</b> (init)",
        EpochAction::None => "<b>epoch</b>",
        EpochAction::Barrier => "<b>epoch</b> (barrier)",
        EpochAction::Shutdown => "<b>epoch</b> (shutdown)",
    }
}

fn task_name_suffix(name: Option<&str>) -> String {
    name.map_or_else(String::new, |n| format!(" \"{}\"", escape_html(n)))
}

fn buffer_html(bid: BufferId, name: Option<&str>) -> String {
    escape_html(&buffer_label(bid, name))
}

/// The HTML label of a task record.
pub fn task_label(task: &TaskRecord) -> String {
    let mut label = format!("{}{}", task.id, task_name_suffix(task.name.as_deref()));
    match (task.ty, task.epoch_action) {
        (TaskType::Epoch, Some(action)) => {
            let _ = write!(label, "<br/>{}", epoch_label(action));
        }
        (ty, _) => {
            let _ = write!(label, "<br/><b>{}</b>", task_type_name(ty));
        }
    }
    match task.ty {
        TaskType::DeviceCompute | TaskType::HostCompute => {
            let _ = write!(label, " {}", fmt_box(&task.geometry.global_box()));
        }
        TaskType::Collective => {
            let _ = write!(label, " in {}", task.collective_group);
        }
        _ => {}
    }
    for reduction in &task.reductions {
        let mode = if reduction.info.init_from_buffer {
            AccessMode::ReadWrite
        } else {
            AccessMode::DiscardWrite
        };
        let _ = write!(
            label,
            "<br/>({}) <i>{}</i> {} {{[0,0,0] - [1,1,1]}}",
            reduction.info.rid,
            mode.name(),
            buffer_html(reduction.info.bid, reduction.buffer_name.as_deref())
        );
    }
    for access in &task.accesses {
        if access.region.is_empty() {
            continue;
        }
        let _ = write!(
            label,
            "<br/><i>{}</i> {} {}",
            access.mode.name(),
            buffer_html(access.bid, access.buffer_name.as_deref()),
            fmt_region(&access.region)
        );
    }
    for host_object in &task.side_effects {
        let _ = write!(label, "<br/><i>affect</i> {host_object}");
    }
    label
}

/// The task graph as a `digraph`.
pub fn print_task_graph(recorder: &TaskRecorder, title: &str) -> String {
    let mut dot = preamble(title);
    for task in recorder.records() {
        let shape = match task.ty {
            TaskType::Epoch | TaskType::Horizon => "ellipse",
            _ => "box style=rounded",
        };
        let _ = writeln!(
            dot,
            "{}[shape={shape} label=<{}>];",
            task.id.0,
            task_label(task)
        );
        for dependency in &task.dependencies {
            let _ = writeln!(
                dot,
                "{}->{}[{}];",
                dependency.task.0,
                task.id.0,
                dependency_style(dependency.kind, dependency.origin)
            );
        }
    }
    dot.push('}');
    dot
}

fn transfer_prefix(transfer: &TransferId) -> String {
    if transfer.reduction.0 != 0 {
        format!("({}) ", transfer.reduction)
    } else {
        String::new()
    }
}

/// Shape, colour and HTML label of one command record.
pub fn command_label(command: &CommandRecord) -> (&'static str, &'static str, String) {
    let mut label = format!("{} on {}<br/>", command.id, command.node);
    let buffer_name = command.buffer_name.as_deref();
    let (shape, color) = match &command.kind {
        CommandKind::Push { transfer, targets } => {
            let _ = write!(
                label,
                "{}<b>push</b> {transfer} {}",
                transfer_prefix(transfer),
                buffer_html(transfer.buffer, buffer_name)
            );
            for (node, region) in targets {
                let _ = write!(label, "<br/>{} to {node}", fmt_region(region));
            }
            ("ellipse", "deeppink2")
        }
        CommandKind::AwaitPush { transfer, region } => {
            let _ = write!(
                label,
                "{}<b>await push</b> {transfer}<br/>{} {}",
                transfer_prefix(transfer),
                buffer_html(transfer.buffer, buffer_name),
                fmt_region(region)
            );
            ("ellipse", "deeppink2")
        }
        CommandKind::Reduction {
            reduction,
            has_local_contribution,
        } => {
            let _ = write!(
                label,
                "<b>reduction</b> {}<br/>{} {{[0,0,0] - [1,1,1]}}",
                reduction.rid,
                buffer_html(reduction.bid, buffer_name)
            );
            if !has_local_contribution {
                label.push_str("<br/>(no local contribution)");
            }
            ("ellipse", "blue")
        }
        CommandKind::Epoch {
            action,
            completed_reductions,
        } => {
            label.push_str(epoch_label(*action));
            for rid in completed_reductions {
                let _ = write!(label, "<br/>completed {rid}");
            }
            ("box", "black")
        }
        CommandKind::Horizon {
            completed_reductions,
        } => {
            label.push_str("<b>horizon</b>");
            for rid in completed_reductions {
                let _ = write!(label, "<br/>completed {rid}");
            }
            ("box", "black")
        }
        CommandKind::Execution {
            execution_range,
            is_reduction_initializer,
        } => {
            let _ = write!(label, "<b>execution</b> {}", fmt_box(execution_range));
            if *is_reduction_initializer {
                label.push_str("<br/>(reduction initializer)");
            }
            ("box", "darkorange2")
        }
        CommandKind::Fence => {
            label.push_str("<b>fence</b>");
            ("box", "darkorange")
        }
    };
    (shape, color, label)
}

fn command_node_id(node: NodeId, id: u64) -> String {
    format!("id_{}_{id}", node.0)
}

/// The body of one node's command graph: a cluster per task, data-movement commands outside,
/// then the edges. Node ids are prefixed `id_<nid>_` so bodies of several nodes concatenate;
/// [`combine_command_graphs`] wraps them into one `digraph`.
pub fn command_graph_body(recorder: &CommandRecorder) -> String {
    let node = recorder.node();
    let mut clusters: BTreeMap<TaskId, String> = BTreeMap::new();
    let mut main = String::new();
    for command in recorder.records() {
        let (shape, color, label) = command_label(command);
        let statement = format!(
            "{}[color={color},shape={shape},label=<{label}>];\n",
            command_node_id(node, command.id.0)
        );
        if command.kind.is_task_command() {
            let cluster = clusters.entry(command.task).or_insert_with(|| {
                let mut title = format!(
                    "{}{} ({}",
                    command.task,
                    task_name_suffix(command.task_name.as_deref()),
                    task_type_name(command.task_type)
                );
                title.push(')');
                format!(
                    "subgraph cluster_{}{{label=<<font color=\"#606060\">{title}</font>>;color=darkgray;\n",
                    command_node_id(node, command.task.0)
                )
            });
            cluster.push_str(&statement);
        } else {
            main.push_str(&statement);
        }
    }
    let mut edges: BTreeMap<(CommandId, CommandId), (DependencyKind, DependencyOrigin)> =
        BTreeMap::new();
    for command in recorder.records() {
        for dependency in &command.dependencies {
            let entry = edges
                .entry((dependency.node, command.id))
                .or_insert((dependency.kind, dependency.origin));
            // A true dependency wins over an anti-dependency on the same edge.
            if entry.0 == DependencyKind::Anti && dependency.kind == DependencyKind::True {
                *entry = (dependency.kind, dependency.origin);
            }
        }
    }
    let mut body = String::new();
    for cluster in clusters.into_values() {
        body.push_str(&cluster);
        body.push_str("}\n");
    }
    body.push_str(&main);
    for ((from, to), (kind, origin)) in edges {
        let _ = writeln!(
            body,
            "{}->{}[{}];",
            command_node_id(node, from.0),
            command_node_id(node, to.0),
            dependency_style(kind, origin)
        );
    }
    body
}

/// One `digraph` from the command-graph bodies of several nodes (in node order).
pub fn combine_command_graphs(bodies: &[String], title: &str) -> String {
    let mut dot = preamble(title);
    for body in bodies {
        dot.push_str(body);
    }
    dot.push('}');
    dot
}

/// One node's command graph as a `digraph`.
pub fn print_command_graph(recorder: &CommandRecorder, title: &str) -> String {
    combine_command_graphs(&[command_graph_body(recorder)], title)
}

mod instructions;

pub use instructions::{instruction_label, print_instruction_graph};

#[cfg(test)]
#[path = "tests/graphviz.rs"]
mod tests;
