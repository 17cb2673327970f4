//! The journal of an update in progress, as JSON lines next to the checkpoint. Appends are
//! buffered and made durable by `sync`; the engine's writer batches syncs (group commit).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use plinth_engine::journal::{JournalEntry, Persister};
use plinth_engine::snapshot::Snapshot;

use crate::checkpoint::Checkpoint;
use crate::error::BackendError;

/// Appends journal entries for one update and compacts them into a checkpoint at the end.
pub(crate) struct JournalFile {
    journal: BufWriter<File>,
    journal_path: PathBuf,
    checkpoint_path: PathBuf,
    project: String,
    stack: String,
}

impl JournalFile {
    pub(crate) fn create(
        journal_path: PathBuf,
        checkpoint_path: PathBuf,
        project: &str,
        stack: &str,
    ) -> Result<JournalFile, BackendError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&journal_path)
            .map_err(BackendError::io("creating journal", &journal_path))?;
        Ok(JournalFile {
            journal: BufWriter::new(file),
            journal_path,
            checkpoint_path,
            project: project.to_owned(),
            stack: stack.to_owned(),
        })
    }
}

impl Persister for JournalFile {
    fn append(&mut self, entry: &JournalEntry) -> Result<(), String> {
        serde_json::to_writer(&mut self.journal, entry).map_err(|e| e.to_string())?;
        self.journal.write_all(b"\n").map_err(|e| e.to_string())
    }

    fn sync(&mut self) -> Result<(), String> {
        self.journal.flush().map_err(|e| e.to_string())?;
        self.journal
            .get_ref()
            .sync_data()
            .map_err(|e| e.to_string())
    }

    fn compact(&mut self, snapshot: &Snapshot) -> Result<(), String> {
        let checkpoint = Checkpoint::new(&self.project, &self.stack, snapshot.clone());
        write_atomically(&self.checkpoint_path, &checkpoint.to_json())
            .map_err(|e| e.to_string())?;
        std::fs::remove_file(&self.journal_path).map_err(|e| e.to_string())
    }
}

/// Reads the entries of a journal left behind by an interrupted update. A torn last line (the
/// process died mid-write) is dropped; garbage anywhere else is an error.
pub(crate) fn read_entries(path: &Path) -> Result<Vec<JournalEntry>, BackendError> {
    let file = File::open(path).map_err(BackendError::io("opening journal", path))?;
    let mut lines = BufReader::new(file).split(b'\n').peekable();
    let mut entries = Vec::new();
    let mut number = 0;
    while let Some(line) = lines.next() {
        number += 1;
        let line = line.map_err(BackendError::io("reading journal", path))?;
        let is_last = lines.peek().is_none();
        match serde_json::from_slice(&line) {
            Ok(entry) => entries.push(entry),
            Err(_) if is_last => break,
            Err(e) => {
                return Err(BackendError::Corrupt {
                    path: path.to_owned(),
                    reason: format!("line {number}: {e}"),
                });
            }
        }
    }
    Ok(entries)
}

/// Replaces `path` with `bytes` so that a crash leaves either the old or the new file, whole.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}
