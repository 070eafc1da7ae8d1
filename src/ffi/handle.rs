//! Generation-tagged handle registries: how opaque C pointers name Rust objects.
//!
//! A handle is never dereferenced. Its 64 bits are
//! `[magic: 8][kind: 4][generation: 20][slot index: 32]`, and each handle kind has its own
//! registry. Looking a handle up checks the magic and the kind (else the handle is forged or of
//! another type), that the slot exists (else forged) and that the slot's generation matches
//! (else the handle was released). All of these are reported as `INVALID_STATE`, NULL as
//! `INVALID_ARGUMENT` (API.md). A slot whose generation is exhausted is retired rather than
//! reused, so a stale handle can never alias a newer object.
//!
//! Lookups clone an `Arc` and release the registry lock before the caller does any work, so no
//! lock is held while user callbacks run.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};

const MAGIC: u64 = 0xCE;
const MAGIC_SHIFT: u32 = 56;
const KIND_SHIFT: u32 = 52;
const GENERATION_SHIFT: u32 = 32;
const GENERATION_LIMIT: u32 = 1 << 20;

/// The kinds of handle the ABI hands out; each has its own registry and tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum HandleKind {
    Config = 1,
    Buffer = 2,
    HostObject = 3,
    CollectiveGroup = 4,
    CommandGroup = 5,
    Future = 6,
}

impl HandleKind {
    /// The C type name, for messages.
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            HandleKind::Config => "celerity_config",
            HandleKind::Buffer => "celerity_buffer",
            HandleKind::HostObject => "celerity_host_object",
            HandleKind::CollectiveGroup => "celerity_collective_group",
            HandleKind::CommandGroup => "celerity_cg",
            HandleKind::Future => "celerity_future",
        }
    }
}

struct Slot<T> {
    generation: u32,
    value: Option<Arc<T>>,
}

struct Slots<T> {
    entries: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

/// The registry of all live handles of one kind.
pub(crate) struct Registry<T> {
    kind: HandleKind,
    slots: Mutex<Slots<T>>,
}

fn encode(kind: HandleKind, generation: u32, index: u32) -> u64 {
    (MAGIC << MAGIC_SHIFT)
        | ((kind as u64) << KIND_SHIFT)
        | ((generation as u64) << GENERATION_SHIFT)
        | index as u64
}

impl<T> Registry<T> {
    /// An empty registry for handles of `kind`.
    pub(crate) const fn new(kind: HandleKind) -> Self {
        Self {
            kind,
            slots: Mutex::new(Slots {
                entries: Vec::new(),
                free: Vec::new(),
                live: 0,
            }),
        }
    }

    /// Registers `value` and returns its handle bits (never 0).
    pub(crate) fn insert(&self, value: T) -> Result<u64> {
        let mut slots = self.slots.lock();
        let value = Some(Arc::new(value));
        let index = match slots.free.pop() {
            Some(index) => {
                let slot = &mut slots.entries[index as usize];
                slot.generation += 1;
                slot.value = value;
                index
            }
            None => {
                let index = u32::try_from(slots.entries.len()).map_err(|_| {
                    Error::new(
                        crate::error::ErrorKind::OutOfMemory,
                        format!("more than {} {} handles", u32::MAX, self.kind.type_name()),
                    )
                })?;
                slots.entries.push(Slot {
                    generation: 1,
                    value,
                });
                index
            }
        };
        slots.live += 1;
        let generation = slots.entries[index as usize].generation;
        Ok(encode(self.kind, generation, index))
    }

    /// Splits `bits` into (generation, index) after checking the magic and the kind.
    fn decode(&self, bits: u64, argument: &str) -> Result<(u32, u32)> {
        if bits == 0 {
            return Err(Error::invalid_argument(format!(
                "argument `{argument}` ({}*) is NULL",
                self.kind.type_name()
            )));
        }
        let kind = ((bits >> KIND_SHIFT) & 0xF) as u8;
        if bits >> MAGIC_SHIFT != MAGIC || kind != self.kind as u8 {
            return Err(Error::invalid_state(format!(
                "argument `{argument}` ({bits:#x}) is not a {} handle created by celerity",
                self.kind.type_name()
            )));
        }
        let generation = ((bits >> GENERATION_SHIFT) as u32) & (GENERATION_LIMIT - 1);
        Ok((generation, bits as u32))
    }

    fn stale(&self, bits: u64, argument: &str) -> Error {
        Error::invalid_state(format!(
            "argument `{argument}` ({bits:#x}) is a {} handle that was already released",
            self.kind.type_name()
        ))
    }

    /// Checks that `slot` (the slot at the handle's index, if any) still holds the object of
    /// `generation`.
    fn check_slot(
        &self,
        slot: Option<&Slot<T>>,
        generation: u32,
        bits: u64,
        argument: &str,
    ) -> Result<()> {
        match slot {
            None => Err(self.forged(bits, argument)),
            Some(slot) if generation > slot.generation => Err(self.forged(bits, argument)),
            Some(slot) if generation < slot.generation || slot.value.is_none() => {
                Err(self.stale(bits, argument))
            }
            Some(_) => Ok(()),
        }
    }

    /// The object behind handle `bits`, passed as argument `argument`.
    pub(crate) fn get(&self, bits: u64, argument: &str) -> Result<Arc<T>> {
        let (generation, index) = self.decode(bits, argument)?;
        let slots = self.slots.lock();
        let slot = slots.entries.get(index as usize);
        self.check_slot(slot, generation, bits, argument)?;
        Ok(slot.and_then(|s| s.value.clone()).expect("checked above"))
    }

