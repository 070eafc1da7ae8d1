//! Copies on a device lane: how each end of a copy is classified (device memory, pinned host
//! memory, pageable memory), and the driver calls for each layout: pinned staging for long
//! contiguous runs with a pageable end ([`staging`](super::staging)), one `cuMemcpyAsync` for
//! other contiguous runs, `cuMemcpy2DAsync` per plane for strided boxes.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::super::nd_memory::NdCopyLayout;
use super::staging::{Direction, STAGING_THRESHOLD, direct_pageable_copy, staged_copy};
use super::{SharedPool, check};
use crate::error::Result;

/// Enqueues the copy of `layout` from `source` to `dest` on `stream`.
///
/// # Safety
/// The pointers must cover the layout's runs and stay valid until the stream passed the copy;
/// the stream's context must be current.
pub(super) unsafe fn enqueue_copy(
    source: *mut u8,
    dest: *mut u8,
    layout: &NdCopyLayout,
    stream: sys::CUstream,
    pool: &SharedPool,
) -> Result<()> {
    let ends = (memory_kind(source, pool), memory_kind(dest, pool));
    let Some(direction) = staging_direction(ends, layout) else {
        // SAFETY: forwarded contract.
        return unsafe { enqueue_layout_copy(source, dest, ends, layout, stream) };
    };
    let (host, device) = match direction {
        Direction::ToDevice => (source, dest),
        Direction::ToHost => (dest, source),
    };
    let offsets = (layout.offset_in_source, layout.offset_in_dest);
    let (host_offset, device_offset) = match direction {
        Direction::ToDevice => offsets,
        Direction::ToHost => (offsets.1, offsets.0),
    };
    // SAFETY: forwarded contract; the offsets lie within the caller's ranges.
    unsafe {
        staged_copy(
            direction,
            host.add(host_offset),
            device as sys::CUdeviceptr + device_offset as sys::CUdeviceptr,
            layout.contiguous_size,
            stream,
            pool,
        )
    }
}

/// What the driver knows about one end of a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemoryKind {
    /// Device memory, or host memory the driver page-locked (the pool's blocks, memory the
    /// program allocated or registered with CUDA): DMA'd directly.
    Registered,
    /// Ordinary host memory.
    Pageable,
}

