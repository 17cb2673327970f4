//! The checkpoint file: a stack's snapshot with a schema version.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::resource::FieldError;
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::PropertyMap;
use serde::{Deserialize, Serialize};

use crate::checkpoint_upgrade::{OLDEST_UPGRADED_SCHEMA, ROOTED_SINCE, schema_one_outputs};
use crate::error::StateError;
use crate::secrets::{CodecError, Crypter, from_sealed_json};
use crate::stored::{STORED_SINCE, SealedSnapshot, StoredSnapshot, WrittenSnapshot};

/// The checkpoint schema this plinth writes and reads (it also reads older ones back to
/// [`OLDEST_UPGRADED_SCHEMA`], upgrading them on load).
pub const SCHEMA_VERSION: u32 = 3;

/// What a checkpoint file holds.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub version: u32,
    pub project: ProjectName,
    pub stack: StackName,
    /// The plinth version that wrote the file.
    pub plinth: String,
    /// The plugins of the update that wrote the file (none in files from older plinths).
    pub plugins: Vec<PluginUse>,
    pub snapshot: Snapshot,
}

/// A checkpoint file as read, its snapshot in the form its schema stores it in.
#[derive(Deserialize)]
pub(crate) struct CheckpointFile<S> {
    version: u32,
    project: ProjectName,
    stack: StackName,
    plinth: String,
    #[serde(default)]
    plugins: Vec<PluginUse>,
    snapshot: S,
}

impl<'a> CheckpointFile<SealedSnapshot<'a>> {
    /// Reads a checkpoint of schema 3 or later, each resource still JSON borrowed from `bytes`.
    fn read(bytes: &'a [u8]) -> Result<CheckpointFile<SealedSnapshot<'a>>, CodecError> {
        Ok(serde_json::from_slice(bytes)?)
    }

    /// Reads its resources, opening their sealed secrets ([`SealedSnapshot`]). A JSON error
    /// here names no field: read the file with [`from_sealed_json`] again to name it.
    fn open(self, crypter: &dyn Crypter) -> Result<CheckpointFile<StoredSnapshot>, CodecError> {
        let CheckpointFile {
            version,
            project,
            stack,
            plinth,
            plugins,
            snapshot,
        } = self;
        Ok(CheckpointFile {
            version,
            project,
            stack,
            plinth,
            plugins,
            snapshot: snapshot.open(crypter)?,
        })
    }
}

impl<S> CheckpointFile<S> {
    /// The file with `read` made of its snapshot, if `read` makes something of it.
    pub(crate) fn try_map_snapshot<T>(
        self,
        read: impl FnOnce(S) -> Option<T>,
    ) -> Option<CheckpointFile<T>> {
        Some(CheckpointFile {
            version: self.version,
            project: self.project,
            stack: self.stack,
            plinth: self.plinth,
            plugins: self.plugins,
            snapshot: read(self.snapshot)?,
        })
    }

    pub(crate) fn into_checkpoint(self, snapshot: impl FnOnce(S) -> Snapshot) -> Checkpoint {
        Checkpoint {
            version: self.version,
            project: self.project,
            stack: self.stack,
            plinth: self.plinth,
            plugins: self.plugins,
            snapshot: snapshot(self.snapshot),
        }
    }
}

/// A plugin an update used, as its checkpoint and history entry record it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginUse {
    pub name: String,
    pub version: String,
    /// The SHA-256 of the component file, in hex.
    pub sha256: String,
}

/// The plugins an update loads, recorded as they load (they load on first use, while the update
/// runs) so that the checkpoint the update ends with can name them.
#[derive(Debug, Clone, Default)]
pub struct UsedPlugins(Arc<Mutex<BTreeMap<String, PluginUse>>>);

impl UsedPlugins {
    pub fn record(&self, plugin: PluginUse) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(plugin.name.clone(), plugin);
    }

    /// The plugins recorded so far, by name.
    pub fn list(&self) -> Vec<PluginUse> {
        let used = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        used.values().cloned().collect()
    }
}