    fn forged(&self, bits: u64, argument: &str) -> Error {
        Error::invalid_state(format!(
            "argument `{argument}` ({bits:#x}) is not a {} handle created by celerity",
            self.kind.type_name()
        ))
    }

    /// Invalidates handle `bits` and returns its object; later lookups of it fail.
    pub(crate) fn remove(&self, bits: u64, argument: &str) -> Result<Arc<T>> {
        let (generation, index) = self.decode(bits, argument)?;
        let mut slots = self.slots.lock();
        self.check_slot(
            slots.entries.get(index as usize),
            generation,
            bits,
            argument,
        )?;
        let slot = &mut slots.entries[index as usize];
        let value = slot.value.take().expect("checked above");
        // Retire a slot whose generation would wrap, so old handles never match it again.
        if slot.generation + 1 < GENERATION_LIMIT {
            slots.free.push(index);
        }
        slots.live -= 1;
        Ok(value)
    }

    /// How many handles of this kind are alive.
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.slots.lock().live
    }

    /// Invalidates every live handle (the program never released them) and returns their
    /// objects, oldest slot first.
    pub(crate) fn take_all(&self) -> Vec<Arc<T>> {
        let mut slots = self.slots.lock();
        let mut taken = Vec::with_capacity(slots.live);
        let mut freed = Vec::new();
        for (index, slot) in slots.entries.iter_mut().enumerate() {
            if let Some(value) = slot.value.take() {
                taken.push(value);
                if slot.generation + 1 < GENERATION_LIMIT {
                    freed.push(index as u32);
                }
            }
        }
        slots.free.extend(freed);
        slots.live = 0;
        taken
    }
}

/// The pointer C sees for handle `bits`. It carries no provenance and is never dereferenced.
pub(crate) fn to_ptr<P>(bits: u64) -> *mut P {
    std::ptr::without_provenance_mut(bits as usize)
}

/// The handle bits of a pointer received from C.
pub(crate) fn from_ptr<P>(ptr: *const P) -> u64 {
    ptr.addr() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn insert_get_remove_roundtrip() {
        let registry = Registry::new(HandleKind::Config);
        let a = registry.insert(7).unwrap();
        let b = registry.insert(8).unwrap();
        assert_ne!(a, 0);
        assert_ne!(a, b);
        assert_eq!(*registry.get(a, "cfg").unwrap(), 7);
        assert_eq!(*registry.get(b, "cfg").unwrap(), 8);
        assert_eq!(registry.live(), 2);
        assert_eq!(*registry.remove(a, "cfg").unwrap(), 7);
        assert_eq!(registry.live(), 1);
        let taken: Vec<i32> = registry.take_all().iter().map(|v| **v).collect();
        assert_eq!(taken, [8]);
        assert_eq!(registry.live(), 0);
        assert!(registry.get(b, "cfg").is_err());
        let c = registry.insert(9).unwrap();
        assert_ne!(b, c, "a reused slot must get a new generation");
    }

    #[test]
    fn released_handle_is_invalid_state_even_after_slot_reuse() {
        let registry = Registry::new(HandleKind::Buffer);
        let old = registry.insert("old").unwrap();
        registry.remove(old, "buf").unwrap();
        let new = registry.insert("new").unwrap();
        assert_ne!(old, new, "a reused slot must get a new generation");
        let error = registry.get(old, "buf").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidState);
        assert!(
            error.message().contains("already released"),
            "{}",
            error.message()
        );
        let error = registry.remove(old, "buf").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidState);
        assert_eq!(*registry.get(new, "buf").unwrap(), "new");
    }

    #[test]
    fn null_forged_and_wrong_kind_handles_are_rejected() {
        let configs = Registry::new(HandleKind::Config);
        let buffers = Registry::<u8>::new(HandleKind::Buffer);
        let config = configs.insert(1u8).unwrap();

        let null = configs.get(0, "cfg").unwrap_err();
        assert_eq!(null.kind(), ErrorKind::InvalidArgument);
        assert_eq!(null.message(), "argument `cfg` (celerity_config*) is NULL");

        let wrong_kind = buffers.get(config, "buf").unwrap_err();
        assert_eq!(wrong_kind.kind(), ErrorKind::InvalidState);
        assert!(
            wrong_kind
                .message()
                .contains("not a celerity_buffer handle")
        );

        for forged in [
            0xdead_beef_u64,
            config + 1000,
            config + (5 << GENERATION_SHIFT),
        ] {
            let error = configs.get(forged, "cfg").unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidState, "{forged:#x}");
            assert!(error.message().contains("not a celerity_config handle"));
        }
    }

    #[test]
    fn exhausted_slots_are_retired_not_reused() {
        let registry = Registry::new(HandleKind::Future);
        let first = registry.insert(0).unwrap();
        registry.remove(first, "f").unwrap();
        registry.slots.lock().entries[0].generation = GENERATION_LIMIT - 2;
        registry.slots.lock().free.clear();
        registry.slots.lock().free.push(0);
        let last = registry.insert(1).unwrap();
        registry.remove(last, "f").unwrap();
        let fresh = registry.insert(2).unwrap();
        assert_eq!(fresh as u32, 1, "slot 0 must be retired");
        assert!(registry.get(last, "f").is_err());
    }

    #[test]
    fn pointers_round_trip() {
        let bits = encode(HandleKind::Buffer, 3, 9);
        let ptr: *mut u8 = to_ptr(bits);
        assert_eq!(from_ptr(ptr), bits);
    }
}
