//! The runtime's copies of host-initialised buffers, page-locked in place for the devices
//! where the backend offers it ([`HostPinner`]).

use std::sync::{Arc, OnceLock};

use crossbeam_channel::{Sender, unbounded};

use super::parallel_copy::{Stores, advise_huge_pages, copy_with, touch_pages};

/// Page-locks ranges of ordinary host memory in place, so that copies between them and devices
/// are DMA'd instead of staged (the runtime's copy of a host-initialised buffer).
pub trait HostPinner: Send + Sync {
    /// Page-locks `[address, address + bytes)` for the devices. False (and nothing changed)
    /// when the pinned-memory limit or the driver does not allow it; the range then stays
    /// pageable, which every copy still handles.
    ///
    /// # Safety
    /// The range must be one live allocation of the caller's that stays allocated until
    /// [`HostPinner::unpin`] is called for it.
    unsafe fn pin(&self, address: usize, bytes: usize) -> bool;

    /// Ends a [`HostPinner::pin`] of `address` (`bytes` as pinned).
    ///
    /// # Safety
    /// No copy of the range may still be in flight.
    unsafe fn unpin(&self, address: usize, bytes: usize);
}

/// Host copies at least this long are page-locked in place where the backend offers it (shorter
/// ones are copied to devices directly at about the same speed).
pub const PIN_THRESHOLD: usize = 4 << 20;

/// The runtime's copy of a host-initialised buffer's contents: ordinary memory (huge pages
/// where the kernel allows), page-locked in place when a [`HostPinner`] is given and the
/// pinned-memory limit allows, so that its transfers to devices are DMA'd instead of staged.
/// Unpinned (on a helper thread: unregistering 1 GiB takes 20-25 ms) before it is freed.
pub struct HostCopy {
    bytes: Vec<u8>,
    /// The pinner, if it page-locked the copy.
    pinned: Option<Arc<dyn HostPinner>>,
}

impl HostCopy {
    /// A copy of `bytes`, copied in parallel when large, then page-locked by `pinner` when
    /// given and at least [`PIN_THRESHOLD`] long. The program chose the length, so a failed
    /// allocation is `OutOfMemory` naming `argument`, not an abort.
    ///
    /// Measured on the H200 host (docs/gpu.md): page-locking 1 GiB of freshly copied huge-page
    /// memory takes 26-29 ms and makes the first device read a DMA (0.92 of raw pinned
    /// bandwidth instead of 0.65-0.79 staged). So the copy's pages are faulted in on every copy
    /// thread first, and the driver locks them while the copy fills them (create 65-85 ms
    /// against 80-93 ms for locking after the copy, alternating in one call). Letting the
    /// driver fault fresh pages in itself, before or while copying, runs on one thread (the
    /// create took 212-253 ms); locking on a helper thread after the create returns halved the
    /// staged copies that ran meanwhile; locking range by range as they are copied needs every
    /// DMA split at the ranges' ends (one `cuMemcpyAsync` across two registrations fails with
    /// `CUDA_ERROR_INVALID_VALUE`).
    pub fn new(
        bytes: &[u8],
        argument: &str,
        pinner: Option<&Arc<dyn HostPinner>>,
    ) -> crate::error::Result<Self> {
        let mut out = crate::error::try_byte_vec(bytes.len(), argument)?;
        advise_huge_pages(out.as_mut_ptr(), bytes.len());
        let len = bytes.len();
        let (address, source) = (out.as_mut_ptr() as usize, bytes.as_ptr() as usize);
        // SAFETY: `out` has capacity for `len` bytes, distinct from `bytes`.
        let copy = || unsafe {
            copy_with(
                address as *mut u8,
                source as *const u8,
                len,
                Stores::Streaming,
            )
        };
        let pinned = match pinner.filter(|_| len >= PIN_THRESHOLD) {
            None => {
                copy();
                None
            }
            Some(pinner) => {
                // Fault the pages in on every copy thread first; then the driver only locks
                // them, while the copy fills them.
                // SAFETY: as above; nothing reads `out` before the copy below.
                unsafe { touch_pages(address as *mut u8, len) };
                // SAFETY: `out`'s buffer stays allocated (and in place) until `Drop` unpins it;
                // locking its pages neither reads nor writes them.
                let lock = || unsafe { pinner.pin(address, len) };
                let pinned = std::thread::scope(|scope| {
                    let locking = std::thread::Builder::new()
                        .name("celerity-pin".into())
                        .spawn_scoped(scope, lock);
                    copy();
                    match locking {
                        Ok(thread) => thread.join().unwrap_or(false),
                        Err(_) => lock(),
                    }
                });
                pinned.then(|| pinner.clone())
            }
        };
        // SAFETY: every byte was written by the copy above.
        unsafe { out.set_len(len) };
        Ok(Self { bytes: out, pinned })
    }