/// What is read of a checkpoint before anything else: its schema version, and whose it is.
#[derive(Deserialize)]
pub(crate) struct Head {
    pub(crate) version: u32,
    #[serde(default)]
    pub(crate) stack: Option<String>,
}

/// A checkpoint as first read: one of the schema this plinth writes, whole, its resources still
/// JSON; any other, its [`Head`] only.
enum FirstRead<'a> {
    Current(CheckpointFile<SealedSnapshot<'a>>),
    Head(Head),
}

impl<'a> FirstRead<'a> {
    /// Reads the file once if it is of the current schema and well formed (at 100,000
    /// resources each scan of the 50 MB took a tenth of a second); otherwise reads its head,
    /// so that a file of another schema is refused as such, never misread.
    fn of(bytes: &'a [u8], path: &Path) -> Result<FirstRead<'a>, StateError> {
        match CheckpointFile::read(bytes) {
            Ok(file) if (STORED_SINCE..=SCHEMA_VERSION).contains(&file.version) => {
                Ok(FirstRead::Current(file))
            }
            _ => Checkpoint::head(bytes, path).map(FirstRead::Head),
        }
    }

    fn version(&self) -> u32 {
        match self {
            FirstRead::Current(file) => file.version,
            FirstRead::Head(head) => head.version,
        }
    }

    /// The stack the file names, if it names one.
    fn stack(&self) -> Option<&str> {
        match self {
            FirstRead::Current(file) => Some(file.stack.as_str()),
            FirstRead::Head(head) => head.stack.as_deref(),
        }
    }
}

impl Checkpoint {
    /// Whether the file was written in the schema and by the plinth version this plinth writes
    /// (its plugins aside): writing its snapshot again would write what it holds.
    pub fn is_current(&self) -> bool {
        self.version == SCHEMA_VERSION && self.plinth == env!("CARGO_PKG_VERSION")
    }

    pub fn new(project: &ProjectName, stack: &StackName, snapshot: Snapshot) -> Checkpoint {
        Checkpoint {
            version: SCHEMA_VERSION,
            project: project.clone(),
            stack: stack.clone(),
            plinth: env!("CARGO_PKG_VERSION").to_owned(),
            plugins: Vec::new(),
            snapshot,
        }
    }

    /// The checkpoint, recording that its update used `plugins`.
    pub fn with_plugins(self, plugins: Vec<PluginUse>) -> Checkpoint {
        Checkpoint { plugins, ..self }
    }

    /// Parses a checkpoint, checking its schema version before anything else so a file from
    /// another plinth is refused, never misread, and checking the snapshot's integrity. Sealed
    /// secrets are opened with `crypter`.
    pub fn parse(
        bytes: &[u8],
        stack: &str,
        path: &Path,
        crypter: &dyn Crypter,
    ) -> Result<Checkpoint, StateError> {
        Ok(Checkpoint::decode_verified(bytes, stack, path, crypter)?.upgraded())
    }

    /// [`decode`](Self::decode), checking the snapshot's integrity.
    pub fn decode_verified(
        bytes: &[u8],
        stack: &str,
        path: &Path,
        crypter: &dyn Crypter,
    ) -> Result<Decoded, StateError> {
        let decoded = Checkpoint::decode(bytes, stack, path, crypter)?;
        // Two passes over every resource that read it only: side by side (at 100,000
        // resources, 50 ms one after the other on the way to the first step).
        let snapshot = &decoded.checkpoint.snapshot;
        let (integrity, fields) = rayon::join(
            || verify_integrity(snapshot, path),
            || check_fields(snapshot, path),
        );
        integrity.and(fields)?;
        Ok(decoded)
    }

    /// [`decode_verified`](Self::decode_verified) but for the fields of each resource: a
    /// state an edit may repair (`plinth state delete` of a resource whose id no plinth
    /// records), whose fields are checked again before it is written.
    pub fn decode_for_edit(
        bytes: &[u8],
        stack: &str,
        path: &Path,
        crypter: &dyn Crypter,
    ) -> Result<Decoded, StateError> {
        let decoded = Checkpoint::decode(bytes, stack, path, crypter)?;
        verify_integrity(&decoded.checkpoint.snapshot, path)?;
        Ok(decoded)
    }

