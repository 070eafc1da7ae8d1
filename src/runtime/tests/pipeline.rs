//! The whole pipeline on one process: task manager → scheduler (CDAG, IDAG) → executor on the
//! host backend with emulated devices, checked against serial computations.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::backend::bounds::BoundsRecord;
use crate::backend::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use crate::error::Result;
use crate::executor::builtin_reducers::{BuiltinOp, BuiltinReducer};
use crate::grid::{GridBox, Id, Range, Subrange};
use crate::policy::ErrorPolicy;
use crate::runtime::Runtime;
use crate::runtime::config::{Config, DeviceSelection, Lookahead, SchedulerThreads};
use crate::task::{AccessMode, CommandGroup, RangeMapper, TaskSpec};

pub(super) fn config(devices: u32, peer_copies: bool, lookahead: Lookahead) -> Config {
    Config {
        devices: DeviceSelection::Host(devices),
        host_device_peer_copies: peer_copies,
        lookahead,
        ..Config::default()
    }
}

fn configurations() -> Vec<Config> {
    let two_scheduler_threads = |config: Config| Config {
        scheduler_threads: SchedulerThreads::Two,
        ..config
    };
    vec![
        config(1, true, Lookahead::Auto),
        config(4, true, Lookahead::Auto),
        config(4, false, Lookahead::None),
        config(3, true, Lookahead::Infinite),
        two_scheduler_threads(config(4, true, Lookahead::Auto)),
        two_scheduler_threads(config(3, false, Lookahead::None)),
    ]
}

/// Address of element `i` (1-D) of accessor `a`.
pub(super) fn element(inv: &KernelInvocation, a: usize, i: [usize; 3]) -> *mut f64 {
    let acc = inv.accessors[a];
    let (o, r) = (acc.allocated_box.min().0, acc.allocated_box.range().0);
    let linear = ((i[0] - o[0]) * r[1] + (i[1] - o[1])) * r[2] + (i[2] - o[2]);
    // SAFETY: callers only ask for elements inside the accessor's allocation.
    unsafe { (acc.base.0 as *mut f64).add(linear) }
}

pub(super) fn for_each(chunk: &GridBox, mut f: impl FnMut([usize; 3])) {
    let (min, max) = (chunk.min().0, chunk.max().0);
    for i in min[0]..max[0] {
        for j in min[1]..max[1] {
            for k in min[2]..max[2] {
                f([i, j, k]);
            }
        }
    }
}

/// A 1-D buffer of doubles, initialised from `values`.
pub(super) fn host_f64_buffer(
    rt: &mut Runtime,
    values: impl Iterator<Item = f64>,
) -> crate::types::BufferId {
    let bytes: Vec<u8> = values.flat_map(f64::to_ne_bytes).collect();
    rt.create_buffer(1, Range::new(bytes.len() / 8, 1, 1), 8, 8, Some(&bytes))
        .unwrap()
}

pub(super) fn launcher(f: impl Fn(&KernelInvocation) + Send + Sync + 'static) -> Launcher {
    Arc::new(move |inv: &KernelInvocation, _: &LaunchEnvironment| {
        f(inv);
        Ok(())
    })
}

pub(super) fn fence_all(
    rt: &mut Runtime,
    bid: crate::types::BufferId,
    elements: usize,
) -> Vec<f64> {
    let mut out = vec![0.0f64; elements];
    // SAFETY: `out` holds the whole buffer and outlives the wait below.
    let promise = unsafe { rt.fence_buffer(bid, None, out.as_mut_ptr().cast()) }.unwrap();
    promise
        .wait(std::time::Duration::from_secs(5), |_| {})
        .unwrap();
    out
}

