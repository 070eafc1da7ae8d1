//! Choosing the backend, the devices and the communicator of a run from the configuration.

use crate::backend::host::HostBackend;
use crate::backend::interface::Backend;
use crate::backend::system_info::SystemInfo;
use crate::comm::in_process::InProcessCommunicator;
use crate::comm::{CPU_MASK_WORDS, Communicator, CpuMask};
use crate::error::{Error, Result};
use crate::types::NodeId;

use super::config::{Config, DeviceSelection, SchedulerThreads};

/// Which backend runs kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// Host memory and emulated devices.
    Host,
    /// CUDA devices.
    Cuda,
}

/// How the instruction graph is executed.
pub(super) enum Execution {
    /// For real, on a backend, talking to peers through a communicator.
    Live {
        backend: Box<dyn Backend>,
        communicator: Box<dyn Communicator>,
    },
    /// Not at all (`dry_run_nodes`).
    DryRun,
}

/// Keeps MPI initialised for the runtime's lifetime (dropped last).
pub(super) struct MpiGuard {
    #[cfg(feature = "mpi")]
    _environment: crate::comm::mpi::MpiEnvironment,
}

/// The outcome of selection.
pub(super) struct Selection {
    pub node: NodeId,
    pub num_nodes: usize,
    pub system: SystemInfo,
    pub backend_kind: BackendKind,
    pub execution: Execution,
    pub mpi: Option<MpiGuard>,
    /// Devices and communicator in words, for the startup line.
    pub description: String,
    /// The process has a core for each of its threads, so they may poll briefly before they
    /// park (see [`may_poll_when_idle`]).
    pub poll_when_idle: bool,
    /// How many of the backend's queue threads (lanes, submission and allocation threads) may
    /// poll at once (see [`idle_queue_pollers`]).
    pub queue_pollers: usize,
    /// One or two (never `Auto`): see [`live_scheduler_threads`].
    pub scheduler_threads: SchedulerThreads,
    /// Why the runtime's threads will take turns on too few cores, where the process was
    /// confined to fewer than the host has (see [`confined_cores_warning`]); logged once the
    /// node is known.
    pub confined_cores: Option<String>,
}

/// The threads a run keeps busy: the application's, `scheduler_threads` scheduler stages, the
/// executor and one per device (its lane or submission thread).
fn busy_threads(scheduler_threads: usize, devices: usize) -> usize {
    2 + scheduler_threads + devices
}

/// Whether the runtime's threads may poll for work briefly before they park: only when this
/// process's share of its cores (the `cores` it may use, among the `sharers` processes of the
/// host that may use them too: [`crate::comm::HostPlacement::core_sharers`]) gives each of its
/// [`busy_threads`] (one scheduler stage) a core of its own.
pub(super) fn may_poll_when_idle(cores: usize, sharers: usize, devices: usize) -> bool {
    cores / sharers.max(1) > busy_threads(1, devices)
}

/// How many queue threads may poll for work at once: the process's share of its cores less
/// one for each of the [`busy_threads`] that are not queue threads (the application's, the
/// executor and `stages` scheduler stages) and one left over, as [`may_poll_when_idle`]
/// leaves one; none where that forbids polling. Each device's first lane thus keeps a place
/// (where polling is allowed, the share exceeds `busy_threads(1, devices)`); the further lanes
/// an emulated device opens for independent kernels (up to four per device) park when the
/// places are taken instead of taking turns on cores with the threads that have work.
pub(super) fn idle_queue_pollers(
    cores: usize,
    sharers: usize,
    devices: usize,
    stages: usize,
) -> usize {
    if !may_poll_when_idle(cores, sharers, devices) {
        return 0;
    }
    (cores / sharers.max(1)).saturating_sub(busy_threads(stages, 0) + 1)
}

/// The cores this process may run on (affinity and cgroup quota included).
fn process_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The host's online cores (Linux: `/sys/devices/system/cpu/online`); `None` where unknown.
fn host_online_cores() -> Option<usize> {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    count_cpu_list(list.trim())
}

