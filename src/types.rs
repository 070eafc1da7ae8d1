//! Strong id newtypes shared by every layer of the runtime, and a cheap hash map keyed by them.
//!
//! Ids come from plain counters, so in an SPMD program they agree across processes exactly when
//! the sequence of runtime calls does (see the architecture digest, section 0). Each id type
//! prints as its debug label prefix plus the number (`T12`, `B3`, `H1`, `CG2`, `R1`, `N0`).

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

macro_rules! id_newtype {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
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
    };
}

id_newtype!(
    /// A task of the task graph; task 0 is the init epoch.
    TaskId,
    "T"
);
id_newtype!(
    /// A buffer.
    BufferId,
    "B"
);
id_newtype!(
    /// A host object (the target of side effects).
    HostObjectId,
    "H"
);
id_newtype!(
    /// A collective group: 0 means "not collective", 1 is the root group, user groups start at 2.
    CollectiveGroupId,
    "CG"
);
id_newtype!(
    /// A reduction; 0 means "no reduction".
    ReductionId,
    "R"
);
id_newtype!(
    /// A node (process) of the cluster.
    NodeId,
    "N"
);

impl TaskId {
    /// The init epoch, the first task of every task graph.
    pub const INIT_EPOCH: TaskId = TaskId(0);
}

impl CollectiveGroupId {
    /// Not a collective task.
    pub const NONE: CollectiveGroupId = CollectiveGroupId(0);
    /// The root group, spanning all nodes (the duplicated world communicator).
    pub const ROOT: CollectiveGroupId = CollectiveGroupId(1);
    /// The first id handed to a user-created (or the implicit default) group.
    pub const FIRST_USER: CollectiveGroupId = CollectiveGroupId(2);
}

impl ReductionId {
    /// No reduction.
    pub const NONE: ReductionId = ReductionId(0);
}

/// A multiplicative hasher for the id newtypes: ids are small dense integers, so SipHash's
/// protection against adversarial keys buys nothing and costs time on every lookup.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A hash map keyed by id newtypes (or other small integers).
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_reserved_ids() {
        assert_eq!(TaskId(12).to_string(), "T12");
        assert_eq!(format!("{:?}", BufferId(3)), "B3");
        assert_eq!(CollectiveGroupId::FIRST_USER.to_string(), "CG2");
        assert_eq!(TaskId::INIT_EPOCH.get(), 0);
        let mut m: IdMap<BufferId, u32> = IdMap::default();
        m.insert(BufferId(7), 1);
        assert_eq!(m.get(&BufferId(7)), Some(&1));
    }
}
