//! The stall detector across two MPI ranks: rank 1 skips the submission of the consumer task, so
//! rank 0's receive of the transfer can never be satisfied and rank 0 must report it.
//!
//! Ready but not run by default (it deliberately leaves a rank stuck and ends the ranks without
//! shutting the runtime down): `CELERITY_RUN_MPI_STALL_TEST=1 cargo test --features mpi --test
//! mpi_stall` re-launches this binary under `mpirun -n 2` and checks rank 0's report.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use celerity::backend::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use celerity::grid::{Id, Range};
use celerity::runtime::Runtime;
use celerity::runtime::config::{Config, DeviceSelection, Lookahead};
use celerity::task::{CommandGroup, RangeMapper, TaskSpec};

fn nothing() -> Launcher {
    Arc::new(|_: &KernelInvocation, _: &LaunchEnvironment| Ok(()))
}

fn rank_main() {
    let config = Config {
        devices: DeviceSelection::Host(1),
        lookahead: Lookahead::None,
        stall_timeout: Duration::from_secs(1),
        ..Config::default()
    };
    let mut rt = Runtime::start(config).unwrap();
    let rank = rt.info().node;
    let b = rt
        .create_buffer(1, Range::new(16, 1, 1), 4, 4, None)
        .unwrap();
    rt.submit(
        TaskSpec::DeviceKernel {
            dims: 1,
            range: Range::new(16, 1, 1),
            offset: Id::default(),
        },
        CommandGroup::new()
            .discard_write(b, RangeMapper::OneToOne)
            .name("produce"),
        nothing(),
    )
    .unwrap();
    if rank == 0 {
        rt.submit(
            TaskSpec::host(1, Range::new(16, 1, 1)),
            CommandGroup::new()
                .read(b, RangeMapper::All)
                .name("consume"),
            nothing(),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while rt.stall_reports().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        for report in rt.stall_reports() {
            println!("REPORT {}", report.replace('\n', "\nREPORT "));
        }
    } else {
        // Skips `consume`: never pushes its half to rank 0.
        std::thread::sleep(Duration::from_secs(8));
    }
    println!("rank {rank} done");
    // The stuck graph cannot shut down cleanly; end the rank here.
    std::process::exit(0);
}

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() || std::env::var_os("PMI_SIZE").is_some()
    {
        rank_main();
        return;
    }
    if std::env::var_os("CELERITY_RUN_MPI_STALL_TEST").is_none() {
        println!("mpi_stall: skipped (set CELERITY_RUN_MPI_STALL_TEST=1 to run it)");
        return;
    }
    let output = common::mpirun_self(2)
        .output()
        .expect("mpirun must be installed (scripts/setup.sh)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("REPORT "))
        .collect();
    let report = report.join("\n");
    assert!(report.contains("stall on N0"), "{stdout}");
    assert!(report.contains("receive of transfer T2.B0"), "{stdout}");
    assert!(
        report.contains("no pilot received yet for {[8,0,0] - [16,1,1]}"),
        "{stdout}"
    );
    println!("mpi_stall: rank 0 reported the unsatisfiable receive");
}
