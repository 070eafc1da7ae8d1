//! Helpers shared by the integration tests that launch themselves under `mpirun`.

use std::process::Command;

/// `mpirun` for `ranks` copies of this test binary on this host: as root where CI runs as
/// root, more ranks than cores allowed, and unbound, since Open MPI binds each of up to two
/// ranks to one core, where the runtime's threads would take turns and warn about it.
pub fn mpirun_self(ranks: usize) -> Command {
    let mut command = Command::new("mpirun");
    command
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
        ])
        .args(["-n", &ranks.to_string()])
        .arg(std::env::current_exe().expect("the test binary's path"));
    command
}
