//! The system model the instruction graph generator plans against: which memories exist, which
//! device each memory belongs to, and which memories can copy to which directly (C++ Celerity:
//! `system_info.h`).
//!
//! Memory 0 is user memory (pointers handed in by the program), memory 1 runtime-managed host
//! memory, and memory 2 + d the native memory of local device d.

use crate::error::{Error, Result};
use crate::types::{DeviceId, MemoryId};

/// Most memories a node may have (the width of [`MemoryMask`]).
pub const MAX_MEMORIES: usize = 64;

/// A set of memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MemoryMask(u64);

impl MemoryMask {
    /// The empty set.
    pub const EMPTY: MemoryMask = MemoryMask(0);

    /// The set holding only `memory`.
    pub fn single(memory: MemoryId) -> Self {
        Self(1 << memory.0)
    }

    /// Adds `memory`.
    pub fn insert(&mut self, memory: MemoryId) {
        self.0 |= 1 << memory.0;
    }

    /// Whether `memory` is in the set.
    pub fn contains(self, memory: MemoryId) -> bool {
        self.0 & (1 << memory.0) != 0
    }

    /// Union.
    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Intersection.
    pub fn intersection(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The memories in ascending order.
    pub fn iter(self) -> impl Iterator<Item = MemoryId> {
        (0..MAX_MEMORIES as u64)
            .filter(move |m| self.0 & (1 << m) != 0)
            .map(MemoryId)
    }
}

/// A local device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The memory kernels on this device access.
    pub native_memory: MemoryId,
}

/// A memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryInfo {
    /// Memories this one can copy to and from directly (always including itself).
    pub copy_peers: MemoryMask,
}

/// The devices and memories of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemInfo {
    /// Local devices, indexed by device id.
    pub devices: Vec<DeviceInfo>,
    /// Memories, indexed by memory id.
    pub memories: Vec<MemoryInfo>,
}

impl SystemInfo {
    /// A node with `num_devices` devices, each with its own native memory. With
    /// `device_peer_copies`, devices copy to each other directly; otherwise such copies are
    /// staged through host memory. User memory only exchanges data with host memory.
    pub fn with_devices(num_devices: usize, device_peer_copies: bool) -> Result<Self> {
        Self::with_device_peers(num_devices, |_, _| Ok(device_peer_copies))
    }

    /// A node with `num_devices` devices, each with its own native memory, where devices `a`
    /// and `b` (with `b < a`) copy to each other directly when `are_peers(a, b)` says so. User
    /// memory is a peer of host memory only; host memory is a peer of everything.
    pub fn with_device_peers(
        num_devices: usize,
        mut are_peers: impl FnMut(usize, usize) -> Result<bool>,
    ) -> Result<Self> {
        if num_devices + 2 > MAX_MEMORIES {
            return Err(Error::unsupported(format!(
                "{num_devices} devices need {} memories, at most {MAX_MEMORIES} are supported",
                num_devices + 2
            )));
        }
        let device_memory = |d: usize| MemoryId(MemoryId::FIRST_DEVICE.0 + d as u64);
        let mut memories = vec![
            MemoryInfo {
                copy_peers: MemoryMask::EMPTY
            };
            num_devices + 2
        ];
        let mut connect = |a: MemoryId, b: MemoryId| {
            memories[a.0 as usize].copy_peers.insert(b);
            memories[b.0 as usize].copy_peers.insert(a);
        };
        connect(MemoryId::USER, MemoryId::USER);
        connect(MemoryId::HOST, MemoryId::HOST);
        connect(MemoryId::USER, MemoryId::HOST);
        for d in 0..num_devices {
            connect(device_memory(d), device_memory(d));
            connect(device_memory(d), MemoryId::HOST);
            for other in 0..d {
                if are_peers(d, other)? {
                    connect(device_memory(d), device_memory(other));
                }
            }
        }
        Ok(Self {
            devices: (0..num_devices)
                .map(|d| DeviceInfo {
                    native_memory: device_memory(d),
                })
                .collect(),
            memories,
        })
    }

    /// Lets user memory copy to and from every device memory directly, for backends that move
    /// pageable memory themselves (CUDA stages it through pinned chunks at DMA speed, which
    /// beats a host-memory hop: one copy less, and no full-size pinned staging allocation).
    pub fn connect_user_memory_to_devices(&mut self) {
        for device in &self.devices {
            let memory = device.native_memory;
            self.memories[MemoryId::USER.0 as usize]
                .copy_peers
                .insert(memory);
            self.memories[memory.0 as usize]
                .copy_peers
                .insert(MemoryId::USER);
        }
    }

    /// Whether data can be copied from `source` to `dest` without staging.
    pub fn can_copy(&self, source: MemoryId, dest: MemoryId) -> bool {
        self.memories
            .get(source.0 as usize)
            .is_some_and(|m| m.copy_peers.contains(dest))
    }

    /// The device whose native memory is `memory`, if any.
    pub fn device_of(&self, memory: MemoryId) -> Option<DeviceId> {
        self.devices
            .iter()
            .position(|d| d.native_memory == memory)
            .map(|d| DeviceId(d as u64))
    }

    /// The native memory of `device`.
    pub fn native_memory(&self, device: DeviceId) -> MemoryId {
        self.devices[device.0 as usize].native_memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_matrix_with_and_without_device_copies() {
        let with = SystemInfo::with_devices(2, true).unwrap();
        let without = SystemInfo::with_devices(2, false).unwrap();
        let (user, host, d0, d1) = (MemoryId(0), MemoryId(1), MemoryId(2), MemoryId(3));
        for s in [&with, &without] {
            assert!(s.can_copy(user, host) && s.can_copy(host, user));
            assert!(
                !s.can_copy(user, d0),
                "user memory goes through host memory"
            );
            assert!(s.can_copy(host, d1) && s.can_copy(d1, host));
            assert!(s.can_copy(d0, d0));
            assert_eq!(s.device_of(d1), Some(DeviceId(1)));
            assert_eq!(s.device_of(host), None);
        }
        assert!(with.can_copy(d0, d1) && with.can_copy(d1, d0));
        assert!(!without.can_copy(d0, d1));
        assert_eq!(
            with.memories[1].copy_peers.iter().collect::<Vec<_>>(),
            vec![user, host, d0, d1]
        );
    }

    #[test]
    fn user_memory_can_be_connected_to_every_device() {
        let mut s = SystemInfo::with_devices(2, false).unwrap();
        s.connect_user_memory_to_devices();
        let (user, host, d0, d1) = (MemoryId(0), MemoryId(1), MemoryId(2), MemoryId(3));
        for d in [d0, d1] {
            assert!(s.can_copy(user, d) && s.can_copy(d, user));
        }
        assert!(s.can_copy(user, host));
        assert!(!s.can_copy(d0, d1), "device peers are unchanged");
    }

    #[test]
    fn too_many_devices_is_unsupported() {
        assert!(SystemInfo::with_devices(62, true).is_ok());
        let e = SystemInfo::with_devices(63, true).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
    }
}
