//! A stack's history (one JSON line per update, refresh, destroy, import or edit by hand) and
//! the backups of its checkpoint taken before each of them, as the file backend keeps them.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use plinth_engine::names::{ProjectName, StackName};
use plinth_state::{HistoryEntry, StateError};

use super::LocalBackend;
use crate::error::BackendError;

impl LocalBackend {
    fn history_path(&self, project: &ProjectName, stack: &StackName) -> PathBuf {
        self.path(project, stack, "history")
    }

    pub(crate) fn backup_dir(&self, project: &ProjectName, stack: &StackName) -> PathBuf {
        self.project_dir(project).join(".backups").join(stack)
    }

    /// Appends an entry to the stack's history, durably.
    pub fn append_history(
        &self,
        project: &ProjectName,
        stack: &StackName,
        entry: &HistoryEntry,
    ) -> Result<(), BackendError> {
        let path = self.history_path(project, stack);
        let mut line = serde_json::to_vec(entry).expect("history entries serialize");
        line.push(b'\n');
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(BackendError::io("opening history", &path))?;
        file.write_all(&line)
            .and_then(|()| file.sync_data())
            .map_err(BackendError::io("writing history", &path))
    }

    /// The stack's history, newest first. A torn last line (a crash mid-append) is skipped.
    /// Reads no state, so it needs no secrets.
    pub fn history(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<Vec<HistoryEntry>, BackendError> {
        self.require_stack(project, stack)?;
        let path = self.history_path(project, stack);
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(BackendError::io("reading history", &path)(e)),
        };
        let lines: Vec<_> = BufReader::new(file)
            .lines()
            .collect::<Result<_, _>>()
            .map_err(BackendError::io("reading history", &path))?;
        let last = lines.len().saturating_sub(1);
        let mut entries = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            match serde_json::from_str(line) {
                Ok(entry) => entries.push(entry),
                Err(_) if i == last => {}
                Err(e) => {
                    return Err(BackendError::State(StateError::Corrupt {
                        path,
                        reason: format!("line {}: {e}", i + 1),
                    }));
                }
            }
        }
        entries.reverse();
        Ok(entries)
    }

    /// Keeps the current checkpoint in the stack's backups, named by the time it was kept and
    /// the version it holds (as many as the history has entries: the checkpoint is the state
    /// the last of them left), so that `stack rollback` finds it.
    ///
    /// A hard link keeps it without writing it again: a checkpoint is never written in place,
    /// only replaced ([`write_atomically`](crate::write_atomically)), so the backup keeps the
    /// contents it had. Where the file system has no hard links, it is copied.
    pub(crate) fn backup_checkpoint(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<(), BackendError> {
        let dir = self.backup_dir(project, stack);
        std::fs::create_dir_all(&dir).map_err(BackendError::io("creating", &dir))?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let version = self.history(project, stack)?.len();
        let target = dir.join(format!("{stack}.{nanos}.v{version}.json"));
        let source = self.path(project, stack, "json");
        std::fs::hard_link(&source, &target)
            .or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::AlreadyExists => Err(e),
                _ => std::fs::copy(&source, &target).map(drop),
            })
            .map_err(BackendError::io("backing up", &source))
    }

    /// The stack's checkpoint backups, oldest first.
    pub fn backups(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<Vec<PathBuf>, BackendError> {
        let dir = self.backup_dir(project, stack);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(BackendError::io("listing", &dir)(e)),
        };
        let mut backups = entries
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(BackendError::io("listing", &dir))?;
        backups.sort();
        Ok(backups)
    }

    /// The checkpoint of version `number` (the state history entry `number` left): the first
    /// backup taken while it was the latest, or the checkpoint itself if it still is.
    pub fn version(
        &self,
        project: &ProjectName,
        stack: &StackName,
        number: u64,
    ) -> Result<Vec<u8>, BackendError> {
        let latest = self.history(project, stack)?.len() as u64;
        let missing = |reason: String| BackendError::NoVersion {
            stack: stack.to_string(),
            version: number,
            reason,
        };
        if number == 0 || number > latest {
            return Err(missing(format!(
                "its versions are 1 to {latest}, as `plinth stack history` counts them"
            )));
        }
        let path = match number == latest {
            true => self.path(project, stack, "json"),
            false => {
                let backups = self.backups(project, stack)?;
                let versions: Vec<(u64, &PathBuf)> = (backups.iter())
                    .filter_map(|path| Some((backup_version(stack, path)?, path)))
                    .collect();
                match versions.iter().find(|(v, _)| *v == number) {
                    Some((_, path)) => (*path).clone(),
                    None => {
                        let mut kept: Vec<String> = (versions.iter())
                            .filter(|(v, _)| *v >= 1)
                            .map(|(v, _)| v.to_string())
                            .collect();
                        kept.dedup();
                        return Err(missing(format!(
                            "no backup of it is kept in {} (one is kept before each change, \
                             but those an older plinth kept do not say which version they \
                             hold); versions kept: {}",
                            self.backup_dir(project, stack).display(),
                            match kept.is_empty() {
                                true => "none".to_owned(),
                                false => kept.join(", "),
                            }
                        )));
                    }
                }
            }
        };
        std::fs::read(&path).map_err(BackendError::io("reading", &path))
    }
}

