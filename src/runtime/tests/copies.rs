//! Where the executor runs copies: a small one whose predecessors completed on its own thread
//! (no hand-off to a lane and back), a large one or one queued behind its producer on a lane;
//! the results are the same.

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

#[test]
fn small_ready_copies_run_on_the_executor_thread_and_large_ones_on_lanes() {
    // 16 doubles: halves of 64 bytes; 8192: halves of 32 KiB, above the executor's limit.
    for peer_copies in [true, false] {
        let dir = scratch_dir("copies");
        let path = dir.join("trace.json");
        let mut rt = Runtime::start(Config {
            trace_file: Some(path.clone()),
            ..config(2, peer_copies, Lookahead::None)
        })
        .unwrap();
        for n in [16usize, 8192] {
            let expected: Vec<f64> = (0..n).rev().map(|i| i as f64 + 1.0).collect();
            assert_eq!(
                reverse_after_increment(&mut rt, n),
                expected,
                "{n} elements"
            );
        }
        rt.shutdown().unwrap();
        // (bytes, track, from host memory): M0 is user memory, M1 the runtime's host memory.
        let copies: Vec<(u64, u64, bool)> = events(&path)
            .iter()
            .filter(|e| e["cat"] == "copy")
            .map(|e| {
                let bytes = e["args"]["bytes"].as_str().map_or_else(
                    || e["args"]["bytes"].as_u64().unwrap(),
                    |b| b.parse().unwrap(),
                );
                let from = e["args"]["from"].as_str().unwrap();
                let from_host = from.starts_with("M0.") || from.starts_with("M1.");
                (bytes, e["tid"].as_u64().unwrap(), from_host)
            })
            .collect();
        let (small, large): (Vec<&(u64, u64, bool)>, Vec<_>) =
            copies.iter().partition(|(bytes, ..)| *bytes <= 16 * 1024);
        // A copy out of host memory waits for the initial data or for copies on other lanes, so
        // it is ready when assigned; a copy out of a device's memory is queued on that device's
        // lane behind the kernel that produced it, and stays there.
        let small_from_host: Vec<_> = small.iter().filter(|c| c.2).collect();
        assert!(small_from_host.len() >= 5, "{copies:?}");
        assert!(
            small_from_host.iter().all(|c| c.1 == EXECUTOR_TID),
            "peer copies {peer_copies}: {copies:?}"
        );
        assert!(
            !large.is_empty() && large.iter().all(|c| c.1 != EXECUTOR_TID),
            "peer copies {peer_copies}: {copies:?}"
        );
    }
}