/// The ranges `first..=last` of a Linux CPU list (`0-15`, `0-3,8-11`, `5`); `None` if malformed.
fn cpu_ranges(list: &str) -> Option<Vec<(usize, usize)>> {
    list.split(',')
        .map(|part| {
            let (first, last) = match part.split_once('-') {
                Some((first, last)) => (first.trim().parse().ok()?, last.trim().parse().ok()?),
                None => {
                    let cpu: usize = part.trim().parse().ok()?;
                    (cpu, cpu)
                }
            };
            (last >= first).then_some((first, last))
        })
        .collect()
}

/// The number of CPUs in a Linux CPU list; `None` if malformed.
fn count_cpu_list(list: &str) -> Option<usize> {
    Some(
        cpu_ranges(list)?
            .iter()
            .map(|(first, last)| last - first + 1)
            .sum(),
    )
}

/// A Linux CPU list as a [`CpuMask`] (CPUs past its 1 024 left out); `None` if malformed.
fn cpu_mask(list: &str) -> Option<CpuMask> {
    let mut mask: CpuMask = [0; CPU_MASK_WORDS];
    for (first, last) in cpu_ranges(list)? {
        for cpu in first..=last.min(mask.len() * 64 - 1) {
            mask[cpu / 64] |= 1 << (cpu % 64);
        }
    }
    Some(mask)
}

/// The CPUs this process may run on (`Cpus_allowed_list` of `/proc/self/status`); every CPU
/// where unknown, so that it counts as sharing them with every process of the host.
fn own_cpu_mask() -> CpuMask {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let list = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
            cpu_mask(list.trim())
        })
        .unwrap_or([u64::MAX; CPU_MASK_WORDS])
}

/// The warning for a process that may run on `process_cores` of the host's `host_cores` (a CPU
/// affinity mask or quota), fewer than the threads the runtime keeps busy (the application,
/// `scheduler_threads` scheduler threads, the executor, one thread per device): they take turns,
/// and each hand-off between them waits for a switch. Launchers confine ranks like this by
/// default (Open MPI binds each of up to two ranks to one core; Slurm gives a task one CPU),
/// which C++ Celerity warns about too. Only where the host has a core per thread for each of its
/// `local_processes`, so that lifting the confinement helps: on a 2-core machine two ranks take
/// turns either way, and there binding each to its own core was as fast or faster (wave_sim
/// under `mpirun -n 2` on this project's 2-core VM: 0.30 ms per step bound, 0.26-0.57 unbound).
fn confined_cores_warning(
    process_cores: usize,
    host_cores: usize,
    local_processes: usize,
    scheduler_threads: usize,
    devices: usize,
) -> Option<String> {
    let threads = busy_threads(scheduler_threads, devices);
    if process_cores >= threads || host_cores / local_processes.max(1) < threads {
        return None;
    }
    Some(format!(
        "this process may run on {process_cores} of the host's {host_cores} cores (its CPU \
         affinity or quota), fewer than the {threads} threads the runtime keeps busy \
         (application, scheduler, executor and device threads): they take turns, and tasks wait \
         for each switch. Open MPI binds each rank to one core when it starts at most two, and \
         Slurm gives a task one CPU unless told otherwise: start with `mpirun --bind-to none`, \
         or give each rank {threads} cores (`mpirun --map-by slot:PE={threads}`, \
         `srun --cpus-per-task={threads}`)"
    ))
}

/// Whether the process has a core for a second scheduler stage as well: [`may_poll_when_idle`]
/// with both stages among the [`busy_threads`] of `lanes` lanes.
fn has_core_for_second_stage(cores: usize, sharers: usize, lanes: usize) -> bool {
    cores / sharers.max(1) > busy_threads(2, lanes)
}

