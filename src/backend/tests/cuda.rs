//! CUDA backend tests. They need a GPU: without a usable driver each test prints why it is
//! skipped and passes. `CELERITY_TEST_CUDA_KERNEL_LIB` may name a shared library built with nvcc
//! that exports `celerity_test_scale(float* data, size_t n, float factor, void* stream)` (see
//! docs/gpu.md), to check that runtime-API launches work on the backend's streams.

use std::ffi::c_void;
use std::sync::Arc;

use super::*;
use crate::backend::host_copy::HostCopy;
use crate::backend::interface::GraphCapture;
use crate::grid::{GridBox, Id, Range};

fn backend_or_skip(test: &str) -> Option<CudaBackend> {
    match CudaBackend::new() {
        Ok(backend) => Some(backend),
        Err(error) => {
            assert!(
                matches!(error.kind(), ErrorKind::Unsupported | ErrorKind::Device),
                "{error}"
            );
            println!("{test}: skipped, no usable CUDA device here ({error})");
            None
        }
    }
}

fn wait(backend: &mut CudaBackend, event: &AsyncEvent) -> Result<Completion> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !event.is_complete() {
        backend.poll().unwrap();
        assert!(
            std::time::Instant::now() < deadline,
            "CUDA work did not complete in 30 s"
        );
        std::thread::yield_now();
    }
    event.take_outcome().unwrap()
}

fn allocate(backend: &mut CudaBackend, memory: MemoryId, bytes: usize) -> *mut u8 {
    let event = backend.enqueue_alloc(memory, bytes, 256);
    match wait(backend, &event).unwrap() {
        Completion::Allocation(address) => address as *mut u8,
        other => panic!("{other:?}"),
    }
}

fn invocation(device: DeviceId, base: *mut u8, elements: usize) -> KernelInvocation {
    let whole = GridBox::from_arrays([0, 0, 0], [elements, 1, 1]);
    KernelInvocation {
        chunk: whole,
        global_range: Range::new(elements, 1, 1),
        global_offset: Id::default(),
        dims: 1,
        accessors: vec![super::super::interface::AccessorInfo {
            base: SendPtr(base),
            allocated_box: whole,
            accessed_box: whole,
            elem_size: 4,
            bounds: SendPtr(std::ptr::null_mut()),
        }],
        reductions: Vec::new(),
        reduction_identities: Vec::new(),
        host_objects: Vec::new(),
        device: Some(device),
        collective_comm: 0,
        launch_only: false,
    }
}

#[test]
fn device_probe_answers_without_crashing() {
    match device_count() {
        Ok(n) => println!("CUDA devices: {n}"),
        Err(e) => {
            assert!(matches!(
                e.kind(),
                ErrorKind::Unsupported | ErrorKind::Device
            ));
            println!("skipped: no usable CUDA driver here ({e})");
        }
    }
}

#[test]
fn kernels_enqueue_on_the_lane_stream_and_strided_copies_round_trip() {
    let Some(mut backend) =
        backend_or_skip("kernels_enqueue_on_the_lane_stream_and_strided_copies_round_trip")
    else {
        return;
    };
    let device = DeviceId(0);
    let device_memory = backend.system_info().native_memory(device);
    // A 4x6x8 u32 allocation on the device, filled by a "kernel" that memsets on its stream.
    let (extent, elements) = ([4usize, 6, 8], 4 * 6 * 8);
    let on_device = allocate(&mut backend, device_memory, elements * 4);
    let launcher: Launcher = Arc::new(|inv: &KernelInvocation, env: &LaunchEnvironment| {
        assert!(env.cuda && env.stream != 0, "kernels get a real stream");
        let base = inv.accessors[0].base.0 as sys::CUdeviceptr;
        // SAFETY: the accessor's allocation holds the chunk's u32 elements; the stream is current.
        check("cuMemsetD32Async", unsafe {
            sys::cuMemsetD32Async(base, 7, inv.chunk.area(), env.stream as sys::CUstream)
        })
    });
    let event =
        backend.enqueue_device_kernel(device, 0, launcher, invocation(device, on_device, elements));
    wait(&mut backend, &event).unwrap();
    // Host data with a pattern, a 3-D sub-box uploaded over the 7s, then everything downloaded.
    let host = allocate(&mut backend, MemoryId::HOST, elements * 4);
    let pattern: Vec<u32> = (0..elements as u32).map(|i| 1000 + i).collect();
    // SAFETY: `host` holds `elements` u32 and nothing else uses it now.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), host.cast::<u32>(), elements) };
    let sub = StridedBox {
        allocation_range: extent,
        offset: [1, 2, 3],
        range: [2, 3, 4],
    };
    // SAFETY: both allocations cover `extent`; the events are awaited before reuse.
    let upload =
        unsafe { backend.enqueue_copy(CopyLane::Device(device, 1), host, sub, on_device, sub, 4) };
    wait(&mut backend, &upload).unwrap();
    let download_target = allocate(&mut backend, MemoryId::HOST, elements * 4);
    let whole = StridedBox {
        allocation_range: extent,
        offset: [0; 3],
        range: extent,
    };
    // SAFETY: as above.
    let download = unsafe {
        backend.enqueue_copy(
            CopyLane::Device(device, 0),
            on_device,
            whole,
            download_target,
            whole,
            4,
        )
    };
    wait(&mut backend, &download).unwrap();
    // SAFETY: the download completed.
    let result = unsafe { std::slice::from_raw_parts(download_target.cast::<u32>(), elements) };
    for i in 0..extent[0] {
        for j in 0..extent[1] {
            for k in 0..extent[2] {
                let linear = (i * extent[1] + j) * extent[2] + k;
                let inside = (1..3).contains(&i) && (2..5).contains(&j) && (3..7).contains(&k);
                let expected = if inside { pattern[linear] } else { 7 };
                assert_eq!(result[linear], expected, "element ({i},{j},{k})");
            }
        }
    }
    for (memory, pointer) in [
        (device_memory, on_device),
        (MemoryId::HOST, host),
        (MemoryId::HOST, download_target),
    ] {
        // SAFETY: each allocation is live and unused.
        let event = unsafe { backend.enqueue_free(memory, pointer) };
        wait(&mut backend, &event).unwrap();
    }
}