    /// Parses a checkpoint, checking its schema version but not the snapshot's integrity. A
    /// checkpoint of an older schema is upgraded (in memory only).
    pub fn parse_unverified(
        bytes: &[u8],
        stack: &str,
        path: &Path,
        crypter: &dyn Crypter,
    ) -> Result<Checkpoint, StateError> {
        Ok(Checkpoint::decode(bytes, stack, path, crypter)?.upgraded())
    }

    /// Parses a checkpoint as its file holds it, checking its schema version and its fields,
    /// without upgrading it: a journal left with it refers to it as it is. A checkpoint whose
    /// `stack` is not `stack` is refused before any of its secrets is opened: it is another
    /// stack's state (a file copied over this one's), and writing this stack's next state from
    /// it would mix the two.
    pub fn decode(
        bytes: &[u8],
        stack: &str,
        path: &Path,
        crypter: &dyn Crypter,
    ) -> Result<Decoded, StateError> {
        let first = FirstRead::of(bytes, path)?;
        if let Some(found) = first.stack()
            && found != stack
        {
            return Err(StateError::OtherStack {
                path: path.to_owned(),
                found: found.escape_debug().to_string(),
                stack: stack.to_owned(),
            });
        }
        Checkpoint::decode_with(bytes, first, stack, path, crypter)
    }

    /// Parses a checkpoint whichever stack it names (for `stack export`, which shows a
    /// checkpoint refused as another stack's as it is), upgraded; not checked for integrity.
    pub fn parse_any_stack(
        bytes: &[u8],
        path: &Path,
        crypter: &dyn Crypter,
    ) -> Result<Checkpoint, StateError> {
        let first = FirstRead::of(bytes, path)?;
        let stack = first.stack().unwrap_or_default().to_owned();
        Ok(Checkpoint::decode_with(bytes, first, &stack, path, crypter)?.upgraded())
    }

    pub(crate) fn head(bytes: &[u8], path: &Path) -> Result<Head, StateError> {
        serde_json::from_slice(bytes).map_err(|e| StateError::Corrupt {
            path: path.to_owned(),
            reason: format!("{e} (no readable schema `version`)"),
        })
    }