#[test]
fn a_2d_stencil_over_100_steps_matches_the_serial_computation_in_every_configuration() {
    let (n, m, steps) = (24usize, 20usize, 100);
    let initial: Vec<f64> = (0..n * m).map(|i| ((i * 7) % 13) as f64).collect();
    // Serial reference: 5-point average, clamped at the border.
    let mut expected = initial.clone();
    for _ in 0..steps {
        let old = expected.clone();
        for i in 0..n {
            for j in 0..m {
                let at = |a: isize, b: isize| {
                    let (a, b) = (
                        a.clamp(0, n as isize - 1) as usize,
                        b.clamp(0, m as isize - 1) as usize,
                    );
                    old[a * m + b]
                };
                let (ii, jj) = (i as isize, j as isize);
                expected[i * m + j] = (at(ii, jj)
                    + at(ii - 1, jj)
                    + at(ii + 1, jj)
                    + at(ii, jj - 1)
                    + at(ii, jj + 1))
                    / 5.0;
            }
        }
    }
    for cfg in configurations() {
        let label = format!("{:?}", cfg.devices);
        let mut rt = Runtime::start(cfg).unwrap();
        let range = Range::new(n, m, 1);
        let bytes: Vec<u8> = initial.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mut a = rt.create_buffer(2, range, 8, 8, Some(&bytes)).unwrap();
        let mut b = rt.create_buffer(2, range, 8, 8, None).unwrap();
        for _ in 0..steps {
            let cg = CommandGroup::new()
                .access(
                    a,
                    AccessMode::Read,
                    RangeMapper::NeighborhoodAlongAxes([1, 1, 0]),
                )
                .access(b, AccessMode::DiscardWrite, RangeMapper::OneToOne)
                .hint_split_2d();
            let kernel = launcher(move |inv| {
                for_each(&inv.chunk, |[i, j, _]| {
                    let at = |a: isize, b: isize| {
                        let (a, b) = (
                            a.clamp(0, n as isize - 1) as usize,
                            b.clamp(0, m as isize - 1) as usize,
                        );
                        // SAFETY: the neighbourhood mapper made these elements part of the accessor.
                        unsafe { *element(inv, 0, [a, b, 0]) }
                    };
                    let (ii, jj) = (i as isize, j as isize);
                    let v = (at(ii, jj)
                        + at(ii - 1, jj)
                        + at(ii + 1, jj)
                        + at(ii, jj - 1)
                        + at(ii, jj + 1))
                        / 5.0;
                    // SAFETY: one_to_one covers the chunk.
                    unsafe { *element(inv, 1, [i, j, 0]) = v };
                });
            });
            rt.submit(
                TaskSpec::DeviceKernel {
                    dims: 2,
                    range,
                    offset: Id::default(),
                },
                cg,
                kernel,
            )
            .unwrap();
            std::mem::swap(&mut a, &mut b);
        }
        let result = fence_all(&mut rt, a, n * m);
        for (i, (got, want)) in result.iter().zip(&expected).enumerate() {
            assert!(
                (got - want).abs() < 1e-12,
                "{label}: element {i}: {got} != {want}"
            );
        }
        rt.shutdown().unwrap();
    }
}

#[test]
fn reductions_combine_every_chunk_and_the_previous_value() {
    for cfg in configurations() {
        let label = format!("{:?}", cfg.devices);
        let mut rt = Runtime::start(cfg).unwrap();
        let n = 1000usize;
        let input = host_f64_buffer(&mut rt, (0..n).map(|i| i as f64));
        let sum = rt
            .create_buffer(0, Range::ONE, 8, 8, Some(&10.0f64.to_ne_bytes()))
            .unwrap();
        let rid = rt
            .register_reduction(Arc::new(BuiltinReducer::<f64>::new(BuiltinOp::Sum)))
            .unwrap();
        let cg = CommandGroup::new()
            .access(input, AccessMode::Read, RangeMapper::OneToOne)
            .reduction(rid, sum, false);
        let kernel = launcher(move |inv| {
            let mut partial = 0.0;
            // SAFETY: one_to_one covers the chunk.
            for_each(&inv.chunk, |i| partial += unsafe { *element(inv, 0, i) });
            // SAFETY: the reduction slot is one f64 pre-set to the identity.
            unsafe { *(inv.reductions[0].0 as *mut f64) += partial };
        });
        rt.submit(
            TaskSpec::DeviceKernel {
                dims: 1,
                range: Range::new(n, 1, 1),
                offset: Id::default(),
            },
            cg,
            kernel,
        )
        .unwrap();
        let result = fence_all(&mut rt, sum, 1);
        assert_eq!(result[0], 10.0 + (0..n).sum::<usize>() as f64, "{label}");
        rt.shutdown().unwrap();
    }
}

