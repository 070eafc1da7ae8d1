//! Communicators: the local one for a single process and MPI (rsmpi).
