//! Out-of-order engine behaviour (Celerity's `out_of_order_engine_tests.cc`).

use smallvec::SmallVec;

use crate::executor::engine::{Assignment, EngineInstruction, OutOfOrderEngine, Target};
use crate::types::{DeviceId, InstructionId};

/// Builds instructions with consecutive ids and submits them.
struct Ctx {
    engine: OutOfOrderEngine,
    next: u64,
}

type I = InstructionId;

impl Ctx {
    fn new(devices: usize) -> Self {
        Self {
            engine: OutOfOrderEngine::new(devices),
            next: 0,
        }
    }

    fn submit(&mut self, deps: &[I], priority: i32, target: Target, devices: &[u64]) -> I {
        let id = InstructionId(self.next);
        self.next += 1;
        self.engine.submit(EngineInstruction {
            id,
            priority,
            target,
            eligible_devices: devices
                .iter()
                .map(|&d| DeviceId(d))
                .collect::<SmallVec<_>>(),
            dependencies: deps.iter().copied().collect(),
        });
        id
    }

    fn kernel(&mut self, deps: &[I], device: u64) -> I {
        self.submit(deps, 0, Target::DeviceQueue, &[device])
    }

    fn kernel_p(&mut self, deps: &[I], device: u64, priority: i32) -> I {
        self.submit(deps, priority, Target::DeviceQueue, &[device])
    }

    fn host_task(&mut self, deps: &[I], priority: i32) -> I {
        self.submit(deps, priority, Target::HostQueue, &[])
    }

    /// A copy between memories, given as the devices owning them (None: host memory).
    fn copy(&mut self, deps: &[I], source: Option<u64>, dest: Option<u64>) -> I {
        let devices: Vec<u64> = [dest, source].into_iter().flatten().collect();
        let target = if devices.is_empty() {
            Target::HostQueue
        } else {
            Target::DeviceQueue
        };
        self.submit(deps, 0, target, &devices)
    }

    fn assign_all(&mut self) -> Vec<Assignment> {
        std::iter::from_fn(|| self.engine.assign_one()).collect()
    }

    fn front(&self) -> Vec<I> {
        let mut front: Vec<_> = self.engine.execution_front().iter().copied().collect();
        front.sort();
        front
    }
}

fn ids(assignments: &[Assignment]) -> Vec<I> {
    let mut ids: Vec<_> = assignments.iter().map(|a| a.id).collect();
    ids.sort();
    ids
}

fn of(assignments: &[Assignment], id: I) -> Assignment {
    *assignments.iter().find(|a| a.id == id).expect("assigned")
}

/// All of `sequence` assigned to the same target, device and lane, in this order.
fn in_order(assignments: &[Assignment], sequence: &[I]) -> bool {
    let positions: Vec<usize> = sequence
        .iter()
        .map(|id| {
            assignments
                .iter()
                .position(|a| a.id == *id)
                .expect("assigned")
        })
        .collect();
    let first = assignments[positions[0]];
    positions.windows(2).all(|w| w[0] < w[1])
        && positions.iter().all(|&p| {
            let a = assignments[p];
            (a.target, a.device, a.lane) == (first.target, first.device, first.lane)
        })
}

fn sorted(mut v: Vec<I>) -> Vec<I> {
    v.sort();
    v
}

#[test]
fn independent_chains_run_concurrently_on_their_devices() {
    let mut c = Ctx::new(4);
    let d0k0 = c.kernel(&[], 0);
    let d1k0 = c.kernel(&[], 1);
    let d0k1 = c.kernel(&[d0k0], 0);
    let d1k1 = c.kernel(&[d1k0], 1);
    let h0 = c.host_task(&[d0k1, d1k1], 0);
    let h1 = c.host_task(&[h0], 0);
    let h2 = c.host_task(&[h0, h1], 0);
    assert!(c.front().is_empty());
    let a = c.assign_all();
    assert_eq!(ids(&a), sorted(vec![d0k0, d0k1, d1k0, d1k1]));
    assert_eq!(of(&a, d0k1).device, Some(DeviceId(0)));
    assert_eq!(of(&a, d1k1).device, Some(DeviceId(1)));
    assert!(in_order(&a, &[d0k0, d0k1]));
    assert!(in_order(&a, &[d1k0, d1k1]));
    assert_eq!(c.front(), vec![d0k0, d1k0]);
    c.engine.complete_assigned(d0k0);
    c.engine.complete_assigned(d0k1);
    c.engine.complete_assigned(d1k0);
    assert!(c.assign_all().is_empty());
    assert_eq!(c.front(), vec![d1k1]);
    c.engine.complete_assigned(d1k1);
    let a = c.assign_all();
    assert_eq!(ids(&a), vec![h0, h1, h2]);
    assert!(in_order(&a, &[h0, h1, h2]));
    assert!(
        a.iter()
            .all(|x| x.target == Target::HostQueue && x.device.is_none())
    );
    assert_eq!(c.front(), vec![h0]);
}

