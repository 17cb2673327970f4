//! The file backend behind the [`Backend`] interface: an update holds the stack's lock file, its
//! journal goes next to the checkpoint, its events to `<stack>.logs/<number>.jsonl.gz`.

use std::path::PathBuf;
use std::sync::Arc;

use plinth_engine::names::{ProjectName, StackName};

use crate::api::{Backend, Recording, StackRef, Update};
use plinth_state::tags::StackTags;
use plinth_state::{
    HistoryEntry, ImportReport, LoadedStack, LockHolder, StackSummary, UpdateLog, UsedPlugins,
};

use super::lock::StackLock;
use super::logs::{FileEventLog, read_log};
use super::{BaseFile, Fields, LocalBackend};
use crate::edit::StateEdit;
use crate::error::BackendError;
use crate::secrets::Crypter;

impl LocalBackend {
    pub(crate) fn logs_dir(&self, project: &ProjectName, stack: &StackName) -> PathBuf {
        self.project_dir(project).join(format!("{stack}.logs"))
    }

    /// Where the events of update `number` of the stack are logged.
    pub(crate) fn log_path(
        &self,
        project: &ProjectName,
        stack: &StackName,
        number: u64,
    ) -> PathBuf {
        self.logs_dir(project, stack)
            .join(format!("{number}.jsonl.gz"))
    }

    /// Removes the stack's event logs (with the stack).
    pub(crate) fn remove_logs(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<(), BackendError> {
        let dir = self.logs_dir(project, stack);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(BackendError::io("removing", &dir)(e))
            }
            _ => Ok(()),
        }
    }
}

fn found(project: &ProjectName, name: &StackName) -> StackRef {
    StackRef {
        project: project.clone(),
        name: name.clone(),
    }
}

impl Backend for LocalBackend {
    fn url(&self) -> String {
        format!("file://{}", self.root().display())
    }

    fn user(&self) -> Result<String, BackendError> {
        Ok(std::env::var("USER").unwrap_or_else(|_| "unknown".to_owned()))
    }

    /// A directory keeps no session.
    fn logout(&self) -> Result<(), BackendError> {
        Ok(())
    }

    fn create_stack(
        &self,
        project: &ProjectName,
        name: &StackName,
    ) -> Result<StackRef, BackendError> {
        LocalBackend::create_stack(self, project, name)?;
        Ok(found(project, name))
    }

    fn get_stack(&self, project: &ProjectName, name: &StackName) -> Result<StackRef, BackendError> {
        self.require_stack(project, name)?;
        Ok(found(project, name))
    }

    fn list_stacks(&self, project: &ProjectName) -> Result<Vec<StackSummary>, BackendError> {
        self.stacks(project)
    }

    fn remove_stack(&self, stack: &StackRef, force: bool) -> Result<Option<String>, BackendError> {
        LocalBackend::remove_stack(self, &stack.project, &stack.name, force).map(|()| None)
    }

    fn rename_stack(&self, stack: &StackRef, new: &StackName) -> Result<StackRef, BackendError> {
        LocalBackend::rename_stack(self, &stack.project, &stack.name, new)?;
        Ok(found(&stack.project, new))
    }

    fn tags(&self, stack: &StackRef) -> Result<StackTags, BackendError> {
        LocalBackend::tags(self, &stack.project, &stack.name)
    }

    fn set_tag(&self, stack: &StackRef, name: &str, value: &str) -> Result<(), BackendError> {
        LocalBackend::set_tag(self, &stack.project, &stack.name, name, value)
    }

    fn remove_tag(&self, stack: &StackRef, name: &str) -> Result<bool, BackendError> {
        LocalBackend::remove_tag(self, &stack.project, &stack.name, name)
    }

    fn selected_stack(&self, project: &ProjectName) -> Option<StackName> {
        LocalBackend::selected_stack(self, project)
    }

    fn select_stack(&self, stack: &StackRef) -> Result<(), BackendError> {
        LocalBackend::select_stack(self, &stack.project, &stack.name)
    }

    fn crypter(&self, stack: &StackRef) -> Arc<dyn Crypter> {
        LocalBackend::crypter(self, &stack.name)
    }

