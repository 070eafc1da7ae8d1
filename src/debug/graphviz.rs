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

fn layout_text(layout: &CopyLayout) -> String {
    match layout {
        CopyLayout::Strided { allocation } => format!("(strided in {})", fmt_box(allocation)),
        CopyLayout::Linearized { offset_bytes } => format!("(linearized at +{offset_bytes})"),
    }
}

fn alloc_origin_name(origin: AllocOrigin) -> &'static str {
    match origin {
        AllocOrigin::Buffer => "buffer",
        AllocOrigin::Staging => "staging",
        AllocOrigin::Gather => "gather",
    }
}

fn copy_origin_name(origin: CopyOrigin) -> &'static str {
    match origin {
        CopyOrigin::Resize => "resize",
        CopyOrigin::Coherence => "coherence",
        CopyOrigin::Staging => "staging",
        CopyOrigin::Linearizing => "linearizing",
        CopyOrigin::Delinearizing => "delinearizing",
        CopyOrigin::Gather => "gather",
        CopyOrigin::Fence => "fence",
    }
}

const ROUNDED: &str = "box,margin=0.2,style=rounded";

/// Shape, colour and HTML label of one instruction record.
pub fn instruction_label(
    record: &InstructionRecord,
    recorder: &InstructionRecorder,
    names: BufferNames<'_>,
) -> (&'static str, &'static str, String) {
    use InstructionKind as K;
    let id = record.id();
    let name_of = |bid: BufferId| buffer_html(bid, names(bid).as_deref());
    let await_push = |transfer: &TransferId| {
        recorder
            .await_push_commands()
            .iter()
            .find(|(t, _)| t == transfer)
            .map_or_else(String::new, |(_, c)| format!(" (await-push {c})"))
    };
    let mut label = String::new();
    let (shape, color) = match (record.kind(), &record.detail) {
        (
            K::Alloc {
                allocation,
                size_bytes,
                align_bytes,
            },
            detail,
        ) => {
            let _ = write!(label, "{id}<br/>");
            if let RecordDetail::Alloc {
                origin,
                buffer,
                num_chunks,
            } = detail
            {
                let _ = write!(label, "{} ", alloc_origin_name(*origin));
                let _ = write!(label, "<b>alloc</b> {allocation}");
                if let Some((bid, b)) = buffer {
                    let _ = write!(label, "<br/>for {} {}", name_of(*bid), fmt_box(b));
                    if let Some(n) = num_chunks {
                        let _ = write!(label, " x{n}");
                    }
                }
            } else {
                let _ = write!(label, "<b>alloc</b> {allocation}");
            }
            let _ = write!(label, "<br/>{size_bytes} % {align_bytes} bytes");
            ("ellipse", "cyan3")
        }
        (K::Free { allocation }, detail) => {
            let _ = write!(label, "{id}<br/><b>free</b> {allocation}");
            if let RecordDetail::Free { size_bytes, buffer } = detail {
                if let Some((bid, b)) = buffer {
                    let _ = write!(label, "<br/>{} {}", name_of(*bid), fmt_box(b));
                }
                let _ = write!(label, "<br/>{size_bytes} bytes");
            }
            ("ellipse", "cyan3")
        }
        (
            K::Copy {
                source,
                dest,
                source_layout,
                dest_layout,
                region,
                elem_size,
            },
            detail,
        ) => {
            let _ = write!(label, "{id}<br/>");
            let buffer = match detail {
                RecordDetail::Copy { origin, buffer } => {
                    let _ = write!(label, "{} ", copy_origin_name(*origin));
                    Some(*buffer)
                }
                _ => None,
            };
            let _ = write!(
                label,
                "<b>copy</b><br/>from {source} {}<br/>to {dest} {}<br/>",
                layout_text(source_layout),
                layout_text(dest_layout)
            );
            if let Some(bid) = buffer {
                let _ = write!(label, "{} ", name_of(bid));
            }
            let _ = write!(
                label,
                "{} x{elem_size} bytes<br/>{} bytes total",
                fmt_region(region),
                region.area() * elem_size
            );
            ("ellipse,margin=0", "green3")
        }
        (
            K::DeviceKernel {
                device,
                task,
                execution_box,
                accesses,
                ..
            },
            detail,
        ) => {
            let _ = write!(label, "{id} (device-compute {}", task.id());
            kernel_tail(&mut label, detail, "device kernel", task.name());
            let _ = write!(label, "<br/>on {device} {}", fmt_box(execution_box));
            kernel_accesses(&mut label, detail, accesses, &name_of);
            (ROUNDED, "darkorange2")
        }
        (
            K::HostTask {
                task,
                execution_box,
                accesses,
                collective_group,
                ..
            },
            detail,
        ) => {
            if collective_group.0 != 0 {
                let _ = write!(
                    label,
                    "{id} ({collective_group} collective-host {}",
                    task.id()
                );
            } else {
                let _ = write!(label, "{id} (host-compute {}", task.id());
            }
            kernel_tail(&mut label, detail, "host task", task.name());
            let _ = write!(label, "<br/>on host {}", fmt_box(execution_box));
            kernel_accesses(&mut label, detail, accesses, &name_of);
            (ROUNDED, "darkorange2")
        }
        (
            K::Send {
                to,
                message,
                source,
                offset_in_allocation,
                send_range,
                elem_size,
                ..
            },
            detail,
        ) => {
            let _ = write!(label, "{id}");
            if let RecordDetail::Send {
                command,
                transfer,
                send_box,
            } = detail
            {
                let _ = write!(
                    label,
                    " (push {command})<br/><b>send</b> {transfer}<br/>to {to} {message}<br/>{} {}",
                    name_of(transfer.buffer),
                    fmt_box(send_box)
                );
            } else {
                let _ = write!(label, "<br/><b>send</b><br/>to {to} {message}");
            }
            let via = crate::grid::GridBox::from_subrange(crate::grid::Subrange::new(
                *offset_in_allocation,
                *send_range,
            ));
            let _ = write!(
                label,
                "<br/>via {source} {}<br/>{} bytes total",
                fmt_box(&via),
                send_range.size() * elem_size
            );
            (ROUNDED, "deeppink2")
        }
        (
            K::Receive {
                transfer,
                region,
                dest,
                allocated_box,
                elem_size,
            },
            _,
        )
        | (
            K::SplitReceive {
                transfer,
                region,
                dest,
                allocated_box,
                elem_size,
            },
            _,
        ) => {
            let what = if matches!(record.kind(), K::Receive { .. }) {
                "receive"
            } else {
                "split receive"
            };
            let _ = write!(
                label,
                "{id}{}<br/><b>{what}</b> {transfer}<br/>{} {}<br/>into {dest} ({} {})<br/>{} bytes total",
                await_push(transfer),
                name_of(transfer.buffer),
                fmt_region(region),
                transfer.buffer,
                fmt_box(allocated_box),
                region.area() * elem_size
            );
            (ROUNDED, "deeppink2")
        }
        (K::AwaitReceive { transfer, region }, _) => {
            let _ = write!(
                label,
                "{id}{}<br/><b>await receive</b> {transfer}<br/>{} {}",
                await_push(transfer),
                name_of(transfer.buffer),
                fmt_region(region)
            );
            (ROUNDED, "deeppink2")
        }
        (
            K::GatherReceive {
                transfer,
                dest,
                node_chunk_bytes,
            },
            _,
        ) => {
            let _ = write!(
                label,
                "{id}{}<br/><b>gather receive</b> {transfer}<br/>{}<br/>into {dest} x{node_chunk_bytes} bytes",
                await_push(transfer),
                name_of(transfer.buffer)
            );
            (ROUNDED, "deeppink2")
        }
        (
            K::FillIdentity {
                reduction,
                allocation,
                num_values,
            },
            _,
        ) => {
            let _ = write!(
                label,
                "{id}<br/><b>fill identity</b> for {reduction}<br/>{allocation} x{num_values}"
            );
            ("ellipse", "blue")
        }
        (
            K::Reduce {
                reduction,
                source,
                num_source_values,
                dest,
            },
            detail,
        ) => {
            let _ = write!(label, "{id}");
            let mut shape = "ellipse";
            if let RecordDetail::Reduce {
                command,
                buffer,
                scope,
            } = detail
            {
                if let Some(command) = command {
                    let _ = write!(label, " (reduction {command})");
                    shape = ROUNDED;
                }
                let scope = match scope {
                    ReductionScope::Local => "local",
                    ReductionScope::Global => "global",
                };
                let _ = write!(
                    label,
                    "<br/>{scope} <b>reduce</b> {buffer}.{reduction}<br/>{}",
                    name_of(*buffer)
                );
            } else {
                let _ = write!(label, "<br/><b>reduce</b> {reduction}");
            }
            let _ = write!(
                label,
                "<br/>from {source} x{num_source_values}<br/>to {dest} x1"
            );
            (shape, "blue")
        }
        (K::Fence { task }, detail) => {
            let _ = write!(label, "{id} ({}", task.id());
            match detail {
                RecordDetail::BufferFence {
                    command,
                    buffer,
                    fence_box,
                } => {
                    let _ = write!(
                        label,
                        ", {command})<br/><b>fence</b><br/>{} {}",
                        name_of(*buffer),
                        fmt_box(fence_box)
                    );
                }
                RecordDetail::HostObjectFence {
                    command,
                    host_object,
                } => {
                    let _ = write!(label, ", {command})<br/><b>fence</b><br/>{host_object}");
                }
                _ => label.push_str(")<br/><b>fence</b>"),
            }
            (ROUNDED, "darkorange")
        }
        (K::DestroyHostObject { host_object }, _) => {
            let _ = write!(label, "{id}<br/><b>destroy</b> {host_object}");
            ("ellipse", "black")
        }
        (K::CloneCollectiveGroup { original, new }, _) => {
            let _ = write!(
                label,
                "{id}<br/><b>clone collective group</b><br/>{original} -&gt; {new}"
            );
            ("ellipse", "darkred")
        }
        (K::Horizon { task, garbage }, detail) => {
            let _ = write!(
                label,
                "{id} ({task}{})<br/><b>horizon</b>",
                command_suffix(detail)
            );
            garbage_lines(&mut label, garbage);
            (ROUNDED, "black")
        }
        (
            K::Epoch {
                task,
                action,
                garbage,
            },
            detail,
        ) => {
            let _ = write!(
                label,
                "{id} ({}{})<br/>{}",
                task.id(),
                command_suffix(detail),
                epoch_label(*action)
            );
            garbage_lines(&mut label, garbage);
            (ROUNDED, "black")
        }
    };
    (shape, color, label)
}

