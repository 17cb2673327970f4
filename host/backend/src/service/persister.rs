//! The persister of an update on the service: the snapshot manager's entries are sealed, kept
//! until the engine syncs, then sent in batches of at most [`MAX_BATCH`] numbered from 1 without
//! gaps, so that a batch retried after a lost answer is stored once. The service rebuilds the
//! state from them; compacting only makes sure every entry was sent.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use plinth_engine::journal::{JournalEntry, PersistError, Persister};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::SIG_KEY;
use serde_json::Value;

use super::transport::{ServiceError, Transport};
use crate::journal_short::Begun;
use crate::secrets::{Crypter, SecretsError, seal_tree};

/// The most entries one batch carries (the service refuses more).
pub const MAX_BATCH: usize = 100;

/// Sends the journal of update `update` holding lease `lease`.
pub struct ServicePersister {
    transport: Transport,
    update: String,
    lease: String,
    crypter: Arc<dyn Crypter>,
    /// Entries appended since the last sync, as JSON, their secrets sealed at the sync: all of
    /// them in one batch, which is one request when the service seals them.
    unsent: Vec<Vec<u8>>,
    /// The number of the last batch the service acknowledged. The service numbers an update's
    /// batches across its phases, so every phase's persister shares this count.
    sent: Arc<AtomicU64>,
    /// The entries (a JSON array) of a batch whose answer never came: the service may have
    /// stored it. It is sent again, under its number, before anything else, so that its number
    /// never carries other entries.
    in_doubt: Option<Vec<u8>>,
    /// Names the update in errors.
    origin: PathBuf,
    /// The operations begun, for sending a create's end as `created-as-begun`: set when the
    /// service takes such entries.
    begun: Option<Begun>,
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
            begun: None,
        }
    }

    /// Sends the end of a create that left the resource as begun as a short
    /// `created-as-begun` entry, which the service completes from the `begin` entry: about a
    /// third fewer bytes for an update that creates.
    pub fn shortening_creates(mut self) -> ServicePersister {
        self.begun = Some(Begun::default());
        self
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

    /// Sends the next batch, `entries` being its JSON array; one whose outcome is unknown is
    /// kept to be sent again.
    fn send(&mut self, entries: Vec<u8>) -> Result<(), PersistError> {
        let seq = self.sent.load(Ordering::Acquire) + 1;
        let mut body = format!("{{\"seq\":{seq},\"entries\":").into_bytes();
        body.extend_from_slice(&entries);
        body.push(b'}');
        let path = format!("updates/{}/journal", self.update);
        match (self.transport).send("POST", &path, Some(&self.lease), Some(body)) {
            Ok(_) => {
                self.sent.store(seq, Ordering::Release);
                Ok(())
            }
            Err(e) => {
                if matches!(e, ServiceError::Unavailable { .. }) {
                    self.in_doubt = Some(entries);
                }
                Err(self.failure("send the journal of", e))
            }
        }
    }
}

/// Seals the secrets of `entries` (each one's JSON) in place, all in one batch. Entries
/// without a secret, most of them, are left as they are, never parsed.
fn seal_entries(entries: &mut [Vec<u8>], crypter: &dyn Crypter) -> Result<(), SecretsError> {
    let signature = format!("\"{SIG_KEY}\"");
    let finder = memchr::memmem::Finder::new(signature.as_bytes());
    let secret: Vec<usize> = (0..entries.len())
        .filter(|&i| finder.find(&entries[i]).is_some())
        .collect();
    if secret.is_empty() {
        return Ok(());
    }
    let malformed = |e: serde_json::Error| SecretsError::MalformedState(e.to_string());
    let trees = (secret.iter())
        .map(|&i| serde_json::from_slice(&entries[i]))
        .collect::<Result<Vec<Value>, _>>()
        .map_err(malformed)?;
    let mut trees = Value::Array(trees);
    seal_tree(&mut trees, crypter)?;
    let Value::Array(trees) = trees else {
        unreachable!("sealing keeps an array an array")
    };
    for (i, tree) in secret.into_iter().zip(trees) {
        entries[i] = serde_json::to_vec(&tree).map_err(malformed)?;
    }
    Ok(())
}