/// The version a backup named `<stack>.<nanos>.v<version>.json` holds; none for a backup an
/// older plinth named without it.
fn backup_version(stack: &StackName, path: &std::path::Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix(&**stack)?.strip_prefix('.')?;
    let (_, version) = rest.strip_suffix(".json")?.rsplit_once(".v")?;
    version.parse().ok()
}

#[cfg(test)]
mod tests {
    use plinth_engine::events::ChangeSummary;
    use plinth_state::{PluginUse, UpdateKind, UpdateResult};

    use super::*;

    fn p() -> ProjectName {
        ProjectName::new("p").unwrap()
    }

    fn dev() -> StackName {
        StackName::new("dev").unwrap()
    }

    #[test]
    fn entries_record_plugins_and_older_entries_load_without_them() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let backend = LocalBackend::from_url(Some(&url)).unwrap();
        backend.create_stack(&p(), &dev()).unwrap();
        let older = r#"{"kind":"update","started":1,"ended":2,"result":"succeeded","changes":{"same":0,"create":1,"update":0,"replace":0,"delete":0},"plinth":"0.1.0"}"#;
        std::fs::write(backend.history_path(&p(), &dev()), format!("{older}\n")).unwrap();
        let plugin = PluginUse {
            name: "random".into(),
            version: "0.1.0".into(),
            sha256: "ab".repeat(32),
        };
        let entry = HistoryEntry::ended_now(
            UpdateKind::Update,
            SystemTime::now(),
            UpdateResult::Succeeded,
            ChangeSummary::default(),
        )
        .with_plugins(vec![plugin.clone()]);
        backend.append_history(&p(), &dev(), &entry).unwrap();

