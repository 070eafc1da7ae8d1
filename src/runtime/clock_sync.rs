//! Clock alignment of the merged multi-node trace. Each node's trace counts from its own start;
//! node 0 maps every node's timestamps onto its own timeline with offsets measured at init and
//! at shutdown.
//!
//! Why not "the moment all nodes left a barrier": the nodes leave a barrier at different times
//! (the last to arrive leaves first, the others when they are woken: microseconds on an idle
//! machine, milliseconds on a loaded one), and nothing bounds that skew. Here each reading is
//! bracketed instead: node 0 reads its clock (`before`), all nodes pass a barrier, every node
//! reads its clock, the readings are gathered to node 0, which reads its clock again (`after`).
//! Node k read its clock after node 0 entered the barrier and before node 0 received the
//! reading, so node k's reading happened within [before, after] on node 0's clock: the offset
//! is known to ± (after - before) / 2. Of several rounds the tightest is kept.

use std::time::Instant;

use crate::comm::Communicator;
use crate::debug::trace::ClockMap;
use crate::error::Result;
use crate::types::NodeId;

/// Rounds per measurement; the one with the narrowest bracket counts.
const ROUNDS: usize = 8;

/// Node k's clock against node 0's at one moment: node k's reading `local_us` happened at
/// `local_us - offset_us` on node 0's clock, within ± `uncertainty_us`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ClockSample {
    pub local_us: f64,
    pub offset_us: f64,
    pub uncertainty_us: f64,
}

/// Collective: every node's clock (microseconds since its `epoch`) against node 0's. Returns one
/// sample per node on node 0, `None` elsewhere.
pub(super) fn measure(
    comm: &mut dyn Communicator,
    epoch: Instant,
) -> Result<Option<Vec<ClockSample>>> {
    let now = || epoch.elapsed().as_secs_f64() * 1e6;
    let mut best: Option<Vec<ClockSample>> = None;
    for _ in 0..ROUNDS {
        let before = now();
        comm.collective_barrier()?;
        let reading = now();
        let gathered = comm.collective_gather_bytes(NodeId(0), &reading.to_le_bytes())?;
        let after = now();
        let Some(parts) = gathered else { continue };
        let middle = (before + after) / 2.0;
        let samples = parts.iter().enumerate().map(|(node, part)| {
            let local_us = <[u8; 8]>::try_from(part.as_slice()).map_or(middle, f64::from_le_bytes);
            if node == 0 {
                // Node 0's own reading is its timeline.
                ClockSample {
                    local_us,
                    offset_us: 0.0,
                    uncertainty_us: 0.0,
                }
            } else {
                ClockSample {
                    local_us,
                    offset_us: local_us - middle,
                    uncertainty_us: (after - before) / 2.0,
                }
            }
        });
        match &mut best {
            None => best = Some(samples.collect()),
            Some(best) => {
                for (kept, sample) in best.iter_mut().zip(samples) {
                    if sample.uncertainty_us < kept.uncertainty_us {
                        *kept = sample;
                    }
                }
            }
        }
    }
    Ok(best)
}

/// The map of one node's timestamps onto node 0's from the samples taken at init and at
/// shutdown: the offset is interpolated linearly between them (a clock that runs at a slightly
/// different rate), and the uncertainty is the larger of the two.
pub(super) fn clock_map(at_init: ClockSample, at_end: ClockSample) -> ClockMap {
    let span = at_end.local_us - at_init.local_us;
    let drift = if span > 0.0 {
        (at_end.offset_us - at_init.offset_us) / span
    } else {
        0.0
    };
    // t0 = t - (offset_init + drift * (t - local_init))
    ClockMap {
        scale: 1.0 - drift,
        shift_us: drift * at_init.local_us - at_init.offset_us,
        uncertainty_us: at_init.uncertainty_us.max(at_end.uncertainty_us),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::in_process::InProcessCommunicator;

    #[test]
    fn a_constant_offset_maps_back_exactly_and_drift_is_interpolated() {
        let sample = |local_us, offset_us| ClockSample {
            local_us,
            offset_us,
            uncertainty_us: 1.0,
        };
        let constant = clock_map(sample(100.0, 40.0), sample(10_100.0, 40.0));
        assert_eq!(constant.apply(5_000.0), 4_960.0);
        // The offset grows from 40 to 50 us over 10 ms of node k's clock.
        let drifting = clock_map(sample(100.0, 40.0), sample(10_100.0, 50.0));
        assert!((drifting.apply(100.0) - 60.0).abs() < 1e-9);
        assert!((drifting.apply(5_100.0) - 5_055.0).abs() < 1e-9);
        assert!((drifting.apply(10_100.0) - 10_050.0).abs() < 1e-9);
    }

    #[test]
    fn in_process_nodes_that_started_apart_are_measured_within_the_bracket() {
        // Node 1's epoch is 20 ms after node 0's: its clock reads 20 ms less at any moment.
        let epoch0 = Instant::now();
        let epoch1 = epoch0 + std::time::Duration::from_millis(20);
        std::thread::sleep(std::time::Duration::from_millis(25));
        let threads: Vec<_> = InProcessCommunicator::fabric(2)
            .into_iter()
            .map(|mut comm| {
                std::thread::spawn(move || {
                    let epoch = if comm.local_node() == NodeId(0) {
                        epoch0
                    } else {
                        epoch1
                    };
                    measure(&mut comm, epoch).unwrap()
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(results[1].is_none());
        let samples = results[0].clone().unwrap();
        assert_eq!(samples[0].offset_us, 0.0);
        let error = samples[1].offset_us - (-20_000.0);
        assert!(
            error.abs() <= samples[1].uncertainty_us + 1e-3,
            "offset {} us, true -20000 us, uncertainty {} us",
            samples[1].offset_us,
            samples[1].uncertainty_us
        );
    }
}
