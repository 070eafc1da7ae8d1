//! The direct-run switches of the graph benchmarks (`IG_RUN`, `SCHED_RUN`): one topology run a
//! given number of times without criterion, for instruction counts under callgrind.
#![allow(dead_code)]

use super::topologies::{self, Topology};

/// `"<count> <topology prefix> <iterations> [flag]"`: the count (devices or nodes), the
/// topology, how often to run it and an optional flag word.
pub struct DirectRun<C> {
    /// Devices or nodes, as the benchmark reads it.
    pub count: usize,
    /// The topology whose name starts with the given prefix.
    pub topology: Topology<C>,
    /// Runs.
    pub iterations: usize,
    /// The optional fourth word (`device`, `throttled`).
    pub flag: Option<String>,
}

impl<C: topologies::TopologyContext> DirectRun<C> {
    /// The run described by environment variable `var`, `None` when it is unset. `extra` are
    /// topologies beyond Celerity's six that the prefix may also name.
    pub fn from_env(var: &str, extra: &[Topology<C>]) -> Option<Self> {
        let spec = std::env::var(var).ok()?;
        let mut parts = spec.split_whitespace();
        let count = parts.next().and_then(|n| n.parse().ok()).expect("count");
        let prefix = parts.next().expect("topology");
        let iterations = parts
            .next()
            .and_then(|n| n.parse().ok())
            .expect("iterations");
        let topology = topologies::all::<C>()
            .into_iter()
            .chain(extra.iter().copied())
            .find(|(name, _)| name.starts_with(prefix))
            .expect("unknown topology");
        Some(DirectRun {
            count,
            topology,
            iterations,
            flag: parts.next().map(str::to_string),
        })
    }
}