    /// Whether the copy is page-locked.
    pub fn is_pinned(&self) -> bool {
        self.pinned.is_some()
    }

    /// The contents.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes
    }
}

impl crate::user_objects::OwnedMemory for HostCopy {
    fn address(&mut self) -> usize {
        self.bytes.as_mut_ptr() as usize
    }
}

impl Drop for HostCopy {
    fn drop(&mut self) {
        let Some(pinner) = self.pinned.take() else {
            return;
        };
        let bytes = std::mem::take(&mut self.bytes);
        let job: UnpinJob = Box::new(move || {
            // SAFETY: pinned in `new`; its owner drops it once no instruction uses it.
            unsafe { pinner.unpin(bytes.as_ptr() as usize, bytes.len()) };
            drop(bytes);
        });
        // The executor thread drops these: it must not wait for the driver meanwhile.
        match unpinner() {
            Some(jobs) => {
                if let Err(crossbeam_channel::SendError(job)) = jobs.send(job) {
                    job();
                }
            }
            None => job(),
        }
    }
}

type UnpinJob = Box<dyn FnOnce() + Send>;

/// The thread that unpins and frees dropped host copies, started on first use.
fn unpinner() -> Option<&'static Sender<UnpinJob>> {
    static UNPINNER: OnceLock<Option<Sender<UnpinJob>>> = OnceLock::new();
    UNPINNER
        .get_or_init(|| {
            let (jobs, queue) = unbounded::<UnpinJob>();
            std::thread::Builder::new()
                .name("celerity-unpin".into())
                .spawn(move || queue.iter().for_each(|job| job()))
                .ok()
                .map(|_| jobs)
        })
        .as_ref()
}

impl std::fmt::Debug for HostCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCopy")
            .field("len", &self.bytes.len())
            .field("pinned", &self.is_pinned())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what it was asked to pin; refuses when `allow` is false.
    struct RecordingPinner {
        allow: bool,
        calls: std::sync::Mutex<Vec<(&'static str, usize, usize)>>,
    }

    impl HostPinner for RecordingPinner {
        unsafe fn pin(&self, address: usize, bytes: usize) -> bool {
            self.calls.lock().unwrap().push(("pin", address, bytes));
            self.allow
        }
        unsafe fn unpin(&self, address: usize, bytes: usize) {
            self.calls.lock().unwrap().push(("unpin", address, bytes));
        }
    }

    #[test]
    fn large_host_copies_are_pinned_in_place_and_unpinned_before_they_are_freed() {
        let source: Vec<u8> = (0..PIN_THRESHOLD + 4099).map(|i| (i % 253) as u8).collect();
        for allow in [true, false] {
            let recorder = Arc::new(RecordingPinner {
                allow,
                calls: Default::default(),
            });
            let pinner: Arc<dyn HostPinner> = recorder.clone();
            let mut copy = HostCopy::new(&source, "source", Some(&pinner)).unwrap();
            assert_eq!(copy.as_slice(), &source[..]);
            assert_eq!(copy.is_pinned(), allow);
            let address = crate::user_objects::OwnedMemory::address(&mut copy);
            let small = HostCopy::new(&source[..PIN_THRESHOLD - 1], "source", Some(&pinner));
            assert!(
                !small.unwrap().is_pinned(),
                "copies under the threshold are not pinned"
            );
            drop(copy);
            let mut expected = vec![("pin", address, source.len())];
            if allow {
                expected.push(("unpin", address, source.len()));
            }
            // Dropped copies are unpinned on a helper thread.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while recorder.calls.lock().unwrap().len() < expected.len()
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert_eq!(
                *recorder.calls.lock().unwrap(),
                expected,
                "allowed: {allow}"
            );
        }
    }
}
