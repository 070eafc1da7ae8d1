//! Choosing the backend, the devices and the communicator of a run from the configuration.

use crate::backend::host::HostBackend;
use crate::backend::interface::Backend;
use crate::backend::system_info::SystemInfo;
use crate::comm::Communicator;
use crate::comm::in_process::InProcessCommunicator;
use crate::error::{Error, Result};
use crate::types::NodeId;

use super::config::{Config, DeviceSelection};

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
}

fn backend(config: &Config) -> Result<(Box<dyn Backend>, BackendKind)> {
    match config.devices {
        DeviceSelection::Host(n) => Ok((
            Box::new(HostBackend::new(
                n as usize,
                config.host_device_peer_copies,
            )?),
            BackendKind::Host,
        )),
        DeviceSelection::Cuda => cuda_backend(config),
        DeviceSelection::Auto => cuda_backend(config).or_else(|error| {
            tracing::debug!("devices=auto: no CUDA ({error}); using one emulated host device");
            Ok((
                Box::new(HostBackend::new(1, config.host_device_peer_copies)?),
                BackendKind::Host,
            ))
        }),
    }
}

#[cfg(feature = "cuda")]
fn cuda_backend(config: &Config) -> Result<(Box<dyn Backend>, BackendKind)> {
    Ok((
        Box::new(crate::backend::cuda::CudaBackend::with_pinned_limit(
            config.pinned_memory_limit,
        )?),
        BackendKind::Cuda,
    ))
}

#[cfg(not(feature = "cuda"))]
fn cuda_backend(_config: &Config) -> Result<(Box<dyn Backend>, BackendKind)> {
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
        });
    }
    let (backend, backend_kind) = backend(config)?;
    let (communicator, mpi) = match communicator {
        Some(given) => (given, None),
        None => self::communicator()?,
    };
    if communicator.num_nodes() > 256 {
        return Err(Error::unsupported(format!(
            "{} processes exceed the supported 256 nodes",
            communicator.num_nodes()
        )));
    }
    let description = format!(
        "devices: {}; communicator: {}",
        backend.describe_devices(),
        communicator.describe()
    );
    Ok(Selection {
        description,
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