#[test]
fn copies_are_eagerly_queued_behind_their_producers() {
    let mut c = Ctx::new(4);
    let k: Vec<I> = (0..4).map(|d| c.kernel(&[], d)).collect();
    let copy0 = c.copy(&[k[0]], Some(0), Some(1));
    let copy1 = c.copy(&[k[1]], Some(0), Some(1));
    let copy2 = c.copy(&[k[2]], None, Some(2));
    let copy3 = c.copy(&[k[3]], Some(3), None);
    let host_copy = c.copy(&[copy3], None, None);
    let a = c.assign_all();
    assert_eq!(
        ids(&a),
        sorted(vec![k[0], k[1], k[2], k[3], copy0, copy1, copy2, copy3])
    );
    for (kernel, copy) in k.iter().zip([copy0, copy1, copy2, copy3]) {
        assert!(in_order(&a, &[*kernel, copy]));
    }
    assert_eq!(c.front(), k.clone());
    for kernel in &k {
        c.engine.complete_assigned(*kernel);
    }
    assert_eq!(c.front(), vec![copy0, copy1, copy2, copy3]);
    for copy in [copy2, copy1, copy0, copy3] {
        c.engine.complete_assigned(copy);
    }
    let a = c.assign_all();
    assert_eq!(ids(&a), vec![host_copy]);
    assert_eq!(a[0].target, Target::HostQueue);
    c.engine.complete_assigned(host_copy);
    assert!(c.engine.is_idle());
}

#[test]
fn alloc_and_free_go_to_the_alloc_queue_only() {
    let mut c = Ctx::new(1);
    let epoch = c.submit(&[], 0, Target::Immediate, &[]);
    let alloc_host = c.submit(&[epoch], 0, Target::AllocQueue, &[]);
    let alloc_device = c.submit(&[epoch], 0, Target::AllocQueue, &[0]);
    let host_task = c.host_task(&[alloc_host], 0);
    let kernel = c.kernel(&[alloc_device], 0);
    let free_host = c.submit(&[host_task], 0, Target::AllocQueue, &[]);
    let free_device = c.submit(&[kernel], 0, Target::AllocQueue, &[0]);
    let a = c.assign_all();
    assert_eq!(ids(&a), vec![epoch]);
    assert_eq!(
        (a[0].target, a[0].device, a[0].lane),
        (Target::Immediate, None, None)
    );
    c.engine.complete_assigned(epoch);
    let a = c.assign_all();
    assert_eq!(ids(&a), vec![alloc_host, alloc_device]);
    assert_eq!(of(&a, alloc_host).device, None);
    assert_eq!(of(&a, alloc_device).device, Some(DeviceId(0)));
    assert!(
        a.iter()
            .all(|x| x.target == Target::AllocQueue && x.lane.is_none())
    );
    c.engine.complete_assigned(alloc_host);
    c.engine.complete_assigned(alloc_device);
    let a = c.assign_all();
    assert_eq!(ids(&a), vec![host_task, kernel]);
    c.engine.complete_assigned(host_task);
    c.engine.complete_assigned(kernel);
    let a = c.assign_all();
    assert_eq!(ids(&a), vec![free_host, free_device]);
    assert!(a.iter().all(|x| x.target == Target::AllocQueue));
    c.engine.complete_assigned(free_host);
    c.engine.complete_assigned(free_device);
    assert!(c.engine.is_idle());
}

#[test]
fn an_instruction_is_assigned_once_even_when_it_was_eagerly_assignable() {
    let mut c = Ctx::new(1);
    let k1 = c.kernel(&[], 0);
    let k2 = c.kernel(&[k1], 0);
    assert_eq!(c.engine.assign_one().unwrap().id, k1);
    assert_eq!(c.front(), vec![k1]);
    c.engine.complete_assigned(k1);
    assert!(c.front().is_empty());
    let a = c.assign_all();
    assert_eq!(ids(&a), vec![k2]);
    assert_eq!(c.front(), vec![k2]);
    c.engine.complete_assigned(k2);
    assert!(c.engine.is_idle());
}

