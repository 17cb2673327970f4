//! Rebuilding a new version of a stack's state from its base checkpoint and an update's journal
//! entries, without any key: what a service that never sees plaintext does at completion. Every
//! secret stays sealed as it came; the journal is replayed by the engine's own replay, so the
//! service and the file backend cannot disagree about what a journal means.

use std::path::Path;

use plinth_engine::journal::{JournalEntry, replay};
use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::snapshot::Snapshot;

use serde_json::value::RawValue;

use crate::checkpoint::{Checkpoint, PluginUse, SCHEMA_VERSION};
use crate::error::BackendError;
use crate::journal_short::{Begun, Line, decode_line};
use crate::secrets::{Crypter, SecretsError};

/// "Opens" a ciphertext as a JSON string holding it, and "seals" that string back to it: the
/// sealed secrets of the base and of the entries pass through replay untouched.
struct KeepSealed;

impl Crypter for KeepSealed {
    fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
        serde_json::from_str(plaintext).map_err(|e| {
            SecretsError::MalformedState(format!("a sealed secret was not kept as a string: {e}"))
        })
    }
    fn open(&self, sealed: &str) -> Result<String, SecretsError> {
        Ok(serde_json::Value::String(sealed.to_owned()).to_string())
    }
}

/// The checkpoint `base` (none for a stack never updated) becomes once the journal `batches`
/// are applied, each a JSON array of entries as the client sent them (secrets sealed); secrets
/// stay sealed. It records `plugins` as the update's (the base's if `None`). `origin` names
/// where the base came from in errors.
pub fn rebuild_sealed<B: AsRef<[u8]>>(
    project: &ProjectName,
    stack: &StackName,
    base: Option<&[u8]>,
    batches: &[B],
    plugins: Option<Vec<PluginUse>>,
    origin: &Path,
) -> Result<Vec<u8>, BackendError> {
    let checkpoint = match base {
        Some(bytes) => Checkpoint::parse(bytes, stack, origin, &KeepSealed)?,
        None => Checkpoint::new(project, stack, Snapshot::default()),
    };
    let corrupt = |batch: usize, reason: String| BackendError::Corrupt {
        path: origin.to_owned(),
        reason: format!("journal batch {}: {reason}", batch + 1),
    };
    let mut lines = Vec::new();
    for (index, batch) in batches.iter().enumerate() {
        let entries: Vec<&RawValue> =
            serde_json::from_slice(batch.as_ref()).map_err(|e| corrupt(index, e.to_string()))?;
        for (place, entry) in entries.into_iter().enumerate() {
            let line = decode_line(entry.get().as_bytes(), &KeepSealed)
                .map_err(|e| corrupt(index, format!("entry {}: {e}", place + 1)))?;
            lines.push((index, line));
        }
    }
    // Short entries completed in order, from the `begin` entries of this and earlier batches.
    let mut begun = Begun::default();
    let mut decoded = Vec::with_capacity(lines.len());
    for (index, line) in lines {
        let entry = match line {
            Line::Entry(entry) => {
                begun.follow(&entry);
                entry
            }
            Line::Short(short) => begun.complete(short).ok_or_else(|| {
                corrupt(index, "the end of a create that no entry began".to_owned())
            })?,
        };
        decoded.push(entry);
    }
    let plugins = plugins.unwrap_or_else(|| checkpoint.plugins.clone());
    let snapshot = replay(checkpoint.snapshot, decoded).map_err(|e| BackendError::Corrupt {
        path: origin.to_owned(),
        reason: format!("the journal does not apply to its base: {e}"),
    })?;
    Checkpoint::new(project, stack, snapshot)
        .with_plugins(plugins)
        .to_json(&KeepSealed)
}

/// Whether `base`, a checkpoint as [`rebuild_sealed`] writes it, is already what rebuilding it
/// from no journal entries would write: of this plinth's schema, recording `plugins` (`None`:
/// whatever it records). A phase that journaled nothing then keeps its base as it is, rather
/// than parsing and writing again megabytes that do not change; its snapshot is skipped, not
/// parsed.
pub fn rebuilt_as_is(base: &[u8], plugins: Option<&[PluginUse]>) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        version: u32,
        #[serde(default)]
        plugins: Vec<PluginUse>,
    }
    serde_json::from_slice::<Head>(base).is_ok_and(|head| {
        head.version == SCHEMA_VERSION && plugins.is_none_or(|p| p == head.plugins.as_slice())
    })
}

