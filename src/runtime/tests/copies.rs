//! Where the executor runs copies: a small one whose predecessors completed on its own thread
//! (no hand-off to a lane and back), a large one or one queued behind its producer on a lane;
//! the results are the same.

use std::path::{Path, PathBuf};

use super::observability::{events, scratch_dir};
use super::pipeline::{config, element, fence_all, for_each, host_f64_buffer, launcher};
use crate::grid::{Id, Range};
use crate::runtime::Runtime;
use crate::runtime::config::{Config, Lookahead};
use crate::task::{AccessMode, CommandGroup, RangeMapper, TaskSpec};

/// The trace's track of the executor thread.
const EXECUTOR_TID: u64 = 1;

/// Each of two devices increments its half of a buffer of `n` doubles, then writes the buffer
/// reversed into a second one (reading the other device's half); returns the second buffer.
fn reverse_after_increment(rt: &mut Runtime, n: usize) -> Vec<f64> {
    let input = host_f64_buffer(rt, (0..n).map(|i| i as f64));
    let output = rt
        .create_buffer(1, Range::new(n, 1, 1), 8, 8, None)
        .unwrap();
    let kernel = |dims_n: usize| TaskSpec::DeviceKernel {
        dims: 1,
        range: Range::new(dims_n, 1, 1),
        offset: Id::default(),
    };
    rt.submit(
        kernel(n),
        CommandGroup::new().access(input, AccessMode::ReadWrite, RangeMapper::OneToOne),
        launcher(|inv| {
            // SAFETY: one_to_one covers the chunk.
            for_each(&inv.chunk, |i| unsafe { *element(inv, 0, i) += 1.0 });
        }),
    )
    .unwrap();
    rt.submit(
        kernel(n),
        CommandGroup::new()
            .access(input, AccessMode::Read, RangeMapper::All)
            .access(output, AccessMode::DiscardWrite, RangeMapper::OneToOne),
        launcher(move |inv| {
            for_each(&inv.chunk, |i| {
                // SAFETY: `all` covers the mirrored element, one_to_one the written one.
                unsafe { *element(inv, 1, i) = *element(inv, 0, [n - 1 - i[0], 0, 0]) };
            });
        }),
    )
    .unwrap();
    fence_all(rt, output, n)
}

/// A runtime on two emulated devices writing its trace into a fresh folder named after `name`,
/// and the trace's path.
fn traced_on_two_devices(name: &str, peer_copies: bool) -> (Runtime, PathBuf) {
    let path = scratch_dir(name).join("trace.json");
    let rt = Runtime::start(Config {
        trace_file: Some(path.clone()),
        ..config(2, peer_copies, Lookahead::None)
    })
    .unwrap();
    (rt, path)
}

/// One copy of the trace: its bytes, its track, and the memories of its ends (`M0` user memory,
/// `M1` the runtime's host memory, `M2`/`M3` the two devices').
#[derive(Debug)]
struct TracedCopy {
    bytes: u64,
    tid: u64,
    from_memory: String,
    to_memory: String,
}

impl TracedCopy {
    fn reads_host_memory(&self) -> bool {
        matches!(self.from_memory.as_str(), "M0" | "M1")
    }

    fn between_devices(&self) -> bool {
        [&self.from_memory, &self.to_memory]
            .iter()
            .all(|m| matches!(m.as_str(), "M2" | "M3"))
    }
}

/// Every copy in the trace at `path`.
fn traced_copies(path: &Path) -> Vec<TracedCopy> {
    let memory = |end: &serde_json::Value| {
        let allocation = end.as_str().unwrap();
        allocation.split('.').next().unwrap().to_owned()
    };
    events(path)
        .iter()
        .filter(|e| e["cat"] == "copy")
        .map(|e| TracedCopy {
            bytes: e["args"]["bytes"]
                .to_string()
                .trim_matches('"')
                .parse()
                .unwrap(),
            tid: e["tid"].as_u64().unwrap(),
            from_memory: memory(&e["args"]["from"]),
            to_memory: memory(&e["args"]["to"]),
        })
        .collect()
}

