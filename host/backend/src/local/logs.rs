//! The events of each update, kept for `plinth logs`: what ran, how long it took, what failed,
//! what providers and programs said. Values are never logged, so no secret can leak into a log.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use plinth_engine::events::Event;
use plinth_state::{EventNumbering, LogEntry, StateError};

use crate::api::EventLog;
use crate::error::BackendError;

/// The event log of an update of a stack on the file backend: gzipped JSON lines in
/// `<stack>.logs/<number>.jsonl.gz`, beside the stack's history. Compressed, since it holds
/// two events for every step, about half as many bytes as the checkpoint when uncompressed.
pub(crate) struct FileEventLog {
    path: PathBuf,
    out: GzEncoder<BufWriter<File>>,
    numbering: EventNumbering,
    /// The first failure to write, reported by `finish`.
    failed: Option<std::io::Error>,
}

impl FileEventLog {
    /// Starts the log at `path`, replacing one an interrupted update of the same number left.
    pub(crate) fn create(path: PathBuf) -> Result<FileEventLog, BackendError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(BackendError::io("creating", dir))?;
        }
        let file = File::create(&path).map_err(BackendError::io("creating event log", &path))?;
        Ok(FileEventLog {
            path,
            out: GzEncoder::new(BufWriter::new(file), Compression::fast()),
            numbering: EventNumbering::default(),
            failed: None,
        })
    }
}

impl EventLog for FileEventLog {
    fn record(&mut self, event: &Event) {
        if self.failed.is_some() {
            return;
        }
        let Some(entry) = self.numbering.entry(event) else {
            return;
        };
        let mut line = serde_json::to_vec(&entry).expect("log entries serialize");
        line.push(b'\n');
        if let Err(e) = self.out.write_all(&line) {
            self.failed = Some(e);
        }
    }

    fn finish(self: Box<Self>) -> Result<(), BackendError> {
        let FileEventLog {
            path, out, failed, ..
        } = *self;
        let written = match failed {
            Some(e) => Err(e),
            None => (out.finish())
                .and_then(|out| out.into_inner().map_err(|e| e.into_error()))
                .and_then(|file| file.sync_data()),
        };
        written.map_err(BackendError::io("writing event log", &path))
    }
}

/// The events logged at `path` (`N.jsonl.gz`, or `N.jsonl` as plinth wrote logs before it
/// compressed them); none if there is no log (an import, an edit by hand). A torn end (a crash
/// mid-write) is skipped.
pub(crate) fn read_log(path: &Path) -> Result<Vec<LogEntry>, BackendError> {
    let plain = path.with_extension("");
    let compressed = path.exists() || !plain.exists();
    let path = if compressed { path } else { plain.as_path() };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(BackendError::io("reading event log", path)(e)),
    };
    let mut text = Vec::new();
    let read = if compressed {
        MultiGzDecoder::new(file).read_to_end(&mut text)
    } else {
        (&file).read_to_end(&mut text)
    };
    match read {
        Ok(_) => {}
        // A log cut short: what was decoded is kept, and its torn last line skipped below.
        Err(e) if compressed && e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => return Err(BackendError::io("reading event log", path)(e)),
    }
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.len().saturating_sub(1);
    let mut entries = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(entry) => entries.push(entry),
            Err(_) if i == last => {}
            Err(e) => {
                return Err(BackendError::State(StateError::Corrupt {
                    path: path.to_owned(),
                    reason: format!("line {}: {e}", i + 1),
                }));
            }
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_engine::events::{StepInfo, StepOp};
    use plinth_engine::urn::Urn;
    use plinth_state::LoggedEvent;

    fn step() -> StepInfo {
        StepInfo {
            op: StepOp::Create,
            urn: Urn::new("dev", "p", None, "t:T", "a"),
            parent: None,
            custom: true,
            old_inputs: None,
            new_inputs: Some(Default::default()),
            changed: vec![],
            replaces: vec![],
            write_only: Vec::new(),
        }
    }

    #[test]
    fn events_round_trip_numbered_and_outputs_are_not_logged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/1.jsonl.gz");
        let mut log = Box::new(FileEventLog::create(path.clone()).unwrap());
        log.record(&Event::StepStarted(step()));
        log.record(&Event::Outputs {
            old: Default::default(),
            new: Default::default(),
        });
        log.record(&Event::StepFailed {
            step: step(),
            error: "disk full".into(),
        });
        log.finish().unwrap();
        let entries = read_log(&path).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].seq, 1);
        assert_eq!(entries[1].seq, 2);
        assert_eq!(
            entries[1].event,
            LoggedEvent::StepFailed {
                op: "create".into(),
                urn: "urn:plinth:dev::p::t:T::a".into(),
                error: "disk full".into()
            }
        );
    }

    #[test]
    fn a_torn_last_line_of_a_plain_log_is_skipped_and_garbage_before_it_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.jsonl");
        // Read as the log of update 1 is: the compressed name, falling back to the plain one.
        let gz = dir.path().join("1.jsonl.gz");
        std::fs::write(
            &path,
            "{\"seq\":1,\"at_ms\":0,\"event\":\"cancelled\"}\n{\"se",
        )
        .unwrap();
        assert_eq!(read_log(&gz).unwrap().len(), 1);
        std::fs::write(
            &path,
            "garbage\n{\"seq\":1,\"at_ms\":0,\"event\":\"cancelled\"}\n",
        )
        .unwrap();
        assert!(matches!(
            read_log(&gz),
            Err(BackendError::State(StateError::Corrupt { .. }))
        ));
        assert!(
            read_log(&dir.path().join("none.jsonl.gz"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_compressed_log_cut_short_keeps_its_whole_lines_and_an_old_plain_log_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.jsonl.gz");
        let mut log = Box::new(FileEventLog::create(path.clone()).unwrap());
        for _ in 0..200 {
            log.record(&Event::StepStarted(step()));
        }
        log.finish().unwrap();
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
        let kept = read_log(&path).unwrap();
        assert!(!kept.is_empty() && kept.len() < 200, "{}", kept.len());
        let seqs: Vec<u64> = kept.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=kept.len() as u64).collect::<Vec<_>>());

        // Update 2 was logged by a plinth before compressed logs.
        let plain = dir.path().join("2.jsonl");
        std::fs::write(&plain, "{\"seq\":1,\"at_ms\":0,\"event\":\"cancelled\"}\n").unwrap();
        assert_eq!(read_log(&dir.path().join("2.jsonl.gz")).unwrap().len(), 1);
    }
}
