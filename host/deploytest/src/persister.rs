//! A persister that keeps the journal in memory and checks every intermediate snapshot.

use std::sync::{Arc, Mutex};

use plinth_engine::journal::{JournalEntry, PersistError, Persister, SnapshotError, replay};
use plinth_engine::snapshot::Snapshot;

/// Persists in memory, replaying the whole journal after every sync to check that every
/// intermediate snapshot is valid.
pub struct CheckingPersister {
    pub(crate) base: Snapshot,
    /// The journal, shared with the harness.
    pub(crate) entries: Arc<Mutex<Vec<JournalEntry>>>,
    pub checks: Arc<Mutex<usize>>,
    pub saved: Arc<Mutex<Option<Snapshot>>>,
}

impl Persister for CheckingPersister {
    fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError> {
        self.entries.lock().unwrap().push(entry.clone());
        Ok(())
    }
    fn sync(&mut self) -> Result<(), PersistError> {
        let invalid = |e: SnapshotError| {
            PersistError::invalid("check the intermediate snapshot of", "<memory>", e)
        };
        let entries = self.entries.lock().unwrap().clone();
        let snap = replay(self.base.clone(), entries).map_err(invalid)?;
        snap.verify_integrity().map_err(|e| invalid(e.into()))?;
        *self.checks.lock().unwrap() += 1;
        Ok(())
    }
    fn compact(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
        *self.saved.lock().unwrap() = Some(snapshot.clone());
        Ok(())
    }
}
