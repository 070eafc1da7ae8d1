//! Observability through the whole runtime: graphs written at shutdown (one and two in-process
//! nodes, Graphviz and JSON), the trace file, and stall reports of deliberately stuck programs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::backend::event::{AsyncEvent, EventCompleter};
use crate::backend::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use crate::comm::in_process::InProcessCommunicator;
use crate::comm::{Communicator, InboundPilot, OutboundPilot, Stride};
use crate::error::Result;
use crate::grid::{Id, Range};
use crate::runtime::Runtime;
use crate::runtime::config::{Config, DeviceSelection, GraphFormat, Lookahead, SchedulerThreads};
use crate::task::{CommandGroup, RangeMapper, TaskSpec};
use crate::types::{BufferId, MessageId, NodeId};

pub(super) fn launcher(f: impl Fn(&KernelInvocation) + Send + Sync + 'static) -> Launcher {
    Arc::new(move |inv: &KernelInvocation, _: &LaunchEnvironment| {
        f(inv);
        Ok(())
    })
}

pub(super) fn scratch_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "celerity-obs-{}-{name}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(super) fn base_config() -> Config {
    Config {
        devices: DeviceSelection::Host(1),
        lookahead: Lookahead::None,
        ..Config::default()
    }
}

/// A device kernel over the 16 elements of the buffers below.
pub(super) fn kernel_over_16() -> TaskSpec {
    TaskSpec::DeviceKernel {
        dims: 1,
        range: Range::new(16, 1, 1),
        offset: Id::default(),
    }
}

/// `produce` (device kernel, discard_write one_to_one) then `consume` (host task reading all)
/// of a 16-element buffer; on two nodes each sends its half to the other.
fn producer_consumer(rt: &mut Runtime, consume: Option<Launcher>) -> BufferId {
    let b = rt
        .create_buffer(1, Range::new(16, 1, 1), 4, 4, None)
        .unwrap();
    rt.set_buffer_name(b, "data").unwrap();
    rt.submit(
        kernel_over_16(),
        CommandGroup::new()
            .discard_write(b, RangeMapper::OneToOne)
            .name("produce"),
        launcher(|_| {}),
    )
    .unwrap();
    rt.submit(
        TaskSpec::host(1, Range::new(16, 1, 1)),
        CommandGroup::new()
            .read(b, RangeMapper::All)
            .name("consume"),
        consume.unwrap_or_else(|| launcher(|_| {})),
    )
    .unwrap();
    b
}