#[test]
fn host_tasks_side_effects_and_host_object_destruction() {
    let destroyed = Arc::new(AtomicUsize::new(0));
    let mut rt = Runtime::start(config(2, true, Lookahead::Auto)).unwrap();
    let log = Box::into_raw(Box::new(parking_lot::Mutex::new(Vec::<usize>::new())));
    let counter = destroyed.clone();
    let address = log as usize;
    let object = rt
        .create_host_object(
            address,
            Some(Box::new(move || {
                // SAFETY: created by Box::into_raw above and destroyed exactly once, here.
                drop(unsafe { Box::from_raw(address as *mut parking_lot::Mutex<Vec<usize>>) });
                counter.fetch_add(1, Ordering::SeqCst);
            })),
        )
        .unwrap();
    for step in 0..5usize {
        let cg = CommandGroup::new().side_effect(object);
        let task = launcher(move |inv| {
            // SAFETY: the instance is the mutex created above, alive until destroyed.
            let log = unsafe { &*(inv.host_objects[0].0 as *const parking_lot::Mutex<Vec<usize>>) };
            log.lock().push(step);
        });
        rt.submit(TaskSpec::MasterNode, cg, task).unwrap();
    }
    let promise = rt.fence_host_object(object).unwrap();
    promise
        .wait(std::time::Duration::from_secs(5), |_| {})
        .unwrap();
    // SAFETY: the fence guarantees all side effects ran; the object is alive until released.
    assert_eq!(*unsafe { &*log }.lock(), vec![0, 1, 2, 3, 4]);
    rt.release_host_object(object).unwrap();
    rt.wait().unwrap();
    assert_eq!(destroyed.load(Ordering::SeqCst), 1);
    rt.shutdown().unwrap();
    assert_eq!(destroyed.load(Ordering::SeqCst), 1);
}

#[test]
fn a_failing_kernel_is_reported_at_the_next_wait_and_the_runtime_refuses_work() {
    let mut rt = Runtime::start(config(2, true, Lookahead::Auto)).unwrap();
    let buffer = rt
        .create_buffer(1, Range::new(64, 1, 1), 4, 4, None)
        .unwrap();
    let failing: Launcher = Arc::new(|_: &KernelInvocation, _: &LaunchEnvironment| {
        Err(crate::Error::new(
            crate::ErrorKind::TaskFailed,
            "kernel returned 7",
        ))
    });
    let cg = CommandGroup::new()
        .access(buffer, AccessMode::DiscardWrite, RangeMapper::OneToOne)
        .name("exploding");
    rt.submit(
        TaskSpec::DeviceKernel {
            dims: 1,
            range: Range::new(64, 1, 1),
            offset: Id::default(),
        },
        cg,
        failing,
    )
    .unwrap();
    let error = rt.wait().unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::TaskFailed);
    assert!(error.message().contains("exploding"), "{}", error.message());
    assert!(
        error.message().contains("kernel returned 7"),
        "{}",
        error.message()
    );
    let refused = rt
        .create_buffer(1, Range::new(4, 1, 1), 4, 4, None)
        .unwrap_err();
    assert_eq!(refused.kind(), crate::ErrorKind::InvalidState);
    rt.shutdown().unwrap();
}

