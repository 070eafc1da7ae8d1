//! Instruction graph tests: a task manager, the local node's command graph generator and its
//! instruction graph generator in one process, over a synthetic system of 1..=4 devices with or
//! without peer copies (Celerity's `idag_test_context`). Every compiled batch goes through
//! [`check_batch`]: topologically sorted, and every instruction but the init epoch has a
//! dependency.
//!
//! `memory_tests`, `misc_tests`, `p2p_tests` and `reduction_tests` rewrite the cases of
//! Celerity's `test/instruction_graph_*_tests.cc`; `state_tests` drive the tracking state and
//! the staging / lookahead machinery directly.

mod memory_tests;
mod misc_tests;
mod p2p_tests;
mod reduction_tests;
mod state_tests;

use std::sync::{Arc, Mutex};

use crate::backend::system_info::SystemInfo;
use crate::command::{CommandGraphGenerator, CommandKind, CommandPolicies, CommandRef};
use crate::grid::{Id, Range, Subrange};
use crate::policy::{ErrorPolicy, Lookahead};
use crate::task::{
    CommandGroup, EpochAction, Task, TaskManager, TaskManagerConfig, TaskPayload, TaskSpec,
};
use crate::types::{AllocationId, BufferId, HostObjectId, InstructionId, MemoryId, NodeId, TaskId};

use super::*;

/// Asserts the invariants of every batch.
pub(crate) fn check_batch(instructions: &[Arc<Instruction>]) {
    for (i, instr) in instructions.iter().enumerate() {
        assert!(
            instr.id() == InstructionId(0) || !instr.dependencies().is_empty(),
            "{} ({}) has no dependency",
            instr.id(),
            instr.kind().name()
        );
        for dep in instr.dependencies() {
            assert!(*dep < instr.id(), "{} depends on newer {dep}", instr.id());
            assert!(
                !instructions[i + 1..].iter().any(|later| later.id() == *dep),
                "batch is not topologically sorted"
            );
        }
    }
}

/// The pipeline for one node.
pub(crate) struct Ctx {
    pub tm: TaskManager,
    tasks: Arc<Mutex<Vec<Arc<Task>>>>,
    pub cggen: CommandGraphGenerator,
    pub iggen: InstructionGraphGenerator,
    next_bid: u64,
    next_hoid: u64,
    next_user_aid: u64,
    pub lookahead: Lookahead,
    queue: Vec<(CommandRef, SchedulingHint)>,
    horizons_since_mergeable: usize,
    pub errors: Vec<crate::Error>,
}

pub(crate) struct CtxBuilder {
    num_nodes: usize,
    local: u64,
    devices: usize,
    peer_copies: bool,
    user_memory_peers: bool,
    horizon_step: u32,
    policies: Policies,
    lookahead: Lookahead,
}