/// Classifies `pointer`: the pool's blocks without asking the driver; otherwise device memory
/// by its memory type, and host memory the program pinned by `cuMemHostGetFlags` succeeding.
/// (The memory type alone does not tell pinned from pageable: on the H200's driver, with
/// heterogeneous memory management, copies classified by type alone ran at pageable speed, so
/// plain `malloc` memory evidently reports a host type there.)
fn memory_kind(pointer: *const u8, pool: &SharedPool) -> MemoryKind {
    if pool.lock().contains(pointer as usize, 1) {
        return MemoryKind::Registered;
    }
    let mut memory_type: u32 = 0;
    // SAFETY: a valid out-pointer of the attribute's type; any address may be queried.
    let code = unsafe {
        sys::cuPointerGetAttribute(
            (&mut memory_type as *mut u32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            pointer as sys::CUdeviceptr,
        )
    };
    if code != sys::CUresult::CUDA_SUCCESS {
        return MemoryKind::Pageable;
    }
    if memory_type == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 {
        return MemoryKind::Registered;
    }
    let mut host_flags: u32 = 0;
    // SAFETY: a valid out-pointer; the call only succeeds for page-locked host memory
    // (cuMemHostAlloc / cudaMallocHost / registered).
    let pinned = unsafe { sys::cuMemHostGetFlags(&mut host_flags, pointer as *mut c_void) };
    if pinned == sys::CUresult::CUDA_SUCCESS {
        MemoryKind::Registered
    } else {
        MemoryKind::Pageable
    }
}

/// Whether a copy with these ends goes through pinned staging, and which way: a contiguous
/// copy of at least [`STAGING_THRESHOLD`] bytes between pageable memory and the driver's
/// memory. (Strided pageable copies and small ones use the driver's pageable path.)
fn staging_direction(ends: (MemoryKind, MemoryKind), layout: &NdCopyLayout) -> Option<Direction> {
    if layout.num_complex_strides != 0 || layout.contiguous_size < STAGING_THRESHOLD {
        return None;
    }
    match ends {
        (MemoryKind::Pageable, MemoryKind::Registered) => Some(Direction::ToDevice),
        (MemoryKind::Registered, MemoryKind::Pageable) => Some(Direction::ToHost),
        _ => None,
    }
}

/// The one-run copy of [`enqueue_layout_copy`] where one end is pageable host memory.
///
/// # Safety
/// As for [`enqueue_layout_copy`].
unsafe fn enqueue_contiguous_pageable_copy(
    source: *const u8,
    dest: *mut u8,
    ends: (MemoryKind, MemoryKind),
    layout: &NdCopyLayout,
    stream: sys::CUstream,
) -> Result<()> {
    let direction = if ends.0 == MemoryKind::Pageable {
        Direction::ToDevice
    } else {
        Direction::ToHost
    };
    let (source, dest) = (
        source as usize + layout.offset_in_source,
        dest as usize + layout.offset_in_dest,
    );
    let (host, device) = match direction {
        Direction::ToDevice => (source, dest),
        Direction::ToHost => (dest, source),
    };
    // SAFETY: the caller guarantees both ranges are valid for the copy.
    unsafe {
        direct_pageable_copy(
            direction,
            host as *mut u8,
            device as sys::CUdeviceptr,
            layout.contiguous_size,
            stream,
        )
    }
}

/// Enqueues the copy described by `layout` on `stream` (unified addressing for the driver's
/// memory, explicit host memory for pageable ends).
///
/// # Safety
/// The pointers must cover the layout's runs and stay valid until the stream reaches the copy.
unsafe fn enqueue_layout_copy(
    source: *const u8,
    dest: *mut u8,
    ends: (MemoryKind, MemoryKind),
    layout: &NdCopyLayout,
    stream: sys::CUstream,
) -> Result<()> {
    if layout.contiguous_size == 0 {
        return Ok(());
    }
    // Pageable memory is unknown to unified addressing: name it as host memory.
    let memory_type = |kind: MemoryKind| match kind {
        MemoryKind::Pageable => sys::CUmemorytype::CU_MEMORYTYPE_HOST,
        MemoryKind::Registered => sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED,
    };
    let copy_2d = |src_offset: usize, dst_offset: usize, pitch: (usize, usize), height: usize| {
        let (src_address, dst_address) = (source as usize + src_offset, dest as usize + dst_offset);
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: memory_type(ends.0),
            srcHost: src_address as *const c_void,
            srcDevice: src_address as sys::CUdeviceptr,
            srcArray: std::ptr::null_mut(),
            srcPitch: pitch.0,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: memory_type(ends.1),
            dstHost: dst_address as *mut c_void,
            dstDevice: dst_address as sys::CUdeviceptr,
            dstArray: std::ptr::null_mut(),
            dstPitch: pitch.1,
            WidthInBytes: layout.contiguous_size,
            Height: height,
        };
        // SAFETY: the caller guarantees both ranges are valid; `copy` lives across the call.
        check("cuMemcpy2DAsync", unsafe {
            sys::cuMemcpy2DAsync_v2(&copy, stream)
        })
    };
    match layout.num_complex_strides {
        0 if ends.0 == MemoryKind::Pageable || ends.1 == MemoryKind::Pageable => {
            // SAFETY: as above.
            unsafe { enqueue_contiguous_pageable_copy(source, dest, ends, layout, stream) }
        }
        0 => {
            // SAFETY: as above; unified addressing lets cuMemcpyAsync take any pointer kind
            // the driver knows.
            check("cuMemcpyAsync", unsafe {
                sys::cuMemcpyAsync(
                    dest as sys::CUdeviceptr + layout.offset_in_dest as sys::CUdeviceptr,
                    source as sys::CUdeviceptr + layout.offset_in_source as sys::CUdeviceptr,
                    layout.contiguous_size,
                    stream,
                )
            })
        }
        1 => {
            let s = layout.strides[0];
            copy_2d(
                layout.offset_in_source,
                layout.offset_in_dest,
                (s.source_stride, s.dest_stride),
                s.count,
            )
        }
        _ => {
            let (outer, inner) = (layout.strides[0], layout.strides[1]);
            for i in 0..outer.count {
                copy_2d(
                    layout.offset_in_source + i * outer.source_stride,
                    layout.offset_in_dest + i * outer.dest_stride,
                    (inner.source_stride, inner.dest_stride),
                    inner.count,
                )?;
            }
            Ok(())
        }
    }
}