/// A host task that uses its accessor outside the declared box, as `celerity_accessor_ptr` records it.
fn out_of_bounds_host_task(policy: ErrorPolicy) -> (Result<()>, Runtime) {
    let mut rt = Runtime::start(Config {
        accessor_boundary_check: policy,
        ..config(2, true, Lookahead::Auto)
    })
    .unwrap();
    let buffer = rt
        .create_buffer(1, Range::new(64, 1, 1), 4, 4, Some(&[0u8; 256]))
        .unwrap();
    rt.set_buffer_name(buffer, "grid").unwrap();
    let sloppy: Launcher = Arc::new(move |inv: &KernelInvocation, _: &LaunchEnvironment| {
        let record = inv.accessors[0].bounds.0.cast::<BoundsRecord>();
        assert_eq!(record.is_null(), policy == ErrorPolicy::Ignore);
        if !record.is_null() {
            // SAFETY: the executor's record for this accessor, alive until the chunk completed.
            let record = unsafe { &*record };
            record.record([usize::MAX, 0, 0]);
            record.record([40, 0, 0]);
        }
        Ok(())
    });
    let cg = CommandGroup::new()
        .access(
            buffer,
            AccessMode::Read,
            RangeMapper::Fixed(Subrange::new(Id([8, 0, 0]), Range::new(24, 1, 1))),
        )
        .name("sloppy");
    rt.submit(TaskSpec::MasterNode, cg, sloppy).unwrap();
    (rt.wait(), rt)
}

#[test]
fn out_of_bounds_accesses_fail_the_task_under_policy_error() {
    let (result, mut rt) = out_of_bounds_host_task(ErrorPolicy::Error);
    let error = result.unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::AccessPattern);
    assert_eq!(
        error.message(),
        "Master-node host task T1 \"sloppy\" (chunk [0,1)): accessor 0 (read access of buffer B0 \"grid\") used [-1,41) (2 element accesses) outside its declared box [8,32); the range mapper declares what each chunk may access"
    );
    rt.shutdown().unwrap();
}

#[test]
fn out_of_bounds_accesses_are_logged_under_on_and_unchecked_under_off() {
    for policy in [ErrorPolicy::Log, ErrorPolicy::Ignore] {
        let (result, mut rt) = out_of_bounds_host_task(policy);
        result.unwrap();
        rt.shutdown().unwrap();
    }
}

#[test]
fn a_chunk_after_a_violating_one_gets_fresh_records() {
    // The executor reuses the record blocks of completed chunks: the next chunk with as many
    // accessors must see no trace of the earlier violations or of its scratch writes.
    let (result, mut rt) = out_of_bounds_host_task(ErrorPolicy::Log);
    result.unwrap();
    let buffer = rt
        .create_buffer(1, Range::new(64, 1, 1), 4, 4, Some(&[0u8; 256]))
        .unwrap();
    let careful: Launcher = Arc::new(|inv: &KernelInvocation, _: &LaunchEnvironment| {
        let record = inv.accessors[0].bounds.0.cast::<BoundsRecord>();
        // SAFETY: the executor's record for this accessor, alive until the chunk completed.
        let record = unsafe { &*record };
        // SAFETY: the record's scratch element, FALLBACK_BYTES long.
        let scratch = unsafe { record.fallback.read() };
        let count = record.count.load(std::sync::atomic::Ordering::Relaxed);
        // SAFETY: as above; the kernel may write its scratch element.
        unsafe { record.fallback.write(0x5a) };
        match (record.violation(), scratch) {
            (None, 0) => Ok(()),
            _ => Err(crate::Error::internal(format!(
                "stale record: {count} violations, scratch {scratch:#x}"
            ))),
        }
    });
    for _ in 0..3 {
        let cg = CommandGroup::new().access(
            buffer,
            AccessMode::Read,
            RangeMapper::Fixed(Subrange::new(Id([8, 0, 0]), Range::new(24, 1, 1))),
        );
        rt.submit(TaskSpec::MasterNode, cg, careful.clone())
            .unwrap();
        rt.wait().unwrap();
    }
    rt.shutdown().unwrap();
}

