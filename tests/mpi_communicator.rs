//! The MPI communicator between real MPI processes.
//!
//! Run by `cargo test --features mpi`: without an MPI launcher around it, the binary re-launches
//! itself under `mpirun -n 2`, `-n 3` and `-n 4` and checks that every rank passes. Each rank
//! exchanges pilots and strided payloads of different shapes with every other rank (posting
//! receives both before and after the pilots arrive), uses cloned communicators concurrently
//! from several threads, meets at barriers, gathers byte strings of different lengths and counts
//! the ranks that share CPUs of an affinity mask.

mod common;

use std::time::{Duration, Instant};

use celerity::backend::event::AsyncEvent;
use celerity::comm::mpi::MpiEnvironment;
use celerity::comm::{Communicator, HostPlacement, OutboundPilot, PilotMessage, Stride};
use celerity::grid::{GridBox, Id, Range, Subrange};
use celerity::types::{BufferId, MessageId, NodeId, ReductionId, TaskId, TransferId};

fn wait_for(comm: &mut dyn Communicator, events: &[AsyncEvent]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !events.iter().all(AsyncEvent::is_complete) {
        comm.poll().unwrap();
        assert!(
            Instant::now() < deadline,
            "payloads did not complete within 30 s"
        );
        std::thread::yield_now();
    }
    for event in events {
        event.take_outcome().unwrap().unwrap();
    }
}

/// Every rank sends to every other rank the 2-D box (rows [r, r+2), cols [1, 4)) of a 6x5 u32
/// allocation; receivers place it at (peer, 0) of a (size+1)x3 allocation.
fn exchange_payloads(comm: &mut dyn Communicator) {
    let me = comm.local_node().0 as usize;
    let size = comm.num_nodes();
    let transfer = TransferId {
        consumer: TaskId(1),
        buffer: BufferId(0),
        reduction: ReductionId::NONE,
    };
    let source: Vec<u32> = (0..30).map(|i| (me * 1000 + i) as u32).collect();
    let send_stride = Stride {
        allocation_range: Range::new(6, 5, 1),
        transfer: Subrange::new(Id::new(me % 4, 1, 0), Range::new(2, 3, 1)),
        elem_size: 4,
    };
    let mut dests: Vec<Vec<u32>> = (0..size).map(|_| vec![0u32; (size + 1) * 3]).collect();
    let mut events = Vec::new();
    // Receives for odd peers are posted before pilots are polled, for even peers after.
    for peer in (0..size).filter(|&p| p != me && p % 2 == 1) {
        let stride = receive_stride(size, peer);
        // SAFETY: `dests` outlives the receive, which completes in wait_for.
        events.push(
            unsafe {
                comm.receive_payload(
                    NodeId(peer as u64),
                    MessageId((peer * 100 + me) as u64),
                    dests[peer].as_mut_ptr().cast(),
                    stride,
                )
            }
            .unwrap(),
        );
    }
    for peer in (0..size).filter(|&p| p != me) {
        let message = PilotMessage {
            id: MessageId((me * 100 + peer) as u64),
            transfer,
            region_box: GridBox::from_arrays([me % 4, 1, 0], [me % 4 + 2, 4, 1]),
        };
        comm.send_outbound_pilot(&OutboundPilot {
            to: NodeId(peer as u64),
            message,
        })
        .unwrap();
        // SAFETY: `source` outlives the send, which completes in wait_for.
        events.push(
            unsafe {
                comm.send_payload(
                    NodeId(peer as u64),
                    message.id,
                    source.as_ptr().cast(),
                    send_stride,
                )
            }
            .unwrap(),
        );
    }
    let mut pilots = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while pilots.len() < size - 1 {
        pilots.extend(comm.poll_inbound_pilots().unwrap());
        assert!(Instant::now() < deadline, "pilots did not arrive");
    }
    for pilot in &pilots {
        let peer = pilot.from.0 as usize;
        assert_eq!(pilot.message.id, MessageId((peer * 100 + me) as u64));
        assert_eq!(pilot.message.transfer, transfer);
        assert_eq!(
            pilot.message.region_box,
            GridBox::from_arrays([peer % 4, 1, 0], [peer % 4 + 2, 4, 1])
        );
        if peer % 2 == 0 {
            let stride = receive_stride(size, peer);
            // SAFETY: as above.
            events.push(
                unsafe {
                    comm.receive_payload(
                        pilot.from,
                        pilot.message.id,
                        dests[peer].as_mut_ptr().cast(),
                        stride,
                    )
                }
                .unwrap(),
            );
        }
    }
    wait_for(comm, &events);
    for peer in (0..size).filter(|&p| p != me) {
        let row = |r: usize| {
            (0..3)
                .map(|c| (peer * 1000 + (peer % 4 + r) * 5 + 1 + c) as u32)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            &dests[peer][peer * 3..peer * 3 + 3],
            &row(0)[..],
            "from N{peer}"
        );
        assert_eq!(
            &dests[peer][(peer + 1) * 3..(peer + 1) * 3 + 3],
            &row(1)[..],
            "from N{peer}"
        );
    }
}