        let entries = backend.history(&p(), &dev()).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].plugins, [plugin]);
        assert!(entries[1].plugins.is_empty());
    }

    /// Backups are hard links to the checkpoints they keep, which is sound only as long as
    /// nothing writes a checkpoint in place. Every way plinth writes one (an update's
    /// compaction, a journal an interrupted update left folded in, an edit by hand, an import)
    /// must give the checkpoint a new file and leave each backup as it was when taken.
    #[test]
    fn every_write_replaces_the_checkpoint_and_leaves_each_backup_as_it_was_taken() {
        use std::collections::BTreeMap;
        use std::os::unix::fs::MetadataExt;

        use plinth_engine::journal::{JournalEntry, Persister};
        use plinth_engine::snapshot::{PendingKind, Snapshot};

        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let b = LocalBackend::from_url(Some(&url)).unwrap();
        b.create_stack(&p(), &dev()).unwrap();
        let path = b.path(&p(), &dev(), "json");
        let mut kept: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
        // Runs `change`, then checks the checkpoint and every backup.
        let mut step = |writes_checkpoint: bool, change: &mut dyn FnMut()| {
            let before = std::fs::read(&path).unwrap();
            let inode = std::fs::metadata(&path).unwrap().ino();
            change();
            let now = std::fs::metadata(&path).unwrap().ino();
            assert_eq!(now != inode, writes_checkpoint, "inode {inode} → {now}");
            for backup in b.backups(&p(), &dev()).unwrap() {
                let kept = kept.entry(backup.clone()).or_insert_with(|| before.clone());
                assert_eq!(
                    &std::fs::read(&backup).unwrap(),
                    kept,
                    "{}",
                    backup.display()
                );
            }
        };
        let created = |name: &str| {
            let resource = crate::local::tests::resource(name);
            [
                JournalEntry::Begin {
                    seq: 1,
                    kind: PendingKind::Creating,
                    resource: resource.clone(),
                    old: None,
                },
                JournalEntry::Created {
                    seq: 1,
                    resource,
                    replaces: None,
                },
            ]
        };
        let record = |persister: &mut dyn Persister, entries: &[JournalEntry]| {
            entries.iter().for_each(|e| persister.append(e).unwrap());
            persister.sync().unwrap();
        };

        // An update, compacted.
        step(true, &mut || {
            let lock = b.lock(&p(), &dev(), "up").unwrap();
            let loaded = b.load(&p(), &dev()).unwrap();
            let mut persister = b.begin_update(&p(), &dev(), &loaded, &lock).unwrap();
            let entries = created("a");
            record(persister.as_mut(), &entries);
            let snapshot = plinth_engine::journal::replay(loaded.snapshot, entries).unwrap();
            persister.compact(&snapshot).unwrap();
        });
        // An update killed before its end: its journal stays, the checkpoint is not written.
        step(false, &mut || {
            let lock = b.lock(&p(), &dev(), "up").unwrap();
            let loaded = b.load(&p(), &dev()).unwrap();
            let mut persister = b.begin_update(&p(), &dev(), &loaded, &lock).unwrap();
            record(persister.as_mut(), &created("b"));
        });
        // The next update folds that journal into the checkpoint first.
        step(true, &mut || {
            let lock = b.lock(&p(), &dev(), "up").unwrap();
            let loaded = b.load(&p(), &dev()).unwrap();
            assert!(loaded.recovered);
            drop(b.begin_update(&p(), &dev(), &loaded, &lock).unwrap());
        });
        // An edit by hand.
        step(true, &mut || {
            let lock = b.lock(&p(), &dev(), "state protect").unwrap();
            let mut edit = b.load_for_edit(&p(), &dev(), &lock).unwrap();
            let urn = edit.snapshot().resources[0].urn.clone();
            edit.snapshot_mut().set_protect(&urn, true).unwrap();
            b.save_edit(&p(), &dev(), edit, &lock).unwrap();
        });
        // An import.
        step(true, &mut || {
            let exported = b.export(&p(), &dev()).unwrap();
            let lock = b.lock(&p(), &dev(), "stack import").unwrap();
            b.import(&p(), &dev(), &exported, false, &lock).unwrap();
        });
        let snapshot: Snapshot = b.load(&p(), &dev()).unwrap().snapshot;
        assert_eq!(snapshot.resources.len(), 2);
        assert_eq!(b.backups(&p(), &dev()).unwrap().len(), 5);
    }

    #[test]
    fn the_history_of_a_stack_with_secrets_needs_no_key() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let keyless = LocalBackend::from_url(Some(&url)).unwrap();
        let (p, dev) = (
            ProjectName::new("p").unwrap(),
            StackName::new("dev").unwrap(),
        );
        keyless.create_stack(&p, &dev).unwrap();
        // A checkpoint holding a sealed secret, which this backend cannot open.
        let path = keyless.path(&p, &dev, "json");
        let json = std::fs::read_to_string(&path).unwrap();
        let sealed = json.replace(
            "\"resources\": []",
            "\"resources\": [{\"urn\": \"urn:plinth:dev::p::plinth:plinth:Stack::p-dev\", \
             \"type\": \"plinth:plinth:Stack\", \"custom\": false, \"outputs\": \
             {\"token\": {\"plinth:sig\": \"secret\", \"ciphertext\": \"v1:AAAA\"}}}]",
        );
        assert_ne!(sealed, json, "{json}");
        std::fs::write(&path, sealed).unwrap();
        assert!(keyless.load(&p, &dev).is_err());
        let entry = HistoryEntry::ended_now(
            UpdateKind::Update,
            SystemTime::now(),
            UpdateResult::Succeeded,
            ChangeSummary::default(),
        );
        keyless.append_history(&p, &dev, &entry).unwrap();
        assert_eq!(keyless.history(&p, &dev).unwrap(), [entry]);
    }

    #[test]
    fn a_version_is_the_first_backup_taken_while_it_was_the_latest() {
        use crate::write_atomically;

        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let b = LocalBackend::from_url(Some(&url)).unwrap();
        b.create_stack(&p(), &dev()).unwrap();
        let checkpoint = b.path(&p(), &dev(), "json");
        let entry = HistoryEntry::ended_now(
            UpdateKind::Update,
            SystemTime::now(),
            UpdateResult::Succeeded,
            ChangeSummary::default(),
        );
        // Version 1 is backed up twice (before each of two changes that recorded nothing);
        // the first backup is the state version 1 left.
        for (n, text) in ["one", "one-and-a-crash", "two"].iter().enumerate() {
            b.backup_checkpoint(&p(), &dev()).unwrap();
            write_atomically(&checkpoint, text.as_bytes()).unwrap();
            if n != 1 {
                b.append_history(&p(), &dev(), &entry).unwrap();
            }
        }
        assert_eq!(b.version(&p(), &dev(), 1).unwrap(), b"one");
        assert_eq!(b.version(&p(), &dev(), 2).unwrap(), b"two");
        for missing in [0, 3] {
            let e = b.version(&p(), &dev(), missing).unwrap_err().to_string();
            assert!(e.contains("versions are 1 to 2"), "{e}");
        }
        // A backup an older plinth named without its version is no version's.
        for backup in b.backups(&p(), &dev()).unwrap() {
            let name = backup.to_string_lossy().replace(".v1.json", ".json");
            std::fs::rename(&backup, name).unwrap();
        }
        let e = b.version(&p(), &dev(), 1).unwrap_err().to_string();
        assert!(
            e.contains("no backup of it is kept") && e.contains("versions kept: none"),
            "{e}"
        );
    }
}