#[test]
fn device_to_device_copies_use_peer_access_when_the_model_allows_it() {
    let Some(mut backend) =
        backend_or_skip("device_to_device_copies_use_peer_access_when_the_model_allows_it")
    else {
        return;
    };
    if backend.system_info().devices.len() < 2 {
        println!("device_to_device_copies: skipped, one device only");
        return;
    }
    let (m0, m1) = (
        backend.system_info().native_memory(DeviceId(0)),
        backend.system_info().native_memory(DeviceId(1)),
    );
    println!(
        "peer copies D0<->D1 allowed by the model: {}",
        backend.system_info().can_copy(m0, m1)
    );
    let a = allocate(&mut backend, m0, 4096);
    let b = allocate(&mut backend, m1, 4096);
    let host = allocate(&mut backend, MemoryId::HOST, 4096);
    // SAFETY: `host` holds 4096 bytes.
    unsafe { std::ptr::write_bytes(host, 0x5A, 4096) };
    let whole = StridedBox {
        allocation_range: [4096, 1, 1],
        offset: [0; 3],
        range: [4096, 1, 1],
    };
    // SAFETY: all allocations hold 4096 bytes; events are awaited in order.
    unsafe {
        let e = backend.enqueue_copy(CopyLane::Device(DeviceId(0), 0), host, whole, a, whole, 1);
        wait(&mut backend, &e).unwrap();
        let e = backend.enqueue_copy(CopyLane::Device(DeviceId(1), 0), a, whole, b, whole, 1);
        wait(&mut backend, &e).unwrap();
        std::ptr::write_bytes(host, 0, 4096);
        let e = backend.enqueue_copy(CopyLane::Device(DeviceId(1), 0), b, whole, host, whole, 1);
        wait(&mut backend, &e).unwrap();
        assert!(
            std::slice::from_raw_parts(host, 4096)
                .iter()
                .all(|&x| x == 0x5A)
        );
    }
}

#[test]
fn an_nvcc_kernel_runs_on_the_backend_stream() {
    let Ok(library) = std::env::var("CELERITY_TEST_CUDA_KERNEL_LIB") else {
        println!(
            "an_nvcc_kernel_runs_on_the_backend_stream: skipped, CELERITY_TEST_CUDA_KERNEL_LIB not set"
        );
        return;
    };
    let Some(mut backend) = backend_or_skip("an_nvcc_kernel_runs_on_the_backend_stream") else {
        return;
    };
    type Scale = unsafe extern "C" fn(*mut f32, usize, f32, *mut c_void) -> i32;
    // SAFETY: loading a test library built for this purpose (docs/gpu.md).
    let library =
        Arc::new(unsafe { libloading::Library::new(library) }.expect("load kernel library"));
    let device = DeviceId(0);
    let memory = backend.system_info().native_memory(device);
    let n = 1 << 20;
    let data = allocate(&mut backend, memory, n * 4);
    let host = allocate(&mut backend, MemoryId::HOST, n * 4);
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    // SAFETY: `host` holds n floats.
    unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), host.cast::<f32>(), n) };
    let whole = StridedBox {
        allocation_range: [n, 1, 1],
        offset: [0; 3],
        range: [n, 1, 1],
    };
    // SAFETY: both allocations hold n floats; the event is awaited.
    let e =
        unsafe { backend.enqueue_copy(CopyLane::Device(device, 0), host, whole, data, whole, 4) };
    wait(&mut backend, &e).unwrap();
    let lib = library.clone();
    let launcher: Launcher = Arc::new(move |inv: &KernelInvocation, env: &LaunchEnvironment| {
        // SAFETY: the symbol has the documented signature.
        let scale: libloading::Symbol<Scale> =
            unsafe { lib.get(b"celerity_test_scale") }.expect("symbol");
        // SAFETY: the accessor covers the chunk's floats; the stream belongs to the current context.
        let code = unsafe {
            scale(
                inv.accessors[0].base.0.cast(),
                inv.chunk.area(),
                3.0,
                env.stream as *mut c_void,
            )
        };
        if code == 0 {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Device,
                format!("launch returned {code}"),
            ))
        }
    });
    // Lane 0 already has the upload queued before: the kernel must see the uploaded data.
    let e = backend.enqueue_device_kernel(device, 0, launcher, invocation(device, data, n));
    wait(&mut backend, &e).unwrap();
    // SAFETY: as above.
    let e =
        unsafe { backend.enqueue_copy(CopyLane::Device(device, 0), data, whole, host, whole, 4) };
    wait(&mut backend, &e).unwrap();
    // SAFETY: the download completed.
    let result = unsafe { std::slice::from_raw_parts(host.cast::<f32>(), n) };
    assert!(
        result.iter().enumerate().all(|(i, &v)| v == 3.0 * i as f32),
        "kernel results wrong"
    );
    println!("an_nvcc_kernel_runs_on_the_backend_stream: {n} elements scaled on the GPU");
}