#[test]
fn many_small_tasks_keep_the_graphs_bounded() {
    let mut rt = Runtime::start(config(2, true, Lookahead::Auto)).unwrap();
    let buffer = rt
        .create_buffer(1, Range::new(16, 1, 1), 8, 8, Some(&[0u8; 128]))
        .unwrap();
    for _ in 0..2000 {
        let cg = CommandGroup::new().access(buffer, AccessMode::ReadWrite, RangeMapper::OneToOne);
        let kernel = launcher(|inv| {
            // SAFETY: one_to_one covers the chunk.
            for_each(&inv.chunk, |i| unsafe { *element(inv, 0, i) += 1.0 });
        });
        rt.submit(
            TaskSpec::DeviceKernel {
                dims: 1,
                range: Range::new(16, 1, 1),
                offset: Id::default(),
            },
            cg,
            kernel,
        )
        .unwrap();
    }
    let result = fence_all(&mut rt, buffer, 16);
    assert!(result.iter().all(|&v| v == 2000.0), "{result:?}");
    rt.wait().unwrap();
    assert!(
        rt.task_manager().num_live_tasks() < 50,
        "{} live tasks",
        rt.task_manager().num_live_tasks()
    );
    rt.shutdown().unwrap();
}

#[test]
fn buffer_fences_of_subranges_and_0d_buffers_return_exact_snapshots() {
    for cfg in configurations() {
        let mut rt = Runtime::start(cfg).unwrap();
        let (n, m) = (10usize, 12usize);
        let grid = rt
            .create_buffer(2, Range::new(n, m, 1), 8, 8, None)
            .unwrap();
        let cg = CommandGroup::new().access(grid, AccessMode::DiscardWrite, RangeMapper::OneToOne);
        let kernel = launcher(move |inv| {
            // SAFETY: one_to_one covers the chunk.
            for_each(&inv.chunk, |[i, j, _]| unsafe {
                *element(inv, 0, [i, j, 0]) = (i * 100 + j) as f64
            });
        });
        rt.submit(
            TaskSpec::DeviceKernel {
                dims: 2,
                range: Range::new(n, m, 1),
                offset: Id::default(),
            },
            cg,
            kernel,
        )
        .unwrap();
        // A 3x4 window at (2, 5), dense row-major.
        let mut window = vec![0.0f64; 12];
        let region = crate::grid::Subrange::new(Id::new(2, 5, 0), Range::new(3, 4, 1));
        // SAFETY: `window` holds the 12 elements and outlives the wait.
        let promise =
            unsafe { rt.fence_buffer(grid, Some(region), window.as_mut_ptr().cast()) }.unwrap();
        promise
            .wait(std::time::Duration::from_secs(5), |_| {})
            .unwrap();
        let expected: Vec<f64> = (2..5)
            .flat_map(|i| (5..9).map(move |j| (i * 100 + j) as f64))
            .collect();
        assert_eq!(window, expected);
        let scalar = rt
            .create_buffer(0, Range::ONE, 8, 8, Some(&42.5f64.to_ne_bytes()))
            .unwrap();
        assert_eq!(fence_all(&mut rt, scalar, 1), vec![42.5]);
        rt.shutdown().unwrap();
    }
}

#[test]
fn a_dry_run_builds_the_graphs_of_node_0_of_many_and_executes_nothing() {
    for scheduler_threads in [SchedulerThreads::One, SchedulerThreads::Two] {
        dry_run_of_20_kernels(scheduler_threads);
    }
}