impl CtxBuilder {
    pub fn nodes(mut self, n: usize) -> Self {
        self.num_nodes = n;
        self
    }
    pub fn local(mut self, n: u64) -> Self {
        self.local = n;
        self
    }
    pub fn devices(mut self, n: usize) -> Self {
        self.devices = n;
        self
    }
    pub fn peer_copies(mut self, on: bool) -> Self {
        self.peer_copies = on;
        self
    }
    /// User memory copies to and from every device directly (as on the CUDA backend).
    pub fn user_memory_peers(mut self, on: bool) -> Self {
        self.user_memory_peers = on;
        self
    }
    pub fn horizon_step(mut self, step: u32) -> Self {
        self.horizon_step = step;
        self
    }
    pub fn policies(mut self, p: Policies) -> Self {
        self.policies = p;
        self
    }
    pub fn lookahead(mut self, l: Lookahead) -> Self {
        self.lookahead = l;
        self
    }
    pub fn build(self) -> Ctx {
        let tasks: Arc<Mutex<Vec<Arc<Task>>>> = Arc::default();
        let sink = tasks.clone();
        let config = TaskManagerConfig {
            num_collective_nodes: self.num_nodes,
            horizon_step: self.horizon_step,
            uninitialized_read: ErrorPolicy::Ignore,
            ..TaskManagerConfig::default()
        };
        let delegate = move |t: &Arc<Task>| sink.lock().unwrap().push(t.clone());
        let tm = TaskManager::new(config, Some(Box::new(delegate)));
        let cggen = CommandGraphGenerator::new(
            self.num_nodes,
            NodeId(self.local),
            CommandPolicies {
                uninitialized_read: ErrorPolicy::Ignore,
                overlapping_write: ErrorPolicy::Ignore,
            },
        )
        .unwrap();
        let mut system = SystemInfo::with_devices(self.devices, self.peer_copies).unwrap();
        if self.user_memory_peers {
            system.connect_user_memory_to_devices();
        }
        let iggen = InstructionGraphGenerator::new(
            system,
            NodeId(self.local),
            self.num_nodes,
            self.policies,
            Some(InstructionRecorder::new()),
        );
        let mut ctx = Ctx {
            tm,
            tasks,
            cggen,
            iggen,
            next_bid: 0,
            next_hoid: 0,
            next_user_aid: 1,
            lookahead: self.lookahead,
            queue: Vec::new(),
            horizons_since_mergeable: 0,
            errors: Vec::new(),
        };
        ctx.pump();
        ctx
    }
}

/// Test policies: every check is an error.
pub(crate) fn strict() -> Policies {
    Policies {
        uninitialized_read: ErrorPolicy::Error,
        overlapping_write: ErrorPolicy::Error,
        unsafe_oversubscription: ErrorPolicy::Error,
    }
}

impl Ctx {
    pub fn builder() -> CtxBuilder {
        CtxBuilder {
            num_nodes: 1,
            local: 0,
            devices: 1,
            peer_copies: true,
            user_memory_peers: false,
            horizon_step: 4,
            policies: strict(),
            lookahead: Lookahead::None,
        }
    }

    /// One node with `devices` devices (peer copies on).
    pub fn new(devices: usize) -> Ctx {
        Self::builder().devices(devices).build()
    }

    fn compile(&mut self, cmd: &CommandRef) {
        match self.iggen.compile(cmd) {
            Ok((instructions, _)) => {
                check_batch(&instructions);
                self.errors.extend(self.iggen.take_policy_error());
            }
            Err(e) => self.errors.push(e),
        }
    }

    /// Feeds newly created tasks through both generators, with the test's lookahead.
    fn pump(&mut self) {
        let tasks: Vec<_> = std::mem::take(&mut *self.tasks.lock().unwrap());
        for task in tasks {
            for cmd in self.cggen.build_task(&task).unwrap() {
                if self.lookahead == Lookahead::None {
                    self.compile(&cmd);
                    continue;
                }
                let hint = self.iggen.anticipate(&cmd);
                let flush = matches!(cmd.kind(), CommandKind::Epoch { .. } | CommandKind::Fence);
                if hint == SchedulingHint::CouldMergeWithFutureCommands {
                    self.horizons_since_mergeable = 0;
                } else if matches!(cmd.kind(), CommandKind::Horizon { .. }) {
                    self.horizons_since_mergeable += 1;
                }
                self.queue.push((cmd, hint));
                let drain = flush
                    || (self.lookahead == Lookahead::Auto && self.horizons_since_mergeable >= 2)
                    || self
                        .queue
                        .iter()
                        .all(|(_, h)| *h == SchedulingHint::IsSelfContained);
                if drain {
                    for (cmd, _) in std::mem::take(&mut self.queue) {
                        self.compile(&cmd);
                    }
                }
            }
        }
    }

    fn alloc_user(&mut self) -> AllocationId {
        let aid = AllocationId::new(MemoryId::USER, self.next_user_aid);
        self.next_user_aid += 1;
        aid
    }