/// Where the box from `peer` lands: rows [peer, peer + 2) of a (size + 1) x 3 allocation.
fn receive_stride(size: usize, peer: usize) -> Stride {
    Stride {
        allocation_range: Range::new(size + 1, 3, 1),
        transfer: Subrange::new(Id::new(peer, 0, 0), Range::new(2, 3, 1)),
        elem_size: 4,
    }
}

fn rank_main() {
    let environment = MpiEnvironment::init().unwrap();
    assert!(environment.owns_mpi());
    let mut world = environment.world().unwrap();
    // All ranks run on this one host, so their host-local ranks are their ranks. Core sharing:
    // masks of CPUs each rank may use, gathered among the host's ranks. Disjoint masks (a
    // launcher's cores of their own) share with nobody, one common CPU with everyone, and a CPU
    // of only the even ranks' masks with every even rank.
    let me = world.local_node().0 as usize;
    let size = world.num_nodes();
    let mask = |cpus: &[usize]| {
        let mut mask = [0u64; 16];
        for &cpu in cpus {
            mask[cpu / 64] |= 1 << (cpu % 64);
        }
        mask
    };
    let placed = |core_sharers| HostPlacement {
        local_rank: me,
        local_processes: size,
        core_sharers,
    };
    assert_eq!(world.host_placement(&mask(&[me * 70])).unwrap(), placed(1));
    assert_eq!(
        world.host_placement(&mask(&[5, me + 100])).unwrap(),
        placed(size)
    );
    let evens = size.div_ceil(2);
    let parity = if me % 2 == 0 { 1000 } else { 1001 };
    let expected = if me % 2 == 0 { evens } else { size - evens };
    assert_eq!(
        world.host_placement(&mask(&[parity])).unwrap(),
        placed(expected)
    );
    exchange_payloads(&mut world);
    world.collective_barrier().unwrap();
    // Clones are independent and usable concurrently from their own threads.
    let clones: Vec<Box<dyn Communicator>> =
        (0..3).map(|_| world.collective_clone().unwrap()).collect();
    let threads: Vec<_> = clones
        .into_iter()
        .map(|mut clone| {
            std::thread::spawn(move || {
                exchange_payloads(clone.as_mut());
                clone.collective_barrier().unwrap();
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    world.collective_barrier().unwrap();
    // Gathers of byte strings of different lengths (one empty) onto rank 0 and the last rank.
    for root in [0, size - 1] {
        let mine = vec![me as u8; me * 3];
        let gathered = world
            .collective_gather_bytes(NodeId(root as u64), &mine)
            .unwrap();
        if me == root {
            let expected: Vec<Vec<u8>> = (0..size).map(|r| vec![r as u8; r * 3]).collect();
            assert_eq!(gathered, Some(expected));
        } else {
            assert_eq!(gathered, None);
        }
    }
    drop(world);
    println!("rank ok");
}

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() || std::env::var_os("PMI_SIZE").is_some()
    {
        rank_main();
        return;
    }
    for ranks in [2, 3, 4] {
        let output = common::mpirun_self(ranks)
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .output()
            .expect("mpirun must be installed (scripts/setup.sh)");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.matches("rank ok").count() == ranks,
            "mpirun -n {ranks} failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        println!("mpi_communicator: {ranks} ranks ok");
    }
}
