//! Ciphertexts kept for reuse: a secret whose plaintext has not changed since its checkpoint
//! was read (or last written) keeps its ciphertext, instead of being sealed again under a fresh
//! nonce each time a checkpoint is written. Ten thousand secrets otherwise cost ten thousand
//! encryptions per command, and a checkpoint whose every ciphertext changes though no secret did.
//!
//! A ciphertext is reused only at the place it was read from: the same resource (URN) and the
//! same property path, holding the same plaintext. Never by plaintext alone: equal plaintexts
//! in two places must keep getting different ciphertexts, or a state file would tell which
//! secrets are equal. Within one batch no ciphertext is handed out twice, whatever a state
//! file held. The memory belongs to one crypter (one key): a rotated key starts empty, so it
//! re-encrypts everything.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use std::fmt::Write as _;

use plinth_engine::value::{PropertyMap, Value};
use serde_json::value::RawValue;

use super::kept::{Kept, KeptTexts};
use super::{Crypter, SecretsError};

/// A secret at its place in a resource.
pub struct Slot<'a> {
    /// The URN of the resource holding it.
    pub urn: &'a str,
    /// Its property path in the resource ([`secret_paths`]); `None` where the place is not known
    /// for sure, which is always sealed afresh and not remembered.
    pub path: Option<String>,
}

/// The property path of each secret in a resource's `inputs` and `outputs`, in the order the
/// resource's JSON text holds them: inputs first, each map in key order, a secret nested in
/// another's value not on its own (it is sealed with it). A key's `.`, `[` and `\\` are escaped
/// with a `\\`, so that no two paths are spelled alike (`.a\.b` against `.a.b`).
pub fn secret_paths(inputs: &PropertyMap, outputs: &PropertyMap) -> Vec<String> {
    let mut paths = Vec::new();
    for (field, map) in [("inputs", inputs), ("outputs", outputs)] {
        for (key, value) in map {
            let mut path = String::with_capacity(field.len() + key.len() + 1);
            path.push_str(field);
            push_key(&mut path, key);
            walk(value, &mut path, &mut paths);
        }
    }
    paths
}

