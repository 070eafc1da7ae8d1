//! Golden-file tests of the Graphviz printers (in the spirit of Celerity's
//! `print_graph_tests.cc`): small programs through a recording task manager, the command graph
//! generators of every node and node 0's instruction graph generator, printed and compared with
//! exact expected text.

use std::sync::{Arc, Mutex};

use super::*;
use crate::backend::system_info::SystemInfo;
use crate::command::{CommandGraphGenerator, CommandPolicies};
use crate::grid::Range;
use crate::instruction::{InstructionGraphGenerator, Policies};
use crate::policy::ErrorPolicy;
use crate::task::{
    CommandGroup, EpochAction, RangeMapper, Task, TaskManager, TaskManagerConfig, TaskSpec,
};

/// A task manager, one command graph generator per node and node 0's instruction graph
/// generator, all recording.
pub(crate) struct Graphs {
    pub tm: TaskManager,
    tasks: Arc<Mutex<Vec<Arc<Task>>>>,
    pub cdags: Vec<CommandGraphGenerator>,
    pub idag: InstructionGraphGenerator,
    next_bid: u64,
}

impl Graphs {
    pub fn new(num_nodes: usize, devices: usize) -> Self {
        let tasks: Arc<Mutex<Vec<Arc<Task>>>> = Arc::default();
        let sink = tasks.clone();
        let delegate = move |t: &Arc<Task>| sink.lock().unwrap().push(t.clone());
        let tm = TaskManager::new(
            TaskManagerConfig {
                num_collective_nodes: num_nodes,
                record: true,
                uninitialized_read: ErrorPolicy::Ignore,
                ..TaskManagerConfig::default()
            },
            Some(Box::new(delegate)),
        );
        let cdags = (0..num_nodes)
            .map(|n| {
                let mut generator = CommandGraphGenerator::new(
                    num_nodes,
                    NodeId(n as u64),
                    CommandPolicies {
                        uninitialized_read: ErrorPolicy::Ignore,
                        overlapping_write: ErrorPolicy::Ignore,
                    },
                )
                .unwrap();
                generator.enable_recording();
                generator
            })
            .collect();
        let idag = InstructionGraphGenerator::new(
            SystemInfo::with_devices(devices, true).unwrap(),
            NodeId(0),
            num_nodes,
            Policies::default(),
            Some(InstructionRecorder::new()),
        );
        let mut graphs = Self {
            tm,
            tasks,
            cdags,
            idag,
            next_bid: 0,
        };
        graphs.pump();
        graphs
    }

    fn pump(&mut self) {
        let tasks: Vec<_> = std::mem::take(&mut *self.tasks.lock().unwrap());
        for task in tasks {
            for (n, cdag) in self.cdags.iter_mut().enumerate() {
                for command in cdag.build_task(&task).unwrap() {
                    if n == 0 {
                        self.idag.compile(&command).unwrap();
                    }
                }
            }
        }
    }

    /// A 1-D buffer of `size` 4-byte elements named `name`.
    pub fn buffer(&mut self, size: usize, name: &str) -> BufferId {
        let bid = BufferId(self.next_bid);
        self.next_bid += 1;
        let range = Range::from_slice(&[size]);
        self.tm.notify_buffer_created(bid, 1, range, false);
        self.tm.notify_buffer_name_changed(bid, name);
        for cdag in &mut self.cdags {
            cdag.notify_buffer_created(bid, range, false);
            cdag.notify_buffer_name_changed(bid, name);
        }
        self.idag.notify_buffer_created(bid, range, 4, 4, None);
        self.idag.notify_buffer_name_changed(bid, name);
        bid
    }

    pub fn submit(&mut self, spec: TaskSpec, cg: CommandGroup) {
        self.tm.submit(spec, cg).unwrap();
        self.pump();
    }

    pub fn finish(&mut self) {
        self.tm.epoch(EpochAction::Shutdown, None).unwrap();
        self.pump();
    }

