//! Bad input and error policies.
use super::*;
