//! Per-buffer distributed state of one node (C++ Celerity: `command_graph_generator.h`): who last
//! wrote each element locally, whether that version is still the newest one anywhere, whether we
//! produced it or only received it, and which nodes already hold a copy of what we produced.

use std::fmt;

use super::replication::Replication;
use crate::grid::{GridBox, Range, Region};
use crate::task::ReductionInfo;
use crate::types::CommandId;

/// The local last writer of a buffer element, packed into one word: the command plus two bits.
///
/// * *fresh*: this node holds the newest version (cleared once another node writes it; the
///   command is kept so anti-dependencies still find the old readers);
/// * *replicated*: this node is not the version's original producer and never forwards it: it
///   received it (await-push), or it is the buffer's initial contents, which every node holds.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct WriteState(u64);

impl WriteState {
    const STALE: u64 = 0b01;
    const REPLICATED: u64 = 0b10;

    /// Fresh data written by `cmd` (replicated if `cmd` only received it).
    #[inline]
    pub fn new(cmd: CommandId, replicated: bool) -> Self {
        WriteState(cmd.0 << 2 | if replicated { Self::REPLICATED } else { 0 })
    }

    /// The writing command.
    #[inline]
    pub fn command(self) -> CommandId {
        CommandId(self.0 >> 2)
    }

    /// Whether this node holds the newest version.
    #[inline]
    pub fn is_fresh(self) -> bool {
        self.0 & Self::STALE == 0
    }

    /// Whether this node received the data rather than produced it.
    #[inline]
    pub fn is_replicated(self) -> bool {
        self.0 & Self::REPLICATED != 0
    }

    /// The same writer, marked stale.
    #[inline]
    #[must_use]
    pub fn stale(self) -> Self {
        WriteState(self.0 | Self::STALE)
    }

    /// The same flags with another command (used when an epoch or horizon replaces old writers).
    #[inline]
    #[must_use]
    pub fn with_command(self, cmd: CommandId) -> Self {
        WriteState(cmd.0 << 2 | (self.0 & 0b11))
    }
}

impl fmt::Debug for WriteState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.command())?;
        if !self.is_fresh() {
            f.write_str("(stale)")?;
        }
        if self.is_replicated() {
            f.write_str("(replicated)")?;
        }
        Ok(())
    }
}

/// The point every reduction writes (and reads, when it includes the previous value).
pub const SCALAR_BOX: GridBox = GridBox::UNIT;

/// What one node knows about one buffer.
pub(super) struct BufferState {
    pub range: Range,
    pub name: Option<String>,
    /// Local last writer of every element.
    pub last_writers: crate::grid::RegionMap<WriteState>,
    /// For data we produced: the nodes that already hold a copy (only read to find pushes: a
    /// single node leaves it as created).
    pub replicated: Replication,
    /// Written by some node (or host-initialised); only tracked for uninitialised-read checks.
    pub initialized: Region,
    /// A reduction whose partial results still sit on the nodes.
    pub pending_reduction: Option<ReductionInfo>,
    /// A box containing everything this node might have to push: every element it produced
    /// (fresh, not replicated) that some node may lack. Grows with local writes and never shrinks,
    /// so it is a conservative filter: remote reads outside it need no push. A single node, which
    /// never pushes, leaves it empty.
    pub pushable_bounds: GridBox,
    /// Some last writer may be stale (set when one is marked so, never cleared): while false,
    /// this node holds everything of the buffer fresh and nothing needs awaiting.
    pub may_hold_stale: bool,
}

impl BufferState {
    /// A buffer last written by `writer` everywhere, with the given replication (a new buffer's
    /// contents count as fresh and replicated, held everywhere, so that neither host-initialised
    /// nor uninitialised data is ever transferred).
    pub fn new(
        range: Range,
        writer: WriteState,
        replicated: Replication,
        initialized: Region,
    ) -> Self {
        BufferState {
            range,
            name: None,
            last_writers: crate::grid::RegionMap::new(range, writer),
            replicated,
            initialized,
            pending_reduction: None,
            pushable_bounds: GridBox::EMPTY,
            may_hold_stale: !writer.is_fresh(),
        }
    }
}