    fn load(&self, stack: &StackRef) -> Result<LoadedStack, BackendError> {
        let crypter = self.crypter(&stack.name);
        self.load_unlocked(&stack.project, &stack.name, crypter.as_ref())
    }

    fn load_redacted(&self, stack: &StackRef) -> Result<LoadedStack, BackendError> {
        let redacted = crate::secrets::Redacted;
        self.load_unlocked(&stack.project, &stack.name, &redacted)
    }

    /// Locks before loading: a snapshot loaded outside the lock could be overtaken by the
    /// update holding it, and written back over that update's work.
    fn begin_update(
        &self,
        stack: &StackRef,
        command: &str,
    ) -> Result<Box<dyn Update>, BackendError> {
        let lock = self.lock(&stack.project, &stack.name, command)?;
        Ok(Box::new(LocalUpdate {
            backend: self.clone(),
            stack: stack.clone(),
            base: None,
            base_file: BaseFile::default(),
            handed_over: false,
            lock,
        }))
    }

    fn holder(&self, stack: &StackRef) -> Result<Option<LockHolder>, BackendError> {
        self.lock_holder(&stack.project, &stack.name)
    }

    fn cancel(&self, stack: &StackRef) -> Result<(), BackendError> {
        let StackRef { project, name } = stack;
        match self.lock_holder(project, name)? {
            // Taking a stale lock takes its file over, and releasing it removes it: a lock a
            // new update took meanwhile is refused, not broken.
            Some(holder) if !holder.running => {
                drop(self.lock(project, name, "cancel")?);
                Ok(())
            }
            Some(_) => self.break_lock(project, name),
            None => Ok(()),
        }
    }

    fn history(&self, stack: &StackRef) -> Result<Vec<HistoryEntry>, BackendError> {
        LocalBackend::history(self, &stack.project, &stack.name)
    }

    fn logs(
        &self,
        stack: &StackRef,
        number: Option<u64>,
    ) -> Result<Option<UpdateLog>, BackendError> {
        let history = LocalBackend::history(self, &stack.project, &stack.name)?;
        let count = history.len() as u64;
        let number = number.unwrap_or(count);
        if number == 0 || number > count {
            return Ok(None);
        }
        // Newest first: update `count` is at 0.
        let entry = history[(count - number) as usize].clone();
        let events = read_log(&self.log_path(&stack.project, &stack.name, number))?;
        Ok(Some(UpdateLog {
            number,
            entry,
            events,
        }))
    }

    fn export(&self, stack: &StackRef) -> Result<Vec<u8>, BackendError> {
        LocalBackend::export(self, &stack.project, &stack.name)
    }

    fn version(&self, stack: &StackRef, number: u64) -> Result<Vec<u8>, BackendError> {
        LocalBackend::version(self, &stack.project, &stack.name, number)
    }
}

/// A stack of the file backend, locked for a change.
struct LocalUpdate {
    backend: LocalBackend,
    stack: StackRef,
    /// Loaded on first use, under the lock.
    base: Option<LoadedStack>,
    /// What the load said of the checkpoint file the base came from.
    base_file: BaseFile,
    /// The base was handed over ([`Update::take_base`]) as it is on disk (no journal replayed
    /// into it): recording the next phase needs nothing of it.
    handed_over: bool,
    lock: StackLock,
}

impl LocalUpdate {
    /// The base, loaded if it was not yet.
    fn take_loaded(&mut self) -> Result<LoadedStack, BackendError> {
        if let Some(base) = self.base.take() {
            return Ok(base);
        }
        let StackRef { project, name } = &self.stack;
        let crypter = self.backend.crypter(name);
        let (base, file) =
            (self.backend).load_file(project, name, crypter.as_ref(), Fields::Checked, true)?;
        self.base_file = file;
        Ok(base)
    }

    fn append_history(&self, entry: &HistoryEntry) -> Result<(), BackendError> {
        let StackRef { project, name } = &self.stack;
        self.backend.append_history(project, name, entry)
    }
}

