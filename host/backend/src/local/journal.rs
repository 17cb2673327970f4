//! The journal of an update in progress, next to the checkpoint: a JSON header line, then one
//! frame per sync, each a gzip member of the JSON lines that sync made durable. Appends are
//! buffered and made durable by `sync`; the engine's writer batches syncs (group commit).
//!
//! Frames, not plain lines: a journal holds each new resource's state once more than the
//! checkpoint it ends in, and its lines repeat one another (URNs, types, provider references),
//! so compressing each sync's lines makes the journal several times smaller. Each frame is
//! compressed on its own, so a failed sync is still undone by cutting the file back.

use plinth_engine::names::{ProjectName, StackName};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flate2::read::GzDecoder;
use plinth_engine::journal::{JournalEntry, PersistError, Persister};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::PropertyMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use plinth_state::secrets::{CodecError, Crypter, from_sealed_json, to_sealed_json};
use plinth_state::{
    Begun, CheckpointView, Line, PluginUse, SchemaOneEntry, StateError, TornEnd, UsedPlugins,
    decode_line,
};

use crate::compression::gzip_onto;
use crate::error::BackendError;
use crate::files::write_atomically_with;

/// The buffer a checkpoint is written through: large writes, few system calls.
const WRITE_BUFFER: usize = 1 << 20;

/// What an update's journal knows of the checkpoint file the update begins from.
#[derive(Debug, Clone, Default)]
pub(crate) struct BaseFile {
    /// The plugins it names, if it holds the update's base as this plinth writes it (see
    /// [`Checkpoint::is_current`](plinth_state::Checkpoint::is_current)): an update that
    /// changes nothing and uses the same plugins leaves it as it is.
    pub(crate) current_plugins: Option<Vec<PluginUse>>,
    /// Its [`digest`], as the bytes the update's base was read from: the journal's header
    /// names the checkpoint by it (reading the file again for it, 50 MB at 100,000 resources,
    /// cost a no-op `up` a fifth of a second of system time).
    pub(crate) digest: Option<String>,
}