    /// A buffer of `range` with 4-byte elements.
    pub fn buffer(&mut self, range: &[usize], host_initialized: bool) -> BufferId {
        self.buffer_with(range, 4, host_initialized)
    }

    pub fn buffer_with(
        &mut self,
        range: &[usize],
        elem_size: usize,
        host_initialized: bool,
    ) -> BufferId {
        let bid = BufferId(self.next_bid);
        self.next_bid += 1;
        let r = Range::from_slice(range);
        self.tm
            .notify_buffer_created(bid, range.len().max(1), r, host_initialized);
        self.cggen.notify_buffer_created(bid, r, host_initialized);
        let user = host_initialized.then(|| self.alloc_user());
        self.iggen
            .notify_buffer_created(bid, r, elem_size, elem_size, user);
        bid
    }

    pub fn destroy_buffer(&mut self, bid: BufferId) {
        self.tm.notify_buffer_destroyed(bid);
        self.cggen.notify_buffer_destroyed(bid);
        let (batch, _) = self.iggen.notify_buffer_destroyed(bid);
        check_batch(&batch);
    }

    pub fn host_object(&mut self, owns: bool) -> HostObjectId {
        let hoid = HostObjectId(self.next_hoid);
        self.next_hoid += 1;
        self.tm.notify_host_object_created(hoid);
        self.cggen.notify_host_object_created(hoid);
        self.iggen.notify_host_object_created(hoid, owns);
        hoid
    }

    pub fn destroy_host_object(&mut self, hoid: HostObjectId) {
        self.tm.notify_host_object_destroyed(hoid);
        self.cggen.notify_host_object_destroyed(hoid);
        let (batch, _) = self.iggen.notify_host_object_destroyed(hoid);
        check_batch(&batch);
    }

    pub fn submit(&mut self, spec: TaskSpec, cg: CommandGroup) -> TaskId {
        let tid = self.tm.submit(spec, cg).unwrap();
        self.pump();
        tid
    }

    /// A device kernel over `range` (its length is the dimensionality).
    pub fn device(&mut self, range: &[usize], cg: CommandGroup) -> TaskId {
        self.submit(TaskSpec::device(range.len(), Range::from_slice(range)), cg)
    }

    /// A distributed host task over `range`.
    pub fn host(&mut self, range: &[usize], cg: CommandGroup) -> TaskId {
        self.submit(TaskSpec::host(range.len(), Range::from_slice(range)), cg)
    }

    pub fn fence_buffer(
        &mut self,
        bid: BufferId,
        region: Option<Subrange>,
    ) -> (TaskId, AllocationId) {
        let user = self.alloc_user();
        let payload = TaskPayload::BufferFence {
            user_allocation: user,
            promise: None,
        };
        let tid = self.tm.fence_buffer(bid, region, Some(payload)).unwrap();
        self.pump();
        (tid, user)
    }

    pub fn fence_host_object(&mut self, hoid: HostObjectId) -> TaskId {
        let tid = self.tm.fence_host_object(hoid, None).unwrap();
        self.pump();
        tid
    }

    pub fn epoch(&mut self, action: EpochAction) -> TaskId {
        let tid = self.tm.epoch(action, None).unwrap();
        self.pump();
        tid
    }

    /// Ends the graph with the shutdown epoch.
    pub fn finish(&mut self) {
        self.epoch(EpochAction::Shutdown);
    }

    pub fn recorder(&self) -> &InstructionRecorder {
        self.iggen.recorder().unwrap()
    }

    pub fn all(&self) -> &[InstructionRecord] {
        self.recorder().instructions()
    }

    /// Records whose kind matches.
    pub fn select(&self, pred: impl Fn(&InstructionKind) -> bool) -> Vec<&InstructionRecord> {
        self.all().iter().filter(|r| pred(r.kind())).collect()
    }

    pub fn get(&self, id: InstructionId) -> &InstructionRecord {
        self.recorder().get(id).unwrap()
    }

