//! Communicators: the local one for a single process and MPI (rsmpi).

#[cfg(feature = "mpi")]
pub mod mpi;
