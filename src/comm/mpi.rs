//! The MPI communicator (rsmpi). The runtime initialises MPI with `MPI_THREAD_MULTIPLE`
//! unless the program already did, because collective host tasks call MPI from lane threads.

use crate::error::{Error, ErrorKind, Result};

/// The MPI library's identification string (`MPI_Get_library_version`), which may be queried
/// before MPI is initialised.
pub fn library_version() -> Result<String> {
    mpi::environment::library_version()
        .map(|v| v.trim_end_matches(['\0', '\n', ' ']).to_owned())
        .map_err(|e| {
            Error::new(
                ErrorKind::Communication,
                format!("MPI_Get_library_version: {e}"),
            )
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_the_linked_mpi_library() {
        let version = super::library_version().unwrap();
        assert!(!version.is_empty());
        assert!(version.contains("MPI"), "{version}");
    }
}
