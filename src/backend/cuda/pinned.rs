//! Page-locked host memory from the driver for the [`PinnedPool`](super::super::pinned_pool).
//!
//! Small blocks come from `cuMemHostAlloc`. Blocks of at least one huge page are ordinary memory
//! backed by transparent huge pages and then registered with `cuMemHostRegister`: measured on the
//! H200 host, pinning four 64 MiB staging slots took 159 ms with `cuMemHostAlloc` and 57 ms this
//! way, and registering 1 GiB of huge-page memory 33 ms against 69 ms with 4 KiB pages
//! (docs/gpu.md). Both kinds are portable (usable from every context).

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;

use cudarc::driver::sys;

use super::super::host_copy::HostPinner;
use super::super::parallel_copy::{HUGE_PAGE, advise_huge_pages};
use super::super::pinned_pool::PinnedAllocator;
use super::{Handle, check, make_current};
use crate::error::{Error, ErrorKind, Result};

/// Page-locked host memory in the context of device 0 (portable, so every device may DMA it).
pub(super) struct DriverPinned {
    pub(super) context: Handle<sys::CUcontext>,
}

/// How a block of `bytes` is allocated: registered huge pages from this size on.
fn is_registered(bytes: usize) -> bool {
    bytes >= HUGE_PAGE
}

fn huge_page_layout(bytes: usize) -> Result<Layout> {
    Layout::from_size_align(bytes, HUGE_PAGE).map_err(|_| {
        Error::new(
            ErrorKind::OutOfMemory,
            format!("{bytes} pinned host bytes exceed the address space"),
        )
    })
}

impl PinnedAllocator for DriverPinned {
    fn allocate(&mut self, bytes: usize) -> Result<usize> {
        make_current(self.context)?;
        if !is_registered(bytes) {
            let mut pointer: *mut c_void = std::ptr::null_mut();
            // SAFETY: valid out-pointer; the context is current.
            check("cuMemHostAlloc", unsafe {
                sys::cuMemHostAlloc(&mut pointer, bytes, sys::CU_MEMHOSTALLOC_PORTABLE)
            })
            .map_err(|e| e.context(format!("allocating {bytes} pinned host bytes")))?;
            return Ok(pointer as usize);
        }
        let layout = huge_page_layout(bytes)?;
        // SAFETY: the layout has a non-zero size (at least one huge page). The system allocator,
        // like `HostAllocation`: these sizes follow the program's buffers.
        let pointer = unsafe { System.alloc(layout) };
        if pointer.is_null() {
            return Err(Error::new(
                ErrorKind::OutOfMemory,
                format!("allocating {bytes} host bytes to pin failed"),
            ));
        }
        advise_huge_pages(pointer, bytes);
        // SAFETY: `pointer` is a fresh allocation of `bytes` bytes, kept until `free`
        // unregisters it; the context is current.
        if let Err(error) = unsafe { register(pointer as usize, bytes) } {
            // SAFETY: allocated above with this layout, never handed out.
            unsafe { System.dealloc(pointer, layout) };
            return Err(error.context(format!("pinning {bytes} host bytes")));
        }
        Ok(pointer as usize)
    }

    unsafe fn free(&mut self, address: usize, bytes: usize) {
        let current = make_current(self.context).is_ok();
        if !is_registered(bytes) {
            if current {
                // SAFETY: the caller passes a block from `allocate` that nothing uses any more.
                unsafe { sys::cuMemFreeHost(address as *mut c_void) };
            }
            return;
        }
        if current {
            // SAFETY: registered in `allocate`; nothing uses the block any more. (Without the
            // context, which unregisters everything when it goes, the call is skipped.)
            unsafe { sys::cuMemHostUnregister(address as *mut c_void) };
        }
        if let Ok(layout) = huge_page_layout(bytes) {
            // SAFETY: allocated in `allocate` with this layout (the pool passes the block's size).
            unsafe { System.dealloc(address as *mut u8, layout) };
        }
    }
}

/// Page-locks `[address, address + bytes)` for every context (`cuMemHostRegister`,
/// portable): the driver faults its pages in and locks them without touching their contents.
///
/// # Safety
/// The range must stay allocated until it is unregistered; a context must be current.
unsafe fn register(address: usize, bytes: usize) -> Result<()> {
    // SAFETY: forwarded contract.
    check("cuMemHostRegister", unsafe {
        sys::cuMemHostRegister_v2(
            address as *mut c_void,
            bytes,
            sys::CU_MEMHOSTREGISTER_PORTABLE,
        )
    })
}

/// Page-locks host ranges in place for every device (`cuMemHostRegister`, portable), counting
/// them against the pinned pool's limit and recording them in the pool, so that copies find
/// them pinned without asking the driver. Calls the driver only while the backend lives: its
/// contexts unregister whatever is left when they go.
pub(super) struct DriverHostPinner {
    pub(super) context: Handle<sys::CUcontext>,
    pub(super) pool: super::SharedPool,
    /// False once the backend dropped; held during driver calls so that it cannot drop midway.
    pub(super) alive: parking_lot::Mutex<bool>,
}

impl HostPinner for DriverHostPinner {
    unsafe fn pin(&self, address: usize, bytes: usize) -> bool {
        let alive = self.alive.lock();
        if !*alive || !self.pool.lock().reserve_registration(bytes) {
            return false;
        }
        let registered = make_current(self.context).and_then(|()| {
            // SAFETY: the caller's live allocation of `bytes`, kept until `unpin`; the context
            // is current.
            unsafe { register(address, bytes) }
        });
        let mut pool = self.pool.lock();
        match registered {
            Ok(()) => {
                pool.add_registered(address, bytes);
                true
            }
            Err(error) => {
                tracing::debug!(
                    "pinning a host copy of {bytes} bytes failed ({error}); it stays pageable"
                );
                pool.end_registration(None, bytes);
                false
            }
        }
    }

    unsafe fn unpin(&self, address: usize, bytes: usize) {
        let alive = self.alive.lock();
        self.pool.lock().end_registration(Some(address), bytes);
        if *alive && make_current(self.context).is_ok() {
            // SAFETY: registered by `pin`; the caller guarantees no copy uses it any more.
            unsafe { sys::cuMemHostUnregister(address as *mut c_void) };
        }
    }
}