    pub fn names(&self) -> impl Fn(BufferId) -> Option<String> + '_ {
        |bid| {
            self.tm.recorder().unwrap().records().iter().find_map(|t| {
                t.accesses
                    .iter()
                    .find(|a| a.bid == bid)
                    .and_then(|a| a.buffer_name.clone())
            })
        }
    }
}

/// Producer (device kernel, discard_write) then consumer (host task, read) of one buffer.
pub(crate) fn producer_consumer(num_nodes: usize) -> Graphs {
    let mut g = Graphs::new(num_nodes, 1);
    let b = g.buffer(16, "data");
    g.submit(
        TaskSpec::device(1, Range::from_slice(&[16])),
        CommandGroup::new()
            .discard_write(b, RangeMapper::OneToOne)
            .name("produce"),
    );
    g.submit(
        TaskSpec::host(1, Range::from_slice(&[16])),
        CommandGroup::new()
            .read(b, RangeMapper::All)
            .name("consume"),
    );
    g.finish();
    g
}

fn dump(name: &str, text: &str) {
    if std::env::var_os("CELERITY_DUMP_GOLDEN").is_some() {
        println!("----- {name}\n{text}\n-----");
    }
}

#[test]
fn task_graph_golden() {
    let g = producer_consumer(1);
    let dot = print_task_graph(g.tm.recorder().unwrap(), "Task Graph");
    dump("tdag", &dot);
    assert_eq!(dot, TDAG);
}

#[test]
fn command_graph_of_two_nodes_golden() {
    let g = producer_consumer(2);
    let bodies: Vec<String> = g
        .cdags
        .iter()
        .map(|c| command_graph_body(c.recorder().unwrap()))
        .collect();
    let dot = combine_command_graphs(&bodies, "Command Graph");
    dump("cdag", &dot);
    assert_eq!(dot, CDAG);
}

#[test]
fn instruction_graph_golden() {
    let g = producer_consumer(2);
    let names = g.names();
    let dot = print_instruction_graph(g.idag.recorder().unwrap(), &names, "Instruction Graph");
    dump("idag", &dot);
    assert_eq!(dot, IDAG);
}

#[test]
fn graphs_render_with_graphviz_when_it_is_installed() {
    let Ok(probe) = std::process::Command::new("dot").arg("-V").output() else {
        eprintln!("graphviz (`dot`) is not installed; scripts/setup.sh installs it");
        return;
    };
    assert!(probe.status.success());
    let g = producer_consumer(2);
    let names = g.names();
    let bodies: Vec<String> = g
        .cdags
        .iter()
        .map(|c| command_graph_body(c.recorder().unwrap()))
        .collect();
    for dot in [
        print_task_graph(g.tm.recorder().unwrap(), "Task Graph"),
        combine_command_graphs(&bodies, "Command Graph"),
        print_instruction_graph(g.idag.recorder().unwrap(), &names, "Instruction Graph"),
    ] {
        use std::io::Write;
        let mut child = std::process::Command::new("dot")
            .arg("-Tsvg")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(dot.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && stderr.is_empty(),
            "{stderr}\n{dot}"
        );
        assert!(String::from_utf8_lossy(&output.stdout).contains("<svg"));
    }
}

