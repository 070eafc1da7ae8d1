//! Graphviz labels of instruction records and the instruction graph (C++ Celerity:
//! `print_graph.cc`): one label function per instruction family.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::*;

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
    let mut label = String::new();
    let l = &mut label;
    let (shape, color) = memory_label(record, recorder, names, l)
        .or_else(|| kernel_label(record, recorder, names, l))
        .or_else(|| send_label(record, recorder, names, l))
        .or_else(|| receive_label(record, recorder, names, l))
        .or_else(|| reduction_label(record, recorder, names, l))
        .or_else(|| synchronization_label(record, recorder, names, l))
        .unwrap_or((ROUNDED, "black"));
    (shape, color, label)
}

/// Allocations, frees and copies. `None` for the other kinds.
fn memory_label(
    record: &InstructionRecord,
    _recorder: &InstructionRecorder,
    names: BufferNames<'_>,
    label: &mut String,
) -> Option<(&'static str, &'static str)> {
    use InstructionKind as K;
    let id = record.id();
    let name_of = |bid: BufferId| buffer_html(bid, names(bid).as_deref());
    Some(match (record.kind(), &record.detail) {
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
        _ => return None,
    })
}

/// Device kernels and host tasks. `None` for the other kinds.
fn kernel_label(
    record: &InstructionRecord,
    _recorder: &InstructionRecorder,
    names: BufferNames<'_>,
    label: &mut String,
) -> Option<(&'static str, &'static str)> {
    use InstructionKind as K;
    let id = record.id();
    let name_of = |bid: BufferId| buffer_html(bid, names(bid).as_deref());
    Some(match (record.kind(), &record.detail) {
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
            kernel_tail(label, detail, "device kernel", task.name());
            let _ = write!(label, "<br/>on {device} {}", fmt_box(execution_box));
            kernel_accesses(label, detail, accesses, &name_of);
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
            kernel_tail(label, detail, "host task", task.name());
            let _ = write!(label, "<br/>on host {}", fmt_box(execution_box));
            kernel_accesses(label, detail, accesses, &name_of);
            (ROUNDED, "darkorange2")
        }
        _ => return None,
    })
}

/// Sends. `None` for the other kinds.
fn send_label(
    record: &InstructionRecord,
    _recorder: &InstructionRecorder,
    names: BufferNames<'_>,
    label: &mut String,
) -> Option<(&'static str, &'static str)> {
    use InstructionKind as K;
    let id = record.id();
    let name_of = |bid: BufferId| buffer_html(bid, names(bid).as_deref());
    Some(match (record.kind(), &record.detail) {
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
        _ => return None,
    })
}

/// Receives: plain, split, awaited parts and gathers. `None` for the other kinds.
fn receive_label(
    record: &InstructionRecord,
    recorder: &InstructionRecorder,
    names: BufferNames<'_>,
    label: &mut String,
) -> Option<(&'static str, &'static str)> {
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
    Some(match (record.kind(), &record.detail) {
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
        _ => return None,
    })
}

/// Reduction instructions. `None` for the other kinds.
fn reduction_label(
    record: &InstructionRecord,
    _recorder: &InstructionRecorder,
    names: BufferNames<'_>,
    label: &mut String,
) -> Option<(&'static str, &'static str)> {
    use InstructionKind as K;
    let id = record.id();
    let name_of = |bid: BufferId| buffer_html(bid, names(bid).as_deref());
    Some(match (record.kind(), &record.detail) {
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
        _ => return None,
    })
}

/// Fences, host-object and collective-group bookkeeping, horizons and epochs. `None` for the other kinds.
fn synchronization_label(
    record: &InstructionRecord,
    _recorder: &InstructionRecorder,
    names: BufferNames<'_>,
    label: &mut String,
) -> Option<(&'static str, &'static str)> {
    use InstructionKind as K;
    let id = record.id();
    let name_of = |bid: BufferId| buffer_html(bid, names(bid).as_deref());
    Some(match (record.kind(), &record.detail) {
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
            garbage_lines(label, garbage);
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
            garbage_lines(label, garbage);
            (ROUNDED, "black")
        }
        _ => return None,
    })
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
