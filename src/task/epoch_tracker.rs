//! [`EpochTracker`]: which task graph prefix may be freed, from the horizons and epochs the
//! executor reports reached.
//!
//! A horizon only becomes the epoch for new tasks when the *next* horizon is created (the
//! one-horizon lag), so reaching horizon `Hn` makes the previously reached horizon `Hn-1` the
//! effective epoch: everything before it is finished and no longer referenced by the tracking
//! state. Reaching an epoch makes that epoch effective at once, and a horizon reached before it
//! will never become an epoch.

use crate::types::TaskId;

/// Tracks reached horizons and epochs (Celerity's runtime does the same with
/// `latest_horizon_reached` and `latest_epoch_reached`).
#[derive(Default, Debug, Clone, Copy)]
pub struct EpochTracker {
    latest_horizon_reached: Option<TaskId>,
    latest_epoch_reached: TaskId,
}

impl EpochTracker {
    /// A tracker with only the init epoch reached.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that horizon `tid` was reached; returns the new effective epoch, if it changed.
    pub fn horizon_reached(&mut self, tid: TaskId) -> Option<TaskId> {
        debug_assert!(self.latest_horizon_reached.is_none_or(|h| h < tid));
        debug_assert!(self.latest_epoch_reached < tid);
        let applied = self.latest_horizon_reached.replace(tid);
        if let Some(epoch) = applied {
            self.latest_epoch_reached = epoch;
        }
        applied
    }

    /// Records that epoch `tid` was reached; it is the new effective epoch.
    pub fn epoch_reached(&mut self, tid: TaskId) -> TaskId {
        debug_assert!(self.latest_horizon_reached.is_none_or(|h| h < tid));
        self.latest_epoch_reached = tid;
        self.latest_horizon_reached = None;
        tid
    }

    /// The newest epoch or applied horizon known reached: the bound for
    /// [`TaskManager::prune_before_epoch`](super::TaskManager::prune_before_epoch).
    pub fn latest_epoch_reached(&self) -> TaskId {
        self.latest_epoch_reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_horizon_lag() {
        let mut t = EpochTracker::new();
        assert_eq!(t.horizon_reached(TaskId(5)), None);
        assert_eq!(t.latest_epoch_reached(), TaskId(0));
        assert_eq!(t.horizon_reached(TaskId(9)), Some(TaskId(5)));
        assert_eq!(t.latest_epoch_reached(), TaskId(5));
        assert_eq!(t.epoch_reached(TaskId(12)), TaskId(12));
        // the horizon before the epoch never becomes an epoch
        assert_eq!(t.horizon_reached(TaskId(15)), None);
        assert_eq!(t.latest_epoch_reached(), TaskId(12));
    }
}