    fn decode_with(
        bytes: &[u8],
        first: FirstRead,
        stack: &str,
        path: &Path,
        crypter: &dyn Crypter,
    ) -> Result<Decoded, StateError> {
        let corrupt = |reason: String| StateError::Corrupt {
            path: path.to_owned(),
            reason,
        };
        let version = first.version();
        if version > SCHEMA_VERSION {
            return Err(StateError::NewerSchema {
                stack: stack.to_owned(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version < OLDEST_UPGRADED_SCHEMA {
            return Err(StateError::OlderSchema {
                stack: stack.to_owned(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        let read = |e| match e {
            CodecError::Json(e) => corrupt(e.to_string()),
            CodecError::Secrets(e) => StateError::from(e),
        };
        let checkpoint = if version >= STORED_SINCE {
            let sealed = match first {
                FirstRead::Current(file) => Ok(file),
                // Read whole, it failed: the error falls to the reading below that names it.
                FirstRead::Head(_) => CheckpointFile::read(bytes),
            };
            match sealed.and_then(|file| file.open(crypter)) {
                Ok(file) => file,
                // The whole document again, to name the field at fault.
                Err(CodecError::Json(_)) => {
                    from_sealed_json::<CheckpointFile<StoredSnapshot>>(bytes, crypter)
                        .map_err(read)?
                }
                Err(CodecError::Secrets(e)) => return Err(e.into()),
            }
            .into_checkpoint(StoredSnapshot::into_snapshot)
        } else {
            from_sealed_json::<CheckpointFile<Snapshot>>(bytes, crypter)
                .map_err(read)?
                .into_checkpoint(|snapshot| snapshot)
        };
        if version < ROOTED_SINCE {
            return Ok(Decoded {
                checkpoint,
                legacy_outputs: Some(schema_one_outputs(bytes, crypter, path)?),
            });
        }
        Ok(Decoded {
            checkpoint,
            legacy_outputs: None,
        })
    }

    /// The checkpoint as JSON, with every secret sealed by `crypter`.
    pub fn to_json(&self, crypter: &dyn Crypter) -> Result<Vec<u8>, StateError> {
        CheckpointView {
            version: self.version,
            project: &self.project,
            stack: &self.stack,
            plinth: &self.plinth,
            plugins: &self.plugins,
            snapshot: &self.snapshot,
        }
        .to_json(crypter)
    }
}

/// A checkpoint as its file holds it, before any upgrade.
#[derive(Debug)]
pub struct Decoded {
    pub checkpoint: Checkpoint,
    /// The stack outputs of a schema-1 file, kept beside the resources; `None` for a file of
    /// the current schema.
    pub legacy_outputs: Option<PropertyMap>,
}

impl Decoded {
    /// The checkpoint in the current schema, with `snapshot` (this checkpoint's, or what a
    /// journal made of it) in place of its own; `journal_outputs` are stack outputs a
    /// schema-1 journal recorded after the checkpoint.
    pub fn upgrade(self, snapshot: Snapshot, journal_outputs: Option<PropertyMap>) -> Checkpoint {
        let mut checkpoint = Checkpoint {
            snapshot,
            ..self.checkpoint
        };
        if let Some(outputs) = journal_outputs.or(self.legacy_outputs) {
            let (project, stack) = (checkpoint.project.clone(), checkpoint.stack.clone());
            checkpoint.snapshot.adopt_root(&project, &stack, outputs);
        }
        checkpoint.version = SCHEMA_VERSION;
        checkpoint
    }

    /// [`upgrade`](Self::upgrade) of the checkpoint's own snapshot.
    pub fn upgraded(mut self) -> Checkpoint {
        // Moved, not copied: at 100,000 resources a copy took a fifth of the load's time and
        // held the state twice.
        let snapshot = std::mem::take(&mut self.checkpoint.snapshot);
        self.upgrade(snapshot, None)
    }
}

/// Checks the snapshot's integrity ([`Snapshot::verify_integrity`]), saying how to repair a
/// state that fails.
fn verify_integrity(snapshot: &Snapshot, path: &Path) -> Result<(), StateError> {
    snapshot.verify_integrity().map_err(|e| StateError::Corrupt {
        path: path.to_owned(),
        reason: format!(
            "{e}; repair it with `plinth stack export --file F`, edit F, then `plinth stack import --file F`"
        ),
    })
}

/// Checks every resource's fields ([`Snapshot::check_fields`]), saying how to repair a state
/// that fails: everything but `stack export` and `state delete` refuses it.
pub fn check_fields(snapshot: &Snapshot, path: &Path) -> Result<(), StateError> {
    (snapshot.check_fields()).map_err(|e| unrecordable_field(&e, path))
}

/// The error of a state file (checkpoint or journal) holding a field no plinth records.
pub fn unrecordable_field(error: &FieldError, path: &Path) -> StateError {
    StateError::Corrupt {
        path: path.to_owned(),
        reason: format!(
            "{error}; no plinth records that. Keep a copy with `plinth stack export --file F`, \
             then remove that resource from the state with `plinth state delete URN` (and delete \
             what it names in the real world by hand if it still exists)"
        ),
    }
}

/// A [`Checkpoint`] of a borrowed snapshot, serialized the same way: an update's last snapshot
/// is written without being copied.
#[derive(Serialize)]
pub struct CheckpointView<'a> {
    pub version: u32,
    pub project: &'a ProjectName,
    pub stack: &'a StackName,
    pub plinth: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub plugins: &'a [PluginUse],
    #[serde(serialize_with = "crate::stored::serialize")]
    pub snapshot: &'a Snapshot,
}

/// A [`CheckpointView`] whose resources are written already (their secrets sealed): the same
/// fields, in the same order, serialized the same way.
#[derive(Serialize)]
pub struct CheckpointWritten<'a> {
    pub(crate) version: u32,
    pub(crate) project: &'a ProjectName,
    pub(crate) stack: &'a StackName,
    pub(crate) plinth: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) plugins: &'a [PluginUse],
    pub(crate) snapshot: WrittenSnapshot,
}

impl CheckpointWritten<'_> {
    /// The checkpoint file's text: its secrets are sealed already, and nothing else of a
    /// checkpoint holds one.
    pub(crate) fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        // The resources' texts and each one's line around it, and the rest of the file.
        let capacity = self.snapshot.written_len() + 4096;
        let mut bytes = crate::layout::to_outlined_json_sized(self, capacity)?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Writes the checkpoint file's text ([`to_json`](Self::to_json)) to `out` as it is made,
    /// then flushes it: no buffer the size of the file (50 MB at 100,000 resources, each page
    /// of it touched for the first time).
    pub fn write_to(&self, mut out: impl Write) -> io::Result<()> {
        crate::layout::write_outlined_json(&mut out, self)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

impl<'a> CheckpointView<'a> {
    /// The view of a checkpoint this plinth writes now.
    pub fn current(
        project: &'a ProjectName,
        stack: &'a StackName,
        plugins: &'a [PluginUse],
        snapshot: &'a Snapshot,
    ) -> CheckpointView<'a> {
        CheckpointView {
            version: SCHEMA_VERSION,
            project,
            stack,
            plinth: env!("CARGO_PKG_VERSION"),
            plugins,
            snapshot,
        }
    }

    /// [`Checkpoint::to_json`]: what serializing the view writes, its resources written in
    /// parallel.
    pub fn to_json(&self, crypter: &dyn Crypter) -> Result<Vec<u8>, StateError> {
        (self.written(crypter)?.to_json()).map_err(|e| StateError::Encode(e.to_string()))
    }

    /// The view with its resources written, in parallel, every secret sealed by `crypter`:
    /// what [`to_json`](Self::to_json) writes, for [`CheckpointWritten::write_to`].
    pub fn written(&self, crypter: &dyn Crypter) -> Result<CheckpointWritten<'a>, StateError> {
        let encode = |e: serde_json::Error| StateError::Encode(e.to_string());
        // Every field named, so that a field added to the view cannot be left out here.
        let CheckpointView {
            version,
            project,
            stack,
            plinth,
            plugins,
            snapshot,
        } = *self;
        let written = CheckpointWritten {
            version,
            project,
            stack,
            plinth,
            plugins,
            snapshot: WrittenSnapshot::of(snapshot, crypter).map_err(|e| match e {
                CodecError::Json(e) => encode(e),
                CodecError::Secrets(e) => e.into(),
            })?,
        };
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> ProjectName {
        ProjectName::new("p").unwrap()
    }

    fn dev() -> StackName {
        StackName::new("dev").unwrap()
    }
    use crate::secrets::{PassphraseCrypter, SecretsError, to_sealed_json};
    use plinth_engine::value::{PropertyMap, Value};

    fn parse(json: &str) -> Result<Checkpoint, StateError> {
        let crypter = PassphraseCrypter::create("pw", "dev").unwrap().0;
        Checkpoint::parse(json.as_bytes(), "dev", Path::new("dev.json"), &crypter)
    }

    #[test]
    fn round_trips() {
        let crypter = PassphraseCrypter::create("pw", "dev").unwrap().0;
        let cp = Checkpoint::new(&p(), &dev(), Snapshot::default());
        let json = cp.to_json(&crypter).unwrap();
        let back = Checkpoint::parse(&json, "dev", Path::new("x"), &crypter).unwrap();
        assert_eq!(back.snapshot, cp.snapshot);
    }

    #[test]
    fn secrets_are_sealed_in_the_file_and_opened_on_load() {
        let (crypter, salt) = PassphraseCrypter::create("pw", "dev").unwrap();
        let mut snapshot = Snapshot::default();
        let nested = Value::Object(
            [(
                "token".to_owned(),
                Value::Secret(Box::new("hunter2".into())),
            )]
            .into_iter()
            .collect(),
        );
        let outputs = [
            ("nested".to_owned(), nested),
            (
                "list".to_owned(),
                Value::Secret(Box::new(Value::Array(vec!["s3cr3t".into(), 1.5.into()]))),
            ),
            ("plain".to_owned(), "visible".into()),
        ];
        snapshot.adopt_root("p", "dev", outputs.into());
        let cp = Checkpoint::new(&p(), &dev(), snapshot);
        let json = cp.to_json(&crypter).unwrap();
        let text = String::from_utf8(json.clone()).unwrap();
        assert!(
            !text.contains("hunter2") && !text.contains("s3cr3t"),
            "{text}"
        );
        assert!(
            text.contains("visible") && text.contains("\"ciphertext\":\"v1:"),
            "{text}"
        );

        let again = PassphraseCrypter::unlock("pw", &salt, "dev").unwrap();
        let back = Checkpoint::parse(&json, "dev", Path::new("x"), &again).unwrap();
        assert_eq!(back.snapshot, cp.snapshot);

        let other = PassphraseCrypter::create("pw", "dev").unwrap().0;
        assert!(matches!(
            Checkpoint::parse(&json, "dev", Path::new("x"), &other),
            Err(StateError::Secrets(SecretsError::At { error, .. }))
                if matches!(*error, SecretsError::Undecryptable(_))
        ));
        let tampered = text.replacen("\"ciphertext\":\"v1:", "\"ciphertext\":\"v1:AAAA", 1);
        assert!(matches!(
            Checkpoint::parse(tampered.as_bytes(), "dev", Path::new("x"), &again),
            Err(StateError::Secrets(_))
        ));
    }

    /// Seals a secret as its plaintext behind a mark: the same every time.
    struct Marked;

    impl Crypter for Marked {
        fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
            Ok(format!("sealed:{plaintext}"))
        }
        fn open(&self, sealed: &str) -> Result<String, SecretsError> {
            Ok(sealed.trim_start_matches("sealed:").to_owned())
        }
    }

    #[test]
    fn resources_written_in_parallel_are_written_as_the_view_serializes_them() {
        use plinth_engine::resource::ResourceState;
        use plinth_engine::snapshot::{PendingKind, PendingOperation};
        use plinth_engine::urn::Urn;

        let mut snapshot = Snapshot::default();
        snapshot.adopt_root("p", "dev", [("out".to_owned(), "x".into())].into());
        let root = snapshot.resources[0].urn.clone();
        let resource = |name: &str, parent: Option<&Urn>, deps: &[&Urn]| ResourceState {
            urn: Urn::new("dev", "p", None, "t:T", name),
            ty: "t:T".into(),
            custom: true,
            id: format!("{name}-1"),
            inputs: [("n".to_owned(), Value::Integer(1))].into(),
            outputs: PropertyMap::new(),
            parent: parent.cloned(),
            dependencies: deps.iter().map(|&u| u.clone()).collect(),
            protect: name == "b",
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        };
        let a = resource("a", Some(&root), &[]);
        let b = resource("b", Some(&a.urn), &[&a.urn]);
        let pending = resource("c", Some(&root), &[&b.urn]);
        snapshot.resources.extend([a, b]);
        snapshot.pending_operations.push(PendingOperation {
            kind: PendingKind::Creating,
            resource: pending,
        });
        let plugins = [PluginUse {
            name: "t".into(),
            version: "1.0.0".into(),
            sha256: "00".into(),
        }];
        let (project, stack) = (p(), dev());
        let serialized = |view: &CheckpointView| {
            let mut bytes = to_sealed_json(view, &Marked, true).unwrap();
            bytes.push(b'\n');
            bytes
        };
        for plugins in [&plugins[..], &[]] {
            let view = CheckpointView::current(&project, &stack, plugins, &snapshot);
            assert_eq!(
                String::from_utf8(view.to_json(&Marked).unwrap()).unwrap(),
                String::from_utf8(serialized(&view)).unwrap()
            );
        }
        // And with a secret, sealed in a JSON tree of its resource alone (whose keys a tree
        // sorts): the other lines are as the view serializes them, and it reads back the same.
        snapshot.resources[1].outputs =
            [("pw".to_owned(), Value::Secret(Box::new("hunter2".into())))].into();
        let view = CheckpointView::current(&project, &stack, &plugins, &snapshot);
        let written = String::from_utf8(view.to_json(&Marked).unwrap()).unwrap();
        // Streamed to a writer, it is the same text.
        let mut streamed = Vec::new();
        (view.written(&Marked).unwrap().write_to(&mut streamed)).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), written);
        let holding = |line: &&str| line.contains("hunter2");
        let (sealed, plain): (Vec<&str>, Vec<&str>) = written.lines().partition(holding);
        assert!(
            sealed.len() == 1 && sealed[0].contains("{\"ciphertext\":\"sealed:\\\"hunter2\\\"\""),
            "{written}"
        );
        let serialized =
            String::from_utf8(crate::layout::to_outlined_json(&view).unwrap()).unwrap();
        let other: Vec<&str> = serialized.lines().filter(|l| !holding(l)).collect();
        assert_eq!(plain, other);
        let back = Checkpoint::parse(written.as_bytes(), "dev", Path::new("c"), &Marked).unwrap();
        assert_eq!(back.snapshot, snapshot);
    }

    /// Counts the batches sealed and opened, and refuses single values: a checkpoint's
    /// secrets, however many resources hold them, go to the crypter in one batch each way.
    struct Batches(PassphraseCrypter, std::sync::atomic::AtomicUsize);

    impl Crypter for Batches {
        fn seal(&self, _: &str) -> Result<String, SecretsError> {
            panic!("one value at a time")
        }
        fn open(&self, _: &str) -> Result<String, SecretsError> {
            panic!("one value at a time")
        }
        fn seal_all(&self, plaintexts: &[String]) -> Result<Vec<String>, SecretsError> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.0.seal_all(plaintexts)
        }
        fn open_all(&self, sealed: &[String]) -> Result<Vec<String>, SecretsError> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.0.open_all(sealed)
        }
    }

