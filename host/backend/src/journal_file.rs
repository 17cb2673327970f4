//! The journal of an update in progress, as JSON lines next to the checkpoint. Appends are
//! buffered and made durable by `sync`; the engine's writer batches syncs (group commit).

use plinth_engine::names::{ProjectName, StackName};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use plinth_engine::journal::{JournalEntry, PersistError, Persister};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::PropertyMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::checkpoint::{CheckpointView, UsedPlugins};
use crate::error::BackendError;
use crate::journal_short::{Begun, CreatedAsBegun};
use crate::secrets::{CodecError, Crypter, from_sealed_json, to_sealed_json};
use crate::upgrade::SchemaOneEntry;

/// Appends journal entries for one update and compacts them into a checkpoint at the end,
/// sealing every secret on the way.
pub(crate) struct JournalFile {
    file: File,
    journal_path: PathBuf,
    /// Lines appended since the last sync (the header, until the first).
    unsynced: Vec<u8>,
    /// The journal's length up to what the last sync made durable: a failed sync cuts the file
    /// back to it, so that no half-written entry stays in the middle of the journal.
    synced_len: u64,
    /// A failed sync could not be undone: where the journal ends is unknown, so nothing more
    /// may be appended to it.
    broken: bool,
    checkpoint_path: PathBuf,
    project: ProjectName,
    stack: StackName,
    crypter: Arc<dyn Crypter>,
    /// Named in the checkpoint the update ends with.
    plugins: UsedPlugins,
    /// The creates begun and not ended, whose ends are written short.
    begun: Begun,
    /// The sequence numbers begun by entries appended since the last sync.
    begun_unsynced: Vec<u64>,
}

impl JournalFile {
    pub(crate) fn create(
        journal_path: PathBuf,
        checkpoint_path: PathBuf,
        project: &ProjectName,
        stack: &StackName,
        crypter: Arc<dyn Crypter>,
        plugins: UsedPlugins,
    ) -> Result<JournalFile, BackendError> {
        let base = std::fs::read(&checkpoint_path)
            .map_err(BackendError::io("reading", &checkpoint_path))?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&journal_path)
            .map_err(BackendError::io("creating journal", &journal_path))?;
        let mut header = serde_json::to_vec(&Header {
            base: digest(&base),
        })
        .expect("a journal header serializes");
        header.push(b'\n');
        Ok(JournalFile {
            file,
            journal_path,
            unsynced: header,
            synced_len: 0,
            broken: false,
            checkpoint_path,
            project: project.clone(),
            stack: stack.clone(),
            crypter,
            plugins,
            begun: Begun::default(),
            begun_unsynced: Vec::new(),
        })
    }

    fn refuse_if_broken(&self, action: &'static str) -> Result<(), PersistError> {
        if self.broken {
            let unknown = std::io::Error::other(
                "an earlier write to it failed and could not be undone; the next command \
                 replays it up to its last whole entry",
            );
            return Err(PersistError::io(action, &self.journal_path, unknown));
        }
        Ok(())
    }

    /// Cuts the journal back to what the last sync made durable.
    fn cut_back(&mut self) -> std::io::Result<()> {
        self.file.set_len(self.synced_len)?;
        self.file.seek(SeekFrom::Start(self.synced_len))?;
        Ok(())
    }
}

impl Persister for JournalFile {
    fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError> {
        const ACTION: &str = "append to the journal";
        self.refuse_if_broken(ACTION)?;
        let crypter = self.crypter.as_ref();
        let line = match self.begun.shorten(entry) {
            Some(short) => to_sealed_json(&short, crypter, false),
            None => to_sealed_json(entry, crypter, false),
        }
        .map_err(|e| PersistError::invalid(ACTION, &self.journal_path, e))?;
        self.unsynced.extend_from_slice(&line);
        self.unsynced.push(b'\n');
        if let JournalEntry::Begin { seq, .. } = entry {
            self.begun_unsynced.push(*seq);
        }
        self.begun.follow(entry);
        Ok(())
    }

    fn sync(&mut self) -> Result<(), PersistError> {
        const ACTION: &str = "write the journal";
        self.refuse_if_broken(ACTION)?;
        if self.unsynced.is_empty() {
            return Ok(());
        }
        let written = (self.file.write_all(&self.unsynced)).and_then(|()| self.file.sync_data());
        let appended = std::mem::take(&mut self.unsynced);
        match written {
            Ok(()) => {
                self.synced_len += appended.len() as u64;
                self.begun_unsynced.clear();
                Ok(())
            }
            Err(e) => {
                // What those entries began is not in the journal: no end may refer to it.
                self.begun.forget(self.begun_unsynced.drain(..));
                self.broken = self.cut_back().is_err();
                Err(PersistError::io(ACTION, &self.journal_path, e))
            }
        }
    }