impl Update for LocalUpdate {
    fn base(&mut self) -> Result<&LoadedStack, BackendError> {
        let base = self.take_loaded()?;
        Ok(self.base.insert(base))
    }

    fn take_base(&mut self) -> Result<LoadedStack, BackendError> {
        let base = self.take_loaded()?;
        if base.recovered {
            // Recording the phase writes it as the checkpoint first (the journal an interrupted
            // update left, folded in): this rare case keeps a copy.
            self.base = Some(base.clone());
        } else {
            self.handed_over = true;
        }
        Ok(base)
    }

    fn record(&mut self, plugins: UsedPlugins) -> Result<Recording, BackendError> {
        let base = match self.base.take() {
            // Only whether it was recovered counts, and a base handed over was not.
            None if self.handed_over => LoadedStack {
                snapshot: Default::default(),
                recovered: false,
                plugins: Vec::new(),
                torn: None,
                running: None,
            },
            _ => self.take_loaded()?,
        };
        let StackRef { project, name } = &self.stack;
        let base_file = self.base_file.clone();
        let persister = (self.backend)
            .begin_update_with_plugins(project, name, &base, base_file, &self.lock, plugins);
        // Once recording started, the caller works on the copy of the base it took, and the
        // next phase reads what this one left: keeping this one would hold the state twice.
        let handed_over = self.handed_over;
        let persister = persister.inspect_err(|_| {
            if !handed_over {
                self.base = Some(base);
            }
        })?;
        // The phase becomes the next entry of the history; the lock keeps anyone else from
        // appending before it does.
        let number = self.backend.history(project, name)?.len() as u64 + 1;
        let events = FileEventLog::create(self.backend.log_path(project, name, number))?;
        Ok(Recording {
            persister,
            events: Box::new(events),
        })
    }

    fn complete(&mut self, entry: &HistoryEntry) -> Result<(), BackendError> {
        self.append_history(entry)?;
        // What the phase left is read anew when the next phase asks.
        self.base = None;
        self.handed_over = false;
        Ok(())
    }

    fn load_for_edit(&mut self) -> Result<StateEdit, BackendError> {
        let StackRef { project, name } = &self.stack;
        self.backend.load_for_edit(project, name, &self.lock)
    }

    fn save_edit(&mut self, edit: StateEdit, entry: &HistoryEntry) -> Result<(), BackendError> {
        let StackRef { project, name } = &self.stack;
        self.backend.save_edit(project, name, edit, &self.lock)?;
        self.append_history(entry)
    }

    fn import(
        &mut self,
        bytes: &[u8],
        force: bool,
        entry: &HistoryEntry,
    ) -> Result<ImportReport, BackendError> {
        let StackRef { project, name } = &self.stack;
        let report = self
            .backend
            .import(project, name, bytes, force, &self.lock)?;
        self.append_history(entry)?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use plinth_engine::events::{ChangeSummary, Event};
    use plinth_engine::journal::JournalEntry;
    use plinth_engine::snapshot::{PendingKind, Snapshot};

    use super::*;
    use crate::local::tests::resource;
    use plinth_state::{PluginUse, UpdateKind, UpdateResult};

    fn backend() -> (tempfile::TempDir, Arc<dyn Backend>) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        (dir, Arc::new(LocalBackend::from_url(Some(&url)).unwrap()))
    }

    fn names() -> (ProjectName, StackName) {
        (
            ProjectName::new("p").unwrap(),
            StackName::new("dev").unwrap(),
        )
    }

    fn entry(kind: UpdateKind) -> HistoryEntry {
        HistoryEntry::ended_now(
            kind,
            SystemTime::now(),
            UpdateResult::Succeeded,
            ChangeSummary::default(),
        )
    }

    #[test]
    fn an_update_holds_the_stack_until_dropped() {
        let (_dir, b) = backend();
        let (p, dev) = names();
        let stack = b.create_stack(&p, &dev).unwrap();
        assert_eq!(b.get_stack(&p, &dev).unwrap(), stack);
        let update = b.begin_update(&stack, "up").unwrap();
        let err = b.begin_update(&stack, "destroy").err().unwrap();
        assert!(matches!(err, BackendError::Locked { .. }), "{err}");
        assert!(err.to_string().contains("`up`"), "{err}");
        assert!(b.holder(&stack).unwrap().unwrap().running);
        drop(update);
        assert!(b.holder(&stack).unwrap().is_none());
        b.begin_update(&stack, "up").unwrap();
    }

