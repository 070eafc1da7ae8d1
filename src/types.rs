//! Strong id newtypes shared by every layer (C++ Celerity: `types.h`).
//!
//! Ids come from plain counters, so in an SPMD program they agree across nodes exactly when the
//! call order does. Each id prints with the short prefix that graph output and log messages use
//! (`T12`, `B3`, `C7`, `I42`, ...).

use std::fmt;

macro_rules! define_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u64);

        impl $name {
            /// The raw counter value.
            #[inline]
            pub const fn get(self) -> u64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }

        impl From<u64> for $name {
            fn from(value: u64) -> Self {
                Self(value)
            }
        }
    };
}

define_id!(
    /// A task of the task graph; task 0 is the initial epoch.
    TaskId,
    "T"
);
define_id!(
    /// A buffer.
    BufferId,
    "B"
);
define_id!(
    /// A node (an MPI rank, or a simulated node).
    NodeId,
    "N"
);
define_id!(
    /// A command of a node's command graph.
    CommandId,
    "C"
);
define_id!(
    /// A collective group: 0 is "not collective", 1 the root group, user groups start at 2.
    CollectiveGroupId,
    "CG"
);
define_id!(
    /// A reduction; 0 means "no reduction".
    ReductionId,
    "R"
);
define_id!(
    /// A host object.
    HostObjectId,
    "H"
);
define_id!(
    /// A memory: 0 is user memory, 1 pinned host memory, 2 and up device-native memories.
    MemoryId,
    "M"
);
define_id!(
    /// A local device.
    DeviceId,
    "D"
);
define_id!(
    /// An instruction of a node's instruction graph.
    InstructionId,
    "I"
);
define_id!(
    /// A point-to-point message between two nodes (pairs a pilot with its payload).
    MessageId,
    "msg"
);

impl TaskId {
    /// The init epoch, the first task of every task graph.
    pub const INIT_EPOCH: TaskId = TaskId(0);
}

impl CollectiveGroupId {
    /// Not a collective task.
    pub const NONE: Self = Self(0);
    /// The root group (the runtime's duplicate of the world communicator).
    pub const ROOT: Self = Self(1);
    /// The first id handed to a user-created (or the implicit default) group.
    pub const FIRST_USER: Self = Self(2);
}

impl ReductionId {
    /// No reduction.
    pub const NONE: Self = Self(0);
}

impl MemoryId {
    /// Memory handed in by the user (host-initialised buffers, fence destinations).
    pub const USER: Self = Self(0);
    /// Host memory managed by the runtime.
    pub const HOST: Self = Self(1);
    /// The first device-native memory.
    pub const FIRST_DEVICE: Self = Self(2);
}

/// Identifies one data transfer between nodes: the consuming task, the buffer and the
/// reduction (0 when the transfer is not a reduction's partial results). Sender and receiver
/// derive it independently from the same task graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TransferId {
    /// The task that consumes the data.
    pub consumer: TaskId,
    /// The buffer transferred.
    pub buffer: BufferId,
    /// The reduction whose partial results are transferred, or [`ReductionId::NONE`].
    pub reduction: ReductionId,
}

impl fmt::Display for TransferId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.consumer, self.buffer)?;
        if self.reduction != ReductionId::NONE {
            write!(f, ".{}", self.reduction)?;
        }
        Ok(())
    }
}

/// An allocation: a memory id (8 bits) and a raw id unique within that memory (56 bits).
/// Raw id 0 is the null allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AllocationId(u64);

impl AllocationId {
    const RAW_BITS: u32 = 56;

    /// The null allocation in `memory`.
    pub const fn null(memory: MemoryId) -> Self {
        Self(memory.0 << Self::RAW_BITS)
    }

    /// Allocation `raw` in `memory`. Panics if `memory` or `raw` do not fit their bits, which
    /// the instruction graph generator's counters rule out.
    pub fn new(memory: MemoryId, raw: u64) -> Self {
        assert!(memory.0 < 256, "{memory} does not fit an allocation id");
        assert!(
            raw < 1 << Self::RAW_BITS,
            "raw allocation id {raw} overflows 56 bits"
        );
        Self((memory.0 << Self::RAW_BITS) | raw)
    }

    /// The memory the allocation lives in.
    pub fn memory(self) -> MemoryId {
        MemoryId(self.0 >> Self::RAW_BITS)
    }

    /// The id within the memory.
    pub fn raw(self) -> u64 {
        self.0 & ((1 << Self::RAW_BITS) - 1)
    }

    /// Whether this is the null allocation.
    pub fn is_null(self) -> bool {
        self.raw() == 0
    }
}

impl fmt::Display for AllocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.A{}", self.memory(), self.raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_with_their_prefix() {
        assert_eq!(TaskId(12).to_string(), "T12");
        assert_eq!(BufferId(3).to_string(), "B3");
        assert_eq!(InstructionId(42).to_string(), "I42");
        let transfer = TransferId {
            consumer: TaskId(5),
            buffer: BufferId(1),
            reduction: ReductionId(2),
        };
        assert_eq!(transfer.to_string(), "T5.B1.R2");
        let plain = TransferId {
            reduction: ReductionId::NONE,
            ..transfer
        };
        assert_eq!(plain.to_string(), "T5.B1");
    }

    #[test]
    fn allocation_ids_pack_memory_and_raw_id() {
        let a = AllocationId::new(MemoryId(3), 77);
        assert_eq!((a.memory(), a.raw()), (MemoryId(3), 77));
        assert_eq!(a.to_string(), "M3.A77");
        assert!(AllocationId::null(MemoryId::HOST).is_null());
        assert!(!a.is_null());
        assert_ne!(
            AllocationId::null(MemoryId(2)),
            AllocationId::null(MemoryId(3))
        );
    }
}

/// Hasher for maps keyed by the ids above: one multiply (Fibonacci hashing), because the keys
/// are small counters and SipHash would dominate the hot paths' lookups.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

/// A hash map keyed by ids, with [`IdHasher`].
pub type IdMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// A hash set of ids, with [`IdHasher`].
pub type IdSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<IdHasher>>;