    /// A checkpoint whose resources (and a pending operation) hold distinct secrets, written
    /// and read back, gives the same snapshot; no plaintext is in the file, and its secrets are
    /// sealed in one batch and opened in one.
    #[test]
    fn a_checkpoint_of_many_secrets_reads_back_the_same() {
        use plinth_engine::resource::ResourceState;
        use plinth_engine::snapshot::{PendingKind, PendingOperation};
        use plinth_engine::urn::Urn;

        let secret = |text: String| Value::Secret(Box::new(text.into()));
        let resource = |i: usize| ResourceState {
            urn: Urn::new("dev", "p", None, "t:T", &format!("r{i}")),
            ty: "t:T".into(),
            custom: true,
            id: format!("id-{i}"),
            inputs: [("pw".to_owned(), secret(format!("input-secret-{i:03}")))].into(),
            // Every other resource holds no secret: it is written and read without a tree.
            outputs: if i.is_multiple_of(2) {
                [("token".to_owned(), secret(format!("output-secret-{i:03}")))].into()
            } else {
                PropertyMap::new()
            },
            parent: None,
            dependencies: Vec::new(),
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        };
        let mut snapshot = Snapshot::default();
        snapshot.resources.extend((0..40).map(resource));
        for plain in (40..50).map(resource) {
            snapshot.resources.push(ResourceState {
                inputs: PropertyMap::new(),
                ..plain
            });
        }
        snapshot.pending_operations.push(PendingOperation {
            kind: PendingKind::Creating,
            resource: resource(50),
        });
        let crypter = Batches(PassphraseCrypter::create("pw", "dev").unwrap().0, 0.into());
        let (project, stack) = (p(), dev());
        let view = CheckpointView::current(&project, &stack, &[], &snapshot);
        let written = view.to_json(&crypter).unwrap();
        let text = String::from_utf8(written.clone()).unwrap();
        assert!(!text.contains("-secret-"), "{text}");
        let back = Checkpoint::parse(&written, "dev", Path::new("c"), &crypter).unwrap();
        assert_eq!(back.snapshot, snapshot);
        assert_eq!(crypter.1.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn records_plugins_and_loads_checkpoints_written_without_them() {
        let crypter = PassphraseCrypter::create("pw", "dev").unwrap().0;
        let used = UsedPlugins::default();
        for (name, sha256) in [("random", "aa"), ("kit", "bb"), ("random", "cc")] {
            used.record(PluginUse {
                name: name.into(),
                version: "0.1.0".into(),
                sha256: sha256.into(),
            });
        }
        let plugins = used.list();
        assert_eq!(
            plugins
                .iter()
                .map(|p| (p.name.as_str(), p.sha256.as_str()))
                .collect::<Vec<_>>(),
            [("kit", "bb"), ("random", "cc")]
        );
        let cp = Checkpoint::new(&p(), &dev(), Snapshot::default()).with_plugins(plugins.clone());
        let json = cp.to_json(&crypter).unwrap();
        let back = Checkpoint::parse(&json, "dev", Path::new("x"), &crypter).unwrap();
        assert_eq!(back.plugins, plugins);

        let older = r#"{"version": 1, "project": "p", "stack": "dev", "plinth": "0.1.0",
                        "snapshot": {"resources": [], "pending_operations": [], "outputs": {}}}"#;
        assert!(parse(older).unwrap().plugins.is_empty());
    }

    #[test]
    fn a_checkpoint_of_another_stack_is_refused_and_exported_as_it_is() {
        let crypter = PassphraseCrypter::create("pw", "dev").unwrap().0;
        let mut snapshot = Snapshot::default();
        snapshot.adopt_root("p", "dev", [("out".to_owned(), "x".into())].into());
        let json = Checkpoint::new(&p(), &dev(), snapshot.clone())
            .to_json(&crypter)
            .unwrap();
        let path = Path::new("prod.json");
        assert!(matches!(
            Checkpoint::parse(&json, "prod", path, &crypter),
            Err(StateError::OtherStack { found, stack, .. }) if found == "dev" && stack == "prod"
        ));
        let any = Checkpoint::parse_any_stack(&json, path, &crypter).unwrap();
        assert_eq!((any.stack.as_str(), any.snapshot), ("dev", snapshot));
    }

    #[test]
    fn a_bad_field_of_a_resource_is_named() {
        let crypter = PassphraseCrypter::create("pw", "dev").unwrap().0;
        let mut snapshot = Snapshot::default();
        snapshot.adopt_root("p", "dev", [("out".to_owned(), "x".into())].into());
        let json = Checkpoint::new(&p(), &dev(), snapshot)
            .to_json(&crypter)
            .unwrap();
        let bad =
            String::from_utf8(json)
                .unwrap()
                .replacen("\"custom\":false", "\"custom\":\"no\"", 1);
        match parse(&bad) {
            Err(StateError::Corrupt { reason, .. }) => {
                assert!(reason.contains("custom"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refuses_newer_and_older_schemas() {
        let newer = r#"{"version": 99, "whatever": true}"#;
        assert!(matches!(
            parse(newer),
            Err(StateError::NewerSchema { found: 99, .. })
        ));
        let older = r#"{"version": 0}"#;
        assert!(matches!(parse(older), Err(StateError::OlderSchema { .. })));
    }

    #[test]
    fn truncated_or_garbage_files_are_corrupt_not_panics() {
        for bad in ["", "{", "garbage", r#"{"version": 1, "snapshot": 3}"#] {
            assert!(
                matches!(parse(bad), Err(StateError::Corrupt { .. })),
                "{bad}"
            );
        }
    }
}