    #[test]
    fn phases_are_journaled_logged_and_numbered_as_history_counts_them() {
        let (_dir, b) = backend();
        let (p, dev) = names();
        let stack = b.create_stack(&p, &dev).unwrap();
        assert!(b.logs(&stack, None).unwrap().is_none());
        let mut update = b.begin_update(&stack, "up").unwrap();
        assert!(update.base().unwrap().snapshot.resources.is_empty());
        for (i, name) in ["a", "b"].into_iter().enumerate() {
            let mut recording = update.record(UsedPlugins::default()).unwrap();
            let begin = JournalEntry::Begin {
                seq: 1,
                kind: PendingKind::Creating,
                resource: resource(name),
                old: None,
            };
            recording.persister.append(&begin).unwrap();
            let created = JournalEntry::Created {
                seq: 1,
                resource: resource(name),
                replaces: None,
            };
            recording.persister.append(&created).unwrap();
            recording.persister.sync().unwrap();
            for _ in 0..=i {
                recording.events.record(&Event::Cancelled);
            }
            recording.events.finish().unwrap();
            update.complete(&entry(UpdateKind::Update)).unwrap();
            // The next phase starts from what this one left.
            assert_eq!(update.base().unwrap().snapshot.resources.len(), i + 1);
        }
        drop(update);
        let latest = b.logs(&stack, None).unwrap().unwrap();
        assert_eq!((latest.number, latest.events.len()), (2, 2));
        assert_eq!(b.logs(&stack, Some(1)).unwrap().unwrap().events.len(), 1);
        assert!(b.logs(&stack, Some(3)).unwrap().is_none());
        assert_eq!(b.history(&stack).unwrap().len(), 2);
    }

    #[test]
    fn a_base_handed_over_is_neither_kept_nor_read_again_to_record_the_phase() {
        let (dir, b) = backend();
        let (p, dev) = names();
        let stack = b.create_stack(&p, &dev).unwrap();
        let mut update = b.begin_update(&stack, "up").unwrap();
        let base = update.take_base().unwrap();
        assert!(base.snapshot.resources.is_empty() && !base.recovered);
        // Recording would refuse a damaged checkpoint if it read the state again.
        std::fs::write(dir.path().join("stacks/p/dev.json"), b"{ damaged").unwrap();
        let recording = update.record(UsedPlugins::default()).unwrap();
        recording.events.finish().unwrap();
        update.complete(&entry(UpdateKind::Update)).unwrap();
        // The next phase reads what is on disk again.
        assert!(update.base().is_err());
    }

    /// Journals the creation of a resource `a` and syncs it; returns the entries.
    fn create_a(recording: &mut Recording) -> [JournalEntry; 2] {
        let entries = [
            JournalEntry::Begin {
                seq: 1,
                kind: PendingKind::Creating,
                resource: resource("a"),
                old: None,
            },
            JournalEntry::Created {
                seq: 1,
                resource: resource("a"),
                replaces: None,
            },
        ];
        for entry in &entries {
            recording.persister.append(entry).unwrap();
        }
        recording.persister.sync().unwrap();
        entries
    }

    #[test]
    fn the_journal_names_the_checkpoint_the_update_loaded_and_a_crash_is_replayed_from_it() {
        let (dir, b) = backend();
        let (p, dev) = names();
        let stack = b.create_stack(&p, &dev).unwrap();
        let checkpoint = std::fs::read(dir.path().join("stacks/p/dev.json")).unwrap();
        let mut update = b.begin_update(&stack, "up").unwrap();
        update.take_base().unwrap();
        let mut recording = update.record(UsedPlugins::default()).unwrap();
        create_a(&mut recording);
        let journal = std::fs::read(dir.path().join("stacks/p/dev.journal")).unwrap();
        let header: serde_json::Value =
            serde_json::from_slice(journal.split(|b| *b == b'\n').next().unwrap()).unwrap();
        assert_eq!(header["base"], crate::local::journal::digest(&checkpoint));
        // The process dies here: the next load replays the journal over that checkpoint.
        drop((recording, update));
        let loaded = b.load(&stack).unwrap();
        assert!(loaded.recovered);
        assert!(
            loaded
                .snapshot
                .resources
                .iter()
                .any(|r| r.urn == resource("a").urn)
        );
    }