fn walk(value: &Value, path: &mut String, paths: &mut Vec<String>) {
    let len = path.len();
    match value {
        Value::Secret(_) => paths.push(path.clone()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let _ = write!(path, "[{i}]");
                walk(item, path, paths);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                push_key(path, key);
                walk(item, path, paths);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Appends `.key` to `path`, escaped (written by hand: this runs for every secret of a
/// checkpoint, read and written).
fn push_key(path: &mut String, key: &str) {
    path.push('.');
    if !key.contains(['.', '[', '\\']) {
        path.push_str(key);
        return;
    }
    for c in key.chars() {
        if matches!(c, '.' | '[' | '\\') {
            path.push('\\');
        }
        path.push(c);
    }
}

/// The ciphertexts of secrets read or written, by place, and the sealed texts of the
/// resources holding them.
#[derive(Default)]
pub struct SealedMemory {
    /// By resource URN: the resource's secrets, each by path.
    resources: Mutex<HashMap<String, Vec<Remembered>>>,
    texts: KeptTexts,
}

struct Remembered {
    path: String,
    plaintext: String,
    ciphertext: String,
}

impl SealedMemory {
    /// Seals `plaintexts`, each at its place in `slots`, with `crypter`: a plaintext its place
    /// held when last read or written keeps that ciphertext, the others are sealed afresh in one
    /// batch. Remembers the result.
    pub fn seal(
        &self,
        slots: Vec<Slot>,
        plaintexts: Vec<String>,
        crypter: &dyn Crypter,
    ) -> Result<Vec<String>, SecretsError> {
        debug_assert_eq!(slots.len(), plaintexts.len());
        let reused = self.recall(&slots, &plaintexts);
        let fresh: Vec<String> = (reused.iter().zip(&plaintexts))
            .filter(|(reused, _)| reused.is_none())
            .map(|(_, plaintext)| plaintext.clone())
            .collect();
        let asked = fresh.len();
        let fresh = match asked {
            0 => Vec::new(),
            _ => crypter.seal_all(&fresh)?,
        };
        if fresh.len() != asked {
            return Err(SecretsError::Miscounted {
                asked,
                got: fresh.len(),
            });
        }
        let mut fresh = fresh.into_iter();
        let sealed: Vec<String> = (reused.into_iter())
            .map(|reused| reused.or_else(|| fresh.next()).unwrap_or_default())
            .collect();
        self.remember(slots, plaintexts, sealed.clone());
        Ok(sealed)
    }

    /// The ciphertext each slot may keep, if any.
    fn recall(&self, slots: &[Slot], plaintexts: &[String]) -> Vec<Option<String>> {
        let resources = self.lock();
        let mut handed_out: HashSet<&str> = HashSet::new();
        // A resource's secrets are next to each other: its entry is looked up once.
        let mut last: Option<(&str, Option<&Vec<Remembered>>)> = None;
        (slots.iter().zip(plaintexts))
            .map(|(slot, plaintext)| {
                let path = slot.path.as_deref()?;
                let entry = match last {
                    Some((urn, entry)) if urn == slot.urn => entry,
                    _ => {
                        let entry = resources.get(slot.urn);
                        last = Some((slot.urn, entry));
                        entry
                    }
                };
                let kept = (entry?.iter()).find(|r| r.path == path && r.plaintext == *plaintext)?;
                handed_out
                    .insert(&kept.ciphertext)
                    .then(|| kept.ciphertext.clone())
            })
            .collect()
    }

    /// Remembers that each slot holds its plaintext under its ciphertext (read from a
    /// checkpoint, where the crypter opened it, or just sealed). Replaces what was remembered
    /// of the same resources.
    pub fn remember(&self, slots: Vec<Slot>, plaintexts: Vec<String>, ciphertexts: Vec<String>) {
        // A resource's secrets are next to each other: each run of them replaces its entry.
        let mut runs: Vec<(&str, Vec<Remembered>)> = Vec::new();
        for ((slot, plaintext), ciphertext) in slots.into_iter().zip(plaintexts).zip(ciphertexts) {
            if runs.last().is_none_or(|(urn, _)| *urn != slot.urn) {
                runs.push((slot.urn, Vec::new()));
            }
            if let (Some(path), Some((_, run))) = (slot.path, runs.last_mut()) {
                run.push(Remembered {
                    path,
                    plaintext,
                    ciphertext,
                });
            }
        }
        let mut resources = self.lock();
        for (urn, remembered) in runs {
            match resources.get_mut(urn) {
                Some(entry) => *entry = remembered,
                None => {
                    resources.insert(urn.to_owned(), remembered);
                }
            }
        }
    }

    /// Keeps each resource's sealed text (read or written) for
    /// [`unchanged_texts`](Self::unchanged_texts). Only for a resource whose URN is the only one
    /// of its checkpoint and whose ciphertexts are its own (none of them elsewhere in it).
    pub(crate) fn keep_texts(&self, texts: Vec<Kept>) {
        self.texts.keep(texts);
    }

    /// The sealed text kept of each resource asked for (its URN and its text in the clear), if
    /// its text in the clear is still the one kept: written as it is, it opens to that text
    /// with every ciphertext at its place.
    pub(crate) fn unchanged_texts(&self, asked: &[(&str, &str)]) -> Vec<Option<Arc<RawValue>>> {
        self.texts.unchanged(asked)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Remembered>>> {
        (self.resources.lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A crypter with a [`SealedMemory`]: what it opens and seals in checkpoints is remembered for
/// reuse, for as long as it lives (a command).
pub struct Remembering<C> {
    inner: C,
    memory: SealedMemory,
}

impl<C: Crypter> Remembering<C> {
    pub fn new(inner: C) -> Remembering<C> {
        Remembering {
            inner,
            memory: SealedMemory::default(),
        }
    }
}

impl<C: Crypter> Crypter for Remembering<C> {
    fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
        self.inner.seal(plaintext)
    }
    fn open(&self, sealed: &str) -> Result<String, SecretsError> {
        self.inner.open(sealed)
    }
    fn seal_all(&self, plaintexts: &[String]) -> Result<Vec<String>, SecretsError> {
        self.inner.seal_all(plaintexts)
    }
    fn open_all(&self, sealed: &[String]) -> Result<Vec<String>, SecretsError> {
        self.inner.open_all(sealed)
    }
    fn unlock(&self) -> Result<(), SecretsError> {
        self.inner.unlock()
    }
    fn memory(&self) -> Option<&SealedMemory> {
        Some(&self.memory)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use plinth_engine::names::{ProjectName, StackName};
    use plinth_engine::resource::ResourceState;
    use plinth_engine::snapshot::{PendingKind, PendingOperation, Snapshot};
    use plinth_engine::urn::Urn;

    use super::*;
    use crate::checkpoint::{Checkpoint, CheckpointView};
    use crate::secrets::PassphraseCrypter;

    fn secret(text: &str) -> Value {
        Value::Secret(Box::new(text.into()))
    }

    fn resource(name: &str, inputs: PropertyMap, outputs: PropertyMap) -> ResourceState {
        ResourceState {
            urn: Urn::new("dev", "p", None, "t:T", name),
            ty: "t:T".into(),
            custom: true,
            id: format!("{name}-1"),
            inputs,
            outputs,
            parent: None,
            dependencies: Vec::new(),
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        }
    }

    /// Three resources: two holding the same plaintext at the same path, and secrets nested in
    /// arrays and objects (a key with a dot in it among them).
    fn snapshot() -> Snapshot {
        let nested = Value::Object(
            [
                (
                    "list".to_owned(),
                    Value::Array(vec![secret("in-list"), Value::from(1), secret("also")]),
                ),
                ("a.b".to_owned(), secret("dotted")),
                (
                    "a".to_owned(),
                    Value::Object([("b".to_owned(), secret("nested-b"))].into()),
                ),
            ]
            .into(),
        );
        Snapshot {
            resources: vec![
                resource(
                    "r0",
                    [("pw".to_owned(), secret("same"))].into(),
                    [("deep".to_owned(), nested)].into(),
                ),
                resource("r1", [("pw".to_owned(), secret("same"))].into(), [].into()),
                resource(
                    "r2",
                    [("pw".to_owned(), secret("r2-secret"))].into(),
                    [("plain".to_owned(), Value::from("x"))].into(),
                ),
            ],
            ..Default::default()
        }
    }

    fn write(snapshot: &Snapshot, crypter: &dyn Crypter) -> Vec<u8> {
        let (project, stack) = (
            ProjectName::new("p").unwrap(),
            StackName::new("dev").unwrap(),
        );
        (CheckpointView::current(&project, &stack, &[], snapshot))
            .to_json(crypter)
            .unwrap()
    }

    fn read(json: &[u8], crypter: &dyn Crypter) -> Snapshot {
        (Checkpoint::parse(json, "dev", Path::new("dev.json"), crypter))
            .unwrap()
            .snapshot
    }

    /// The ciphertexts of a checkpoint, in file order.
    fn ciphertexts(json: &[u8]) -> Vec<String> {
        let text = std::str::from_utf8(json).unwrap();
        (text.match_indices("\"ciphertext\":\""))
            .map(|(at, head)| {
                let rest = &text[at + head.len()..];
                rest[..rest.find('"').unwrap()].to_owned()
            })
            .collect()
    }

    fn all_distinct(ciphertexts: &[String]) -> bool {
        ciphertexts.iter().collect::<HashSet<_>>().len() == ciphertexts.len()
    }

    #[test]
    fn an_unchanged_secret_keeps_its_ciphertext_and_a_changed_one_gets_a_new_one() {
        let (crypter, salt) = PassphraseCrypter::create("pw", "dev").unwrap();
        let crypter = Remembering::new(crypter);
        let snapshot = snapshot();
        let first = write(&snapshot, &crypter);
        let sealed = ciphertexts(&first);
        assert_eq!(sealed.len(), 7);
        assert!(all_distinct(&sealed), "{sealed:?}");

        // Read back by the next command and written again: every ciphertext is kept.
        let next = Remembering::new(PassphraseCrypter::unlock("pw", &salt, "dev").unwrap());
        let back = read(&first, &next);
        assert_eq!(back, snapshot);
        let again = write(&back, &next);
        assert_eq!(ciphertexts(&again), sealed);
        assert_eq!(read(&again, &next), snapshot);

        // r2's secret changes, r0's moves to another property: both are sealed afresh.
        let mut changed = snapshot.clone();
        changed.resources[2].inputs = [("pw".to_owned(), secret("r2-rotated"))].into();
        let moved = changed.resources[0].inputs.remove("pw").unwrap();
        changed.resources[0].inputs.insert("pw2".to_owned(), moved);
        let third = write(&changed, &next);
        let resealed = ciphertexts(&third);
        assert_eq!(read(&third, &next), changed);
        // In file order: r0's input (moved), its outputs (4), r1's input, r2's input.
        assert!(!sealed.contains(&resealed[0]), "moved");
        assert_eq!(
            resealed[1..6],
            sealed[1..6],
            "r0's outputs and r1 are unchanged"
        );
        assert!(!sealed.contains(&resealed[6]), "changed");
    }

    #[test]
    fn equal_plaintexts_in_two_resources_never_share_a_ciphertext() {
        let crypter = Remembering::new(PassphraseCrypter::create("pw", "dev").unwrap().0);
        let first = write(&snapshot(), &crypter);
        let sealed = ciphertexts(&first);
        // r0's and r1's `pw`, both "same".
        let (r0, r1) = (&sealed[0], &sealed[5]);
        assert_ne!(r0, r1);

        // A state file that gives both the same ciphertext (valid: it opens to "same" for
        // each) is read, and written with both sealed afresh, and r0's other secrets kept.
        let copied = String::from_utf8(first.clone()).unwrap().replace(r1, r0);
        let back = read(copied.as_bytes(), &crypter);
        assert_eq!(back, snapshot());
        let written = ciphertexts(&write(&back, &crypter));
        assert!(all_distinct(&written), "{written:?}");
        assert!(!written.contains(r0), "{written:?}");
        assert_eq!(written[1..5], sealed[1..5]);
    }

    #[test]
    fn a_resource_written_twice_in_one_checkpoint_never_shares_a_ciphertext() {
        let crypter = Remembering::new(PassphraseCrypter::create("pw", "dev").unwrap().0);
        let mut snapshot = snapshot();
        // An update under way when the command stopped: the pending copy is r2 as it is.
        snapshot.pending_operations.push(PendingOperation {
            kind: PendingKind::Updating,
            resource: snapshot.resources[2].clone(),
        });
        let first = write(&snapshot, &crypter);
        let sealed = ciphertexts(&first);
        assert_eq!(sealed.len(), 8);
        assert!(all_distinct(&sealed), "{sealed:?}");
        for _ in 0..2 {
            let back = read(&first, &crypter);
            assert_eq!(back, snapshot);
            let again = ciphertexts(&write(&back, &crypter));
            assert!(all_distinct(&again), "{again:?}");
            assert_eq!(
                again[..6],
                sealed[..6],
                "the resources of one URN each are kept"
            );
        }
    }

    #[test]
    fn a_resource_changed_beside_its_unchanged_secret_is_written_as_it_is_now() {
        let crypter = Remembering::new(PassphraseCrypter::create("pw", "dev").unwrap().0);
        let first = write(&snapshot(), &crypter);
        let back = read(&first, &crypter);
        // Only r2's plain output changes: its text is not the one read, its secret is.
        let mut changed = back.clone();
        changed.resources[2].outputs = [("plain".to_owned(), Value::from("y"))].into();
        let written = write(&changed, &crypter);
        assert_eq!(read(&written, &crypter), changed);
        assert_eq!(ciphertexts(&written), ciphertexts(&first));
        // And back as it was, in the same command: written as it is again, not as first kept.
        let restored = write(&back, &crypter);
        assert_eq!(read(&restored, &crypter), back);
        assert_eq!(ciphertexts(&restored), ciphertexts(&first));
    }

    #[test]
    fn a_rotated_key_re_encrypts_every_secret() {
        let old = Remembering::new(PassphraseCrypter::create("old", "dev").unwrap().0);
        let first = write(&snapshot(), &old);
        let back = read(&first, &old);
        let new = Remembering::new(PassphraseCrypter::create("new", "dev").unwrap().0);
        let rotated = write(&back, &new);
        let (before, after) = (ciphertexts(&first), ciphertexts(&rotated));
        assert_eq!(after.len(), before.len());
        assert!(after.iter().all(|c| !before.contains(c)), "{after:?}");
        assert_eq!(read(&rotated, &new), snapshot());
        let refused = Checkpoint::parse(&rotated, "dev", Path::new("dev.json"), &old);
        assert!(refused.is_err(), "sealed under the new key only");
    }

    #[test]
    fn a_crypter_without_memory_seals_afresh_each_time() {
        let crypter = PassphraseCrypter::create("pw", "dev").unwrap().0;
        let first = write(&snapshot(), &crypter);
        let again = write(&read(&first, &crypter), &crypter);
        let (before, after) = (ciphertexts(&first), ciphertexts(&again));
        assert!(after.iter().all(|c| !before.contains(c)));
    }

    #[test]
    fn paths_name_each_secret_unambiguously_in_document_order() {
        let snapshot = snapshot();
        let r0 = &snapshot.resources[0];
        assert_eq!(
            secret_paths(&r0.inputs, &r0.outputs),
            [
                r"inputs.pw",
                r"outputs.deep.a.b",
                r"outputs.deep.a\.b",
                r"outputs.deep.list[0]",
                r"outputs.deep.list[2]",
            ]
        );
    }
}