/// A whole 1-D allocation of `elements` u32 as a strided box.
fn linear(elements: usize) -> StridedBox {
    StridedBox {
        allocation_range: [elements, 1, 1],
        offset: [0; 3],
        range: [elements, 1, 1],
    }
}

/// Uploads `source` from pageable memory, downloads it into pageable memory, and compares.
fn pageable_round_trip(backend: &mut CudaBackend, elements: usize, lane: CopyLane) {
    let source: Vec<u32> = (0..elements as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut back = vec![0u32; elements];
    let device = allocate(backend, MemoryId::FIRST_DEVICE, elements * 4);
    // SAFETY: both ends hold `elements` u32 and outlive the awaited events.
    let up = unsafe {
        backend.enqueue_copy(
            lane,
            source.as_ptr().cast(),
            linear(elements),
            device,
            linear(elements),
            4,
        )
    };
    wait(backend, &up).unwrap();
    // SAFETY: as above.
    let down = unsafe {
        backend.enqueue_copy(
            lane,
            device,
            linear(elements),
            back.as_mut_ptr().cast(),
            linear(elements),
            4,
        )
    };
    wait(backend, &down).unwrap();
    assert!(
        back == source,
        "{elements} elements differ after the round trip"
    );
    // SAFETY: no pending operation uses the allocation.
    let free = unsafe { backend.enqueue_free(MemoryId::FIRST_DEVICE, device) };
    wait(backend, &free).unwrap();
}

#[test]
fn pageable_user_memory_round_trips_through_pinned_staging() {
    let Some(mut backend) =
        backend_or_skip("pageable_user_memory_round_trips_through_pinned_staging")
    else {
        return;
    };
    assert!(
        backend
            .system_info()
            .can_copy(MemoryId::USER, MemoryId::FIRST_DEVICE)
    );
    let lane = CopyLane::Device(DeviceId(0), 0);
    // staged (several chunks, a partial last one), below the staging threshold, and tiny
    for elements in [
        (staging::CHUNK_BYTES * 5 + 12_345) / 4,
        (staging::DOWNLOAD_CHUNK_BYTES * 11 + 12_345) / 4,
        1 << 18,
        3,
    ] {
        pageable_round_trip(&mut backend, elements, lane);
    }
    let stats = backend.pool.lock().stats();
    assert!(stats.reuses > 0, "staging slots are reused: {stats:?}");
}

#[test]
fn host_allocations_beyond_the_pinned_limit_are_pageable_and_still_copy() {
    let test = "host_allocations_beyond_the_pinned_limit_are_pageable_and_still_copy";
    let Some(_) = backend_or_skip(test) else {
        return;
    };
    let mut backend = CudaBackend::with_pinned_limit(0).unwrap();
    let host = allocate(&mut backend, MemoryId::HOST, 8 << 20);
    assert_eq!(backend.pageable.lock().len(), 1, "no pinned memory allowed");
    let elements = (8 << 20) / 4;
    // SAFETY: the allocation holds 8 MiB.
    let values = unsafe { std::slice::from_raw_parts_mut(host.cast::<u32>(), elements) };
    for (i, v) in values.iter_mut().enumerate() {
        *v = i as u32 ^ 0x5a5a;
    }
    let expected = values.to_vec();
    let device = allocate(&mut backend, MemoryId::FIRST_DEVICE, 8 << 20);
    let lane = CopyLane::Device(DeviceId(0), 1);
    // SAFETY: both allocations hold `elements` u32 and stay live until the events complete.
    let up =
        unsafe { backend.enqueue_copy(lane, host, linear(elements), device, linear(elements), 4) };
    wait(&mut backend, &up).unwrap();
    values.fill(0);
    // SAFETY: as above.
    let down =
        unsafe { backend.enqueue_copy(lane, device, linear(elements), host, linear(elements), 4) };
    wait(&mut backend, &down).unwrap();
    assert!(values == expected.as_slice());
    assert_eq!(backend.pool.lock().stats().peak_pinned_bytes, 0);
    for (memory, pointer) in [(MemoryId::HOST, host), (MemoryId::FIRST_DEVICE, device)] {
        // SAFETY: nothing uses the allocations any more.
        let free = unsafe { backend.enqueue_free(memory, pointer) };
        wait(&mut backend, &free).unwrap();
    }
    assert!(backend.pageable.lock().is_empty());
}

#[test]
fn kernels_write_bounds_records_in_device_memory_that_come_back_after_the_chunk() {
    let Some(mut backend) = backend_or_skip(
        "kernels_write_bounds_records_in_device_memory_that_come_back_after_the_chunk",
    ) else {
        return;
    };
    let device = DeviceId(0);
    let device_memory = backend.system_info().native_memory(device);
    let on_device = allocate(&mut backend, device_memory, 64 * 4);
    let records = backend
        .device_bounds_records(2)
        .unwrap()
        .expect("CUDA records");
    let mut inv = invocation(device, on_device, 64);
    inv.accessors.push(inv.accessors[0]);
    for (i, accessor) in inv.accessors.iter_mut().enumerate() {
        accessor.bounds = records.pointer(i);
    }
    let host_records: Vec<usize> = inv.accessors.iter().map(|a| a.bounds.0 as usize).collect();
    // What device code does on an out-of-bounds access, written with the driver: accessor 1's
    // record gets count 3 and the box [-1, 70) in dimension 0.
    let launcher: Launcher = Arc::new(move |inv: &KernelInvocation, env: &LaunchEnvironment| {
        let stream = env.stream as sys::CUstream;
        for (accessor, &host) in inv.accessors.iter().zip(&host_records) {
            let device_record = accessor.bounds.0 as usize;
            if device_record == host {
                return Err(Error::internal("the kernel sees the host record"));
            }
            let mut memory_type: u32 = 0;
            // SAFETY: a valid out-pointer; any address may be queried.
            check("cuPointerGetAttribute", unsafe {
                sys::cuPointerGetAttribute(
                    (&mut memory_type as *mut u32).cast(),
                    sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    device_record as sys::CUdeviceptr,
                )
            })?;
            if memory_type != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 {
                return Err(Error::internal("the record is not in device memory"));
            }
        }
        let values: [i64; 7] = [3, -1, 0, 0, 69, 0, 0];
        // SAFETY: accessor 1's device record starts with count, min[3], max[3] (i64 each); the
        // upload before the launch is ordered before this copy on the stream, and `values`
        // stays alive because a copy from pageable memory returns once the bytes are staged.
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                inv.accessors[1].bounds.0 as sys::CUdeviceptr,
                values.as_ptr().cast(),
                std::mem::size_of_val(&values),
                stream,
            )
        })
    });
    let event = backend.enqueue_device_kernel(device, 0, launcher, inv);
    wait(&mut backend, &event).unwrap();
    let violations = records.violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].0, 1);
    assert_eq!(violations[0].1.count, 3);
    assert_eq!(violations[0].1.display(1), "[-1,70)");
    drop(records);
    // SAFETY: the allocation is live and unused.
    let event = unsafe { backend.enqueue_free(device_memory, on_device) };
    wait(&mut backend, &event).unwrap();
}