    #[test]
    fn an_update_that_changes_nothing_leaves_a_current_checkpoint_as_it_is() {
        use std::os::unix::fs::MetadataExt;
        let (dir, b) = backend();
        let (p, dev) = names();
        let stack = b.create_stack(&p, &dev).unwrap();
        let checkpoint = dir.path().join("stacks/p/dev.json");
        let journal = dir.path().join("stacks/p/dev.journal");
        let file = || {
            (
                std::fs::metadata(&checkpoint).unwrap().ino(),
                std::fs::read(&checkpoint).unwrap(),
            )
        };
        let plugin = |version: &str| {
            let used = UsedPlugins::default();
            used.record(PluginUse {
                name: "t".into(),
                version: version.into(),
                sha256: "0".repeat(64),
            });
            used
        };
        // One phase records a resource; each later one changes nothing, and ends with
        // `compact_unchanged`, as the snapshot manager ends such an operation.
        let mut update = b.begin_update(&stack, "up").unwrap();
        let mut recording = update.record(plugin("1.0.0")).unwrap();
        let entries = create_a(&mut recording);
        let snapshot = plinth_engine::journal::replay(Snapshot::default(), entries).unwrap();
        recording.persister.compact(&snapshot).unwrap();
        update.complete(&entry(UpdateKind::Update)).unwrap();
        let unchanged_phase = |update: &mut Box<dyn Update>, plugins: UsedPlugins| {
            let base = update.take_base().unwrap();
            assert_eq!(base.snapshot, snapshot);
            let mut recording = update.record(plugins).unwrap();
            recording
                .persister
                .compact_unchanged(&base.snapshot)
                .unwrap();
            update.complete(&entry(UpdateKind::Update)).unwrap();
            assert!(!journal.exists());
        };
        // With the same plugins: the very file stays.
        let written = file();
        unchanged_phase(&mut update, plugin("1.0.0"));
        assert_eq!(file(), written);
        // Another plugin version is written down, the file replaced.
        unchanged_phase(&mut update, plugin("1.1.0"));
        let (ino, bytes) = file();
        assert_ne!(ino, written.0);
        assert!(String::from_utf8(bytes).unwrap().contains("1.1.0"));
        // So is a checkpoint another plinth wrote: in the form this one writes.
        let text = String::from_utf8(std::fs::read(&checkpoint).unwrap()).unwrap();
        let older = text.replace(
            &format!("\"plinth\": \"{}\"", env!("CARGO_PKG_VERSION")),
            "\"plinth\": \"0.0.1\"",
        );
        assert_ne!(older, text);
        std::fs::write(&checkpoint, &older).unwrap();
        unchanged_phase(&mut update, plugin("1.1.0"));
        assert_eq!(std::fs::read(&checkpoint).unwrap(), text.into_bytes());
        assert_eq!(b.history(&stack).unwrap().len(), 4);
    }

    #[test]
    fn an_import_over_a_damaged_state_reads_nothing_of_it() {
        let (dir, b) = backend();
        let (p, dev) = names();
        let stack = b.create_stack(&p, &dev).unwrap();
        let good = b.export(&stack).unwrap();
        let checkpoint = dir.path().join("stacks/p/dev.json");
        std::fs::write(&checkpoint, b"{ damaged").unwrap();
        assert!(b.load(&stack).is_err());
        let mut update = b.begin_update(&stack, "stack import").unwrap();
        let report = update
            .import(&good, false, &entry(UpdateKind::Import))
            .unwrap();
        assert_eq!(report.resources, 0);
        drop(update);
        assert!(b.load(&stack).is_ok());
        assert_eq!(b.history(&stack).unwrap()[0].kind, UpdateKind::Import);
    }
}
