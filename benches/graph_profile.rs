//! Not a criterion benchmark: a small driver that runs the graph benchmark bodies a fixed number
//! of times, for instruction counting under callgrind (deterministic on a noisy machine).
//!
//! `graph_profile <task|command|command-tm> <topology|handling|all> <nodes> <iterations>`; the
//! topology bodies are those of `benches/common/topologies.rs`, built in the same contexts as
//! `benches/task_graph.rs` (host tasks, one node) and `benches/command_graph.rs` (device
//! kernels, node 0 of `nodes`; `command-tm` runs that context's task manager alone, the share of
//! a `command` figure that is not the command graph). Per-run instructions:
//! (count(k) - count(1)) / (k - 1).
//!
//! `graph_profile command-digest <topology|all> <nodes> <node>` prints, per topology, a digest of
//! node `node`'s command graph (every command's `Debug` form: id, task, kind, dependencies, each
//! dependency list sorted), to check that a change to the generator leaves the graphs of every
//! node count as they were.

mod common;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::hint::black_box;
use std::sync::Arc;

use celerity::types::NodeId;
use parking_lot::Mutex;

use common::contexts::{CommandGraphCtx, TaskGraphCtx, generate_and_delete_tasks};
use common::digest::sorted_dependency_lists;
use common::topologies::{self, TopologyContext};

/// Runs the topologies whose name starts with `filter` (or all) once in fresh contexts.
fn run_topologies<C: TopologyContext>(filter: &str, new: impl Fn() -> C) {
    for (name, build) in topologies::all::<C>() {
        if filter == "all" || name.starts_with(filter) {
            let mut ctx = new();
            build(&mut ctx);
            drop(black_box(ctx));
        }
    }
}

/// Prints a digest of node `node`'s command graph for every topology matching `filter`.
fn print_command_digests(filter: &str, nodes: usize, node: u64) {
    for (name, build) in topologies::all::<CommandGraphCtx>() {
        if filter == "all" || name.starts_with(filter) {
            let digest = Arc::new(Mutex::new((DefaultHasher::new(), 0usize)));
            let sink = Arc::clone(&digest);
            let mut ctx = CommandGraphCtx::observed(nodes, NodeId(node), move |batch| {
                let mut sink = sink.lock();
                for cmd in batch {
                    sorted_dependency_lists(&format!("{cmd:?}")).hash(&mut sink.0);
                    sink.1 += 1;
                }
            });
            build(&mut ctx);
            drop(ctx);
            let (hasher, count) = &*digest.lock();
            println!(
                "{name} nodes {nodes} node {node}: {count} commands, digest {:016x}",
                hasher.finish()
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.len() < 4 {
        eprintln!(
            "usage: graph_profile <task|command|command-tm> <topology|handling|all> <nodes> <iterations>\n       graph_profile command-digest <topology|all> <nodes> <node>"
        );
        return;
    }
    if args[0] == "command-digest" {
        let node = args[3].parse().expect("node");
        print_command_digests(&args[1], args[2].parse().expect("nodes"), node);
        return;
    }
    let command = args[0].starts_with("command");
    let build_commands = args[0] != "command-tm";
    let nodes: usize = args[2].parse().expect("nodes");
    let iterations: usize = args[3].parse().expect("iterations");
    for _ in 0..iterations {
        match (args[1].as_str(), command) {
            ("handling", _) => drop(black_box(generate_and_delete_tasks())),
            (filter, true) => {
                run_topologies(filter, || CommandGraphCtx::new(nodes, build_commands))
            }
            (filter, false) => run_topologies(filter, TaskGraphCtx::new),
        }
    }
}