/// How many scheduler threads a run that executes starts. `Auto` takes two only where the
/// scheduler paces the run and the process has a core for the second stage too: one emulated
/// device (a chunk per task, little executor work per task), and
/// [`has_core_for_second_stage`]. On an H100 host (16 cores,
/// 10 alternating rounds, docs/benchmarks.md "two scheduler threads for one host device") two
/// threads took `host:1` chains 23 % and independent tasks 12 % faster, with `million_tasks`'
/// time unchanged and its peak RSS within 3 %; on `host:4` they were within the spread (chain −7 %,
/// independent +4 %), the executor pacing the run. On GPUs the executor and the device's
/// submission thread pace it and a second thread only adds a hand-off (docs/benchmarks.md,
/// "what paces the GPU task floor"), so `Auto` takes one there, as on smaller hosts.
pub(super) fn live_scheduler_threads(
    configured: SchedulerThreads,
    backend: BackendKind,
    devices: usize,
    cores: usize,
    sharers: usize,
) -> SchedulerThreads {
    match configured {
        SchedulerThreads::Auto
            if backend == BackendKind::Host
                && devices == 1
                && has_core_for_second_stage(cores, sharers, devices) =>
        {
            SchedulerThreads::Two
        }
        SchedulerThreads::Auto => SchedulerThreads::One,
        given => given,
    }
}

/// How many scheduler threads a dry run starts: nothing executes, so the scheduler is the whole
/// run (no lanes, no executor work), and `Auto` takes two where [`has_core_for_second_stage`].
pub(super) fn dry_run_scheduler_threads(
    configured: SchedulerThreads,
    cores: usize,
) -> SchedulerThreads {
    match configured {
        SchedulerThreads::Auto if has_core_for_second_stage(cores, 1, 0) => SchedulerThreads::Two,
        SchedulerThreads::Auto => SchedulerThreads::One,
        given => given,
    }
}

/// Which of a host's `count` GPUs the process with host-local rank `local_rank` of `local_size`
/// takes: all of them when it is alone; an even, contiguous share when there are at least as many
/// GPUs as processes (the first `count % local_size` ranks take one more); otherwise one GPU,
/// shared round-robin (and said so in a warning), as C++ Celerity does.
#[cfg_attr(
    all(not(feature = "cuda"), not(test)),
    expect(dead_code, reason = "only the CUDA backend splits GPUs")
)]
pub(super) fn host_share_of_gpus(count: usize, local_rank: usize, local_size: usize) -> Vec<usize> {
    if local_size <= 1 || count == 0 {
        return (0..count).collect();
    }
    if count < local_size {
        return vec![local_rank % count];
    }
    let (base, extra) = (count / local_size, count % local_size);
    let start = local_rank * base + local_rank.min(extra);
    let len = base + usize::from(local_rank < extra);
    (start..start + len).collect()
}

fn backend(config: &Config, host_local: (usize, usize)) -> Result<(Box<dyn Backend>, BackendKind)> {
    match config.devices {
        DeviceSelection::Host(n) => Ok((
            Box::new(HostBackend::new(
                n as usize,
                config.host_device_peer_copies,
            )?),
            BackendKind::Host,
        )),
        DeviceSelection::Cuda => cuda_backend(config, host_local),
        DeviceSelection::Auto => cuda_backend(config, host_local).or_else(|error| {
            tracing::debug!("devices=auto: no CUDA ({error}); using one emulated host device");
            Ok((
                Box::new(HostBackend::new(1, config.host_device_peer_copies)?),
                BackendKind::Host,
            ))
        }),
    }
}

#[cfg(feature = "cuda")]
fn cuda_backend(
    config: &Config,
    (local_rank, local_size): (usize, usize),
) -> Result<(Box<dyn Backend>, BackendKind)> {
    use crate::backend::cuda::{CudaBackend, device_count};
    let count = device_count()?;
    let share = host_share_of_gpus(count, local_rank, local_size);
    if local_size > count && count > 0 {
        tracing::warn!(
            "{local_size} processes on this host share {count} CUDA device(s): process {local_rank} of this host uses device {}",
            share[0]
        );
    }
    Ok((
        Box::new(
            CudaBackend::on_devices(Some(&share), config.pinned_memory_limit)?
                .with_kernel_graphs(config.cuda_graphs),
        ),
        BackendKind::Cuda,
    ))
}

#[cfg(not(feature = "cuda"))]
fn cuda_backend(
    _config: &Config,
    _host_local: (usize, usize),
) -> Result<(Box<dyn Backend>, BackendKind)> {
    Err(Error::unsupported(
        "this libcelerity was built without the CUDA backend (cargo feature `cuda`)",
    ))
}

/// Whether this process was started by an MPI launcher.
fn launched_by_mpi() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