fn dry_run_of_20_kernels(scheduler_threads: SchedulerThreads) {
    let mut rt = Runtime::start(Config {
        dry_run_nodes: Some(4),
        devices: DeviceSelection::Host(2),
        scheduler_threads,
        ..Config::default()
    })
    .unwrap();
    let info = rt.info();
    assert!(info.dry_run);
    assert_eq!((info.node, info.num_nodes, info.num_devices), (0, 4, 2));
    let buffer = rt
        .create_buffer(1, Range::new(64, 1, 1), 8, 8, Some(&[0u8; 512]))
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..20 {
        let ran = ran.clone();
        let cg = CommandGroup::new().access(buffer, AccessMode::ReadWrite, RangeMapper::OneToOne);
        let kernel = launcher(move |_| {
            ran.fetch_add(1, Ordering::SeqCst);
        });
        rt.submit(
            TaskSpec::DeviceKernel {
                dims: 1,
                range: Range::new(64, 1, 1),
                offset: Id::default(),
            },
            cg,
            kernel,
        )
        .unwrap();
    }
    // Fences complete (without data) and waits return; nothing ran.
    let mut sink = vec![-1.0f64; 64];
    // SAFETY: `sink` outlives the wait.
    let promise = unsafe { rt.fence_buffer(buffer, None, sink.as_mut_ptr().cast()) }.unwrap();
    promise
        .wait(std::time::Duration::from_secs(5), |_| {})
        .unwrap();
    rt.wait().unwrap();
    assert!(sink.iter().all(|&v| v == -1.0), "a dry run copies no data");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    rt.shutdown().unwrap();
}

#[test]
fn reduction_slots_start_at_the_identity_of_their_operator() {
    for cfg in configurations() {
        let label = format!("{:?}", cfg.devices);
        let mut rt = Runtime::start(cfg).unwrap();
        let n = 12usize;
        let input = host_f64_buffer(&mut rt, (1..=n).map(|i| i as f64));
        let product = rt.create_buffer(0, Range::ONE, 8, 8, None).unwrap();
        let minimum = rt.create_buffer(0, Range::ONE, 8, 8, None).unwrap();
        let times = rt
            .register_reduction(Arc::new(BuiltinReducer::<f64>::new(BuiltinOp::Product)))
            .unwrap();
        let min = rt
            .register_reduction(Arc::new(BuiltinReducer::<f64>::new(BuiltinOp::Min)))
            .unwrap();
        let cg = CommandGroup::new()
            .access(input, AccessMode::Read, RangeMapper::OneToOne)
            .reduction(times, product, true)
            .reduction(min, minimum, true);
        let kernel = launcher(move |inv| {
            for_each(&inv.chunk, |i| {
                // SAFETY: one_to_one covers the chunk; the slots are f64s pre-set to the identity.
                unsafe {
                    let v = *element(inv, 0, i);
                    *(inv.reductions[0].0 as *mut f64) *= v;
                    let m = inv.reductions[1].0 as *mut f64;
                    *m = (*m).min(v + 100.0);
                }
            });
        });
        rt.submit(
            TaskSpec::DeviceKernel {
                dims: 1,
                range: Range::new(n, 1, 1),
                offset: Id::default(),
            },
            cg,
            kernel,
        )
        .unwrap();
        assert_eq!(
            fence_all(&mut rt, product, 1)[0],
            (1..=n).product::<usize>() as f64,
            "{label}"
        );
        assert_eq!(fence_all(&mut rt, minimum, 1)[0], 101.0, "{label}");
        rt.shutdown().unwrap();
    }
}

#[test]
fn shutdown_reports_a_failure_no_earlier_call_reported() {
    let mut rt = Runtime::start(config(2, true, Lookahead::Auto)).unwrap();
    let failing: Launcher = Arc::new(|_: &KernelInvocation, _: &LaunchEnvironment| {
        Err(crate::Error::new(
            crate::ErrorKind::TaskFailed,
            "kernel returned 3",
        ))
    });
    rt.submit(
        TaskSpec::MasterNode,
        CommandGroup::new().name("late failure"),
        failing,
    )
    .unwrap();
    let error = rt.shutdown().unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::TaskFailed);
    assert!(
        error.message().contains("late failure"),
        "{}",
        error.message()
    );
    assert!(rt.shutdown().is_ok(), "shutdown is idempotent");
}