#[test]
fn host_copies_are_pinned_in_place_within_the_limit_and_copy_to_devices() {
    let test = "host_copies_are_pinned_in_place_within_the_limit_and_copy_to_devices";
    let Some(mut backend) = backend_or_skip(test) else {
        return;
    };
    let pinner = backend
        .host_pinner()
        .expect("CUDA backends pin host copies");
    let elements = (16 << 20) / 4;
    let source: Vec<u32> = (0..elements as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    // SAFETY: plain u32 values viewed as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(source.as_ptr().cast::<u8>(), elements * 4) };
    let mut copy = HostCopy::new(bytes, "host_init", Some(&pinner)).unwrap();
    let address = crate::user_objects::OwnedMemory::address(&mut copy);
    assert!(copy.is_pinned());
    assert!(
        backend.pool.lock().contains(address, elements * 4),
        "copies see it pinned"
    );
    // (The pool's staging slots are pinned in the background meanwhile: no exact byte count.)
    assert!(backend.pool.lock().stats().pinned_bytes >= elements * 4);

    let device = allocate(&mut backend, MemoryId::FIRST_DEVICE, elements * 4);
    let mut back = vec![0u32; elements];
    let lane = CopyLane::Device(DeviceId(0), 0);
    // SAFETY: the copy, the device allocation and `back` hold `elements` u32 and stay live
    // until the events complete.
    unsafe {
        let up = backend.enqueue_copy(
            lane,
            address as *const u8,
            linear(elements),
            device,
            linear(elements),
            4,
        );
        wait(&mut backend, &up).unwrap();
        let down = backend.enqueue_copy(
            lane,
            device,
            linear(elements),
            back.as_mut_ptr().cast(),
            linear(elements),
            4,
        );
        wait(&mut backend, &down).unwrap();
    }
    assert!(back == source);
    drop(copy);
    // Unpinned on a helper thread.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while backend.pool.lock().contains(address, 1) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(
        !backend.pool.lock().contains(address, 1),
        "unpinned when dropped"
    );

    // Beyond the limit a copy stays pageable.
    let mut tight = CudaBackend::with_pinned_limit(1 << 20).unwrap();
    let tight_pinner = tight.host_pinner().unwrap();
    let copy = HostCopy::new(bytes, "host_init", Some(&tight_pinner)).unwrap();
    assert!(!copy.is_pinned());
    assert_eq!(copy.as_slice(), bytes);
    drop(copy);
    // SAFETY: nothing uses the allocation any more.
    let freed = unsafe { backend.enqueue_free(MemoryId::FIRST_DEVICE, device) };
    wait(&mut backend, &freed).unwrap();
    tight.poll().unwrap();
}