fn command_suffix(detail: &RecordDetail) -> String {
    match detail {
        RecordDetail::Command { command } => format!(", {command}"),
        _ => String::new(),
    }
}

fn garbage_lines(label: &mut String, garbage: &crate::instruction::InstructionGarbage) {
    for rid in &garbage.reductions {
        let _ = write!(label, "<br/>collect {rid}");
    }
    for allocation in &garbage.user_allocations {
        let _ = write!(label, "<br/>collect {allocation}");
    }
}

fn kernel_tail(label: &mut String, detail: &RecordDetail, what: &str, name: Option<&str>) {
    if let RecordDetail::Kernel { command, .. } = detail {
        let _ = write!(label, ", execution {command}");
    }
    let _ = write!(label, ")<br/><b>{what}</b>{}", task_name_suffix(name));
}

fn kernel_accesses(
    label: &mut String,
    detail: &RecordDetail,
    accesses: &[crate::instruction::BufferAccessAllocation],
    name_of: &dyn Fn(BufferId) -> String,
) {
    let RecordDetail::Kernel {
        accesses: regions, ..
    } = detail
    else {
        return;
    };
    for ((bid, region), allocation) in regions.iter().zip(accesses) {
        let _ = write!(
            label,
            "<br/>+ access {} {}<br/>via {} {}",
            name_of(*bid),
            fmt_region(region),
            allocation.allocation,
            fmt_box(&allocation.allocated_box)
        );
    }
}

