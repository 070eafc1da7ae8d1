//! The crate's error type: a kind (which maps one-to-one onto `celerity_status`) plus a message
//! that names the offending argument, its value and the limit it broke.

use std::fmt;

/// What went wrong, at the granularity the C ABI reports (`celerity_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// NULL handle, bad dimensions, a subrange outside its buffer, a bad enum value, ...
    InvalidArgument,
    /// Not initialised, already shut down, wrong thread, released or forged handle.
    InvalidState,
    /// A feature that is absent from this build or this system.
    Unsupported,
    /// A host or device allocation failed.
    OutOfMemory,
    /// The device (CUDA) reported an error.
    Device,
    /// The communicator (MPI) reported an error or a peer was lost.
    Communication,
    /// An uninitialised read or an overlapping write under policy `error`.
    AccessPattern,
    /// A kernel or host task returned non-zero.
    TaskFailed,
    /// A bug: a caught panic or a broken invariant.
    Internal,
}

impl ErrorKind {
    /// Every kind, in declaration order (the index is the kind's wire code between nodes).
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::InvalidArgument,
        ErrorKind::InvalidState,
        ErrorKind::Unsupported,
        ErrorKind::OutOfMemory,
        ErrorKind::Device,
        ErrorKind::Communication,
        ErrorKind::AccessPattern,
        ErrorKind::TaskFailed,
        ErrorKind::Internal,
    ];

    /// The kind's wire code (its index in [`ErrorKind::ALL`]).
    pub fn code(self) -> u8 {
        Self::ALL.iter().position(|&k| k == self).unwrap_or(8) as u8
    }

    /// The kind of wire code `code`; unknown codes are `Internal`.
    pub fn from_code(code: u64) -> Self {
        Self::ALL
            .get(code as usize)
            .copied()
            .unwrap_or(ErrorKind::Internal)
    }
}

/// An error with its kind and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// `InvalidArgument` with `message`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// `InvalidState` with `message`.
    pub fn invalid_state(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidState, message)
    }

    /// `Unsupported` with `message`.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    /// `Internal` with `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without any prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error with `context` prepended to its message (`"context: message"`).
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

/// An empty byte vector with room for `len` bytes (a length the program chose), failing with
/// `OutOfMemory` naming `argument` instead of aborting the process when the allocation fails.
///
/// A length beyond the machine's memory is refused before allocating: an allocator that only
/// reserves address space (mimalloc does) would succeed, and copying into it would then read
/// past the program's data or touch pages the machine cannot back.
pub fn try_byte_vec(len: usize, argument: &str) -> Result<Vec<u8>> {
    if let Some(memory) = host_memory_bytes().filter(|&memory| len > memory) {
        return Err(Error::new(
            ErrorKind::OutOfMemory,
            format!(
                "argument `{argument}`: a copy of {len} bytes exceeds this machine's memory ({memory} bytes)"
            ),
        ));
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(|_| {
        Error::new(
            ErrorKind::OutOfMemory,
            format!("argument `{argument}`: allocating {len} bytes for its copy failed"),
        )
    })?;
    Ok(bytes)
}

/// The host's physical memory (`MemTotal` of `/proc/meminfo`), read once; `None` where there is
/// no such file.
fn host_memory_bytes() -> Option<usize> {
    static MEMORY: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *MEMORY.get_or_init(|| {
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_beyond_the_machines_memory_is_refused_before_allocating() {
        // 64 TiB: more than any host's memory, and address space mimalloc would reserve.
        let e = try_byte_vec(1 << 46, "op.identity").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfMemory);
        assert!(e.message().contains("`op.identity`"), "{}", e.message());
        assert_eq!(try_byte_vec(64, "x").unwrap().capacity(), 64);
    }
}