/// A "kernel" that sets elements `[first, n)` of a u32 device array to `first` (a memset on the
/// stream, which graph capture records like a kernel launch).
fn fill_from(first: usize, n: usize) -> Launcher {
    Arc::new(move |inv: &KernelInvocation, env: &LaunchEnvironment| {
        let base = inv.accessors[0].base.0 as sys::CUdeviceptr + 4 * first as sys::CUdeviceptr;
        // SAFETY: the accessor's allocation holds n u32; the stream's context is current.
        check("cuMemsetD32Async", unsafe {
            sys::cuMemsetD32Async(base, first as u32, n - first, env.stream as sys::CUstream)
        })
    })
}

/// Holds the submission thread for `ms` milliseconds, so that the kernels enqueued meanwhile
/// are all queued when it returns (and form graph batches).
fn hold_submission_thread(ms: u64) -> Launcher {
    Arc::new(move |_: &KernelInvocation, _: &LaunchEnvironment| {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        Ok(())
    })
}

/// Downloads `n` u32 from `on_device` through a host allocation.
fn download_u32(backend: &mut CudaBackend, on_device: *mut u8, n: usize) -> Vec<u32> {
    let host = allocate(backend, MemoryId::HOST, n * 4);
    let whole = linear(n);
    // SAFETY: both allocations hold n u32; the event is awaited before the host reads.
    let e = unsafe {
        backend.enqueue_copy(
            CopyLane::Device(DeviceId(0), 0),
            on_device,
            whole,
            host,
            whole,
            4,
        )
    };
    wait(backend, &e).unwrap();
    // SAFETY: the download completed.
    let values = unsafe { std::slice::from_raw_parts(host.cast::<u32>(), n) }.to_vec();
    // SAFETY: live and unused.
    let e = unsafe { backend.enqueue_free(MemoryId::HOST, host) };
    wait(backend, &e).unwrap();
    values
}

/// What [`queue_behind_hold`] leaves: the backend, its device array and the launchers' outcomes.
struct QueuedBehindHold {
    backend: CudaBackend,
    on_device: *mut u8,
    /// Per launcher: `Ok` or its error message.
    outcomes: Vec<std::result::Result<(), String>>,
}

/// A backend with every kernel capturable and a device array of `n` u32: the launchers
/// `launcher(i)` for `i` in `0..n` are all queued on lane 0 behind a 100 ms hold of the
/// submission thread (so they form graph batches), then awaited. `None` without a GPU.
fn queue_behind_hold(
    test: &str,
    n: usize,
    launcher: impl Fn(usize) -> Launcher,
) -> Option<QueuedBehindHold> {
    queue_behind_hold_capturing(test, GraphCapture::All, n, |i| (launcher(i), false))
}