#[test]
fn small_ready_copies_run_on_the_executor_thread_and_large_ones_on_lanes() {
    // 16 doubles: halves of 64 bytes; 8192: halves of 32 KiB, above the executor's limit.
    for peer_copies in [true, false] {
        let (mut rt, path) = traced_on_two_devices("copies", peer_copies);
        for n in [16usize, 8192] {
            let expected: Vec<f64> = (0..n).rev().map(|i| i as f64 + 1.0).collect();
            assert_eq!(
                reverse_after_increment(&mut rt, n),
                expected,
                "{n} elements"
            );
        }
        rt.shutdown().unwrap();
        let copies = traced_copies(&path);
        let (small, large): (Vec<&TracedCopy>, Vec<_>) =
            copies.iter().partition(|c| c.bytes <= 16 * 1024);
        // A copy out of host memory waits for the initial data or for copies on other lanes, so
        // it is ready when assigned; a copy out of a device's memory is queued on that device's
        // lane behind the kernel that produced it, and stays there.
        let small_from_host: Vec<_> = small.iter().filter(|c| c.reads_host_memory()).collect();
        assert!(small_from_host.len() >= 5, "{copies:?}");
        assert!(
            small_from_host.iter().all(|c| c.tid == EXECUTOR_TID),
            "peer copies {peer_copies}: {copies:?}"
        );
        assert!(
            !large.is_empty() && large.iter().all(|c| c.tid != EXECUTOR_TID),
            "peer copies {peer_copies}: {copies:?}"
        );
    }
}

#[test]
fn a_small_copy_of_many_short_runs_stays_on_a_lane() {
    // Column 0 of a 256 x 4 buffer of doubles: each device reads the other's 128 elements of it,
    // 1 KiB in 128 runs of 8 bytes, over the executor's limit of runs.
    let (rows, cols) = (256usize, 4usize);
    for peer_copies in [true, false] {
        let (mut rt, path) = traced_on_two_devices("column-copies", peer_copies);
        let values: Vec<u8> = (0..rows * cols)
            .flat_map(|i| (i as f64).to_ne_bytes())
            .collect();
        let range = Range::new(rows, cols, 1);
        let input = rt.create_buffer(2, range, 8, 8, Some(&values)).unwrap();
        let output = rt.create_buffer(2, range, 8, 8, None).unwrap();
        let kernel = TaskSpec::DeviceKernel {
            dims: 2,
            range,
            offset: Id::default(),
        };
        rt.submit(
            kernel,
            CommandGroup::new().access(input, AccessMode::ReadWrite, RangeMapper::OneToOne),
            launcher(|inv| {
                // SAFETY: one_to_one covers the chunk.
                for_each(&inv.chunk, |i| unsafe { *element(inv, 0, i) += 1.0 });
            }),
        )
        .unwrap();
        // Wait until the increments are done, so that the column's copies are ready when
        // assigned: only their runs keep them off the executor thread.
        fence_all(&mut rt, input, rows * cols);
        let column = crate::grid::Subrange::new(Id::default(), Range::new(rows, 1, 1));
        rt.submit(
            kernel,
            CommandGroup::new()
                .access(input, AccessMode::Read, RangeMapper::Fixed(column))
                .access(output, AccessMode::DiscardWrite, RangeMapper::OneToOne),
            launcher(move |inv| {
                for_each(&inv.chunk, |i| {
                    // SAFETY: the fixed mapper covers column 0, one_to_one the written element.
                    unsafe { *element(inv, 1, i) = *element(inv, 0, [rows - 1 - i[0], 0, 0]) };
                });
            }),
        )
        .unwrap();
        let expected: Vec<f64> = (0..rows * cols)
            .map(|i| ((rows - 1 - i / cols) * cols) as f64 + 1.0)
            .collect();
        assert_eq!(fence_all(&mut rt, output, rows * cols), expected);
        rt.shutdown().unwrap();
        // The 1 KiB copies between device memories read or write column 0 inside a 256 x 4
        // allocation (with peer copies straight between the devices' buffers; staged, gathering
        // the column out of one device's buffer and scattering it into the other's): 128 runs.
        let column_copies: Vec<u64> = traced_copies(&path)
            .iter()
            .filter(|c| c.bytes == 1024 && c.between_devices())
            .map(|c| c.tid)
            .collect();
        assert!(column_copies.len() >= 2, "{column_copies:?}");
        assert!(
            column_copies.iter().all(|&tid| tid != EXECUTOR_TID),
            "peer copies {peer_copies}: {column_copies:?}"
        );
    }
}
