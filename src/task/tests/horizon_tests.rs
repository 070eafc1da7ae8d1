//! Horizons, epochs and pruning.
use super::*;