/// [`queue_behind_hold`] with graphs set to `capture`; `launcher(i)` also says whether kernel
/// `i` is declared launch-only.
fn queue_behind_hold_capturing(
    test: &str,
    capture: GraphCapture,
    n: usize,
    launcher: impl Fn(usize) -> (Launcher, bool),
) -> Option<QueuedBehindHold> {
    let mut backend = backend_or_skip(test)?.with_kernel_graphs(capture);
    let device = DeviceId(0);
    let memory = backend.system_info().native_memory(device);
    let on_device = allocate(&mut backend, memory, n * 4);
    let hold = backend.enqueue_device_kernel(
        device,
        0,
        hold_submission_thread(100),
        invocation(device, on_device, n),
    );
    let events: Vec<AsyncEvent> = (0..n)
        .map(|i| {
            let (launcher, launch_only) = launcher(i);
            let invocation = KernelInvocation {
                launch_only,
                ..invocation(device, on_device, n)
            };
            backend.enqueue_device_kernel(device, 0, launcher, invocation)
        })
        .collect();
    // The hold itself joins the first batch when the kernels were queued before it ran.
    let _ = wait(&mut backend, &hold);
    let outcomes = events
        .iter()
        .map(|e| (wait(&mut backend, e).map(|_| ())).map_err(|e| e.message().to_string()))
        .collect();
    Some(QueuedBehindHold {
        backend,
        on_device,
        outcomes,
    })
}

/// Queues `n` kernels behind a hold with graphs set to `capture`, kernel `i` setting `[i, n)` to
/// `i` (so in stream order element `j` ends as `j`) and declared launch-only when `declared`;
/// checks that all succeed in stream order and returns how many graph batches they formed.
/// `None` without a GPU.
fn graph_batches_of_ordered_fills(
    test: &str,
    capture: GraphCapture,
    n: usize,
    declared: bool,
) -> Option<usize> {
    let mut run = queue_behind_hold_capturing(test, capture, n, |i| (fill_from(i, n), declared))?;
    assert!(run.outcomes.iter().all(|o| o.is_ok()), "{:?}", run.outcomes);
    let batches = run.backend.graph_batches_launched();
    let values = download_u32(&mut run.backend, run.on_device, n);
    assert_eq!(values, (0..n as u32).collect::<Vec<_>>());
    Some(batches)
}

#[test]
fn queued_kernels_launch_as_graph_batches_in_stream_order() {
    let test = "queued_kernels_launch_as_graph_batches_in_stream_order";
    let n = 100;
    let Some(batches) = graph_batches_of_ordered_fills(test, GraphCapture::All, n, false) else {
        return;
    };
    assert!(
        batches >= n.div_ceil(graphs::MAX_GRAPH_KERNELS),
        "{n} queued kernels formed {batches} graph batches"
    );
    println!("{test}: {n} kernels in {batches} graph batches, results in stream order");
}

#[test]
fn with_graphs_auto_only_kernels_declared_launch_only_join_graph_batches() {
    let test = "with_graphs_auto_only_kernels_declared_launch_only_join_graph_batches";
    let n = 64;
    // `cuda_graphs=auto`, the default (the config tests pin that).
    let capture = GraphCapture::LaunchOnly;
    for declared in [false, true] {
        let Some(batches) = graph_batches_of_ordered_fills(test, capture, n, declared) else {
            return;
        };
        if declared {
            assert!(
                batches >= n.div_ceil(graphs::MAX_GRAPH_KERNELS),
                "{n} kernels declared launch-only formed {batches} graph batches"
            );
        } else {
            assert_eq!(batches, 0, "undeclared kernels were captured");
        }
        println!("{test}: declared {declared}: {batches} graph batches, results in order");
    }
}

/// What device code does on out-of-bounds accesses, written with memsets (which stream
/// capture records like kernels): the chunk's first record gets `count` and the box [-1, 70)
/// in dimension 0.
fn record_violation(count: u32) -> Launcher {
    Arc::new(move |inv: &KernelInvocation, env: &LaunchEnvironment| {
        let record = inv.accessors[0].bounds.0 as sys::CUdeviceptr;
        // count, min[3], max[3]: 64-bit fields, written as little-endian 32-bit halves
        let fields: [i64; 7] = [count.into(), -1, 0, 0, 69, 0, 0];
        for (i, &field) in fields.iter().enumerate() {
            let bits = field as u64;
            for (half, word) in [bits as u32, (bits >> 32) as u32].into_iter().enumerate() {
                let address = record + (8 * i + 4 * half) as sys::CUdeviceptr;
                // SAFETY: inside the chunk's device record; the stream's context is current.
                check("cuMemsetD32Async", unsafe {
                    sys::cuMemsetD32Async(address, word, 1, env.stream as sys::CUstream)
                })?;
            }
        }
        Ok(())
    })
}