/// Runs `program` on `n` in-process nodes (one thread each) and returns what each returned.
pub(super) fn on_nodes<T: Send + 'static>(
    comms: Vec<Box<dyn Communicator>>,
    config: Config,
    program: impl Fn(NodeId, Runtime) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let program = Arc::new(program);
    let threads: Vec<_> = comms
        .into_iter()
        .map(|comm| {
            let (config, program) = (config.clone(), program.clone());
            std::thread::spawn(move || {
                let node = comm.local_node();
                let rt = Runtime::start_with_communicator(config, comm).unwrap();
                program(node, rt)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

pub(super) fn fabric(n: usize) -> Vec<Box<dyn Communicator>> {
    InProcessCommunicator::fabric(n)
        .into_iter()
        .map(|c| Box::new(c) as Box<dyn Communicator>)
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn renders_with_dot(path: &Path) {
    let Ok(output) = std::process::Command::new("dot")
        .arg("-Tsvg")
        .arg(path)
        .output()
    else {
        eprintln!("graphviz is not installed (scripts/setup.sh installs it); not rendering");
        return;
    };
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn recording_is_off_unless_print_graphs_is_on() {
    let mut rt = Runtime::start(base_config()).unwrap();
    assert!(rt.task_manager().recorder().is_none());
    rt.shutdown().unwrap();
    let mut rt = Runtime::start(Config {
        print_graphs: true,
        graph_dir: scratch_dir("on"),
        ..base_config()
    })
    .unwrap();
    assert!(rt.task_manager().recorder().is_some());
    rt.shutdown().unwrap();
}

#[test]
fn print_graphs_gathers_command_graphs_onto_node_0_and_every_node_writes_its_instruction_graph() {
    let dir = scratch_dir("dot");
    let config = Config {
        print_graphs: true,
        graph_dir: dir.clone(),
        ..base_config()
    };
    on_nodes(fabric(2), config, |_, mut rt| {
        producer_consumer(&mut rt, None);
        rt.shutdown().unwrap();
    });
    let tdag = read(&dir.join("celerity_tdag.dot"));
    let cdag = read(&dir.join("celerity_cdag.dot"));
    let idag = read(&dir.join("celerity_idag_node0.dot"));
    let idag1 = read(&dir.join("celerity_idag_node1.dot"));
    assert!(idag1.contains("Instruction Graph on N1"), "{idag1}");
    assert!(idag1.contains("<b>send</b> T2.B0<br/>to N0"), "{idag1}");
    assert!(
        tdag.contains(r#"T1 "produce"<br/><b>device-compute</b>"#),
        "{tdag}"
    );
    assert!(
        tdag.contains(r#"<i>read</i> B0 "data" {[0,0,0] - [16,1,1]}"#),
        "{tdag}"
    );
    for node in [0, 1] {
        assert!(cdag.contains(&format!("cluster_id_{node}_1")), "{cdag}");
        assert!(cdag.contains("<b>push</b> T2.B0"), "{cdag}");
        assert!(cdag.contains(&format!("C2 on N{node}")), "{cdag}");
    }
    assert_eq!(cdag.matches("digraph").count(), 1);
    assert!(idag.contains("<b>send</b> T2.B0<br/>to N1"), "{idag}");
    assert!(idag.contains("<b>receive</b> T2.B0"), "{idag}");
    assert!(idag.contains("<b>pilot</b> to N1"), "{idag}");
    for file in [
        "celerity_tdag.dot",
        "celerity_cdag.dot",
        "celerity_idag_node0.dot",
        "celerity_idag_node1.dot",
    ] {
        renders_with_dot(&dir.join(file));
    }
}

/// The scheduler's two stages on threads of their own build the same graphs, byte for byte, as
/// on one thread (two nodes, a transfer each way, horizons, lookahead on).
#[test]
fn two_scheduler_threads_build_the_same_graphs_as_one() {
    let graphs = |threads: SchedulerThreads| {
        let dir = scratch_dir("scheduler-threads");
        let config = Config {
            print_graphs: true,
            graph_dir: dir.clone(),
            scheduler_threads: threads,
            lookahead: Lookahead::Auto,
            devices: DeviceSelection::Host(2),
            ..base_config()
        };
        on_nodes(fabric(2), config, |_, mut rt| {
            let b = producer_consumer(&mut rt, None);
            for _ in 0..6 {
                rt.submit(
                    kernel_over_16(),
                    CommandGroup::new()
                        .read(b, RangeMapper::All)
                        .access(b, crate::task::AccessMode::ReadWrite, RangeMapper::OneToOne)
                        .name("step"),
                    launcher(|_| {}),
                )
                .unwrap();
            }
            rt.shutdown().unwrap();
        });
        [
            "celerity_cdag.dot",
            "celerity_idag_node0.dot",
            "celerity_idag_node1.dot",
        ]
        .map(|file| read(&dir.join(file)))
    };
    let one = graphs(SchedulerThreads::One);
    let two = graphs(SchedulerThreads::Two);
    assert!(one[0].contains("<b>push</b>"), "{}", one[0]);
    for (one, two) in one.iter().zip(&two) {
        assert_eq!(one, two);
    }
}

#[test]
fn graph_tasks_prints_only_the_chosen_tasks() {
    let dir = scratch_dir("graph-tasks");
    let config = Config {
        print_graphs: true,
        graph_dir: dir.clone(),
        graph_format: GraphFormat::Json,
        graph_tasks: Some((0, 1)),
        ..base_config()
    };
    on_nodes(fabric(2), config, |_, mut rt| {
        producer_consumer(&mut rt, None);
        rt.shutdown().unwrap();
    });
    for file in [
        "celerity_tdag.json",
        "celerity_cdag.json",
        "celerity_idag_node0.json",
        "celerity_idag_node1.json",
    ] {
        let doc: serde_json::Value = serde_json::from_str(&read(&dir.join(file))).unwrap();
        let nodes = doc["nodes"].as_array().unwrap();
        assert!(nodes.iter().any(|n| n["name"] == "produce"), "{file}");
        assert!(!nodes.iter().any(|n| n["name"] == "consume"), "{file}");
        assert!(
            nodes
                .iter()
                .all(|n| n["task"].as_u64().is_none_or(|t| t <= 1)),
            "{file}"
        );
        let ids: Vec<&serde_json::Value> = nodes.iter().map(|n| &n["id"]).collect();
        for edge in doc["edges"].as_array().unwrap() {
            assert!(
                ids.contains(&&edge["from"]) && ids.contains(&&edge["to"]),
                "{file}: {edge}"
            );
        }
    }
}

#[test]
fn json_graphs_name_every_node_and_edge() {
    let dir = scratch_dir("json");
    let config = Config {
        print_graphs: true,
        graph_dir: dir.clone(),
        graph_format: GraphFormat::Json,
        ..base_config()
    };
    on_nodes(fabric(2), config, |_, mut rt| {
        producer_consumer(&mut rt, None);
        rt.shutdown().unwrap();
    });
    let parse = |name: &str| -> serde_json::Value {
        serde_json::from_str(&read(&dir.join(name))).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let kinds = |doc: &serde_json::Value| -> Vec<String> {
        doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["kind"].as_str().unwrap().to_owned())
            .collect()
    };
    let tdag = parse("celerity_tdag.json");
    assert_eq!(tdag["graph"], "task");
    let produce = tdag["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "produce")
        .expect("the produce task");
    assert_eq!(produce["kind"], "device_compute");
    assert_eq!(produce["label"], "T1");
    assert_eq!(produce["accesses"][0]["mode"], "discard_write");
    assert!(
        tdag["edges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["from"] == 1
                && e["to"] == 2
                && e["kind"] == "true"
                && e["origin"] == "dataflow")
    );

    let cdag = parse("celerity_cdag.json");
    assert_eq!(cdag["graph"], "command");
    let ckinds = kinds(&cdag);
    for kind in ["epoch", "execution", "push", "await_push"] {
        assert!(ckinds.iter().any(|k| k == kind), "{kind} in {ckinds:?}");
    }
    let nodes: Vec<u64> = cdag["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node"].as_u64().unwrap())
        .collect();
    assert!(nodes.contains(&0) && nodes.contains(&1));
    for edge in cdag["edges"].as_array().unwrap() {
        assert!(edge["kind"].is_string() && edge["origin"].is_string() && edge["node"].is_u64());
    }

    let idag = parse("celerity_idag_node0.json");
    assert_eq!(idag["graph"], "instruction");
    let ikinds = kinds(&idag);
    for kind in [
        "alloc",
        "copy",
        "send",
        "receive",
        "device_kernel",
        "host_task",
        "epoch",
    ] {
        assert!(ikinds.iter().any(|k| k == kind), "{kind} in {ikinds:?}");
    }
    let send = idag["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "send")
        .unwrap();
    assert_eq!(send["peer"], 1);
    assert!(
        idag["edges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["origin"] == "allocation_lifetime")
    );
}

pub(super) fn events(path: &Path) -> Vec<serde_json::Value> {
    let doc: serde_json::Value = serde_json::from_str(&read(path)).unwrap();
    doc["traceEvents"].as_array().unwrap().clone()
}

fn track_names(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_trace_holds_instructions_on_their_lanes_with_tasks_bytes_and_flows() {
    trace_of_producer_consumer(SchedulerThreads::One, &[]);
}

#[test]
fn with_two_scheduler_threads_the_command_graph_has_its_own_track() {
    trace_of_producer_consumer(SchedulerThreads::Two, &["scheduler (command graph)"]);
}

fn trace_of_producer_consumer(threads: SchedulerThreads, more_tracks: &[&str]) {
    let dir = scratch_dir("trace");
    let path = dir.join("trace.json");
    let config = Config {
        trace_file: Some(path.clone()),
        scheduler_threads: threads,
        ..base_config()
    };
    on_nodes(fabric(2), config, |_, mut rt| {
        producer_consumer(&mut rt, None);
        rt.shutdown().unwrap();
    });
    // Node 0 gathered both nodes' events into one file; no per-node files.
    assert!(!dir.join("trace.json.N1").exists());
    let all = events(&path);
    check_trace_event_format(&all);
    for node in [0u64, 1] {
        let events: Vec<serde_json::Value> =
            all.iter().filter(|e| e["pid"] == node).cloned().collect();
        let tracks = track_names(&events);
        let expected = [
            "executor",
            "executor (busy)",
            "scheduler",
            "allocation queue",
            "communication",
        ];
        for &track in expected.iter().chain(more_tracks) {
            assert!(tracks.iter().any(|t| t == track), "{track} in {tracks:?}");
        }
        assert!(tracks.iter().any(|t| t == "D0 lane 0"), "{tracks:?}");
        assert!(
            tracks.iter().any(|t| t.starts_with("host lane")),
            "{tracks:?}"
        );
        assert!(events.iter().all(|e| e["pid"] == node));
        let kernel = events
            .iter()
            .find(|e| e["cat"] == "kernel")
            .expect("a kernel slice");
        assert_eq!(kernel["ph"], "X");
        assert_eq!(kernel["args"]["task"], "T1");
        assert_eq!(kernel["args"]["task_name"], "produce");
        assert!(kernel["dur"].as_f64().unwrap() >= 0.0);
        let send = events
            .iter()
            .find(|e| e["cat"] == "send" && e["ph"] == "b")
            .expect("a send");
        assert_eq!(send["args"]["bytes"], 32);
        assert_eq!(send["args"]["peer"], 1 - node);
        assert!(
            events
                .iter()
                .any(|e| e["cat"] == "receive" && e["ph"] == "b")
        );
        for cat in ["alloc", "host_task", "epoch", "scheduler", "busy"] {
            assert!(events.iter().any(|e| e["cat"] == cat), "{cat}");
        }
        assert!(events.iter().any(|e| e["ph"] == "s") && events.iter().any(|e| e["ph"] == "f"));
    }
}

/// Checks every event against the Chrome trace-event format as Perfetto reads it: the fields
/// each phase needs, with their types, and every async begin / flow start matched once.
fn check_trace_event_format(events: &[serde_json::Value]) {
    use std::collections::HashMap;
    let mut open_async: HashMap<(String, u64), usize> = HashMap::new();
    let mut flows: HashMap<u64, (usize, usize)> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        assert!(e["name"].is_string(), "name: {e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "pid/tid: {e}");
        if ph == "M" {
            let name = e["name"].as_str().unwrap();
            assert!(
                ["process_name", "thread_name", "thread_sort_index"].contains(&name),
                "metadata {e}"
            );
            assert!(e["args"].is_object(), "metadata args: {e}");
            continue;
        }
        assert!(e["ts"].as_f64().is_some_and(f64::is_finite), "ts: {e}");
        assert!(e["cat"].is_string(), "cat: {e}");
        match ph {
            "X" => assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "dur: {e}"),
            "b" | "e" => {
                let key = (
                    e["cat"].as_str().unwrap().to_owned(),
                    e["id"].as_u64().unwrap(),
                );
                let count = open_async.entry(key).or_default();
                if ph == "b" {
                    *count += 1;
                } else {
                    assert!(*count > 0, "end without begin: {e}");
                    *count -= 1;
                }
            }
            "s" | "f" => {
                let entry = flows.entry(e["id"].as_u64().unwrap()).or_default();
                if ph == "s" {
                    entry.0 += 1
                } else {
                    entry.1 += 1
                }
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
        if let Some(args) = e.get("args") {
            assert!(args.is_object(), "args: {e}");
        }
    }
    assert!(
        open_async.values().all(|&n| n == 0),
        "unbalanced async slices"
    );
    assert!(
        flows.values().all(|&(s, f)| s == 1 && f == 1),
        "unmatched flows"
    );
}

#[test]
fn two_nodes_traces_share_one_timeline_in_one_file() {
    let dir = scratch_dir("aligned-trace");
    let path = dir.join("trace.json");
    let config = Config {
        trace_file: Some(path.clone()),
        ..base_config()
    };
    // Node 1 starts 300 ms after node 0: without the alignment its timestamps would run 300 ms
    // behind, and its receive would seem to end long before node 0's send began. With it, each
    // send (which completes when its payload is handed over) ends before the matching receive
    // ends on the other node, on one timeline known to within the uncertainty the runtime
    // measured and wrote into the file (the bracket of its clock-offset measurement).
    let threads: Vec<_> = fabric(2)
        .into_iter()
        .map(|comm| {
            let config = config.clone();
            std::thread::spawn(move || {
                if comm.local_node() == NodeId(1) {
                    std::thread::sleep(Duration::from_millis(300));
                }
                let mut rt = Runtime::start_with_communicator(config, comm).unwrap();
                producer_consumer(&mut rt, None);
                rt.shutdown().unwrap();
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let document: serde_json::Value = serde_json::from_str(&read(&path)).unwrap();
    let uncertainty: Vec<f64> = document["otherData"]["clock_uncertainty_us"]
        .as_array()
        .expect("the merged trace records its clock alignment")
        .iter()
        .map(|u| u.as_f64().unwrap())
        .collect();
    assert_eq!(uncertainty.len(), 2);
    assert_eq!(uncertainty[0], 0.0, "node 0's timeline is the reference");
    let all = events(&path);
    check_trace_event_format(&all);
    let time_of = |pid: u64, cat: &str, ph: &str| {
        let times: Vec<f64> = all
            .iter()
            .filter(|e| e["pid"] == pid && e["cat"] == cat && e["ph"] == ph)
            .map(|e| e["ts"].as_f64().unwrap())
            .collect();
        assert_eq!(times.len(), 1, "one {cat} {ph} on N{pid}");
        times[0]
    };
    for (sender, receiver) in [(0, 1), (1, 0)] {
        let send_end = time_of(sender, "send", "e");
        let receive_end = time_of(receiver, "receive", "e");
        let precision = uncertainty[sender as usize] + uncertainty[receiver as usize];
        println!(
            "N{sender}'s send ends {:.1} us before N{receiver}'s receive ends; alignment ± {precision:.1} us",
            receive_end - send_end
        );
        assert!(
            send_end <= receive_end + precision,
            "N{sender}'s send ends at {send_end} us, after N{receiver}'s receive ended ({receive_end} us; alignment ± {precision} us)"
        );
    }
}

/// Waits until `rt` reported a stall (or fails after 20 s).
fn await_stall_report(rt: &Runtime) -> String {
    await_stall_report_where(rt, |_| true)
}

/// Waits until `rt` reported a stall whose report satisfies `wanted` (or fails after 20 s).
pub(super) fn await_stall_report_where(rt: &Runtime, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(report) = rt.stall_reports().into_iter().find(|r| wanted(r)) {
            return report;
        }
        assert!(
            Instant::now() < deadline,
            "no such stall report within 20 s: {:?}",
            rt.stall_reports()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Blocks until `flag` is set (a stuck task or node, released by the test).
pub(super) fn wait_for_release(flag: &AtomicBool) {
    while !flag.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_host_task_that_never_returns_is_named_in_the_stall_report() {
    let release = Arc::new(AtomicBool::new(false));
    let mut rt = Runtime::start(Config {
        stall_timeout: Duration::from_millis(300),
        ..base_config()
    })
    .unwrap();
    let flag = release.clone();
    let b = producer_consumer(&mut rt, Some(launcher(move |_| wait_for_release(&flag))));
    // Later work overwrites (in the same host allocation) what the stuck task reads, so it
    // waits for it.
    rt.submit(
        TaskSpec::host(1, Range::new(16, 1, 1)),
        CommandGroup::new()
            .read_write(b, RangeMapper::OneToOne)
            .name("after"),
        launcher(|_| {}),
    )
    .unwrap();
    let report = await_stall_report(&rt);
    release.store(true, Ordering::Release);
    rt.wait().unwrap();
    assert!(report.starts_with("stall on N0"), "{report}");
    let culprit = report
        .lines()
        .find(|l| l.contains(r#"host task of task T2 "consume": running on host lane 0"#))
        .unwrap_or_else(|| panic!("{report}"));
    let culprit_id = culprit.split_whitespace().next().unwrap();
    let waiter = report
        .lines()
        .find(|l| l.contains(r#"of task T3 "after""#))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        waiter.contains(&format!("waiting on {culprit_id}")),
        "{report}"
    );
    assert_eq!(rt.stall_reports().len(), 1, "once per stall");
    rt.shutdown().unwrap();
}

#[test]
fn a_program_far_ahead_of_a_stuck_task_leaves_its_backlog_outside_the_executor() {
    use crate::executor::live::MAX_INCOMPLETE_INSTRUCTIONS;
    let release = Arc::new(AtomicBool::new(false));
    let mut rt = Runtime::start(Config {
        stall_timeout: Duration::from_millis(300),
        ..base_config()
    })
    .unwrap();
    let b = rt
        .create_buffer(1, Range::new(16, 1, 1), 4, 4, None)
        .unwrap();
    let flag = release.clone();
    rt.submit(
        TaskSpec::host(1, Range::new(16, 1, 1)),
        CommandGroup::new()
            .discard_write(b, RangeMapper::OneToOne)
            .name("stuck"),
        launcher(move |_| wait_for_release(&flag)),
    )
    .unwrap();
    // every later task waits for the stuck one: a chain on the same elements
    let ran = Arc::new(AtomicUsize::new(0));
    let later = 3 * MAX_INCOMPLETE_INSTRUCTIONS;
    for _ in 0..later {
        let ran = ran.clone();
        rt.submit(
            TaskSpec::host(1, Range::new(16, 1, 1)),
            CommandGroup::new().read_write(b, RangeMapper::OneToOne),
            launcher(move |_| {
                ran.fetch_add(1, Ordering::Relaxed);
            }),
        )
        .unwrap();
    }
    // A report comes once nothing completed or arrived for the stall timeout: normally once the
    // executor holds its limit, earlier (and again later) only if the scheduler paused that long.
    await_stall_report_where(&rt, |r| held_instructions(r) >= MAX_INCOMPLETE_INSTRUCTIONS);
    release.store(true, Ordering::Release);
    rt.wait().unwrap();
    assert_eq!(ran.load(Ordering::Relaxed), later, "every later task ran");
    for report in rt.stall_reports() {
        // the last batch taken may carry the holding past the limit by a few instructions
        assert!(
            held_instructions(&report) < MAX_INCOMPLETE_INSTRUCTIONS + 64,
            "the executor held more than {MAX_INCOMPLETE_INSTRUCTIONS} instructions: {report}"
        );
    }
    rt.shutdown().unwrap();
}

/// The number of instructions a stall report counts as pending.
pub(super) fn held_instructions(report: &str) -> usize {
    report
        .split("; ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{report}"))
}

/// Node 0's communicator, holding back its first payload until released.
pub(super) struct HoldFirstPayload {
    inner: InProcessCommunicator,
    release: Arc<AtomicBool>,
    held: Option<(NodeId, MessageId, usize, Stride, EventCompleter)>,
    done: bool,
}

impl HoldFirstPayload {
    pub(super) fn new(inner: InProcessCommunicator, release: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            release,
            held: None,
            done: false,
        }
    }
}

impl Communicator for HoldFirstPayload {
    fn num_nodes(&self) -> usize {
        self.inner.num_nodes()
    }
    fn local_node(&self) -> NodeId {
        self.inner.local_node()
    }
    fn send_outbound_pilot(&mut self, pilot: &OutboundPilot) -> Result<()> {
        self.inner.send_outbound_pilot(pilot)
    }
    fn poll_inbound_pilots(&mut self) -> Result<Vec<InboundPilot>> {
        self.inner.poll_inbound_pilots()
    }
    fn broadcast_control(&mut self, message: &[u8]) -> Result<()> {
        self.inner.broadcast_control(message)
    }
    fn take_control_messages(&mut self) -> Vec<(NodeId, Vec<u8>)> {
        self.inner.take_control_messages()
    }
    unsafe fn send_payload(
        &mut self,
        to: NodeId,
        id: MessageId,
        base: *const u8,
        stride: Stride,
    ) -> Result<AsyncEvent> {
        if self.done {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { self.inner.send_payload(to, id, base, stride) };
        }
        self.done = true;
        let (event, completer) = AsyncEvent::pending();
        self.held = Some((to, id, base as usize, stride, completer));
        Ok(event)
    }
    unsafe fn receive_payload(
        &mut self,
        from: NodeId,
        id: MessageId,
        base: *mut u8,
        stride: Stride,
    ) -> Result<AsyncEvent> {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.inner.receive_payload(from, id, base, stride) }
    }
    fn poll(&mut self) -> Result<()> {
        if self.release.load(Ordering::Acquire)
            && let Some((to, id, base, stride, completer)) = self.held.take()
        {
            // SAFETY: the held event is incomplete, so the caller still keeps the source
            // allocation valid and unwritten; the in-process send copies it at once.
            let event = unsafe { self.inner.send_payload(to, id, base as *const u8, stride) }?;
            completer.complete(
                event
                    .take_outcome()
                    .expect("in-process sends complete at once"),
            );
        }
        self.inner.poll()
    }
    fn abandon_transfers(&mut self) -> bool {
        if let Some((.., completer)) = self.held.take() {
            completer.complete(Err(crate::comm::abandoned_transfer()));
        }
        self.inner.abandon_transfers()
    }
    fn collective_clone(&mut self) -> Result<Box<dyn Communicator>> {
        self.inner.collective_clone()
    }
    fn collective_barrier(&mut self) -> Result<()> {
        self.inner.collective_barrier()
    }
    fn collective_gather_bytes(
        &mut self,
        root: NodeId,
        bytes: &[u8],
    ) -> Result<Option<Vec<Vec<u8>>>> {
        self.inner.collective_gather_bytes(root, bytes)
    }
}

#[test]
fn a_payload_that_never_arrives_is_named_with_its_transfer_and_peer_on_both_nodes() {
    let release = Arc::new(AtomicBool::new(false));
    let mut endpoints = InProcessCommunicator::fabric(2);
    let node1 = endpoints.pop().unwrap();
    let node0 = endpoints.pop().unwrap();
    let comms: Vec<Box<dyn Communicator>> = vec![
        Box::new(HoldFirstPayload::new(node0, release.clone())),
        Box::new(node1),
    ];
    let config = Config {
        stall_timeout: Duration::from_millis(300),
        ..base_config()
    };
    let reported = Arc::new(AtomicUsize::new(0));
    let (counter, flag) = (reported.clone(), release.clone());
    // The payload is released once both nodes reported; then everything completes.
    let watcher = std::thread::spawn(move || {
        while reported.load(Ordering::Acquire) < 2 {
            std::thread::sleep(Duration::from_millis(5));
        }
        release.store(true, Ordering::Release);
    });
    let reports = on_nodes(comms, config, move |_, mut rt| {
        producer_consumer(&mut rt, None);
        let report = await_stall_report(&rt);
        counter.fetch_add(1, Ordering::AcqRel);
        wait_for_release(&flag);
        rt.wait().unwrap();
        rt.shutdown().unwrap();
        report
    });
    watcher.join().unwrap();
    let (sender, receiver) = (&reports[0], &reports[1]);
    assert!(sender.starts_with("stall on N0"), "{sender}");
    assert!(
        sender.contains("send of msg0 (32 bytes) to N1: running on the executor"),
        "{sender}"
    );
    assert!(receiver.starts_with("stall on N1"), "{receiver}");
    assert!(
        receiver.contains(
            "receive of transfer T2.B0: running on the executor / communicator; awaits transfer T2.B0: pilot msg0 from N0 for [0,0,0] - [8,1,1] received, payload not arrived"
        ),
        "{receiver}"
    );
    assert!(
        receiver.contains(r#"host task of task T2 "consume": waiting on I"#),
        "{receiver}"
    );
}