#[test]
fn dependent_instructions_may_complete_out_of_order() {
    let mut c = Ctx::new(1);
    let k1 = c.kernel(&[], 0);
    let k2 = c.kernel(&[k1], 0);
    c.assign_all();
    assert_eq!(c.front(), vec![k1]);
    c.engine.complete_assigned(k2);
    assert!(!c.engine.is_idle());
    assert_eq!(c.front(), vec![k1]);
    c.engine.complete_assigned(k1);
    assert!(c.engine.is_idle());
    assert!(c.front().is_empty());
}

#[test]
fn concurrent_instructions_are_assigned_by_decreasing_priority() {
    let mut c = Ctx::new(1);
    let k1 = c.kernel_p(&[], 0, 1);
    let k3 = c.kernel_p(&[], 0, 3);
    let k2 = c.kernel_p(&[], 0, 2);
    let order: Vec<I> = c.assign_all().iter().map(|a| a.id).collect();
    assert_eq!(order, vec![k3, k2, k1]);
}

#[test]
fn eagerly_assignable_instructions_become_plainly_assignable_when_predecessors_complete() {
    let mut c = Ctx::new(1);
    let k1 = c.kernel_p(&[], 0, 0);
    let k2 = c.kernel_p(&[k1], 0, 1);
    let _k3 = c.kernel_p(&[k1], 0, 0);
    let k4 = c.kernel_p(&[k2], 0, 2);
    assert_eq!(c.engine.assign_one().unwrap().id, k1);
    assert_eq!(c.engine.assign_one().unwrap().id, k2);
    c.engine.complete_assigned(k2);
    assert_eq!(
        c.engine.assign_one().unwrap().id,
        k4,
        "k4 is now assignable and has the highest priority"
    );
}

#[test]
fn eager_assignment_survives_partial_completion_of_a_chain() {
    for complete_second_first in [false, true] {
        let mut c = Ctx::new(1);
        let k1 = c.kernel(&[], 0);
        let k2 = c.kernel(&[k1], 0);
        let k3 = c.kernel(&[k2], 0);
        let k4 = c.kernel(&[k3], 0);
        assert_eq!(c.engine.assign_one().unwrap().id, k1);
        assert_eq!(c.engine.assign_one().unwrap().id, k2);
        c.engine
            .complete_assigned(if complete_second_first { k2 } else { k1 });
        let rest = c.assign_all();
        assert_eq!(ids(&rest), vec![k3, k4]);
        assert!(in_order(&rest, &[k3, k4]));
    }
}

#[test]
fn no_eager_assignment_behind_a_predecessor_on_another_device() {
    let mut c = Ctx::new(2);
    let k1 = c.kernel(&[], 0);
    let k2 = c.kernel(&[k1], 1);
    let a = c.assign_all();
    assert_eq!(ids(&a), vec![k1]);
    c.engine.complete_assigned(k1);
    let a = c.assign_all();
    assert_eq!(ids(&a), vec![k2]);
    assert_eq!(a[0].device, Some(DeviceId(1)));
}

#[test]
fn no_eager_assignment_behind_predecessors_on_different_lanes() {
    for complete_first in [0, 1] {
        let mut c = Ctx::new(2);
        let k1 = c.host_task(&[], 0);
        let k2 = c.host_task(&[], 0);
        let k3 = c.host_task(&[k1, k2], 0);
        let a = c.assign_all();
        assert_eq!(ids(&a), vec![k1, k2]);
        assert_ne!(
            of(&a, k1).lane,
            of(&a, k2).lane,
            "independent host tasks use separate lanes"
        );
        let (first, second) = if complete_first == 0 {
            (k1, k2)
        } else {
            (k2, k1)
        };
        c.engine.complete_assigned(first);
        // The remaining predecessor is the last submission on its lane: k3 queues behind it.
        assert_eq!(ids(&c.assign_all()), vec![k3]);
        c.engine.complete_assigned(second);
        c.engine.complete_assigned(k3);
        assert!(c.engine.is_idle());
    }
}