#[cfg(feature = "mpi")]
fn communicator() -> Result<(Box<dyn Communicator>, Option<MpiGuard>)> {
    if !launched_by_mpi() && !mpi::environment::is_initialized() {
        return Ok((Box::new(InProcessCommunicator::local()), None));
    }
    let environment = crate::comm::mpi::MpiEnvironment::init()?;
    let world = environment.world()?;
    Ok((
        Box::new(world),
        Some(MpiGuard {
            _environment: environment,
        }),
    ))
}

#[cfg(not(feature = "mpi"))]
fn communicator() -> Result<(Box<dyn Communicator>, Option<MpiGuard>)> {
    if launched_by_mpi() {
        tracing::warn!(
            "started by an MPI launcher, but this libcelerity was built without MPI: every process runs alone"
        );
    }
    Ok((Box::new(InProcessCommunicator::local()), None))
}

/// Selects backend, devices and communicator (or the dry run) for `config`; `communicator`,
/// when given, replaces the communicator selection (one node of an in-process fabric, say).
pub(super) fn select(
    config: &Config,
    communicator: Option<Box<dyn Communicator>>,
) -> Result<Selection> {
    if let Some(nodes) = config.dry_run_nodes {
        let devices = match config.devices {
            DeviceSelection::Host(n) => n as usize,
            _ => 1,
        };
        return Ok(Selection {
            node: NodeId(0),
            num_nodes: nodes as usize,
            system: SystemInfo::with_devices(devices, config.host_device_peer_copies)?,
            backend_kind: BackendKind::Host,
            execution: Execution::DryRun,
            mpi: None,
            description: format!(
                "dry run of {nodes} node(s) with {devices} device(s) each, nothing executed"
            ),
            poll_when_idle: false,
            queue_pollers: 0,
            // Nothing executes: the scheduler is the whole run, so `auto` may take two threads.
            scheduler_threads: dry_run_scheduler_threads(config.scheduler_threads, process_cores()),
            // nothing executes: the threads that would take turns do not run
            confined_cores: None,
        });
    }
    let (communicator, mpi) = match communicator {
        Some(given) => (given, None),
        None => self::communicator()?,
    };
    // Several processes on one host split its GPUs (and its cores) among themselves; this one
    // shares its cores with all of them where the launcher left them unbound, with none where it
    // gave each rank cores of its own (`--map-by slot:PE=N`).
    let placement = communicator.host_placement(&own_cpu_mask())?;
    let host_local = (placement.local_rank, placement.local_processes);
    let sharers = placement.core_sharers;
    let (backend, backend_kind) = backend(config, host_local)?;
    let cores = process_cores();
    let devices = backend.system_info().devices.len();
    let poll_when_idle = may_poll_when_idle(cores, sharers, devices);
    let scheduler_threads = live_scheduler_threads(
        config.scheduler_threads,
        backend_kind,
        devices,
        cores,
        sharers,
    );
    if communicator.num_nodes() > 256 {
        return Err(Error::unsupported(format!(
            "{} processes exceed the supported 256 nodes",
            communicator.num_nodes()
        )));
    }
    let host_cores = host_online_cores();
    let stages = 1 + usize::from(scheduler_threads == SchedulerThreads::Two);
    let queue_pollers = idle_queue_pollers(cores, sharers, devices, stages);
    let confined_cores = host_cores
        .and_then(|host| confined_cores_warning(cores, host, host_local.1, stages, devices));
    let description = format!(
        "devices: {}; communicator: {}; cores: {cores}{}{}",
        backend.describe_devices(),
        communicator.describe(),
        host_cores.map_or(String::new(), |host| format!(" of {host}")),
        if sharers > 1 {
            format!(", shared by {sharers} processes")
        } else {
            String::new()
        }
    );
    Ok(Selection {
        description,
        poll_when_idle,
        queue_pollers,
        scheduler_threads,
        confined_cores,
        node: communicator.local_node(),
        num_nodes: communicator.num_nodes(),
        system: backend.system_info().clone(),
        backend_kind,
        execution: Execution::Live {
            backend,
            communicator,
        },
        mpi,
    })
}

