//! The files written at shutdown: the graphs of `print_graphs=on` (in `graph_dir`, Graphviz or
//! JSON after `graph_format`) and the trace of `trace_file`. Names are listed in
//! `docs/graphs.md`.

use std::path::{Path, PathBuf};

use super::json::JsonParts;
use super::trace::{ClockMap, TraceLog};
use super::{graphviz, json};
use crate::command::CommandRecorder;
use crate::error::{Error, ErrorKind, Result};
use crate::instruction::InstructionRecorder;
use crate::policy::GraphFormat;
use crate::task::TaskRecorder;
use crate::types::{BufferId, NodeId};

/// The file extension of a format.
pub fn extension(format: GraphFormat) -> &'static str {
    match format {
        GraphFormat::Dot => "dot",
        GraphFormat::Json => "json",
    }
}

/// `celerity_tdag.dot`, `celerity_cdag.dot`, `celerity_idag_node0.dot` (or `.json`).
pub fn graph_paths(dir: &Path, format: GraphFormat, node: NodeId) -> [PathBuf; 3] {
    let ext = extension(format);
    [
        dir.join(format!("celerity_tdag.{ext}")),
        dir.join(format!("celerity_cdag.{ext}")),
        dir.join(format!("celerity_idag_node{}.{ext}", node.0)),
    ]
}

/// This node's command graph, in the form gathered onto node 0.
pub fn command_graph_bytes(recorder: &CommandRecorder, format: GraphFormat) -> Vec<u8> {
    match format {
        GraphFormat::Dot => graphviz::command_graph_body(recorder).into_bytes(),
        GraphFormat::Json => json::command_graph(recorder).to_bytes(),
    }
}

fn io_error(path: &Path, error: std::io::Error) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!("cannot write {}: {error}", path.display()),
    )
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    }
    std::fs::write(path, text).map_err(|e| io_error(path, e))
}

/// Buffer names as the task records know them.
fn buffer_names(tasks: &TaskRecorder) -> impl Fn(BufferId) -> Option<String> + '_ {
    move |bid| {
        tasks.records().iter().rev().find_map(|t| {
            t.accesses
                .iter()
                .find(|a| a.bid == bid && a.buffer_name.is_some())
                .and_then(|a| a.buffer_name.clone())
        })
    }
}

/// The text of `node`'s instruction graph.
fn instruction_graph_text(
    format: GraphFormat,
    node: NodeId,
    tasks: &TaskRecorder,
    instructions: &InstructionRecorder,
) -> String {
    let names = buffer_names(tasks);
    let title = format!("Instruction Graph on {node}");
    match format {
        GraphFormat::Dot => graphviz::print_instruction_graph(instructions, &names, &title),
        GraphFormat::Json => json::document(
            "instruction",
            &title,
            &[json::instruction_graph(instructions, node, &names)],
        ),
    }
}

/// What every node other than 0 prints: its own instruction graph
/// (`celerity_idag_node<k>`). Returns the path written.
pub fn write_instruction_graph(
    dir: &Path,
    format: GraphFormat,
    node: NodeId,
    tasks: &TaskRecorder,
    instructions: &InstructionRecorder,
) -> Result<PathBuf> {
    let [_, _, idag_path] = graph_paths(dir, format, node);
    write(
        &idag_path,
        &instruction_graph_text(format, node, tasks, instructions),
    )?;
    Ok(idag_path)
}

/// What node 0 prints: the task graph, every node's command graph (as gathered, in node
/// order) and its own instruction graph. Returns the paths written.
pub fn write_graphs(
    dir: &Path,
    format: GraphFormat,
    node: NodeId,
    tasks: &TaskRecorder,
    command_graphs: &[Vec<u8>],
    instructions: &InstructionRecorder,
) -> Result<Vec<PathBuf>> {
    let [tdag_path, cdag_path, _] = graph_paths(dir, format, node);
    let (tdag, cdag) = match format {
        GraphFormat::Dot => {
            let bodies: Vec<String> = command_graphs
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect();
            (
                graphviz::print_task_graph(tasks, "Task Graph"),
                graphviz::combine_command_graphs(&bodies, "Command Graph"),
            )
        }
        GraphFormat::Json => {
            let parts: Vec<JsonParts> = command_graphs
                .iter()
                .map(|b| JsonParts::from_bytes(b))
                .collect();
            (
                json::document("task", "Task Graph", &[json::task_graph(tasks, node)]),
                json::document("command", "Command Graph", &parts),
            )
        }
    };
    write(&tdag_path, &tdag)?;
    write(&cdag_path, &cdag)?;
    let idag_path = write_instruction_graph(dir, format, node, tasks, instructions)?;
    Ok(vec![tdag_path, cdag_path, idag_path])
}

/// `PATH` on node 0, `PATH.N<k>` on node k.
pub fn trace_path(path: &Path, node: NodeId) -> PathBuf {
    if node.0 == 0 {
        path.to_owned()
    } else {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".N{}", node.0));
        PathBuf::from(name)
    }
}

/// What a node contributes to the merged trace: its events, one per line.
pub fn trace_part(log: &TraceLog) -> Vec<u8> {
    log.to_events().join("\n").into_bytes()
}

/// Node 0 writes the parts of all nodes (index = node) to `path`, each mapped onto node 0's
/// timeline by its `clocks` entry. The alignment's precision per node is recorded in the
/// document's `otherData` (`clock_uncertainty_us`, an array indexed by node).
pub fn write_merged_trace(path: &Path, parts: &[Vec<u8>], clocks: &[ClockMap]) -> Result<PathBuf> {
    let mut events = Vec::new();
    for (node, part) in parts.iter().enumerate() {
        let map = clocks.get(node).copied().unwrap_or(ClockMap::IDENTITY);
        let text = String::from_utf8_lossy(part);
        events.extend(
            text.lines()
                .filter(|l| !l.is_empty())
                .map(|l| super::trace::map_times(l, &map)),
        );
    }
    let uncertainty: Vec<String> = clocks
        .iter()
        .map(|c| format!("{:.3}", c.uncertainty_us))
        .collect();
    let document = format!(
        "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"clock_uncertainty_us\":[{}]}},\"traceEvents\":[\n{}\n]}}\n",
        uncertainty.join(","),
        events.join(",\n")
    );
    write(path, &document)?;
    Ok(path.to_owned())
}

/// Writes this node's trace to its file; returns the path.
pub fn write_trace(path: &Path, log: &TraceLog, node: NodeId) -> Result<PathBuf> {
    let path = trace_path(path, node);
    write(&path, &log.to_json())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_say_which_graph_and_node() {
        let [t, c, i] = graph_paths(Path::new("out"), GraphFormat::Json, NodeId(0));
        assert_eq!(t, Path::new("out/celerity_tdag.json"));
        assert_eq!(c, Path::new("out/celerity_cdag.json"));
        assert_eq!(i, Path::new("out/celerity_idag_node0.json"));
        assert_eq!(
            trace_path(Path::new("t.json"), NodeId(0)),
            Path::new("t.json")
        );
        assert_eq!(
            trace_path(Path::new("t.json"), NodeId(3)),
            Path::new("t.json.N3")
        );
    }
}