/// Appends journal entries for one update and compacts them into a checkpoint at the end,
/// sealing every secret on the way.
pub(crate) struct JournalFile {
    file: File,
    journal_path: PathBuf,
    /// The header line, until a sync wrote it.
    header: Vec<u8>,
    /// Lines appended since the last sync.
    unsynced: Vec<u8>,
    /// The journal's length up to what the last sync made durable: a failed sync cuts the file
    /// back to it, so that no half-written entry stays in the middle of the journal.
    synced_len: u64,
    /// A failed sync could not be undone: where the journal ends is unknown, so nothing more
    /// may be appended to it.
    broken: bool,
    checkpoint_path: PathBuf,
    base: BaseFile,
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
        base_file: BaseFile,
        (project, stack): (&ProjectName, &StackName),
        crypter: Arc<dyn Crypter>,
        plugins: UsedPlugins,
    ) -> Result<JournalFile, BackendError> {
        let base = match &base_file.digest {
            Some(digest) => digest.clone(),
            None => digest(
                &std::fs::read(&checkpoint_path)
                    .map_err(BackendError::io("reading", &checkpoint_path))?,
            ),
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&journal_path)
            .map_err(BackendError::io("creating journal", &journal_path))?;
        let mut header = serde_json::to_vec(&Header {
            base,
            frames: Some(Frames::Gzip),
        })
        .expect("a journal header serializes");
        header.push(b'\n');
        Ok(JournalFile {
            file,
            journal_path,
            header,
            unsynced: Vec::new(),
            synced_len: 0,
            broken: false,
            checkpoint_path,
            base: base_file,
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

    fn remove_journal(&self) -> Result<(), PersistError> {
        std::fs::remove_file(&self.journal_path)
            .map_err(|e| PersistError::io("remove the journal", &self.journal_path, e))
    }
}

impl Persister for JournalFile {
    /// A program registers resources faster than a disk syncs, but not by much: each sync would
    /// carry the few starts that came during the one before, and each rewrites the journal's
    /// last page. At most one sync a millisecond: a start waits at most that much more, and an
    /// update of 10,000 resources writes 1.5 to 1.6 times its checkpoint instead of 1.8 to 2.2,
    /// whatever the disk and the load.
    fn min_sync_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(1)
    }

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
        let mut bytes = self.header.clone();
        bytes.extend_from_slice(&frame(&std::mem::take(&mut self.unsynced)));
        let written = (self.file.write_all(&bytes)).and_then(|()| self.file.sync_data());
        match written {
            Ok(()) => {
                self.synced_len += bytes.len() as u64;
                self.header.clear();
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

    /// The checkpoint holds the snapshot already, as it would be written, when the plugins it
    /// names are those this update used: only the journal goes (whatever it holds changed
    /// nothing: a create begun and failed, entries a failed sync took back). A no-op `up` of
    /// 100,000 resources spent about half a second writing the 50 MB it read.
    fn compact_unchanged(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
        if self.base.current_plugins.as_ref() != Some(&self.plugins.list()) {
            return self.compact(snapshot);
        }
        self.remove_journal()
    }

    fn compact(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
        const ACTION: &str = "write the checkpoint";
        let plugins = self.plugins.list();
        let checkpoint = CheckpointView::current(&self.project, &self.stack, &plugins, snapshot);
        let written = (checkpoint.written(self.crypter.as_ref()))
            .map_err(|e| PersistError::invalid(ACTION, &self.checkpoint_path, e))?;
        // Streamed to the file: the whole text is never in memory at once.
        write_atomically_with(&self.checkpoint_path, |file| {
            written.write_to(BufWriter::with_capacity(WRITE_BUFFER, file))
        })
        .map_err(|e| PersistError::io(ACTION, &self.checkpoint_path, e))?;
        self.remove_journal()
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
    /// How the entries follow the header: as plain JSON lines when absent (journals written
    /// before frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    frames: Option<Frames>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Frames {
    /// Each frame: its length as a little-endian u32, the length's bitwise complement (so that
    /// a damaged length is told from a torn end), then a gzip member of whole JSON lines.
    Gzip,
}

/// The frame of `lines`, whole JSON lines each ending in a newline.
fn frame(lines: &[u8]) -> Vec<u8> {
    let mut frame = vec![0; 8];
    gzip_onto(&mut frame, lines);
    let len = u32::try_from(frame.len() - 8).expect("a sync's lines compress below 4 GiB");
    frame[..4].copy_from_slice(&len.to_le_bytes());
    frame[4..8].copy_from_slice(&(!len).to_le_bytes());
    frame
}

/// Identifies a checkpoint file by its contents.
pub(crate) fn digest(checkpoint: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(checkpoint))
}

/// What a journal holds: its entries and, from a journal a schema-1 plinth wrote, the last
/// stack outputs it recorded (the current schema records them on the stack's root).
pub(crate) struct JournalRead {
    pub entries: Vec<JournalEntry>,
    pub stack_outputs: Option<PropertyMap>,
    /// The end that could not be read, if any.
    pub torn: Option<TornEnd>,
}

/// Reads the entries of a journal left behind by an interrupted update of the checkpoint whose
/// file holds `checkpoint`; `None` if the journal is of an update already compacted into it. A
/// torn end (the process died mid-write: a cut frame, or a cut last line in a journal of plain
/// lines) is left out and reported in [`JournalRead::torn`]; damage anywhere else is an error.
/// Sealed secrets are opened with `crypter`.
pub(crate) fn read_journal(
    path: &Path,
    checkpoint: &[u8],
    crypter: &dyn Crypter,
) -> Result<Option<JournalRead>, BackendError> {
    let mut bytes = Vec::new();
    (File::open(path).and_then(|mut f| f.read_to_end(&mut bytes)))
        .map_err(BackendError::io("reading journal", path))?;
    let first_line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let (frames, start, first_number) = match serde_json::from_slice::<Header>(first_line) {
        Ok(header) if header.base != digest(checkpoint) => return Ok(None),
        Ok(header) => (header.frames, (first_line.len() + 1).min(bytes.len()), 2),
        // A journal of plinth before headers: entries from the first line.
        Err(_) => (None, 0, 1),
    };
    let mut reader = LineReader {
        path,
        crypter,
        entries: Vec::new(),
        begun: Begun::default(),
        stack_outputs: None,
        torn: None,
    };
    let body = &bytes[start..];
    match frames {
        None => reader.plain_lines(body, start as u64, first_number)?,
        Some(Frames::Gzip) => reader.frames(body, start as u64)?,
    }
    Ok(Some(JournalRead {
        entries: reader.entries,
        stack_outputs: reader.stack_outputs,
        torn: reader.torn,
    }))
}

/// Turns a journal's lines back into entries.
struct LineReader<'a> {
    path: &'a Path,
    crypter: &'a dyn Crypter,
    entries: Vec<JournalEntry>,
    begun: Begun,
    stack_outputs: Option<PropertyMap>,
    torn: Option<TornEnd>,
}

/// Why a line could not be read.
enum LineError {
    /// It is not an entry: damaged, or (the last of plain lines) torn.
    Unreadable(String),
    /// It makes no sense where it is.
    Bad(String),
    /// A sealed secret in it cannot be opened.
    Secrets(BackendError),
}

impl LineReader<'_> {
    fn corrupt(&self, place: String, reason: impl std::fmt::Display) -> BackendError {
        BackendError::State(StateError::Corrupt {
            path: self.path.to_owned(),
            reason: format!("{place}: {reason}"),
        })
    }

    /// Lines as plinth wrote them before journal frames, numbered from `first_number`, the
    /// first at byte `offset` of the file: the last may be torn.
    fn plain_lines(
        &mut self,
        body: &[u8],
        mut offset: u64,
        first_number: usize,
    ) -> Result<(), BackendError> {
        let whole = body.len() as u64;
        let body = body.strip_suffix(b"\n").unwrap_or(body);
        let end = offset + whole;
        let mut lines = body.split(|b| *b == b'\n').enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let at = offset;
            offset += line.len() as u64 + 1;
            match self.line(line) {
                Ok(()) => {}
                Err(LineError::Secrets(e)) => return Err(e),
                Err(LineError::Unreadable(_)) if lines.peek().is_none() => {
                    self.torn = Some(TornEnd {
                        place: format!("line {}", i + first_number),
                        offset: at,
                        bytes: end - at,
                    });
                    break;
                }
                Err(LineError::Unreadable(e) | LineError::Bad(e)) => {
                    return Err(self.corrupt(format!("line {}", i + first_number), e));
                }
            }
        }
        Ok(())
    }

    /// Frames, the first at byte `offset` of the file, each whole or else the torn end of the
    /// journal.
    fn frames(&mut self, mut body: &[u8], offset: u64) -> Result<(), BackendError> {
        let end = offset + body.len() as u64;
        let mut number = 0;
        while !body.is_empty() {
            number += 1;
            let at = end - body.len() as u64;
            let torn = TornEnd {
                place: format!("frame {number}"),
                offset: at,
                bytes: end - at,
            };
            let Some((len, rest)) = frame_length(body) else {
                self.torn = Some(torn);
                break;
            };
            let len = len.map_err(|e| self.corrupt(format!("frame {number}"), e))?;
            let Some(member) = rest.get(..len) else {
                self.torn = Some(torn);
                break;
            };
            body = &rest[len..];
            let mut text = Vec::new();
            match GzDecoder::new(member).read_to_end(&mut text) {
                Ok(_) => {}
                // A crash may leave the file extended but the end of the last write unwritten:
                // the last frame may be torn inside as well.
                Err(_) if body.is_empty() => {
                    self.torn = Some(torn);
                    break;
                }
                Err(e) => return Err(self.corrupt(format!("frame {number}"), e)),
            }
            let Some(text) = text.strip_suffix(b"\n") else {
                let reason = "its lines do not end in a newline";
                return Err(self.corrupt(format!("frame {number}"), reason));
            };
            for (i, line) in text.split(|b| *b == b'\n').enumerate() {
                match self.line(line) {
                    Ok(()) => {}
                    Err(LineError::Secrets(e)) => return Err(e),
                    Err(LineError::Unreadable(e) | LineError::Bad(e)) => {
                        let place = format!("frame {number}, line {}", i + 1);
                        return Err(self.corrupt(place, e));
                    }
                }
            }
        }
        Ok(())
    }

    /// Reads one line: an entry, the short end of a create, or a schema-1 stack output.
    fn line(&mut self, line: &[u8]) -> Result<(), LineError> {
        let crypter = self.crypter;
        let error = match decode_line(line, crypter) {
            Ok(Line::Entry(entry)) => {
                self.begun.follow(&entry);
                self.entries.push(entry);
                return Ok(());
            }
            Ok(Line::Short(short)) => {
                let entry = self.begun.complete(short).ok_or_else(|| {
                    LineError::Bad("the end of a create that no earlier line began".to_owned())
                })?;
                self.entries.push(entry);
                return Ok(());
            }
            Err(CodecError::Secrets(e)) => return Err(LineError::Secrets(e.into())),
            Err(e) => e,
        };
        match from_sealed_json::<SchemaOneEntry>(line, crypter) {
            Ok(SchemaOneEntry::StackOutputs { outputs }) => {
                self.stack_outputs = Some(outputs);
                Ok(())
            }
            Err(_) => Err(LineError::Unreadable(error.to_string())),
        }
    }
}