#[cfg(test)]
mod tests {
    use super::{
        BackendKind, SchedulerThreads, confined_cores_warning, count_cpu_list, cpu_mask,
        dry_run_scheduler_threads, host_share_of_gpus, idle_queue_pollers, live_scheduler_threads,
        may_poll_when_idle,
    };

    #[test]
    fn cpu_lists_count_single_cpus_and_ranges() {
        assert_eq!(count_cpu_list("0-15"), Some(16));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-3,8-11"), Some(8));
        assert_eq!(count_cpu_list("0,2,4-5"), Some(4));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("0-x"), None);
    }

    #[test]
    fn cpu_lists_become_masks_of_up_to_1024_cpus() {
        let mut expected = [0u64; 16];
        expected[0] = 0b1011;
        expected[1] = 1;
        assert_eq!(cpu_mask("0-1,3,64"), Some(expected));
        let all = cpu_mask("0-4095").unwrap();
        assert!(
            all.iter().all(|w| *w == u64::MAX),
            "CPUs past 1 023 left out"
        );
        assert_eq!(cpu_mask("x"), None);
    }

    /// A rank that an MPI launcher bound to one core of a 16-core host is told so, with the
    /// launcher options that lift it; a process with a core per thread is not, nor one on a host
    /// whose cores would not give each local process a core per thread anyway.
    #[test]
    fn a_process_confined_to_fewer_cores_than_its_threads_is_warned_with_the_fix() {
        // (process cores, host cores, processes on the host, scheduler threads, devices) -> warned
        let cases = [
            (
                (1, 16, 2, 1, 1),
                true,
                "mpirun -n 2's default binding on 16 cores",
            ),
            ((1, 16, 1, 1, 1), true, "taskset -c 0 on 16 cores"),
            ((3, 16, 1, 2, 1), true, "3 cores for 5 threads"),
            ((4, 16, 1, 1, 1), false, "a core for each of 4 threads"),
            (
                (1, 2, 2, 1, 1),
                false,
                "2 ranks on 2 cores: they take turns unbound too",
            ),
            ((1, 4, 1, 1, 1), true, "1 of 4 cores for 4 threads"),
            (
                (1, 3, 1, 1, 1),
                false,
                "3 cores for 4 threads: no core each anyway",
            ),
            (
                (1, 16, 6, 1, 1),
                false,
                "6 ranks on 16 cores: under 4 cores each",
            ),
            ((16, 16, 1, 1, 4), false, "the whole host"),
        ];
        for ((process, host, processes, scheduler, devices), warned, why) in cases {
            let warning = confined_cores_warning(process, host, processes, scheduler, devices);
            assert_eq!(warning.is_some(), warned, "{why}: {warning:?}");
        }
        let warning = confined_cores_warning(1, 16, 2, 1, 1).expect("warned");
        for part in [
            "may run on 1 of the host's 16 cores",
            "the 4 threads",
            "mpirun --bind-to none",
            "--map-by slot:PE=4",
            "srun --cpus-per-task=4",
        ] {
            assert!(warning.contains(part), "{part:?} missing from {warning:?}");
        }
    }

    #[test]
    fn auto_takes_two_scheduler_threads_for_one_host_device_or_a_dry_run_with_cores_to_spare() {
        use BackendKind::{Cuda, Host};
        use SchedulerThreads::{Auto, One, Two};
        // (configured, backend, devices, cores, processes sharing them) -> threads
        let cases = [
            ((Auto, Host, 1, 16, 1), Two, "host:1 on a 16-core host"),
            ((Auto, Host, 1, 16, 2), Two, "8 cores each for 5 threads"),
            ((Auto, Host, 1, 8, 1), Two, "8 cores of its own (PE=8)"),
            ((Auto, Host, 1, 8, 2), One, "8 cores shared by 2 ranks"),
            (
                (Auto, Host, 1, 16, 3),
                One,
                "5 cores each for 5 threads: none left over",
            ),
            ((Auto, Host, 1, 6, 1), Two, "6 cores for 5 threads"),
            (
                (Auto, Host, 1, 5, 1),
                One,
                "5 cores for 5 threads: none left",
            ),
            ((Auto, Host, 1, 2, 1), One, "a 2-core machine"),
            (
                (Auto, Host, 4, 64, 1),
                One,
                "host:4: the executor paces the run",
            ),
            (
                (Auto, Cuda, 1, 16, 1),
                One,
                "a GPU: the executor and the device pace it",
            ),
            ((Two, Cuda, 4, 2, 1), Two, "asked for"),
            ((One, Host, 1, 64, 1), One, "asked for"),
        ];
        for ((configured, backend, devices, cores, processes), expected, why) in cases {
            assert_eq!(
                live_scheduler_threads(configured, backend, devices, cores, processes),
                expected,
                "{why}"
            );
        }
        assert_eq!(dry_run_scheduler_threads(Auto, 16), Two, "a 16-core host");
        assert_eq!(dry_run_scheduler_threads(Auto, 2), One, "a 2-core machine");
        assert_eq!(dry_run_scheduler_threads(One, 64), One, "asked for");
        assert_eq!(dry_run_scheduler_threads(Two, 2), Two, "asked for");
    }

    #[test]
    fn threads_poll_before_parking_only_with_a_core_each() {
        assert!(
            may_poll_when_idle(16, 1, 1),
            "a 16-core host, one process, one GPU"
        );
        assert!(may_poll_when_idle(16, 2, 2), "8 cores each for 5 threads");
        assert!(!may_poll_when_idle(16, 4, 1), "4 cores each for 4 threads");
        assert!(!may_poll_when_idle(2, 1, 1), "a 2-core machine");
        assert!(
            !may_poll_when_idle(7, 1, 4),
            "7 cores for 7 threads: none left over"
        );
        assert!(!may_poll_when_idle(1, 0, 0));
    }

    #[test]
    fn queue_threads_poll_only_on_cores_no_other_busy_thread_needs() {
        // 16 cores less the application's thread, the executor, one scheduler stage and one
        // spare: 12 places, fewer than `host:4`'s 16 lanes.
        assert_eq!(idle_queue_pollers(16, 1, 4, 1), 12);
        assert_eq!(idle_queue_pollers(16, 1, 1, 2), 11, "two scheduler stages");
        assert_eq!(
            idle_queue_pollers(16, 2, 1, 2),
            3,
            "two unbound ranks: 8 cores each"
        );
        assert_eq!(idle_queue_pollers(7, 1, 4, 1), 0, "no polling allowed");
        assert_eq!(idle_queue_pollers(2, 1, 1, 1), 0, "a 2-core machine");
        for (cores, sharers, devices) in [(16, 1, 1), (16, 1, 8), (16, 2, 2), (64, 1, 8)] {
            assert!(
                may_poll_when_idle(cores, sharers, devices),
                "a case that polls"
            );
            assert!(
                idle_queue_pollers(cores, sharers, devices, 1) >= devices,
                "every device's first lane keeps a place: {cores} cores, {devices} devices"
            );
        }
    }

    #[test]
    fn processes_on_one_host_split_its_gpus_evenly_and_without_overlap() {
        assert_eq!(host_share_of_gpus(4, 0, 1), vec![0, 1, 2, 3]);
        assert_eq!(host_share_of_gpus(4, 0, 2), vec![0, 1]);
        assert_eq!(host_share_of_gpus(4, 1, 2), vec![2, 3]);
        assert_eq!(host_share_of_gpus(4, 3, 4), vec![3]);
        // 5 GPUs over 2 processes: the first takes one more.
        assert_eq!(host_share_of_gpus(5, 0, 2), vec![0, 1, 2]);
        assert_eq!(host_share_of_gpus(5, 1, 2), vec![3, 4]);
        // More processes than GPUs: round-robin sharing.
        assert_eq!(host_share_of_gpus(2, 2, 3), vec![0]);
        assert_eq!(host_share_of_gpus(0, 0, 2), Vec::<usize>::new());
        for (count, size) in [(8, 3), (7, 7), (16, 5)] {
            let all: Vec<usize> = (0..size)
                .flat_map(|rank| host_share_of_gpus(count, rank, size))
                .collect();
            assert_eq!(
                all,
                (0..count).collect::<Vec<_>>(),
                "{count} GPUs, {size} processes"
            );
        }
    }
}
