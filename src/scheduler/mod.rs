//! The scheduler thread: runs command and instruction graph generation with lookahead.