/// `entries` as one JSON array.
fn json_array(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut array = Vec::with_capacity(2 + entries.iter().map(|e| e.len() + 1).sum::<usize>());
    array.push(b'[');
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            array.push(b',');
        }
        array.extend_from_slice(entry);
    }
    array.push(b']');
    array
}

impl Persister for ServicePersister {
    fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError> {
        let short = (self.begun.as_ref()).and_then(|begun| begun.shorten(entry));
        let json = match short {
            Some(short) => serde_json::to_vec(&short),
            None => serde_json::to_vec(entry),
        }
        .map_err(|e| PersistError::invalid("encode a journal entry of", &self.origin, e))?;
        self.unsent.push(json);
        if let Some(begun) = &mut self.begun {
            begun.follow(entry);
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), PersistError> {
        let mut unsent = std::mem::take(&mut self.unsent);
        seal_entries(&mut unsent, self.crypter.as_ref())
            .map_err(|e| PersistError::invalid("seal the journal entries of", &self.origin, e))?;
        let batches = self.in_doubt.take().into_iter();
        for batch in batches.chain(unsent.chunks(MAX_BATCH).map(json_array)) {
            self.send(batch)?;
        }
        Ok(())
    }

    fn compact(&mut self, _: &Snapshot) -> Result<(), PersistError> {
        self.sync()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;

    /// Seals `X` as `sealed:X` and remembers each batch it was given.
    #[derive(Default)]
    struct Recording(Mutex<Vec<Vec<String>>>);

    impl Crypter for Recording {
        fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
            Ok(format!("sealed:{plaintext}"))
        }
        fn open(&self, _: &str) -> Result<String, SecretsError> {
            unreachable!("the persister never opens")
        }
        fn seal_all(&self, plaintexts: &[String]) -> Result<Vec<String>, SecretsError> {
            self.0.lock().unwrap().push(plaintexts.to_vec());
            plaintexts.iter().map(|text| self.seal(text)).collect()
        }
    }

    fn secret(value: &str) -> Value {
        json!({ SIG_KEY: "secret", "value": value })
    }

    #[test]
    fn only_entries_with_secrets_are_sealed_all_in_one_batch() {
        let plain = br#"{"entry":"begin","note":"\"plinth:sig\" in a string is no secret"}"#;
        let mut entries = vec![
            plain.to_vec(),
            serde_json::to_vec(&json!({ "a": secret("one") })).unwrap(),
            br#"{"entry":"end"}"#.to_vec(),
            serde_json::to_vec(&json!({ "b": [secret("two"), secret("three")] })).unwrap(),
        ];
        let crypter = Recording::default();
        seal_entries(&mut entries, &crypter).unwrap();
        assert_eq!(
            crypter.0.into_inner().unwrap(),
            [[r#""one""#, r#""two""#, r#""three""#]],
            "one batch, in the entries' order"
        );
        assert_eq!(
            entries[0], plain,
            "an entry without a secret is kept as it was"
        );
        assert_eq!(entries[2], br#"{"entry":"end"}"#);
        let sealed = |v: &str| json!({ SIG_KEY: "secret", "ciphertext": format!("sealed:{v}") });
        let array: Value = serde_json::from_slice(&json_array(&entries)).unwrap();
        assert_eq!(array[1], json!({ "a": sealed(r#""one""#) }));
        assert_eq!(
            array[3],
            json!({ "b": [sealed(r#""two""#), sealed(r#""three""#)] })
        );
    }

    #[test]
    fn a_batch_without_secrets_never_reaches_the_crypter() {
        let mut entries = vec![br#"{"entry":"begin"}"#.to_vec()];
        let crypter = Recording::default();
        seal_entries(&mut entries, &crypter).unwrap();
        assert!(crypter.0.into_inner().unwrap().is_empty());
        assert_eq!(json_array(&entries), br#"[{"entry":"begin"}]"#);
        assert_eq!(json_array(&[]), b"[]");
    }
}