#[test]
fn a_neighborhood_read_after_a_one_to_one_read_of_host_data_on_four_devices() {
    // Regression: the instruction graph asserted "box is not allocated contiguously" here.
    for cfg in configurations() {
        let mut rt = Runtime::start(cfg).unwrap();
        let n = 200usize;
        let input = host_f64_buffer(&mut rt, (0..n).map(|i| i as f64));
        let output = rt
            .create_buffer(1, Range::new(n, 1, 1), 8, 8, None)
            .unwrap();
        let spec = TaskSpec::DeviceKernel {
            dims: 1,
            range: Range::new(n, 1, 1),
            offset: Id::default(),
        };
        let cg = CommandGroup::new().access(input, AccessMode::Read, RangeMapper::OneToOne);
        rt.submit(spec, cg, launcher(|_| {})).unwrap();
        let cg = CommandGroup::new()
            .access(
                input,
                AccessMode::Read,
                RangeMapper::Neighborhood([1, 0, 0]),
            )
            .access(output, AccessMode::DiscardWrite, RangeMapper::OneToOne);
        let kernel = launcher(move |inv| {
            for_each(&inv.chunk, |[i, _, _]| {
                let left = if i == 0 { 0 } else { i - 1 };
                let right = (i + 1).min(n - 1);
                // SAFETY: the neighbourhood and one_to_one mappers cover these elements.
                unsafe {
                    *element(inv, 1, [i, 0, 0]) =
                        *element(inv, 0, [left, 0, 0]) + *element(inv, 0, [right, 0, 0])
                };
            });
        });
        rt.submit(spec, cg, kernel).unwrap();
        rt.wait().unwrap();
        let result = fence_all(&mut rt, output, n);
        for (i, &value) in result.iter().enumerate() {
            assert_eq!(
                value,
                (if i == 0 { 0 } else { i - 1 } + (i + 1).min(n - 1)) as f64
            );
        }
        rt.shutdown().unwrap();
    }
}

#[test]
fn created_collective_groups_never_share_the_default_group() {
    let mut rt = Runtime::start(config(1, true, Lookahead::Auto)).unwrap();
    let created = rt.create_collective_group().unwrap();
    let default = rt.default_collective_group();
    let second = rt.create_collective_group().unwrap();
    assert_ne!(created, default);
    assert_ne!(second, default);
    assert_ne!(created, second);
    rt.shutdown().unwrap();
}

#[test]
fn a_refused_submission_leaves_no_reducer_behind() {
    let mut rt = Runtime::start(config(1, true, Lookahead::Auto)).unwrap();
    let sum = rt.create_buffer(0, Range::ONE, 8, 8, None).unwrap();
    let registered: Arc<dyn crate::user_objects::Reducer> =
        Arc::new(BuiltinReducer::<f64>::new(BuiltinOp::Sum));
    let handed_over: Arc<dyn crate::user_objects::Reducer> =
        Arc::new(BuiltinReducer::<f64>::new(BuiltinOp::Sum));
    // A master-node host task cannot reduce: the task manager refuses both groups.
    let rid = rt.register_reduction(registered.clone()).unwrap();
    let cg = CommandGroup::new().reduction(rid, sum, true);
    assert!(
        rt.submit(TaskSpec::MasterNode, cg, launcher(|_| {}))
            .is_err()
    );
    let rid = rt.reserve_reduction_id();
    let cg = CommandGroup::new().reduction(rid, sum, true);
    let reducers = vec![(rid, handed_over.clone())];
    let refused = rt.submit_with_reducers(TaskSpec::MasterNode, cg, launcher(|_| {}), reducers);
    assert!(refused.is_err());
    // Everything sent before this wait has reached the executor: nobody else holds a reducer.
    rt.wait().unwrap();
    assert_eq!(Arc::strong_count(&registered), 1);
    assert_eq!(Arc::strong_count(&handed_over), 1);
    rt.shutdown().unwrap();
}