    fn compact(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
        const ACTION: &str = "write the checkpoint";
        let plugins = self.plugins.list();
        let checkpoint = CheckpointView::current(&self.project, &self.stack, &plugins, snapshot);
        let json = (checkpoint.to_json(self.crypter.as_ref()))
            .map_err(|e| PersistError::invalid(ACTION, &self.checkpoint_path, e))?;
        write_atomically(&self.checkpoint_path, &json)
            .map_err(|e| PersistError::io(ACTION, &self.checkpoint_path, e))?;
        std::fs::remove_file(&self.journal_path)
            .map_err(|e| PersistError::io("remove the journal", &self.journal_path, e))
    }
}

/// The first line of a journal: the checkpoint its entries apply to. Compaction writes the new
/// checkpoint and then removes the journal; a crash in between leaves a journal whose entries
/// are already in the checkpoint, which this tells apart.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    /// [`digest`] of the checkpoint file.
    base: String,
}

/// Identifies a checkpoint file by its contents.
fn digest(checkpoint: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(checkpoint))
}

/// What a journal holds: its entries and, from a journal a schema-1 plinth wrote, the last
/// stack outputs it recorded (the current schema records them on the stack's root).
pub(crate) struct JournalRead {
    pub entries: Vec<JournalEntry>,
    pub stack_outputs: Option<PropertyMap>,
}

/// Reads the entries of a journal left behind by an interrupted update of the checkpoint whose
/// file holds `checkpoint`; `None` if the journal is of an update already compacted into it. A
/// torn last line (the process died mid-write) is dropped; garbage anywhere else is an error.
/// Sealed secrets are opened with `crypter`.
pub(crate) fn read_journal(
    path: &Path,
    checkpoint: &[u8],
    crypter: &dyn Crypter,
) -> Result<Option<JournalRead>, BackendError> {
    let file = File::open(path).map_err(BackendError::io("opening journal", path))?;
    let mut lines = BufReader::new(file).split(b'\n').peekable();
    let mut entries = Vec::new();
    let mut begun = Begun::default();
    let mut stack_outputs = None;
    let mut number = 0;
    while let Some(line) = lines.next() {
        number += 1;
        let line = line.map_err(BackendError::io("reading journal", path))?;
        let is_last = lines.peek().is_none();
        if number == 1
            && let Ok(header) = serde_json::from_slice::<Header>(&line)
        {
            if header.base != digest(checkpoint) {
                return Ok(None);
            }
            continue;
        }
        let corrupt = |reason: String| BackendError::Corrupt {
            path: path.to_owned(),
            reason: format!("line {number}: {reason}"),
        };
        match from_sealed_json(&line, crypter) {
            Ok(entry) => {
                begun.follow(&entry);
                entries.push(entry);
            }
            Err(CodecError::Secrets(e)) => return Err(e.into()),
            Err(e) => {
                if let Ok(short) = from_sealed_json::<CreatedAsBegun>(&line, crypter) {
                    let entry = begun.complete(short).ok_or_else(|| {
                        corrupt("the end of a create that no earlier line began".to_owned())
                    })?;
                    entries.push(entry);
                    continue;
                }
                match from_sealed_json::<SchemaOneEntry>(&line, crypter) {
                    Ok(SchemaOneEntry::StackOutputs { outputs }) => stack_outputs = Some(outputs),
                    Err(_) if is_last => break,
                    Err(_) => return Err(corrupt(e.to_string())),
                }
            }
        }
    }
    Ok(Some(JournalRead {
        entries,
        stack_outputs,
    }))
}

