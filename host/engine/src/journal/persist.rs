//! Where a journal goes: the [`Persister`] a backend implements, and how it fails.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::entry::JournalEntry;
use crate::snapshot::Snapshot;

/// Durable storage for one operation's journal and the checkpoint it ends in.
///
/// The snapshot manager keeps its state in memory in step with what the persister holds: it
/// applies an entry only once `append` took it, and takes back every entry since the last
/// successful sync when a sync fails (whether `sync` or one started by `start_sync`). So each
/// method either does all it says or leaves the storage as it was.
pub trait Persister: Send + 'static {
    /// Appends an entry; it need not be durable until `sync`. On failure, nothing of the entry
    /// is kept.
    fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError>;
    /// Makes every appended entry durable. On failure, the journal is left as the last
    /// successful sync left it, and the entries appended since are dropped.
    fn sync(&mut self) -> Result<(), PersistError>;
    /// Writes `snapshot` as the new checkpoint and retires the journal.
    fn compact(&mut self, snapshot: &Snapshot) -> Result<(), PersistError>;
    /// [`compact`](Self::compact) at the end of an operation that changed nothing: `snapshot`
    /// is the state it began from, exactly. A persister whose checkpoint already holds it in
    /// the form it would write may leave it as it is and only retire the journal; by default
    /// it is written as any other.
    fn compact_unchanged(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
        self.compact(snapshot)
    }
    /// The least time from the start of one `sync` to the start of the next that the writer
    /// keeps, letting more starts of provider calls share a sync, for a persister whose every
    /// sync costs more than its entries (a file rewrites its last page). None by default.
    fn min_sync_interval(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Starts making every appended entry durable, for a persister whose syncs wait on
    /// something slow (a network round trip) that the writer need not wait on. It returns the
    /// sync's outcome if it is known at once, which a persister may do only when none of its
    /// syncs is in flight: by default it syncs, and always does. Otherwise the sync is in flight
    /// until [`settled`](Self::settled) reports it, and `waker` is woken whenever there may be an
    /// outcome to report.
    fn start_sync(&mut self, waker: &SyncWaker) -> Option<Result<(), PersistError>> {
        let _ = waker;
        Some(self.sync())
    }

    /// The outcome of the oldest sync in flight, once it has one. Syncs settle in the order they
    /// started. A failure is reported once for the failed sync and every later one in flight
    /// (none is in flight after it), and leaves the journal as `sync`'s failure does: as the
    /// last successful sync left it, every entry appended since dropped.
    fn settled(&mut self) -> Option<Result<(), PersistError>> {
        None
    }
}

/// Tells the snapshot manager's writer that a sync in flight may have settled; see
/// [`Persister::start_sync`]. Clones wake the same writer, from any thread.
#[derive(Clone)]
pub struct SyncWaker(Arc<dyn Fn() + Send + Sync>);

impl SyncWaker {
    pub fn new(wake: impl Fn() + Send + Sync + 'static) -> SyncWaker {
        SyncWaker(Arc::new(wake))
    }

    pub fn wake(&self) {
        (self.0)()
    }
}

/// Why a persister could not store a journal entry or a checkpoint: what it was doing, to which
/// file, and the cause. It says whether trying again may succeed.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {}: {cause}", path.display())]
pub struct PersistError {
    /// What was being done, as a verb phrase: "append to the journal", "write the checkpoint".
    pub action: &'static str,
    /// The file it was done to.
    pub path: PathBuf,
    pub cause: PersistCause,
}

/// What went wrong underneath a [`PersistError`].
#[derive(Debug, thiserror::Error)]
pub enum PersistCause {
    /// Reading or writing the storage failed.
    #[error("{0}")]
    Io(std::io::Error),
    /// What was to be stored cannot be (a secret that cannot be sealed, say): trying again
    /// fails the same way.
    #[error("{0}")]
    Invalid(Box<dyn std::error::Error + Send + Sync>),
}

impl PersistError {
    /// A failure of the storage itself.
    pub fn io(action: &'static str, path: impl AsRef<Path>, source: std::io::Error) -> Self {
        PersistError {
            action,
            path: path.as_ref().to_owned(),
            cause: PersistCause::Io(source),
        }
    }

    /// Something that cannot be stored as it is.
    pub fn invalid(
        action: &'static str,
        path: impl AsRef<Path>,
        cause: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        PersistError {
            action,
            path: path.as_ref().to_owned(),
            cause: PersistCause::Invalid(cause.into()),
        }
    }

    /// Whether the same request may succeed if made again (an interrupted call, a timeout, a
    /// dropped connection), as opposed to a failure that will recur until someone acts (a full
    /// disk, a missing permission, a value that cannot be stored).
    pub fn is_transient(&self) -> bool {
        match &self.cause {
            PersistCause::Io(e) => matches!(
                e.kind(),
                ErrorKind::Interrupted
                    | ErrorKind::WouldBlock
                    | ErrorKind::TimedOut
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::ConnectionRefused
                    | ErrorKind::NotConnected
                    | ErrorKind::BrokenPipe
                    | ErrorKind::ResourceBusy
            ),
            PersistCause::Invalid(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_failed_where_and_whether_to_retry() {
        let full = PersistError::io(
            "append to the journal",
            "/state/dev.journal",
            std::io::Error::from(ErrorKind::StorageFull),
        );
        assert!(!full.is_transient());
        assert_eq!(
            full.to_string(),
            format!(
                "cannot append to the journal /state/dev.journal: {}",
                std::io::Error::from(ErrorKind::StorageFull)
            )
        );
        assert!(matches!(&full.cause, PersistCause::Io(e) if e.kind() == ErrorKind::StorageFull));

        let hiccup = PersistError::io(
            "sync the journal",
            "/state/dev.journal",
            std::io::Error::from(ErrorKind::TimedOut),
        );
        assert!(hiccup.is_transient());

        let unsealable = PersistError::invalid("append to the journal", "/j", "no passphrase");
        assert!(!unsealable.is_transient());
        assert_eq!(
            unsealable.to_string(),
            "cannot append to the journal /j: no passphrase"
        );
    }
}