#[test]
fn kernels_with_pinned_bounds_records_join_graph_batches_and_get_their_own_records_back() {
    let test =
        "kernels_with_pinned_bounds_records_join_graph_batches_and_get_their_own_records_back";
    let Some(backend) = backend_or_skip(test) else {
        return;
    };
    let mut backend = backend.with_kernel_graphs(GraphCapture::LaunchOnly);
    let (device, n) = (DeviceId(0), 40usize);
    let memory = backend.system_info().native_memory(device);
    let on_device = allocate(&mut backend, memory, 64 * 4);
    let hold = backend.enqueue_device_kernel(
        device,
        0,
        hold_submission_thread(100),
        invocation(device, on_device, 64),
    );
    // Every chunk's records go through the lane's one device block, chunk after chunk.
    let chunks: Vec<_> = (0..n)
        .map(|i| {
            let records = backend
                .device_bounds_records(1)
                .unwrap()
                .expect("CUDA records");
            let mut inv = KernelInvocation {
                launch_only: true,
                ..invocation(device, on_device, 64)
            };
            inv.accessors[0].bounds = records.pointer(0);
            let event =
                backend.enqueue_device_kernel(device, 0, record_violation(i as u32 + 1), inv);
            (records, event)
        })
        .collect();
    let _ = wait(&mut backend, &hold);
    for (i, (records, event)) in chunks.iter().enumerate() {
        wait(&mut backend, event).unwrap();
        let violations = records.violations();
        assert_eq!(violations.len(), 1, "chunk {i}: {violations:?}");
        assert_eq!(violations[0].1.count, i as u64 + 1, "chunk {i}");
        assert_eq!(violations[0].1.display(1), "[-1,70)", "chunk {i}");
    }
    let batches = backend.graph_batches_launched();
    assert!(
        batches >= n.div_ceil(graphs::MAX_GRAPH_KERNELS),
        "{n} kernels with pinned records formed {batches} graph batches"
    );
    println!("{test}: {n} kernels with records in {batches} graph batches, each record its own");
    drop(chunks);
    // SAFETY: the allocation is live and unused.
    let event = unsafe { backend.enqueue_free(memory, on_device) };
    wait(&mut backend, &event).unwrap();
}

#[test]
fn a_failing_launcher_in_a_graph_batch_fails_its_kernel_only() {
    let test = "a_failing_launcher_in_a_graph_batch_fails_its_kernel_only";
    let n = 8;
    let failing: Launcher = Arc::new(|_: &KernelInvocation, _: &LaunchEnvironment| {
        Err(Error::new(ErrorKind::TaskFailed, "the kernel returned 7"))
    });
    let launcher = |i| {
        if i == 3 {
            failing.clone()
        } else {
            fill_from(i, n)
        }
    };
    let Some(mut run) = queue_behind_hold(test, n, launcher) else {
        return;
    };
    for (i, outcome) in run.outcomes.iter().enumerate() {
        match outcome {
            Err(message) => assert!(i == 3 && message.contains("returned 7"), "{message}"),
            Ok(()) => assert_ne!(i, 3),
        }
    }
    // Kernel 3 did not run: element 3 keeps kernel 2's value.
    let values = download_u32(&mut run.backend, run.on_device, n);
    assert_eq!(values, [0, 1, 2, 2, 4, 5, 6, 7]);
}

#[test]
fn a_launcher_that_synchronises_fails_its_graph_batch_with_a_clear_error() {
    let test = "a_launcher_that_synchronises_fails_its_graph_batch_with_a_clear_error";
    let n = 4;
    // Against the launch protocol: synchronising the stream it was given.
    let synchronising: Launcher = Arc::new(|_: &KernelInvocation, env: &LaunchEnvironment| {
        // SAFETY: a stream of the current context; the call is expected to fail under capture.
        let _ = unsafe { sys::cuStreamSynchronize(env.stream as sys::CUstream) };
        Ok(())
    });
    let launcher = |i| {
        if i == 1 {
            synchronising.clone()
        } else {
            fill_from(i, n)
        }
    };
    let Some(mut run) = queue_behind_hold(test, n, launcher) else {
        return;
    };
    // Kernels 0 and 1 were captured when the capture broke; kernel 2 either fails in the
    // broken capture too or ends it, kernel 3 then launches on its own.
    let messages: Vec<&str> = run
        .outcomes
        .iter()
        .map(|o| o.as_ref().map_or_else(|e| e.as_str(), |()| "ok"))
        .collect();
    assert!(
        messages[..2].iter().all(|m| m.contains("cuda_graphs=off")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .all(|m| *m == "ok" || m.contains("cuda_graphs=off")),
        "{messages:?}"
    );
    // The lane works again afterwards.
    let device = DeviceId(0);
    let after = run.backend.enqueue_device_kernel(
        device,
        0,
        fill_from(0, n),
        invocation(device, run.on_device, n),
    );
    wait(&mut run.backend, &after).unwrap();
    assert_eq!(download_u32(&mut run.backend, run.on_device, n), [0; 4]);
}

#[test]
fn a_launcher_copying_from_pageable_memory_in_a_graph_batch_fails_it_with_a_clear_error() {
    let test =
        "a_launcher_copying_from_pageable_memory_in_a_graph_batch_fails_it_with_a_clear_error";
    let n = 4;
    // Each launcher copies element i from a pageable vector it frees (and overwrites) at once.
    let launcher = |i: usize| -> Launcher {
        Arc::new(move |inv: &KernelInvocation, env: &LaunchEnvironment| {
            let mut value = vec![100 + i as u32; 1];
            let target = inv.accessors[0].base.0 as sys::CUdeviceptr + 4 * i as u64;
            // SAFETY: one u32 into the accessor's allocation, on the given stream.
            let copied = check("cuMemcpyHtoDAsync", unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    target,
                    value.as_ptr().cast(),
                    4,
                    env.stream as sys::CUstream,
                )
            });
            value[0] = 0xdead;
            std::hint::black_box(&value);
            copied
        })
    };
    let Some(mut run) = queue_behind_hold(test, n, launcher) else {
        return;
    };
    let values = download_u32(&mut run.backend, run.on_device, n);
    let outcomes = &run.outcomes;
    println!("{test}: outcomes {outcomes:?}, values {values:?}");
    // The copies of the batch fail with a message that says why; one launched on its own (the
    // last, when nothing is queued behind it) is staged during the call as usual.
    for (i, outcome) in outcomes.iter().enumerate() {
        match outcome {
            Ok(()) => assert_eq!(values[i], 100 + i as u32, "element {i}: {outcomes:?}"),
            Err(message) => assert!(
                message.contains("from pageable host memory")
                    && message.contains("cuda_graphs=off"),
                "{message}"
            ),
        }
    }
    assert!(outcomes[0].is_err(), "{outcomes:?}");
}