/// The length at the start of a frame, or `None` if too few bytes are left for it (a torn end).
fn frame_length(body: &[u8]) -> Option<(Result<usize, &'static str>, &[u8])> {
    let (len, rest) = body.split_first_chunk::<4>()?;
    let (check, rest) = rest.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len);
    let length = if !len == u32::from_le_bytes(*check) {
        Ok(len as usize)
    } else {
        Err("its length is damaged")
    };
    Some((length, rest))
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
            BaseFile::default(),
            (
                &plinth_engine::names::ProjectName::new("p").unwrap(),
                &plinth_engine::names::StackName::new("dev").unwrap(),
            ),
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

    /// The lines of every frame of the journal, and the header line.
    fn lines_on_disk(journal: &JournalFile) -> (String, Vec<String>) {
        let bytes = std::fs::read(&journal.journal_path).unwrap();
        let header_len = bytes.iter().position(|b| *b == b'\n').unwrap();
        let header = String::from_utf8(bytes[..header_len].to_vec()).unwrap();
        let mut body = &bytes[header_len + 1..];
        let mut lines = Vec::new();
        while let Some((len, rest)) = frame_length(body) {
            let len = len.unwrap();
            let mut text = String::new();
            GzDecoder::new(&rest[..len])
                .read_to_string(&mut text)
                .unwrap();
            lines.extend(text.lines().map(str::to_owned));
            body = &rest[len..];
        }
        assert!(body.is_empty(), "bytes after the last frame");
        (header, lines)
    }

    fn append_raw(journal: &JournalFile, bytes: &[u8]) {
        let mut file = OpenOptions::new()
            .append(true)
            .open(&journal.journal_path)
            .unwrap();
        file.write_all(bytes).unwrap();
    }

    fn read_back(journal: &JournalFile) -> Result<Vec<JournalEntry>, BackendError> {
        read_journal(&journal.journal_path, b"{}", &crate::secrets::Redacted)
            .map(|read| read.unwrap().entries)
    }

    fn read_torn(journal: &JournalFile) -> Option<TornEnd> {
        read_journal(&journal.journal_path, b"{}", &crate::secrets::Redacted)
            .unwrap()
            .unwrap()
            .torn
    }

    /// Many creates, synced in batches of `batch`.
    fn creates(journal: &mut JournalFile, count: usize, batch: usize) -> Vec<JournalEntry> {
        let mut entries = Vec::new();
        for i in 0..count {
            let begun = item(&format!("r{i}"));
            let mut created = begun.clone();
            created.id = format!("r{i}-id");
            let seq = i as u64 + 1;
            for entry in [
                JournalEntry::Begin {
                    seq,
                    kind: PendingKind::Creating,
                    resource: begun,
                    old: None,
                },
                JournalEntry::Created {
                    seq,
                    resource: created,
                    replaces: None,
                },
            ] {
                journal.append(&entry).unwrap();
                entries.push(entry);
            }
            if (i + 1) % batch == 0 {
                journal.sync().unwrap();
            }
        }
        journal.sync().unwrap();
        entries
    }

    #[test]
    fn each_sync_writes_one_compressed_frame() {
        let (_dir, mut journal) = journal();
        let entries = creates(&mut journal, 640, 64);
        let (header, lines) = lines_on_disk(&journal);
        assert!(header.contains(r#""frames":"gzip""#), "{header}");
        assert_eq!(lines.len(), entries.len());
        assert_eq!(read_back(&journal).unwrap(), entries);
        let plain: usize = lines.iter().map(|l| l.len() + 1).sum();
        let written = std::fs::metadata(&journal.journal_path).unwrap().len() as usize;
        assert!(
            written * 4 < plain,
            "{written} bytes written for {plain} bytes of lines"
        );
    }

    #[test]
    fn a_torn_last_frame_is_dropped_and_damage_before_it_is_an_error() {
        let (_dir, mut journal) = journal();
        let entries = creates(&mut journal, 20, 10);
        let bytes = std::fs::read(&journal.journal_path).unwrap();
        let header_len = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
        let (first_len, _) = frame_length(&bytes[header_len..]).unwrap();
        let second = header_len + 8 + first_len.unwrap();
        // Cut anywhere in the second frame (its length, or its member): the first stays.
        for cut in [second + 3, second + 8, second + 20, bytes.len() - 1] {
            std::fs::write(&journal.journal_path, &bytes[..cut]).unwrap();
            assert_eq!(read_back(&journal).unwrap(), entries[..20], "cut at {cut}");
            let torn = read_torn(&journal);
            let expected = TornEnd {
                place: "frame 2".into(),
                offset: second as u64,
                bytes: (cut - second) as u64,
            };
            assert_eq!(torn, Some(expected), "cut at {cut}");
        }
        std::fs::write(&journal.journal_path, &bytes).unwrap();
        assert_eq!(read_torn(&journal), None);
        // A damaged byte in the last frame's member: as torn.
        let mut damaged = bytes.clone();
        damaged[second + 30] ^= 0x55;
        std::fs::write(&journal.journal_path, &damaged).unwrap();
        assert_eq!(read_back(&journal).unwrap(), entries[..20]);
        // A damaged first frame, with a whole frame after it: an error, not a shorter journal.
        for at in [header_len + 1, header_len + 30] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x55;
            std::fs::write(&journal.journal_path, &damaged).unwrap();
            let error = read_back(&journal).unwrap_err();
            assert!(
                matches!(&error, BackendError::State(StateError::Corrupt { reason, .. }) if reason.starts_with("frame 1")),
                "{error}"
            );
        }
    }

    #[test]
    fn a_journal_of_plain_lines_still_reads() {
        let (_dir, journal) = journal();
        let header = serde_json::to_string(&Header {
            base: digest(b"{}"),
            frames: None,
        })
        .unwrap();
        let lines = [
            serde_json::to_string(&carried(0)).unwrap(),
            serde_json::to_string(&carried(1)).unwrap(),
            // Torn: the process died mid-write.
            r#"{"entry":"sa"#.to_owned(),
        ];
        std::fs::write(
            &journal.journal_path,
            format!("{header}\n{}", lines.join("\n")),
        )
        .unwrap();
        assert_eq!(read_back(&journal).unwrap(), [carried(0), carried(1)]);
        let torn = read_torn(&journal).unwrap();
        assert_eq!((torn.place.as_str(), torn.bytes), ("line 4", 12));
        // Damage before the last line is an error naming the line.
        std::fs::write(
            &journal.journal_path,
            format!("{header}\n{}\n{}\n", lines[2], lines[0]),
        )
        .unwrap();
        let error = read_back(&journal).unwrap_err();
        assert!(error.to_string().contains("line 2: "), "{error}");
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
        let (_, lines) = lines_on_disk(&journal);
        assert!(lines[2].starts_with("{\"entry\":\"created\""), "{lines:?}");
        assert_eq!(
            lines[3],
            r#"{"entry":"created-as-begun","seq":1,"replaces":3,"id":"a-1","outputs":{"result":"r"}}"#
        );
        assert_eq!(entries_on_disk(&journal), entries);

        // An end whose begin is not in the journal is an error, not a guess.
        let lines = "{\"entry\":\"created-as-begun\",\"seq\":9,\"id\":\"x\"}\n";
        append_raw(&journal, &frame(lines.as_bytes()));
        let error = read_back(&journal).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("frame 2, line 1: the end of a create"),
            "{error}"
        );
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