#[test]
fn mixed_device_predecessors_allow_eager_assignment_only_once_the_remote_one_completed() {
    for remote_completes_first in [false, true] {
        let mut c = Ctx::new(2);
        let k1_d0 = c.kernel(&[], 0);
        let k2_d1 = c.kernel(&[], 1);
        let k3_d0 = c.kernel(&[k1_d0, k2_d1], 0);
        let first = c.assign_all();
        assert_eq!(ids(&first), vec![k1_d0, k2_d1]);
        c.engine
            .complete_assigned(if remote_completes_first { k2_d1 } else { k1_d0 });
        let last = c.assign_all();
        if remote_completes_first {
            assert_eq!(ids(&last), vec![k3_d0]);
            assert_eq!(last[0].device, Some(DeviceId(0)));
            assert_eq!(last[0].lane, of(&first, k1_d0).lane);
        } else {
            assert!(
                last.is_empty(),
                "k3 cannot queue behind a kernel on device 1"
            );
        }
        c.engine
            .complete_assigned(if remote_completes_first { k1_d0 } else { k2_d1 });
        c.assign_all();
        c.engine.complete_assigned(k3_d0);
        assert!(c.engine.is_idle());
    }
}

#[test]
fn a_higher_priority_sibling_retracts_eager_assignment() {
    for k2_wins in [true, false] {
        let mut c = Ctx::new(1);
        let k1 = c.host_task(&[], 0);
        let k2 = c.host_task(&[k1], i32::from(k2_wins));
        let k3 = c.host_task(&[k1], i32::from(!k2_wins));
        let (winner, loser) = if k2_wins { (k2, k3) } else { (k3, k2) };
        let first = c.assign_all();
        assert_eq!(ids(&first), sorted(vec![k1, winner]));
        assert!(in_order(&first, &[k1, winner]));
        c.engine.complete_assigned(k1);
        let second = c.assign_all();
        assert_eq!(ids(&second), vec![loser]);
        assert_ne!(of(&second, loser).lane, of(&first, k1).lane);
        c.engine.complete_assigned(k2);
        c.engine.complete_assigned(k3);
        assert!(c.engine.is_idle());
    }
}

#[test]
fn eager_assignment_needs_the_dependency_to_be_last_on_its_lane() {
    let mut c = Ctx::new(1);
    let k1 = c.kernel(&[], 0);
    let k2 = c.kernel(&[k1], 0);
    let first = c.assign_all();
    assert!(in_order(&first, &[k1, k2]));
    let k3 = c.kernel(&[k1], 0);
    assert!(
        c.assign_all().is_empty(),
        "k1 is no longer last on its lane"
    );
    c.engine.complete_assigned(k1);
    let third = c.assign_all();
    assert_eq!(ids(&third), vec![k3]);
    assert_ne!(of(&third, k3).lane, of(&first, k1).lane);
}

#[test]
fn overtaken_eager_candidates_fall_back_to_plain_assignment() {
    let mut c = Ctx::new(1);
    let k1 = c.kernel(&[], 0);
    assert_eq!(c.engine.assign_one().unwrap().id, k1);
    let k2 = c.kernel_p(&[k1], 0, 0);
    let k3 = c.kernel_p(&[k1], 0, 100);
    assert_eq!(c.engine.assign_one().unwrap().id, k3);
    c.engine.complete_assigned(k3);
    assert!(
        c.engine.assign_one().is_none(),
        "k2 was overtaken and must wait for k1"
    );
    c.engine.complete_assigned(k1);
    assert_eq!(c.engine.assign_one().unwrap().id, k2);
}

#[test]
fn unknown_dependencies_count_as_complete() {
    let mut c = Ctx::new(1);
    let k = c.submit(&[InstructionId(999)], 0, Target::HostQueue, &[]);
    assert_eq!(ids(&c.assign_all()), vec![k]);
}

#[test]
fn a_burst_of_independent_kernels_shares_a_bounded_set_of_lanes() {
    use crate::executor::engine::MAX_DEVICE_LANES;
    let mut c = Ctx::new(1);
    let kernels: Vec<I> = (0..100).map(|_| c.kernel(&[], 0)).collect();
    let assigned = c.assign_all();
    assert_eq!(ids(&assigned), kernels);
    let mut per_lane = vec![0usize; MAX_DEVICE_LANES];
    for assignment in &assigned {
        per_lane[assignment.lane.expect("device lanes")] += 1;
    }
    // Every lane takes an equal share, and independent kernels still overlap.
    assert_eq!(per_lane, vec![100 / MAX_DEVICE_LANES; MAX_DEVICE_LANES]);
    // Host tasks may block on their peers (collectives): their lanes are not shared.
    let host_tasks: Vec<I> = (0..10).map(|_| c.host_task(&[], 0)).collect();
    let lanes: std::collections::HashSet<_> = c.assign_all().iter().map(|a| a.lane).collect();
    assert_eq!(lanes.len(), host_tasks.len());
}