/// One node's instruction graph as a `digraph`, with its outbound pilots (dashed, linked to
/// their sends).
pub fn print_instruction_graph(
    recorder: &InstructionRecorder,
    names: BufferNames<'_>,
    title: &str,
) -> String {
    let mut dot = preamble(title);
    let mut sends = BTreeMap::new();
    for record in recorder.instructions() {
        let (shape, color, label) = instruction_label(record, recorder, names);
        let _ = writeln!(
            dot,
            "{}[color={color},shape={shape},label=<{label}>];",
            record.id()
        );
        if let InstructionKind::Send { message, .. } = record.kind() {
            sends.insert(*message, record.id());
        }
    }
    let mut edges: BTreeMap<(InstructionId, InstructionId), Vec<InstructionOrigin>> =
        BTreeMap::new();
    for record in recorder.instructions() {
        for (dependency, origin) in &record.dependencies {
            let origins = edges.entry((*dependency, record.id())).or_default();
            if !origins.contains(origin) {
                origins.push(*origin);
            }
        }
    }
    for ((from, to), origins) in edges {
        // An edge with several origins is drawn plain.
        let style = match origins.as_slice() {
            [origin] => instruction_dependency_style(*origin),
            _ => "",
        };
        let _ = writeln!(dot, "{from}->{to}[{style}];");
    }
    for pilot in recorder.pilots() {
        let message = pilot.message.id;
        let _ = writeln!(
            dot,
            "P{}[margin=0.25,shape=cds,color=\"#606060\",label=<<font color=\"#606060\"><b>pilot</b> to {} {message}<br/>{}<br/>for {} {}</font>>];",
            message.0,
            pilot.to,
            pilot.message.transfer,
            name_of_pilot(names, pilot.message.transfer.buffer),
            fmt_box(&pilot.message.region_box)
        );
        if let Some(send) = sends.get(&message) {
            let _ = writeln!(
                dot,
                "P{}->{send}[dir=none,style=dashed,color=\"#606060\"];",
                message.0
            );
        }
    }
    dot.push('}');
    dot
}

fn name_of_pilot(names: BufferNames<'_>, bid: BufferId) -> String {
    buffer_html(bid, names(bid).as_deref())
}

#[cfg(test)]
#[path = "graphviz_tests.rs"]
mod tests;