const TDAG: &str = r##"digraph G{label=<Task Graph>;pad=0.2;
0[shape=ellipse label=<T0<br/><b>epoch</b> (init)>];
1[shape=box style=rounded label=<T1 "produce"<br/><b>device-compute</b> [0,0,0] - [16,1,1]<br/><i>discard_write</i> B0 "data" {[0,0,0] - [16,1,1]}>];
0->1[color=orchid];
2[shape=box style=rounded label=<T2 "consume"<br/><b>host-compute</b> [0,0,0] - [16,1,1]<br/><i>read</i> B0 "data" {[0,0,0] - [16,1,1]}>];
1->2[];
3[shape=ellipse label=<T3<br/><b>epoch</b> (shutdown)>];
2->3[color=orange];
}"##;
const CDAG: &str = r##"digraph G{label=<Command Graph>;pad=0.2;
subgraph cluster_id_0_0{label=<<font color="#606060">T0 (epoch)</font>>;color=darkgray;
id_0_0[color=black,shape=box,label=<C0 on N0<br/><b>epoch</b> (init)>];
}
subgraph cluster_id_0_1{label=<<font color="#606060">T1 "produce" (device-compute)</font>>;color=darkgray;
id_0_1[color=darkorange2,shape=box,label=<C1 on N0<br/><b>execution</b> [0,0,0] - [8,1,1]>];
}
subgraph cluster_id_0_2{label=<<font color="#606060">T2 "consume" (host-compute)</font>>;color=darkgray;
id_0_4[color=darkorange2,shape=box,label=<C4 on N0<br/><b>execution</b> [0,0,0] - [8,1,1]>];
}
subgraph cluster_id_0_3{label=<<font color="#606060">T3 (epoch)</font>>;color=darkgray;
id_0_5[color=black,shape=box,label=<C5 on N0<br/><b>epoch</b> (shutdown)>];
}
id_0_2[color=deeppink2,shape=ellipse,label=<C2 on N0<br/><b>push</b> T2.B0 B0 "data"<br/>{[0,0,0] - [8,1,1]} to N1>];
id_0_3[color=deeppink2,shape=ellipse,label=<C3 on N0<br/><b>await push</b> T2.B0<br/>B0 "data" {[8,0,0] - [16,1,1]}>];
id_0_0->id_0_1[color=orchid];
id_0_0->id_0_3[color=orchid];
id_0_1->id_0_2[];
id_0_1->id_0_4[];
id_0_2->id_0_5[color=orange];
id_0_3->id_0_4[];
id_0_4->id_0_5[color=orange];
subgraph cluster_id_1_0{label=<<font color="#606060">T0 (epoch)</font>>;color=darkgray;
id_1_0[color=black,shape=box,label=<C0 on N1<br/><b>epoch</b> (init)>];
}
subgraph cluster_id_1_1{label=<<font color="#606060">T1 "produce" (device-compute)</font>>;color=darkgray;
id_1_1[color=darkorange2,shape=box,label=<C1 on N1<br/><b>execution</b> [8,0,0] - [16,1,1]>];
}
subgraph cluster_id_1_2{label=<<font color="#606060">T2 "consume" (host-compute)</font>>;color=darkgray;
id_1_4[color=darkorange2,shape=box,label=<C4 on N1<br/><b>execution</b> [8,0,0] - [16,1,1]>];
}
subgraph cluster_id_1_3{label=<<font color="#606060">T3 (epoch)</font>>;color=darkgray;
id_1_5[color=black,shape=box,label=<C5 on N1<br/><b>epoch</b> (shutdown)>];
}
id_1_2[color=deeppink2,shape=ellipse,label=<C2 on N1<br/><b>push</b> T2.B0 B0 "data"<br/>{[8,0,0] - [16,1,1]} to N0>];
id_1_3[color=deeppink2,shape=ellipse,label=<C3 on N1<br/><b>await push</b> T2.B0<br/>B0 "data" {[0,0,0] - [8,1,1]}>];
id_1_0->id_1_1[color=orchid];
id_1_0->id_1_3[color=orchid];
id_1_1->id_1_2[];
id_1_1->id_1_4[];
id_1_2->id_1_5[color=orange];
id_1_3->id_1_4[];
id_1_4->id_1_5[color=orange];
}"##;
const IDAG: &str = r##"digraph G{label=<Instruction Graph>;pad=0.2;
I0[color=black,shape=box,margin=0.2,style=rounded,label=<I0 (T0, C0)<br/><b>epoch</b> (init)>];
I1[color=cyan3,shape=ellipse,label=<I1<br/>buffer <b>alloc</b> M2.A1<br/>for B0 "data" [0,0,0] - [8,1,1]<br/>32 % 4 bytes>];
I2[color=darkorange2,shape=box,margin=0.2,style=rounded,label=<I2 (device-compute T1, execution C1)<br/><b>device kernel</b> "produce"<br/>on D0 [0,0,0] - [8,1,1]<br/>+ access B0 "data" {[0,0,0] - [8,1,1]}<br/>via M2.A1 [0,0,0] - [8,1,1]>];
I3[color=cyan3,shape=ellipse,label=<I3<br/>buffer <b>alloc</b> M1.A1<br/>for B0 "data" [0,0,0] - [8,1,1]<br/>32 % 4 bytes>];
I4[color=green3,shape=ellipse,margin=0,label=<I4<br/>coherence <b>copy</b><br/>from M2.A1 (strided in [0,0,0] - [8,1,1])<br/>to M1.A1 (strided in [0,0,0] - [8,1,1])<br/>B0 "data" {[0,0,0] - [8,1,1]} x4 bytes<br/>32 bytes total>];
I5[color=deeppink2,shape=box,margin=0.2,style=rounded,label=<I5 (push C2)<br/><b>send</b> T2.B0<br/>to N1 msg0<br/>B0 "data" [0,0,0] - [8,1,1]<br/>via M1.A1 [0,0,0] - [8,1,1]<br/>32 bytes total>];
I6[color=cyan3,shape=ellipse,label=<I6<br/>buffer <b>alloc</b> M1.A2<br/>for B0 "data" [0,0,0] - [16,1,1]<br/>64 % 4 bytes>];
I7[color=green3,shape=ellipse,margin=0,label=<I7<br/>resize <b>copy</b><br/>from M1.A1 (strided in [0,0,0] - [8,1,1])<br/>to M1.A2 (strided in [0,0,0] - [16,1,1])<br/>B0 "data" {[0,0,0] - [8,1,1]} x4 bytes<br/>32 bytes total>];
I8[color=cyan3,shape=ellipse,label=<I8<br/><b>free</b> M1.A1<br/>B0 "data" [0,0,0] - [8,1,1]<br/>32 bytes>];
I9[color=deeppink2,shape=box,margin=0.2,style=rounded,label=<I9 (await-push C3)<br/><b>receive</b> T2.B0<br/>B0 "data" {[8,0,0] - [16,1,1]}<br/>into M1.A2 (B0 [0,0,0] - [16,1,1])<br/>32 bytes total>];
I10[color=darkorange2,shape=box,margin=0.2,style=rounded,label=<I10 (host-compute T2, execution C4)<br/><b>host task</b> "consume"<br/>on host [0,0,0] - [8,1,1]<br/>+ access B0 "data" {[0,0,0] - [16,1,1]}<br/>via M1.A2 [0,0,0] - [16,1,1]>];
I11[color=black,shape=box,margin=0.2,style=rounded,label=<I11 (T3, C5)<br/><b>epoch</b> (shutdown)>];
I0->I1[color=orchid];
I0->I3[color=orchid];
I0->I6[color=orchid];
I1->I2[color=cyan3];
I2->I4[];
I3->I4[color=cyan3];
I4->I5[];
I4->I7[];
I5->I8[color=cyan3];
I6->I7[color=cyan3];
I6->I9[color=cyan3];
I7->I8[color=cyan3];
I7->I10[];
I8->I11[color=orange];
I9->I10[];
I10->I11[color=orange];
P0[margin=0.25,shape=cds,color="#606060",label=<<font color="#606060"><b>pilot</b> to N1 msg0<br/>T2.B0<br/>for B0 "data" [0,0,0] - [8,1,1]</font>>];
P0->I5[dir=none,style=dashed,color="#606060"];
}"##;
