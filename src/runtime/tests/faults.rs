//! Faults across in-process nodes: a failure on one node fails every node's fence, and a
//! shutdown after a failure ends even when a peer never sends what this node waits for.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::observability::{HoldFirstPayload, base_config, fabric, launcher, on_nodes};
use crate::backend::interface::{KernelInvocation, LaunchEnvironment};
use crate::comm::Communicator;
use crate::comm::in_process::InProcessCommunicator;
use crate::grid::{Id, Range};
use crate::runtime::Runtime;
use crate::task::{CommandGroup, EpochAction, RangeMapper, TaskSpec};
use crate::types::{BufferId, NodeId};

/// A 1-D buffer of `len` u32 written by device kernel `name`, whose chunk fails on `failing`.
fn written_by_a_kernel_failing_on(
    rt: &mut Runtime,
    node: NodeId,
    failing: NodeId,
    len: usize,
    name: &str,
) -> BufferId {
    let b = rt
        .create_buffer(1, Range::new(len, 1, 1), 4, 4, None)
        .unwrap();
    let fails_here = node == failing;
    rt.submit(
        TaskSpec::DeviceKernel {
            dims: 1,
            range: Range::new(len, 1, 1),
            offset: Id::ZERO,
        },
        CommandGroup::new()
            .discard_write(b, RangeMapper::OneToOne)
            .name(name),
        Arc::new(move |_: &KernelInvocation, _: &LaunchEnvironment| {
            if fails_here {
                Err(crate::Error::new(
                    crate::ErrorKind::TaskFailed,
                    "the kernel returned 7",
                ))
            } else {
                Ok(())
            }
        }),
    )
    .unwrap();
    b
}

#[test]
fn a_task_failing_on_one_node_fails_every_nodes_fence_naming_it() {
    let outcomes = on_nodes(fabric(3), base_config(), |node, mut rt| {
        let b = written_by_a_kernel_failing_on(&mut rt, node, NodeId(1), 48, "fails_on_node_1");
        let mut out = vec![0u32; 48];
        // SAFETY: `out` holds the whole buffer and outlives the wait below.
        let promise = unsafe { rt.fence_buffer(b, None, out.as_mut_ptr().cast()) }.unwrap();
        let fenced = promise.wait(Duration::from_secs(10), |_| {});
        let waited = rt.check_async_errors();
        let _ = rt.shutdown();
        (fenced, waited)
    });
    for (node, (fenced, waited)) in outcomes.into_iter().enumerate() {
        let error = fenced.expect_err("no fence may succeed after the failure");
        assert_eq!(error.kind(), crate::ErrorKind::TaskFailed, "node {node}");
        assert!(error.message().contains("rank 1"), "node {node}: {error}");
        let error = waited.expect_err("the failure is reported");
        assert!(
            error.message().contains("fails_on_node_1"),
            "node {node}: {error}"
        );
    }
}

/// Before the executor gave up the transfers of a failed job, both shutdowns below waited
/// forever: node 1 for a payload node 0 never sends, node 0 for its own send (under MPI the
/// shutdown watchdog then ended every rank after 10 s, and the launcher sometimes hung).
#[test]
fn a_shutdown_after_a_failure_ends_although_a_peer_never_sends_its_data() {
    let mut endpoints = InProcessCommunicator::fabric(2);
    let node1 = endpoints.pop().unwrap();
    let node0 = endpoints.pop().unwrap();
    // never released: node 0's one payload (its half, for node 1) never leaves
    let comms: Vec<Box<dyn Communicator>> = vec![
        Box::new(HoldFirstPayload::new(
            node0,
            Arc::new(AtomicBool::new(false)),
        )),
        Box::new(node1),
    ];
    let (done, finished) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let outcomes = on_nodes(comms, base_config(), |node, mut rt| {
            let b = written_by_a_kernel_failing_on(&mut rt, node, NodeId(0), 16, "fails_on_node_0");
            // every node reads all of it: node 1 waits for node 0's half
            rt.submit(
                TaskSpec::host(1, Range::new(16, 1, 1)),
                CommandGroup::new()
                    .read(b, RangeMapper::All)
                    .name("consume"),
                launcher(|_| {}),
            )
            .unwrap();
            rt.shutdown()
        });
        let _ = done.send(outcomes);
    });
    let outcomes = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the shutdowns after the failure did not return within 60 s");
    for (node, outcome) in outcomes.into_iter().enumerate() {
        let error = outcome.expect_err("a shutdown after a failure reports it");
        assert!(
            error.message().contains("fails_on_node_0") || error.message().contains("rank 0"),
            "node {node}: {error}"
        );
    }
}

/// A peer that leaves right after a barrier both nodes passed: the barrier succeeded here too, so
/// it returns OK even when the peer's departure notice is recorded before this node's wait has
/// looked at the errors; the next wait reports the departure. (Before, such a barrier failed with
/// the departure now and then: `test_rank_faults.exit.mpi3` in CI.)
#[test]
fn a_barrier_both_nodes_passed_returns_ok_although_the_peer_leaves_right_after() {
    let outcomes = on_nodes(fabric(2), base_config(), |node, mut rt| {
        if node == NodeId(1) {
            let passed = rt.barrier();
            rt.depart_without_shutdown();
            return (passed, Ok(()));
        }
        let (epoch, waited) = rt.wait_for_epoch(EpochAction::Barrier).unwrap();
        // The departure notice lands between the executor's fulfilment of the barrier and this
        // thread's look at the errors: the order that failed.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while rt.shared.errors.lock().first().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "node 1's departure never arrived"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let passed = rt.epoch_outcome(epoch, waited);
        let next = rt.wait();
        (passed, next)
    });
    for (node, (passed, _)) in outcomes.iter().enumerate() {
        assert!(passed.is_ok(), "node {node}'s barrier: {passed:?}");
    }
    let error = outcomes[0]
        .1
        .clone()
        .expect_err("node 0's next wait reports the departure");
    assert_eq!(error.kind(), crate::ErrorKind::Communication);
    assert!(
        error.message().contains("rank 1") && error.message().contains("without calling"),
        "{error}"
    );
}
