//! A stack as a backend hands it out: its state as loaded, its line in `plinth stack ls`.

use plinth_engine::names::StackName;
use plinth_engine::snapshot::Snapshot;

use crate::checkpoint::PluginUse;
use crate::lock::LockHolder;

/// A stack's state as loaded.
#[derive(Debug, Clone)]
pub struct LoadedStack {
    pub snapshot: Snapshot,
    /// A journal from an interrupted update was replayed on top of the checkpoint.
    pub recovered: bool,
    /// The plugins the checkpoint records.
    pub plugins: Vec<PluginUse>,
    /// The end of the replayed journal that could not be read and was left out: operations
    /// recorded there are missing from `snapshot`.
    pub torn: Option<TornEnd>,
    /// The replayed journal is that of an update still running (its writer holds the stack's
    /// lock), not of an interrupted one: `snapshot` is its state as recorded so far. Only a
    /// load without the lock (a preview, a read) can find one.
    pub running: Option<Box<LockHolder>>,
}

/// One line of `plinth stack ls`.
#[derive(Debug)]
pub struct StackSummary {
    pub name: StackName,
    /// The stack's resources, provider resources not counted (as the run summaries count).
    pub resources: usize,
    pub locked: bool,
    pub tags: crate::tags::StackTags,
}

/// The end of a journal that could not be read and was left out: a crash cut its last write
/// short (or something damaged it). The operations it recorded are not in the state read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornEnd {
    /// The frame (`frame 3`) or, in a journal of plain lines, the line (`line 7`).
    pub place: String,
    /// Where it starts in the file, in bytes.
    pub offset: u64,
    /// Its length, to the end of the file.
    pub bytes: u64,
}

impl std::fmt::Display for TornEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (the last {} bytes, from byte {})",
            self.place, self.bytes, self.offset
        )
    }
}