/// Node 0's executor fills up to its limit behind a stuck chunk while node 1 waits for node 0's
/// data: node 0 stops taking batches, node 1 (which only waits for transfers) keeps taking them,
/// and once the chunk returns both finish with the right data.
#[test]
fn two_nodes_finish_after_one_held_its_limit_of_instructions_behind_a_stuck_chunk() {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use super::observability::{
        await_stall_report_where, fabric, held_instructions as held, kernel_over_16, on_nodes,
        wait_for_release,
    };
    use crate::executor::live::MAX_INCOMPLETE_INSTRUCTIONS;

    const N: usize = 16;
    // a kernel, a send and a receive per step on each node: the steps outnumber the limit
    let steps = MAX_INCOMPLETE_INSTRUCTIONS / 2;
    let release = Arc::new(AtomicBool::new(false));
    let config = Config {
        stall_timeout: Duration::from_millis(300),
        ..config(1, true, Lookahead::None)
    };
    let outcomes = on_nodes(fabric(2), config, move |node, mut rt| {
        let mut src = host_f64_buffer(&mut rt, (0..N).map(|i| i as f64));
        let mut dst = rt
            .create_buffer(1, Range::new(N, 1, 1), 8, 8, None)
            .unwrap();
        let kernel = kernel_over_16();
        let flag = release.clone();
        rt.submit(
            kernel,
            CommandGroup::new()
                .read_write(src, RangeMapper::OneToOne)
                .name("stuck on node 0"),
            launcher(move |inv| {
                if inv.chunk.min().0[0] == 0 {
                    wait_for_release(&flag);
                }
                // SAFETY: one_to_one covers the chunk.
                for_each(&inv.chunk, |i| unsafe { *element(inv, 0, i) += 1.0 });
            }),
        )
        .unwrap();
        // every step rotates the buffer by one element: each node reads the other's half
        for _ in 0..steps {
            rt.submit(
                kernel,
                CommandGroup::new()
                    .read(src, RangeMapper::All)
                    .discard_write(dst, RangeMapper::OneToOne),
                launcher(|inv| {
                    for_each(&inv.chunk, |i| {
                        let next = [(i[0] + 1) % N, 0, 0];
                        // SAFETY: `all` covers the buffer, one_to_one the chunk.
                        unsafe { *element(inv, 1, i) = *element(inv, 0, next) };
                    })
                }),
            )
            .unwrap();
            std::mem::swap(&mut src, &mut dst);
        }
        // Only the reports made while the chunk is stuck show the limit: once it returns,
        // node 0's held work waits only for node 1's data, and by design it then takes every
        // batch (a stall of node 1 on a loaded host reports all ~10 k of them).
        let mut reports_while_stuck = Vec::new();
        if node.0 == 0 {
            await_stall_report_where(&rt, |r| held(r) >= MAX_INCOMPLETE_INSTRUCTIONS);
            reports_while_stuck = rt.stall_reports();
            release.store(true, Ordering::Release);
        }
        let values = fence_all(&mut rt, src, N);
        rt.shutdown().unwrap();
        (values, reports_while_stuck)
    });
    let expected: Vec<f64> = (0..N).map(|i| ((i + steps) % N + 1) as f64).collect();
    for (node, (values, _)) in outcomes.iter().enumerate() {
        assert_eq!(values, &expected, "node {node}");
    }
    assert!(
        !outcomes[0].1.is_empty(),
        "node 0 made no report while stuck"
    );
    // only node 0's: node 1 waits only for transfers, so it may take (and hold) everything
    for report in &outcomes[0].1 {
        assert!(
            held(report) < MAX_INCOMPLETE_INSTRUCTIONS + 64,
            "node 0 held more than {MAX_INCOMPLETE_INSTRUCTIONS}: {report}"
        );
    }
}