/// Why `entry` is not a journal entry as a client sends it (secrets sealed), if it is not: for
/// refusing a malformed entry when it arrives rather than when the state is rebuilt.
pub fn check_entry(entry: &str) -> Result<(), String> {
    // Parsed straight from the text, secrets kept sealed; most entries hold none and are never
    // made a JSON tree. Whether a short entry's `begin` came before is known at the rebuild.
    decode_line(entry.as_bytes(), &KeepSealed)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The journal entry as the client sends it: JSON with every secret sealed by `crypter`.
pub fn seal_entry(
    entry: &JournalEntry,
    crypter: &dyn Crypter,
) -> Result<serde_json::Value, BackendError> {
    let mut tree = serde_json::to_value(entry).map_err(|e| BackendError::Encode(e.to_string()))?;
    crate::secrets::seal_tree(&mut tree, crypter)?;
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::PassphraseCrypter;
    use plinth_engine::resource::ResourceState;
    use plinth_engine::value::Value;

    #[test]
    fn a_journal_rebuilds_the_state_the_file_backend_would_and_secrets_stay_sealed() {
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        let project = ProjectName::new("p").unwrap();
        let stack = StackName::new("dev").unwrap();
        let resource = ResourceState {
            urn: plinth_engine::urn::Urn::new("dev", "p", None, "t:T", "a"),
            ty: "t:T".into(),
            custom: true,
            id: "a-1".into(),
            inputs: [(
                "token".to_owned(),
                Value::Secret(Box::new(Value::String("hunter2".into()))),
            )]
            .into(),
            outputs: Default::default(),
            parent: None,
            dependencies: vec![],
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        };
        let entries = [
            JournalEntry::Begin {
                seq: 1,
                kind: plinth_engine::snapshot::PendingKind::Creating,
                resource: resource.clone(),
                old: None,
            },
            JournalEntry::Created {
                seq: 1,
                resource: resource.clone(),
                replaces: None,
            },
        ];
        let sealed: Vec<_> = (entries.iter())
            .map(|e| seal_entry(e, &crypter).unwrap())
            .collect();
        assert!(!serde_json::to_string(&sealed).unwrap().contains("hunter2"));
        assert_eq!(
            (sealed.iter()).try_for_each(|entry| check_entry(&entry.to_string())),
            Ok(())
        );
        assert!(check_entry(r#"{"entry": "begin", "urn": "a"}"#).is_err());
        assert!(check_entry("{").is_err());
        let used = PluginUse {
            name: "t".into(),
            version: "1.0.0".into(),
            sha256: "00".into(),
        };
        let plugins = Some(vec![used.clone()]);
        let bytes = rebuild_sealed(
            &project,
            &stack,
            None,
            &[serde_json::to_vec(&sealed).unwrap()],
            plugins,
            Path::new("service"),
        )
        .unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("hunter2"));
        let opened = Checkpoint::parse(&bytes, &stack, Path::new("x"), &crypter).unwrap();
        assert_eq!(opened.snapshot.resources, vec![resource]);
        assert_eq!(opened.plugins, std::slice::from_ref(&used));
        // The version rebuilt is a base for the next update, again without a key.
        // ... and keeps the plugins the base records unless told others.
        let again = rebuild_sealed(
            &project,
            &stack,
            Some(&bytes),
            &[] as &[&[u8]],
            None,
            Path::new("service"),
        )
        .unwrap();
        let opened = Checkpoint::parse(&again, &stack, Path::new("x"), &crypter).unwrap();
        assert_eq!(opened.snapshot.resources.len(), 1);
        assert_eq!(opened.plugins, std::slice::from_ref(&used));
        // Which an empty journal leaves as it is, unless other plugins are to be recorded or
        // its schema is an older one.
        assert!(rebuilt_as_is(&bytes, None));
        assert!(rebuilt_as_is(&bytes, Some(std::slice::from_ref(&used))));
        assert!(!rebuilt_as_is(&bytes, Some(&[])));
        let mut older: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        older["version"] = (SCHEMA_VERSION - 1).into();
        assert!(!rebuilt_as_is(&serde_json::to_vec(&older).unwrap(), None));
        assert!(!rebuilt_as_is(b"{", None));
    }

    #[test]
    fn a_short_create_end_is_completed_from_its_begin_in_an_earlier_batch() {
        let project = ProjectName::new("p").unwrap();
        let stack = StackName::new("dev").unwrap();
        let resource = |name: &str| ResourceState {
            urn: plinth_engine::urn::Urn::new("dev", "p", None, "t:T", name),
            ty: "t:T".into(),
            custom: true,
            id: String::new(),
            inputs: [("size".to_owned(), Value::Number(3.0))].into(),
            outputs: Default::default(),
            parent: None,
            dependencies: vec![],
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        };
        let begin = |seq, name| {
            serde_json::to_value(JournalEntry::Begin {
                seq,
                kind: plinth_engine::snapshot::PendingKind::Creating,
                resource: resource(name),
                old: None,
            })
            .unwrap()
        };
        let short = |seq: u64| {
            serde_json::json!({ "entry": "created-as-begun", "seq": seq, "id": format!("id-{seq}"),
                "outputs": { "arn": format!("arn-{seq}") } })
        };
        for entry in [short(1), begin(1, "a")] {
            assert_eq!(check_entry(&entry.to_string()), Ok(()), "{entry}");
        }
        assert!(check_entry(r#"{"entry":"created-as-begun","id":"x"}"#).is_err());
        // Written spaced, its tag last: still a short entry.
        let spaced = r#"{ "seq": 2, "entry": "created-as-begun" }"#;
        assert_eq!(check_entry(spaced), Ok(()));

        let batches = [
            serde_json::to_vec(&[begin(1, "a"), begin(2, "b")]).unwrap(),
            serde_json::to_vec(&[short(2), short(1)]).unwrap(),
        ];
        let bytes = rebuild_sealed(&project, &stack, None, &batches, None, Path::new("s")).unwrap();
        let opened = Checkpoint::parse(&bytes, &stack, Path::new("x"), &KeepSealed).unwrap();
        let resources = &opened.snapshot.resources;
        assert_eq!(resources.len(), 2);
        assert_eq!(
            (resources[0].urn.name(), resources[0].id.as_str()),
            ("b", "id-2")
        );
        assert_eq!(
            resources[0].inputs,
            resource("b").inputs,
            "kept from its begin"
        );
        assert_eq!(resources[1].outputs["arn"], Value::String("arn-1".into()));

        // A short end with no begin before it cannot be completed.
        let orphan = [serde_json::to_vec(&[short(1), begin(1, "a")]).unwrap()];
        let error =
            rebuild_sealed(&project, &stack, None, &orphan, None, Path::new("s")).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("journal batch 1: the end of a create that no entry began"),
            "{error}"
        );
    }
}
