//! The persister of an update on the service: the snapshot manager's entries are sealed, kept
//! until the engine syncs, then sent in batches of at most [`MAX_BATCH`] numbered from 1 without
//! gaps, so that a batch retried after a lost answer is stored once. The service rebuilds the
//! state from them; compacting only makes sure every entry was sent.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use plinth_engine::journal::{JournalEntry, PersistError, Persister};
use plinth_engine::snapshot::Snapshot;
use serde_json::{Value, json};

use super::transport::{ServiceError, Transport};
use crate::secrets::{Crypter, seal_tree};

/// The most entries one batch carries (the service refuses more).
pub const MAX_BATCH: usize = 100;

/// Sends the journal of update `update` holding lease `lease`.
pub struct ServicePersister {
    transport: Transport,
    update: String,
    lease: String,
    crypter: Arc<dyn Crypter>,
    /// Entries appended since the last sync, their secrets sealed at the sync: all of them in
    /// one batch, which is one request when the service seals them.
    unsent: Vec<Value>,
    /// The number of the last batch the service acknowledged. The service numbers an update's
    /// batches across its phases, so every phase's persister shares this count.
    sent: Arc<AtomicU64>,
    /// A batch whose answer never came: the service may have stored it. It is sent again,
    /// under its number, before anything else, so that its number never carries other entries.
    in_doubt: Option<Vec<Value>>,
    /// Names the update in errors.
    origin: PathBuf,
}

impl ServicePersister {
    pub fn new(
        transport: Transport,
        update: &str,
        lease: &str,
        crypter: Arc<dyn Crypter>,
    ) -> ServicePersister {
        ServicePersister {
            transport,
            update: update.to_owned(),
            lease: lease.to_owned(),
            crypter,
            unsent: Vec::new(),
            sent: Arc::new(AtomicU64::new(0)),
            in_doubt: None,
            origin: PathBuf::from(format!("update {update}")),
        }
    }

    /// Numbers batches after those counted by `sent`, and counts its own there: a later phase of
    /// the same update goes on from where this one stopped.
    pub fn continuing(mut self, sent: Arc<AtomicU64>) -> ServicePersister {
        self.sent = sent;
        self
    }

    fn failure(&self, action: &'static str, error: ServiceError) -> PersistError {
        match error {
            // Worth trying again later: the service may come back.
            ServiceError::Unavailable { .. } => PersistError::io(
                action,
                &self.origin,
                std::io::Error::new(std::io::ErrorKind::TimedOut, error.to_string()),
            ),
            // A lost lease, a refused batch: the update must stop, recording nothing more.
            other => PersistError::invalid(action, &self.origin, other),
        }
    }
}

impl ServicePersister {
    /// Sends the next batch; one whose outcome is unknown is kept to be sent again.
    fn send(&mut self, batch: Vec<Value>) -> Result<(), PersistError> {
        let seq = self.sent.load(Ordering::Acquire) + 1;
        let body = json!({ "seq": seq, "entries": batch });
        let path = format!("updates/{}/journal", self.update);
        match (self.transport).call("POST", &path, Some(&self.lease), Some(&body)) {
            Ok(_) => {
                self.sent.store(seq, Ordering::Release);
                Ok(())
            }
            Err(e) => {
                if matches!(e, ServiceError::Unavailable { .. }) {
                    self.in_doubt = Some(batch);
                }
                Err(self.failure("send the journal of", e))
            }
        }
    }
}

impl Persister for ServicePersister {
    fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError> {
        let tree = serde_json::to_value(entry)
            .map_err(|e| PersistError::invalid("encode a journal entry of", &self.origin, e))?;
        self.unsent.push(tree);
        Ok(())
    }

    fn sync(&mut self) -> Result<(), PersistError> {
        let mut unsent = Value::Array(std::mem::take(&mut self.unsent));
        seal_tree(&mut unsent, self.crypter.as_ref())
            .map_err(|e| PersistError::invalid("seal the journal entries of", &self.origin, e))?;
        let Value::Array(unsent) = unsent else {
            unreachable!("sealing keeps an array an array")
        };
        let batches = self.in_doubt.take().into_iter();
        for batch in batches.chain(unsent.chunks(MAX_BATCH).map(<[Value]>::to_vec)) {
            self.send(batch)?;
        }
        Ok(())
    }

    fn compact(&mut self, _: &Snapshot) -> Result<(), PersistError> {
        self.sync()
    }
}