#[test]
fn a_freed_device_block_serves_the_next_allocation_of_its_size() {
    let Some(mut backend) =
        backend_or_skip("a_freed_device_block_serves_the_next_allocation_of_its_size")
    else {
        return;
    };
    let memory = backend.system_info().devices[0].native_memory;
    let free = |backend: &mut CudaBackend, pointer| free_unused(backend, memory, pointer);
    let bytes = 64 << 20;
    let first = allocate(&mut backend, memory, bytes);
    free(&mut backend, first);
    assert_eq!(backend.device_blocks.lock().kept_bytes(memory), bytes);
    let again = allocate(&mut backend, memory, bytes);
    assert_eq!(again, first, "the kept block is reused");
    assert_eq!(backend.device_blocks.lock().kept_bytes(memory), 0);
    let other_size = allocate(&mut backend, memory, bytes / 2);
    assert_ne!(other_size, first);
    // A freed block of exactly the size must not be handed out twice, nor a live one reused.
    free(&mut backend, again);
    let third = allocate(&mut backend, memory, bytes);
    let fourth = allocate(&mut backend, memory, bytes);
    assert_ne!(third, fourth);
    for pointer in [other_size, third, fourth] {
        free(&mut backend, pointer);
    }
    assert_eq!(
        backend.device_blocks.lock().kept_bytes(memory),
        bytes * 2 + bytes / 2
    );
    // Dropping the backend returns the kept blocks while its contexts exist.
    drop(backend);
}

#[test]
fn kept_device_blocks_make_way_for_an_allocation_that_needs_their_memory() {
    let Some(mut backend) =
        backend_or_skip("kept_device_blocks_make_way_for_an_allocation_that_needs_their_memory")
    else {
        return;
    };
    let memory = backend.system_info().devices[0].native_memory;
    make_current(backend.devices[0].context).unwrap();
    let (_, total_bytes) = device_memory_info();
    // Kept blocks of one size fill a sixteenth of the device; then an allocation of most of the
    // rest only fits once they are returned.
    let block = device_cache::byte_bound(total_bytes) / 4;
    let blocks: Vec<*mut u8> = (0..4)
        .map(|_| allocate(&mut backend, memory, block))
        .collect();
    for pointer in blocks {
        free_unused(&mut backend, memory, pointer);
    }
    assert_eq!(backend.device_blocks.lock().kept_bytes(memory), 4 * block);
    let (free_bytes, _) = device_memory_info();
    let pointer = allocate(&mut backend, memory, free_bytes + block);
    assert_eq!(backend.device_blocks.lock().kept_bytes(memory), 0);
    free_unused(&mut backend, memory, pointer);
}

/// Frees an allocation of `memory` that nothing uses and waits for it.
fn free_unused(backend: &mut CudaBackend, memory: MemoryId, pointer: *mut u8) {
    // SAFETY: the caller's allocation, live and unused.
    let event = unsafe { backend.enqueue_free(memory, pointer) };
    wait(backend, &event).unwrap();
}

/// Free and total bytes of the current context's device.
fn device_memory_info() -> (usize, usize) {
    let (mut free_bytes, mut total_bytes) = (0usize, 0usize);
    // SAFETY: valid out-pointers; the caller made a context current.
    check("cuMemGetInfo", unsafe {
        sys::cuMemGetInfo_v2(&mut free_bytes, &mut total_bytes)
    })
    .unwrap();
    (free_bytes, total_bytes)
}