/// Replaces `path` with `bytes` so that a crash leaves either the old or the new file, whole.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use plinth_engine::journal::PersistCause;
    use plinth_engine::resource::ResourceState;
    use plinth_engine::snapshot::PendingKind;
    use plinth_engine::value::Value;

    use super::*;

    fn carried(old: usize) -> JournalEntry {
        JournalEntry::Same {
            old,
            resource: None,
        }
    }

    /// A journal for a checkpoint in a fresh directory.
    fn journal() -> (tempfile::TempDir, JournalFile) {
        let dir = tempfile::tempdir().unwrap();
        let checkpoint = dir.path().join("dev.json");
        std::fs::write(&checkpoint, b"{}").unwrap();
        let journal = JournalFile::create(
            dir.path().join("dev.journal"),
            checkpoint,
            &plinth_engine::names::ProjectName::new("p").unwrap(),
            &plinth_engine::names::StackName::new("dev").unwrap(),
            Arc::new(crate::secrets::Redacted),
            UsedPlugins::default(),
        )
        .unwrap();
        (dir, journal)
    }

    fn entries_on_disk(journal: &JournalFile) -> Vec<JournalEntry> {
        read_journal(&journal.journal_path, b"{}", &crate::secrets::Redacted)
            .unwrap()
            .unwrap()
            .entries
    }

    #[test]
    fn a_failed_write_names_the_journal_and_its_cause_and_keeps_what_was_durable() {
        let (_dir, mut journal) = journal();
        journal.append(&carried(0)).unwrap();
        journal.sync().unwrap();
        // The disk refuses the next write (here: a handle that cannot write), and cutting the
        // journal back fails as well.
        journal.file = File::open(&journal.journal_path).unwrap();
        journal.append(&carried(1)).unwrap();
        let err = journal.sync().unwrap_err();
        assert_eq!(err.path, journal.journal_path);
        assert!(matches!(&err.cause, PersistCause::Io(_)), "{err}");
        assert!(
            err.to_string().starts_with(&format!(
                "cannot write the journal {}: ",
                err.path.display()
            )),
            "{err}"
        );
        assert_eq!(entries_on_disk(&journal), [carried(0)]);
        // Where the journal ends is unknown now: nothing more goes into it.
        let refused = journal.append(&carried(2)).unwrap_err();
        assert!(
            refused.to_string().contains("could not be undone"),
            "{refused}"
        );
        assert_eq!(entries_on_disk(&journal), [carried(0)]);
    }

    #[test]
    fn a_torn_write_is_cut_back_to_the_last_durable_entry() {
        let (_dir, mut journal) = journal();
        journal.append(&carried(0)).unwrap();
        journal.sync().unwrap();
        // Half an entry, as a write that failed midway leaves it.
        let mut torn = OpenOptions::new()
            .append(true)
            .open(&journal.journal_path)
            .unwrap();
        torn.write_all(b"{\"entry\":\"sa").unwrap();
        journal.file.seek(SeekFrom::End(0)).unwrap();
        journal.cut_back().unwrap();
        journal.append(&carried(1)).unwrap();
        journal.sync().unwrap();
        assert_eq!(entries_on_disk(&journal), [carried(0), carried(1)]);
    }

    fn item(name: &str) -> ResourceState {
        ResourceState {
            urn: plinth_engine::urn::Urn::new("dev", "p", None, "t:T", name),
            ty: "t:T".into(),
            custom: true,
            id: String::new(),
            inputs: [(
                "payload".to_owned(),
                Value::from(format!("payload of {name}")),
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
        }
    }

    fn lines_on_disk(journal: &JournalFile) -> Vec<String> {
        let text = std::fs::read_to_string(&journal.journal_path).unwrap();
        text.lines().skip(1).map(str::to_owned).collect()
    }

    #[test]
    fn the_end_of_a_create_is_written_as_what_it_adds_to_its_begin_and_read_back_whole() {
        let (_dir, mut journal) = journal();
        let begun = item("a");
        let mut created = begun.clone();
        created.id = "a-1".into();
        created.outputs = [("result".to_owned(), Value::from("r"))].into();
        // Another create whose end changes more than the id and outputs.
        let other = item("b");
        let mut moved = other.clone();
        moved.id = "b-1".into();
        moved.inputs.clear();
        let entries = [
            JournalEntry::Begin {
                seq: 1,
                kind: PendingKind::Creating,
                resource: begun,
                old: None,
            },
            JournalEntry::Begin {
                seq: 2,
                kind: PendingKind::Creating,
                resource: other,
                old: None,
            },
            JournalEntry::Created {
                seq: 2,
                resource: moved,
                replaces: None,
            },
            JournalEntry::Created {
                seq: 1,
                resource: created,
                replaces: Some(3),
            },
        ];
        for entry in &entries {
            journal.append(entry).unwrap();
        }
        journal.sync().unwrap();
        let lines = lines_on_disk(&journal);
        assert!(lines[2].starts_with("{\"entry\":\"created\""), "{lines:?}");
        assert_eq!(
            lines[3],
            r#"{"entry":"created-as-begun","seq":1,"replaces":3,"id":"a-1","outputs":{"result":"r"}}"#
        );
        assert_eq!(entries_on_disk(&journal), entries);

        // An end whose begin is not in the journal is an error, not a guess.
        let mut file = OpenOptions::new()
            .append(true)
            .open(&journal.journal_path)
            .unwrap();
        writeln!(file, r#"{{"entry":"created-as-begun","seq":9,"id":"x"}}"#).unwrap();
        writeln!(file, r#"{{"entry":"failed","seq":2}}"#).unwrap();
        let error = read_journal(&journal.journal_path, b"{}", &crate::secrets::Redacted)
            .map(drop)
            .unwrap_err();
        assert!(error.to_string().contains("line 6: "), "{error}");
    }

    #[test]
    fn an_entry_that_cannot_be_sealed_is_not_appended() {
        let (_dir, mut journal) = journal();
        let secret = Value::Secret(Box::new("hunter2".into()));
        let entry = JournalEntry::ComponentOutputs {
            urn: plinth_engine::urn::stack_urn("p", "dev"),
            outputs: [("token".to_owned(), secret)].into(),
        };
        // Redacted secrets cannot be sealed.
        let err = journal.append(&entry).unwrap_err();
        assert!(matches!(err.cause, PersistCause::Invalid(_)), "{err}");
        assert!(!err.is_transient());
        journal.append(&carried(0)).unwrap();
        journal.sync().unwrap();
        assert_eq!(entries_on_disk(&journal), [carried(0)]);
    }
}