    /// Whether `a` transitively depends on `b`.
    pub fn depends_transitively(&self, a: InstructionId, b: InstructionId) -> bool {
        let mut stack = vec![a];
        let mut seen = std::collections::HashSet::new();
        while let Some(x) = stack.pop() {
            if x == b {
                return true;
            }
            if x < b || !seen.insert(x) {
                continue;
            }
            stack.extend(self.get(x).instruction.dependencies().iter().copied());
        }
        false
    }

    pub fn concurrent(&self, a: InstructionId, b: InstructionId) -> bool {
        !self.depends_transitively(a, b) && !self.depends_transitively(b, a)
    }

    /// Direct successors of `id`.
    pub fn successors(&self, id: InstructionId) -> Vec<&InstructionRecord> {
        self.all().iter().filter(|r| r.depends_on(id)).collect()
    }
}

// kind predicates
pub(crate) fn is_alloc(k: &InstructionKind) -> bool {
    matches!(k, InstructionKind::Alloc { .. })
}
pub(crate) fn is_free(k: &InstructionKind) -> bool {
    matches!(k, InstructionKind::Free { .. })
}
pub(crate) fn is_copy(k: &InstructionKind) -> bool {
    matches!(k, InstructionKind::Copy { .. })
}
pub(crate) fn is_kernel(k: &InstructionKind) -> bool {
    matches!(k, InstructionKind::DeviceKernel { .. })
}
pub(crate) fn is_host_task(k: &InstructionKind) -> bool {
    matches!(k, InstructionKind::HostTask { .. })
}
pub(crate) fn is_send(k: &InstructionKind) -> bool {
    matches!(k, InstructionKind::Send { .. })
}
pub(crate) fn is_receive(k: &InstructionKind) -> bool {
    matches!(k, InstructionKind::Receive { .. })
}
pub(crate) fn is_horizon(k: &InstructionKind) -> bool {
    matches!(k, InstructionKind::Horizon { .. })
}
pub(crate) fn is_epoch(k: &InstructionKind) -> bool {
    matches!(k, InstructionKind::Epoch { .. })
}

/// An alloc's memory, box (for buffer allocations) and size.
pub(crate) fn alloc_info(r: &InstructionRecord) -> (MemoryId, Option<crate::grid::GridBox>, usize) {
    let InstructionKind::Alloc {
        allocation,
        size_bytes,
        ..
    } = r.kind()
    else {
        panic!("not an alloc")
    };
    let b = match &r.detail {
        RecordDetail::Alloc { buffer, .. } => buffer.map(|(_, b)| b),
        _ => None,
    };
    (allocation.memory(), b, *size_bytes)
}

/// A copy's source / destination memories, region and origin.
pub(crate) fn copy_info(
    r: &InstructionRecord,
) -> (MemoryId, MemoryId, crate::grid::Region, CopyOrigin) {
    let InstructionKind::Copy {
        source,
        dest,
        region,
        ..
    } = r.kind()
    else {
        panic!("not a copy")
    };
    let RecordDetail::Copy { origin, .. } = r.detail else {
        panic!("copy without detail")
    };
    (source.memory(), dest.memory(), region.clone(), origin)
}

pub(crate) fn gbox(min: [usize; 3], max: [usize; 3]) -> crate::grid::GridBox {
    crate::grid::GridBox::from_arrays(min, max)
}

pub(crate) fn sr(offset: [usize; 3], range: [usize; 3]) -> Subrange {
    Subrange::new(Id(offset), Range(range))
}

pub(crate) fn mem(i: u64) -> MemoryId {
    MemoryId(i)
}

impl Ctx {
    /// The recorded graph, one line per instruction (for assertion messages).
    pub fn dump(&self) -> String {
        let mut s = String::new();
        for r in self.all() {
            s.push_str(&format!(
                "{} {:?} deps={:?} {:?}\n",
                r.id(),
                r.kind(),
                r.dependencies,
                r.detail
            ));
        }
        s
    }
}
