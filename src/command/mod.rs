//! Command graph generation (CDAG): splitting tasks over nodes, push / await-push, reductions.
