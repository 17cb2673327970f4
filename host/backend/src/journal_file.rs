//! The journal of an update in progress, as JSON lines next to the checkpoint. Appends are
//! buffered and made durable by `sync`; the engine's writer batches syncs (group commit).

use plinth_engine::names::{ProjectName, StackName};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use plinth_engine::journal::{JournalEntry, Persister};
use plinth_engine::snapshot::Snapshot;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::checkpoint::{Checkpoint, UsedPlugins};
use crate::error::BackendError;
use crate::secrets::{CodecError, Crypter, from_sealed_json, to_sealed_json};

/// Appends journal entries for one update and compacts them into a checkpoint at the end,
/// sealing every secret on the way.
pub(crate) struct JournalFile {
    journal: BufWriter<File>,
    journal_path: PathBuf,
    checkpoint_path: PathBuf,
    project: ProjectName,
    stack: StackName,
    crypter: Arc<dyn Crypter>,
    /// Named in the checkpoint the update ends with.
    plugins: UsedPlugins,
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
        let mut journal = BufWriter::new(file);
        let header = serde_json::to_vec(&Header {
            base: digest(&base),
        })
        .expect("a journal header serializes");
        journal
            .write_all(&header)
            .and_then(|()| journal.write_all(b"\n"))
            .map_err(BackendError::io("writing journal", &journal_path))?;
        Ok(JournalFile {
            journal,
            journal_path,
            checkpoint_path,
            project: project.clone(),
            stack: stack.clone(),
            crypter,
            plugins,
        })
    }
}

impl Persister for JournalFile {
    fn append(&mut self, entry: &JournalEntry) -> Result<(), String> {
        let mut line =
            to_sealed_json(entry, self.crypter.as_ref(), false).map_err(|e| e.to_string())?;
        line.push(b'\n');
        self.journal.write_all(&line).map_err(|e| e.to_string())
    }

    fn sync(&mut self) -> Result<(), String> {
        self.journal.flush().map_err(|e| e.to_string())?;
        self.journal
            .get_ref()
            .sync_data()
            .map_err(|e| e.to_string())
    }

    fn compact(&mut self, snapshot: &Snapshot) -> Result<(), String> {
        let checkpoint = Checkpoint::new(&self.project, &self.stack, snapshot.clone())
            .with_plugins(self.plugins.list());
        let json = checkpoint
            .to_json(self.crypter.as_ref())
            .map_err(|e| e.to_string())?;
        write_atomically(&self.checkpoint_path, &json).map_err(|e| e.to_string())?;
        std::fs::remove_file(&self.journal_path).map_err(|e| e.to_string())
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

/// Reads the entries of a journal left behind by an interrupted update of the checkpoint whose
/// file holds `checkpoint`; `None` if the journal is of an update already compacted into it. A
/// torn last line (the process died mid-write) is dropped; garbage anywhere else is an error.
/// Sealed secrets are opened with `crypter`.
pub(crate) fn read_entries(
    path: &Path,
    checkpoint: &[u8],
    crypter: &dyn Crypter,
) -> Result<Option<Vec<JournalEntry>>, BackendError> {
    let file = File::open(path).map_err(BackendError::io("opening journal", path))?;
    let mut lines = BufReader::new(file).split(b'\n').peekable();
    let mut entries = Vec::new();
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
        match from_sealed_json(&line, crypter) {
            Ok(entry) => entries.push(entry),
            Err(CodecError::Secrets(e)) => return Err(e.into()),
            Err(_) if is_last => break,
            Err(e) => {
                return Err(BackendError::Corrupt {
                    path: path.to_owned(),
                    reason: format!("line {number}: {e}"),
                });
            }
        }
    }
    Ok(Some(entries))
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
