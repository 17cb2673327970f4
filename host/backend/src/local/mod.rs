//! The local backend: stacks as files under a state directory (default `~/.plinth`).
//!
//! ```text
//! <root>/stacks/<project>/<stack>.json      checkpoint
//! <root>/stacks/<project>/<stack>.journal   journal of the update in progress (or interrupted)
//! <root>/stacks/<project>/<stack>.lock      held while an update runs
//! <root>/stacks/<project>/<stack>.history   one line per update
//! <root>/stacks/<project>/<stack>.tags      its tags, a JSON object
//! <root>/stacks/<project>/<stack>.logs/N.jsonl.gz  the events of update N
//! <root>/workspaces/<project>               the selected stack
//! ```

use plinth_engine::names::{ProjectName, StackName};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use plinth_engine::journal::{Persister, SnapshotError, replay, replay_unchecked};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::{is_counted, is_stack_type};

mod edit;
mod history;
mod journal;
mod lock;
mod logs;
mod rename;
mod transfer;
mod update;
#[cfg(test)]
mod upgraded;

use plinth_state::{
    CarriedCheckpoint, Checkpoint, CheckpointView, LoadedStack, LockHolder, StackSummary,
    StateError, UsedPlugins, unrecordable_field,
};

pub use lock::StackLock;

use crate::error::BackendError;
use crate::files::write_atomically;
use crate::secrets::{Crypter, NoSecrets, Redacted, SecretsProvider};
pub(crate) use journal::BaseFile;
use journal::{JournalFile, digest, read_journal};

/// Stacks stored as files under a state directory. Secrets are sealed with the crypters of its
/// [`SecretsProvider`] (by default none: a stack that holds a secret cannot be read or written).
#[derive(Clone)]
pub struct LocalBackend {
    root: PathBuf,
    secrets: Arc<dyn SecretsProvider>,
}

impl std::fmt::Debug for LocalBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBackend")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Whether loading a state checks each resource's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fields {
    Checked,
    /// Not: for an edit, which may remove the resource that fails them and checks them before
    /// it writes, and for `stack ls`, which only counts resources.
    Unchecked,
}

impl LocalBackend {
    /// Opens the backend a `PLINTH_BACKEND_URL` names (`file://<dir>`), or `~/.plinth`.
    pub fn from_url(url: Option<&str>) -> Result<LocalBackend, BackendError> {
        let root = match url {
            Some(url) => PathBuf::from(
                url.strip_prefix("file://")
                    .filter(|p| !p.is_empty())
                    .ok_or_else(|| BackendError::UnsupportedUrl(url.to_owned()))?,
            ),
            None => std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".plinth"))
                .ok_or(BackendError::NoHome)?,
        };
        Ok(LocalBackend {
            root,
            secrets: Arc::new(NoSecrets),
        })
    }

    /// Seals and opens the stacks' secrets with `secrets`.
    pub fn with_secrets(self, secrets: Arc<dyn SecretsProvider>) -> LocalBackend {
        LocalBackend { secrets, ..self }
    }

    /// The crypter of `stack`'s secrets.
    pub fn crypter(&self, stack: &str) -> Arc<dyn Crypter> {
        self.secrets.crypter(stack)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn project_dir(&self, project: &ProjectName) -> PathBuf {
        self.root.join("stacks").join(project)
    }

    pub(crate) fn path(&self, project: &ProjectName, stack: &StackName, ext: &str) -> PathBuf {
        self.project_dir(project).join(format!("{stack}.{ext}"))
    }

    fn workspace_file(&self, project: &ProjectName) -> PathBuf {
        self.root.join("workspaces").join(project)
    }

    pub fn stack_exists(&self, project: &ProjectName, stack: &StackName) -> bool {
        self.path(project, stack, "json").exists()
    }

    pub(crate) fn require_stack(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<(), BackendError> {
        self.finish_interrupted_renames(project)?;
        if self.stack_exists(project, stack) {
            Ok(())
        } else {
            Err(BackendError::NoSuchStack(stack.to_string()))
        }
    }

    /// Creates an empty stack and selects it.
    pub fn create_stack(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<(), BackendError> {
        self.finish_interrupted_renames(project)?;
        if self.stack_exists(project, stack) {
            return Err(BackendError::StackExists(stack.to_string()));
        }
        let dir = self.project_dir(project);
        std::fs::create_dir_all(&dir).map_err(BackendError::io("creating", &dir))?;
        let path = self.path(project, stack, "json");
        let checkpoint = Checkpoint::new(project, stack, Snapshot::default());
        let json = checkpoint.to_json(self.crypter(stack).as_ref())?;
        write_atomically(&path, &json).map_err(BackendError::io("writing", &path))?;
        self.select_stack(project, stack)
    }

    /// The project's stacks, by name.
    pub fn stacks(&self, project: &ProjectName) -> Result<Vec<StackSummary>, BackendError> {
        self.finish_interrupted_renames(project)?;
        let dir = self.project_dir(project);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(BackendError::io("listing", &dir)(e)),
        };
        let mut stacks = Vec::new();
        for entry in entries {
            let path = entry.map_err(BackendError::io("listing", &dir))?.path();
            // Files whose stem is not a stack name are not stacks plinth wrote.
            let name = path
                .file_stem()
                .and_then(|stem| StackName::new(stem.to_str()?).ok());
            if let Some(name) = name
                && path.extension().is_some_and(|e| e == "json")
            {
                let loaded = self.load_checking(project, &name, &Redacted, Fields::Unchecked);
                let snapshot = loaded?.snapshot;
                let resources = (snapshot.resources.iter())
                    .filter(|r| is_counted(r.urn.ty()))
                    .count();
                let lock = lock::holder(&self.path(project, &name, "lock"))?;
                let locked = lock.is_some_and(|holder| holder.running);
                let tags = self.read_tags(project, &name)?;
                stacks.push(StackSummary {
                    name,
                    resources,
                    locked,
                    tags,
                });
            }
        }
        stacks.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(stacks)
    }

    /// Removes a stack; one that still has resources only with `force`.
    pub fn remove_stack(
        &self,
        project: &ProjectName,
        stack: &StackName,
        force: bool,
    ) -> Result<(), BackendError> {
        self.require_stack(project, stack)?;
        let snapshot = self.load_redacted(project, stack)?.snapshot;
        // The root alone is an empty stack.
        let count = (snapshot.resources.iter())
            .filter(|r| !is_stack_type(&r.ty))
            .count();
        if count > 0 && !force {
            return Err(BackendError::StackNotEmpty {
                stack: stack.to_string(),
                count,
            });
        }
        let _lock = self.lock(project, stack, "stack rm")?;
        for ext in ["journal", "history", "tags", "json"] {
            let path = self.path(project, stack, ext);
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(BackendError::io("removing", &path)(e));
                }
                _ => {}
            }
        }
        self.remove_logs(project, stack)?;
        if self.selected_stack(project).as_ref() == Some(stack) {
            let path = self.workspace_file(project);
            std::fs::remove_file(&path).map_err(BackendError::io("removing", &path))?;
        }
        Ok(())
    }

    /// Loads a stack's snapshot: its checkpoint, plus any journal an interrupted update left.
    pub fn load(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<LoadedStack, BackendError> {
        self.load_with(project, stack, self.crypter(stack).as_ref())
    }

    /// Loads a stack's snapshot with every secret's value replaced by null, without the
    /// stack's passphrase: for reading what needs no plaintext. Such a snapshot cannot be
    /// written back (sealing a redacted secret is an error).
    pub fn load_redacted(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<LoadedStack, BackendError> {
        self.load_with(project, stack, &Redacted)
    }

    /// [`load_with`](Self::load_with) for a reader that does not hold the stack's lock: a
    /// journal it replays belongs to a running update if the lock was held when the read
    /// began or ended (an update that began meanwhile writes no journal before it holds it).
    pub(crate) fn load_unlocked(
        &self,
        project: &ProjectName,
        stack: &StackName,
        crypter: &dyn Crypter,
    ) -> Result<LoadedStack, BackendError> {
        let running = || -> Result<Option<Box<LockHolder>>, BackendError> {
            let holder = self.lock_holder(project, stack)?;
            Ok(holder.filter(|holder| holder.running).map(Box::new))
        };
        let before = running()?;
        let mut loaded = self.load_with(project, stack, crypter)?;
        if loaded.recovered {
            loaded.running = match before {
                Some(holder) => Some(holder),
                None => running()?,
            };
        }
        Ok(loaded)
    }

    /// Loads a stack's snapshot, opening its secrets with `crypter`.
    pub(crate) fn load_with(
        &self,
        project: &ProjectName,
        stack: &StackName,
        crypter: &dyn Crypter,
    ) -> Result<LoadedStack, BackendError> {
        self.load_checking(project, stack, crypter, Fields::Checked)
    }

    /// [`load_with`](Self::load_with), checking each resource's fields or (for an edit, which
    /// checks them before it writes) not.
    pub(crate) fn load_checking(
        &self,
        project: &ProjectName,
        stack: &StackName,
        crypter: &dyn Crypter,
        fields: Fields,
    ) -> Result<LoadedStack, BackendError> {
        (self.load_file(project, stack, crypter, fields, false)).map(|(loaded, _)| loaded)
    }

    /// [`load_checking`](Self::load_checking), with what an update beginning from the
    /// checkpoint file needs to know of it (its digest only `for_update`).
    pub(crate) fn load_file(
        &self,
        project: &ProjectName,
        stack: &StackName,
        crypter: &dyn Crypter,
        fields: Fields,
        for_update: bool,
    ) -> Result<(LoadedStack, BaseFile), BackendError> {
        self.require_stack(project, stack)?;
        let path = self.path(project, stack, "json");
        let bytes = std::fs::read(&path).map_err(BackendError::io("reading", &path))?;
        // The digest an update's journal names the file by, of the bytes read, beside the parse.
        let (decoded, digest) = std::thread::scope(|scope| {
            let digesting = for_update.then(|| scope.spawn(|| digest(&bytes)));
            // A journal refers to the checkpoint as written: replay first, then upgrade.
            let decoded = match fields {
                Fields::Checked => Checkpoint::decode_verified(&bytes, stack, &path, crypter),
                Fields::Unchecked => Checkpoint::decode_for_edit(&bytes, stack, &path, crypter),
            };
            (
                decoded,
                digesting.and_then(|digesting| digesting.join().ok()),
            )
        });
        let mut decoded = decoded?;
        let journal = self.path(project, stack, "journal");
        let read = if journal.exists() {
            read_journal(&journal, &bytes, crypter)?
        } else {
            None
        };
        let Some(read) = read else {
            let current = decoded.checkpoint.is_current() && decoded.checkpoint.project == *project;
            let checkpoint = decoded.upgraded();
            let loaded = LoadedStack {
                snapshot: checkpoint.snapshot,
                recovered: false,
                plugins: checkpoint.plugins,
                torn: None,
                running: None,
            };
            let current_plugins = current.then(|| loaded.plugins.clone());
            return Ok((
                loaded,
                BaseFile {
                    current_plugins,
                    digest,
                },
            ));
        };
        let corrupt = |reason: String| {
            BackendError::State(StateError::Corrupt {
                path: journal.clone(),
                reason,
            })
        };
        if read.stack_outputs.is_some() && decoded.legacy_outputs.is_none() {
            return Err(corrupt(
                "a `stack-outputs` entry, which only a checkpoint of schema 1 can have".into(),
            ));
        }
        // Moved out: `upgrade` below puts the replayed snapshot in its place.
        let base = std::mem::take(&mut decoded.checkpoint.snapshot);
        // Replaying checks the fields of every state the journal records, unless asked not to.
        let replayed = match fields {
            Fields::Checked => replay(base, read.entries),
            Fields::Unchecked => replay_unchecked(base, read.entries),
        };
        let snapshot = replayed.map_err(|e| match e {
            SnapshotError::Field(e) => unrecordable_field(&e, &journal).into(),
            e => corrupt(e.to_string()),
        })?;
        let checkpoint = decoded.upgrade(snapshot, read.stack_outputs);
        let loaded = LoadedStack {
            snapshot: checkpoint.snapshot,
            recovered: true,
            plugins: checkpoint.plugins,
            torn: read.torn,
            running: None,
        };
        Ok((loaded, BaseFile::default()))
    }

    /// Takes the stack's update lock.
    pub fn lock(
        &self,
        project: &ProjectName,
        stack: &StackName,
        command: &str,
    ) -> Result<StackLock, BackendError> {
        self.require_stack(project, stack)?;
        StackLock::acquire(self.path(project, stack, "lock"), stack, command)
    }

    /// Who holds the stack's update lock, or held it and left its lock file, if anyone.
    pub fn lock_holder(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<Option<LockHolder>, BackendError> {
        self.require_stack(project, stack)?;
        lock::holder(&self.path(project, stack, "lock"))
    }

    /// Breaks the stack's update lock, whoever holds it (`plinth cancel`): its holder, if it
    /// still runs, no longer keeps other updates out. A journal the holder left is replayed by
    /// the next command, so nothing it recorded is lost.
    pub fn break_lock(&self, project: &ProjectName, stack: &StackName) -> Result<(), BackendError> {
        self.require_stack(project, stack)?;
        let path = self.path(project, stack, "lock");
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(BackendError::io("removing", &path)(e))
            }
            _ => Ok(()),
        }
    }

    /// Starts recording an update of `snapshot` (as `load` returned it; the lock must be held).
    /// A recovered journal is first folded into the checkpoint.
    pub fn begin_update(
        &self,
        project: &ProjectName,
        stack: &StackName,
        loaded: &LoadedStack,
        lock: &StackLock,
    ) -> Result<Box<dyn Persister>, BackendError> {
        let base = BaseFile::default();
        self.begin_update_with_plugins(project, stack, loaded, base, lock, UsedPlugins::default())
    }

    /// [`begin_update`](Self::begin_update), for an update whose checkpoint records the
    /// plugins in `plugins` as they were when it ends; `base` is what the load said of the
    /// checkpoint file.
    pub(crate) fn begin_update_with_plugins(
        &self,
        project: &ProjectName,
        stack: &StackName,
        loaded: &LoadedStack,
        mut base: BaseFile,
        _lock: &StackLock,
        plugins: UsedPlugins,
    ) -> Result<Box<dyn Persister>, BackendError> {
        self.backup_checkpoint(project, stack)?;
        let checkpoint_path = self.path(project, stack, "json");
        let crypter = self.crypter(stack);
        if loaded.recovered {
            let checkpoint =
                CheckpointView::current(project, stack, &loaded.plugins, &loaded.snapshot);
            let json = checkpoint.to_json(crypter.as_ref())?;
            write_atomically(&checkpoint_path, &json)
                .map_err(BackendError::io("writing", &checkpoint_path))?;
            base.current_plugins = Some(loaded.plugins.clone());
            base.digest = Some(digest(&json));
        }
        let journal = JournalFile::create(
            self.path(project, stack, "journal"),
            checkpoint_path,
            base,
            (project, stack),
            crypter,
            plugins,
        )?;
        Ok(Box::new(journal))
    }

    /// The stack's state as checkpoint JSON, its secrets sealed as they are: none is opened,
    /// so that no passphrase is needed and a secret that does not open is exported for repair.
    /// Works on a checkpoint that fails the integrity checks too, so that it can be repaired.
    pub fn export(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<Vec<u8>, BackendError> {
        match self.export_carried(project, stack) {
            Some(carried) => Ok(carried),
            None => self.export_read(project, stack),
        }
    }

    /// [`export`](Self::export) of the state as loaded, its secrets carried through the value
    /// tree: a journal replayed, a checkpoint of an older schema upgraded, a secret in another
    /// form than plinth's own, and every error said.
    fn export_read(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<Vec<u8>, BackendError> {
        let stack_crypter = self.crypter(stack);
        let verbatim = crate::edit::Verbatim(stack_crypter.as_ref());
        let crypter = &verbatim;
        let (snapshot, plugins) = match self.load_with(project, stack, crypter) {
            Ok(loaded) => (loaded.snapshot, loaded.plugins),
            // A state an older plinth wrote, whose fields no plinth records now, still exports:
            // it is how the user keeps a copy before repairing it.
            Err(BackendError::State(StateError::Corrupt { .. }))
                if self.path(project, stack, "journal").exists() =>
            {
                let loaded = self.load_checking(project, stack, crypter, Fields::Unchecked)?;
                (loaded.snapshot, loaded.plugins)
            }
            Err(BackendError::State(StateError::Corrupt { .. })) => {
                let path = self.path(project, stack, "json");
                let bytes = std::fs::read(&path).map_err(BackendError::io("reading", &path))?;
                let checkpoint = Checkpoint::parse_unverified(&bytes, stack, &path, crypter)?;
                (checkpoint.snapshot, checkpoint.plugins)
            }
            // Another stack's checkpoint is exported as that stack's, to be imported there.
            Err(BackendError::State(StateError::OtherStack { .. })) => {
                let path = self.path(project, stack, "json");
                let bytes = std::fs::read(&path).map_err(BackendError::io("reading", &path))?;
                let checkpoint = Checkpoint::parse_any_stack(&bytes, &path, crypter)?;
                return Ok(checkpoint.to_json(crypter)?);
            }
            Err(e) => return Err(e),
        };
        let checkpoint = Checkpoint::new(project, stack, snapshot).with_plugins(plugins);
        Ok(checkpoint.to_json(crypter)?)
    }

    /// [`export`](Self::export) of a checkpoint as plinth writes it, with no journal to replay:
    /// its resources' sealed texts copied as they are ([`CarriedCheckpoint`]). `None` for
    /// anything else, which `export` reads the ordinary way (and says what is wrong).
    fn export_carried(&self, project: &ProjectName, stack: &StackName) -> Option<Vec<u8>> {
        self.require_stack(project, stack).ok()?;
        if self.path(project, stack, "journal").exists() {
            return None;
        }
        let path = self.path(project, stack, "json");
        let bytes = std::fs::read(&path).ok()?;
        CarriedCheckpoint::read(&bytes, stack, &path)?.to_json(project, stack)
    }

    /// The selected stack; none if the workspace file is missing or names no valid stack.
    pub fn selected_stack(&self, project: &ProjectName) -> Option<StackName> {
        std::fs::read_to_string(self.workspace_file(project))
            .ok()
            .and_then(|s| StackName::new(s.trim()).ok())
    }

    pub fn select_stack(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<(), BackendError> {
        self.require_stack(project, stack)?;
        self.write_selected(project, stack)
    }

    /// Records `stack` as selected, unchecked.
    pub(crate) fn write_selected(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<(), BackendError> {
        let path = self.workspace_file(project);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(BackendError::io("creating", dir))?;
        }
        write_atomically(&path, stack.as_bytes()).map_err(BackendError::io("writing", &path))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn p() -> ProjectName {
        ProjectName::new("p").unwrap()
    }

    fn dev() -> StackName {
        StackName::new("dev").unwrap()
    }
    use plinth_engine::journal::JournalEntry;

    /// A created custom resource of type `t:T` named `name`, for tests across the crate.
    pub(crate) fn resource(name: &str) -> plinth_engine::resource::ResourceState {
        plinth_engine::resource::ResourceState {
            urn: plinth_engine::urn::Urn::new("dev", "p", None, "t:T", name),
            ty: "t:T".into(),
            custom: true,
            id: format!("id-{name}"),
            inputs: Default::default(),
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

    /// Journals the creation of `state`, durably.
    fn record_create(persister: &mut dyn Persister, state: plinth_engine::resource::ResourceState) {
        let begin = JournalEntry::Begin {
            seq: 1,
            kind: plinth_engine::snapshot::PendingKind::Creating,
            resource: state.clone(),
            old: None,
        };
        persister.append(&begin).unwrap();
        let created = JournalEntry::Created {
            seq: 1,
            resource: state,
            replaces: None,
        };
        persister.append(&created).unwrap();
        persister.sync().unwrap();
    }

    fn backend() -> (tempfile::TempDir, LocalBackend) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let backend = LocalBackend::from_url(Some(&url)).unwrap();
        (dir, backend)
    }

    #[test]
    fn stack_list_counts_resources_as_summaries_do_without_providers() {
        let (_dir, b) = backend();
        b.create_stack(&p(), &dev()).unwrap();
        let loaded = b.load(&p(), &dev()).unwrap();
        let lock = b.lock(&p(), &dev(), "up").unwrap();
        let mut persister = b.begin_update(&p(), &dev(), &loaded, &lock).unwrap();
        let mut provider = resource("default");
        provider.urn = plinth_engine::urn::Urn::new(
            "dev",
            "p",
            None,
            &plinth_engine::urn::provider_type("t"),
            "default",
        );
        provider.ty = plinth_engine::urn::provider_type("t");
        record_create(persister.as_mut(), provider);
        let begin = JournalEntry::Begin {
            seq: 2,
            kind: plinth_engine::snapshot::PendingKind::Creating,
            resource: resource("a"),
            old: None,
        };
        persister.append(&begin).unwrap();
        let created = JournalEntry::Created {
            seq: 2,
            resource: resource("a"),
            replaces: None,
        };
        persister.append(&created).unwrap();
        persister.sync().unwrap();
        drop(persister);
        drop(lock);
        assert_eq!(b.load(&p(), &dev()).unwrap().snapshot.resources.len(), 2);
        assert_eq!(b.stacks(&p()).unwrap()[0].resources, 1);
    }

    #[test]
    fn stack_lifecycle() {
        let (_dir, b) = backend();
        assert!(matches!(
            b.load(&p(), &dev()),
            Err(BackendError::NoSuchStack(_))
        ));
        b.create_stack(&p(), &dev()).unwrap();
        assert!(matches!(
            b.create_stack(&p(), &dev()),
            Err(BackendError::StackExists(_))
        ));
        assert_eq!(b.selected_stack(&p()).as_deref(), Some("dev"));
        assert_eq!(b.stacks(&p()).unwrap().len(), 1);
        b.remove_stack(&p(), &dev(), false).unwrap();
        assert!(b.stacks(&p()).unwrap().is_empty());
        assert_eq!(b.selected_stack(&p()), None);
    }

    #[test]
    fn rejects_unsupported_urls() {
        assert!(matches!(
            LocalBackend::from_url(Some("s3://bucket")),
            Err(BackendError::UnsupportedUrl(_))
        ));
    }

    #[test]
    fn a_second_lock_is_refused_naming_the_holder() {
        let (_dir, b) = backend();
        b.create_stack(&p(), &dev()).unwrap();
        let held = b.lock(&p(), &dev(), "up").unwrap();
        let err = b.lock(&p(), &dev(), "up").unwrap_err().to_string();
        assert!(
            err.contains("`up`") && err.contains(&std::process::id().to_string()),
            "{err}"
        );
        drop(held);
        b.lock(&p(), &dev(), "up").unwrap();
    }

    #[test]
    fn an_interrupted_journal_is_replayed_and_a_torn_tail_ignored() {
        let (_dir, b) = backend();
        b.create_stack(&p(), &dev()).unwrap();
        let loaded = b.load(&p(), &dev()).unwrap();
        let lock = b.lock(&p(), &dev(), "up").unwrap();
        let mut persister = b.begin_update(&p(), &dev(), &loaded, &lock).unwrap();
        let state = resource("a");
        record_create(persister.as_mut(), state);
        drop(persister);
        drop(lock);
        // A crash mid-write leaves part of a frame: its length, and the start of its member.
        let journal = b.path(&p(), &dev(), "journal");
        let mut bytes = std::fs::read(&journal).unwrap();
        let len: u32 = 200;
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&(!len).to_le_bytes());
        bytes.extend_from_slice(&[0x1f, 0x8b, 8]);
        std::fs::write(&journal, bytes).unwrap();

        let loaded = b.load(&p(), &dev()).unwrap();
        assert!(loaded.recovered);
        assert_eq!(loaded.snapshot.resources.len(), 1);
    }

    #[test]
    fn a_journal_already_compacted_into_the_checkpoint_is_not_replayed() {
        let (_dir, b) = backend();
        b.create_stack(&p(), &dev()).unwrap();
        let loaded = b.load(&p(), &dev()).unwrap();
        let lock = b.lock(&p(), &dev(), "up").unwrap();
        let mut persister = b.begin_update(&p(), &dev(), &loaded, &lock).unwrap();
        let state = resource("a");
        let entries = [
            JournalEntry::Begin {
                seq: 1,
                kind: plinth_engine::snapshot::PendingKind::Creating,
                resource: state.clone(),
                old: None,
            },
            JournalEntry::Created {
                seq: 1,
                resource: state.clone(),
                replaces: None,
            },
        ];
        for entry in &entries {
            persister.append(entry).unwrap();
        }
        persister.sync().unwrap();
        let journal = b.path(&p(), &dev(), "journal");
        let left = std::fs::read(&journal).unwrap();
        let snapshot = replay(loaded.snapshot.clone(), entries).unwrap();
        persister.compact(&snapshot).unwrap();
        drop(lock);
        // Killed after the checkpoint was written, before the journal was removed.
        std::fs::write(&journal, left).unwrap();

        let loaded = b.load(&p(), &dev()).unwrap();
        assert!(!loaded.recovered);
        assert_eq!(loaded.snapshot.resources, [state]);
        // The next update starts a journal of its own.
        let lock = b.lock(&p(), &dev(), "up").unwrap();
        drop(b.begin_update(&p(), &dev(), &loaded, &lock).unwrap());
        assert_eq!(b.load(&p(), &dev()).unwrap().snapshot.resources.len(), 1);
    }

    struct OneKey(Arc<crate::secrets::PassphraseCrypter>);

    impl SecretsProvider for OneKey {
        fn crypter(&self, _: &str) -> Arc<dyn Crypter> {
            self.0.clone()
        }
    }

    #[test]
    fn secrets_are_sealed_in_the_journal_and_checkpoint_and_opened_on_replay() {
        use plinth_engine::value::Value;
        let (dir, plain) = backend();
        let (crypter, _) = crate::secrets::PassphraseCrypter::create("pw", "dev").unwrap();
        let b = plain
            .clone()
            .with_secrets(Arc::new(OneKey(Arc::new(crypter))));
        b.create_stack(&p(), &dev()).unwrap();
        let loaded = b.load(&p(), &dev()).unwrap();
        let lock = b.lock(&p(), &dev(), "up").unwrap();
        let mut persister = b.begin_update(&p(), &dev(), &loaded, &lock).unwrap();
        let mut state = resource("a");
        let secret = Value::Secret(Box::new("hunter2".into()));
        state.inputs.insert("token".into(), secret.clone());
        state.outputs.insert("token".into(), secret.clone());
        record_create(persister.as_mut(), state);
        drop(persister);
        drop(lock);
        fn plaintext_under(dir: &Path) -> bool {
            std::fs::read_dir(dir).unwrap().any(|entry| {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    return plaintext_under(&path);
                }
                String::from_utf8_lossy(&std::fs::read(path).unwrap()).contains("hunter2")
            })
        }
        let plaintext_on_disk = || plaintext_under(dir.path());
        assert!(!plaintext_on_disk());

        let loaded = b.load(&p(), &dev()).unwrap();
        assert!(loaded.recovered);
        assert_eq!(loaded.snapshot.resources[0].outputs["token"], secret);
        // Without the key, the stack can be listed but not loaded.
        assert_eq!(plain.stacks(&p()).unwrap()[0].resources, 1);
        assert!(matches!(
            plain.load(&p(), &dev()),
            Err(BackendError::State(StateError::Secrets(_)))
        ));

        // Folding the journal into the checkpoint keeps the secret sealed.
        let lock = b.lock(&p(), &dev(), "up").unwrap();
        let mut persister = b.begin_update(&p(), &dev(), &loaded, &lock).unwrap();
        persister.compact(&loaded.snapshot).unwrap();
        assert!(!plaintext_on_disk());
        assert!(!String::from_utf8_lossy(&b.export(&p(), &dev()).unwrap()).contains("hunter2"));
        assert_eq!(
            b.load(&p(), &dev()).unwrap().snapshot.resources[0].inputs["token"],
            secret
        );
    }

    /// A checkpoint of secrets at every depth: in a stack output, nested in objects and
    /// arrays, inside another secret, and in a pending operation.
    fn checkpoint_of_secrets(b: &LocalBackend) -> Vec<u8> {
        use plinth_engine::urn::{STACK_TYPE, Urn};
        use plinth_engine::value::Value;
        let secret = |v: Value| Value::Secret(Box::new(v));
        let mut root = resource("p-dev");
        root.urn = Urn::new("dev", "p", None, STACK_TYPE, "p-dev");
        root.ty = STACK_TYPE.into();
        root.custom = false;
        root.id = String::new();
        root.outputs.insert("password".into(), secret("top".into()));
        let mut a = resource("a");
        a.parent = Some(root.urn.clone());
        let nested = Value::Object([("key".to_owned(), secret("nested".into()))].into());
        a.inputs.insert(
            "deep".into(),
            Value::Object([("in".to_owned(), nested)].into()),
        );
        let listed = Value::Array(vec![1.into(), secret("listed".into()), secret(2.into())]);
        a.inputs.insert("list".into(), listed);
        let inner = Value::Object([("inner".to_owned(), secret("in-secret".into()))].into());
        a.outputs.insert("outer".into(), secret(inner));
        a.outputs.insert("plain".into(), "ciphertext".into());
        let mut pending = resource("b");
        pending.parent = Some(root.urn.clone());
        pending
            .inputs
            .insert("token".into(), secret("pending".into()));
        let snapshot = Snapshot {
            resources: vec![root, a],
            pending_operations: vec![plinth_engine::snapshot::PendingOperation {
                kind: plinth_engine::snapshot::PendingKind::Creating,
                resource: pending,
            }],
        };
        let json = CheckpointView::current(&p(), &dev(), &[], &snapshot)
            .to_json(b.crypter("dev").as_ref())
            .unwrap();
        std::fs::write(b.path(&p(), &dev(), "json"), &json).unwrap();
        json
    }

    fn backend_with_key() -> (tempfile::TempDir, LocalBackend) {
        let (dir, plain) = backend();
        let (crypter, _) = crate::secrets::PassphraseCrypter::create("pw", "dev").unwrap();
        let b = plain.with_secrets(Arc::new(OneKey(Arc::new(crypter))));
        b.create_stack(&p(), &dev()).unwrap();
        (dir, b)
    }

    #[test]
    fn export_copies_sealed_texts_byte_for_byte_as_the_value_tree_writes_them() {
        let (_dir, b) = backend_with_key();
        let written = checkpoint_of_secrets(&b);
        let carried = b
            .export_carried(&p(), &dev())
            .expect("plinth's own form is carried");
        assert_eq!(carried, b.export_read(&p(), &dev()).unwrap());
        // The file as plinth wrote it is exported as it is: the same sealed texts, in place.
        assert_eq!(carried, written);
        assert_eq!(b.export(&p(), &dev()).unwrap(), written);
        for plaintext in ["top", "nested", "listed", "in-secret", "pending"] {
            assert!(!String::from_utf8_lossy(&carried).contains(&format!("\"{plaintext}\"")));
        }
    }

    #[test]
    fn a_resource_written_another_way_is_exported_through_the_value_tree() {
        let (_dir, b) = backend_with_key();
        let written = String::from_utf8(checkpoint_of_secrets(&b)).unwrap();
        // Keys out of plinth's order: carried as read, the secrets would land elsewhere.
        let swapped = written.replacen(r#""deep":"#, r#""zz":"#, 1);
        let swapped = swapped.replacen(r#""list":"#, r#""deep":"#, 1);
        let swapped = swapped.replacen(r#""zz":"#, r#""list":"#, 1);
        assert_ne!(swapped, written);
        let path = b.path(&p(), &dev(), "json");
        std::fs::write(&path, &swapped).unwrap();
        assert_eq!(b.export_carried(&p(), &dev()), None);
        let exported = b.export(&p(), &dev()).unwrap();
        assert_eq!(exported, b.export_read(&p(), &dev()).unwrap());
        // Written back in plinth's order, each ciphertext under the key it was read under.
        let exported: serde_json::Value = serde_json::from_slice(&exported).unwrap();
        let swapped: serde_json::Value = serde_json::from_str(&swapped).unwrap();
        assert_eq!(exported["snapshot"], swapped["snapshot"]);
        let written: serde_json::Value = serde_json::from_str(&written).unwrap();
        let inputs = &exported["snapshot"]["resources"][1]["inputs"];
        let original = &written["snapshot"]["resources"][1]["inputs"];
        assert_eq!(inputs["deep"], original["list"]);
        assert_eq!(inputs["list"], original["deep"]);
    }

    #[test]
    fn a_malformed_ciphertext_is_exported_or_named_by_its_resource() {
        let (_dir, b) = backend_with_key();
        let written = String::from_utf8(checkpoint_of_secrets(&b)).unwrap();
        let path = b.path(&p(), &dev(), "json");
        let first = written.find(r#""ciphertext":""#).unwrap() + r#""ciphertext":""#.len();
        let end = first + written[first..].find('"').unwrap();
        // Not base64: not plinth's form, but a string, exported as it is for repair.
        let odd = format!("{}v1:not base64!{}", &written[..first], &written[end..]);
        std::fs::write(&path, &odd).unwrap();
        assert_eq!(b.export_carried(&p(), &dev()), None);
        let exported = String::from_utf8(b.export(&p(), &dev()).unwrap()).unwrap();
        assert!(exported.contains("v1:not base64!"), "{exported}");
        // Not a string at all: the error names the resource and the property.
        let number = format!("{}3{}", &written[..first - 1], &written[end + 1..]);
        std::fs::write(&path, &number).unwrap();
        assert_eq!(b.export_carried(&p(), &dev()), None);
        let err = b.export(&p(), &dev()).unwrap_err().to_string();
        assert!(
            err.contains("of resource `urn:plinth:dev::p::plinth:plinth:Stack::p-dev`")
                && err.contains("outputs.password"),
            "{err}"
        );
    }

    #[test]
    fn garbage_in_the_middle_of_a_journal_is_an_error() {
        let (_dir, b) = backend();
        b.create_stack(&p(), &dev()).unwrap();
        std::fs::write(b.path(&p(), &dev(), "journal"), "garbage\n{}\n").unwrap();
        assert!(matches!(
            b.load(&p(), &dev()),
            Err(BackendError::State(StateError::Corrupt { .. }))
        ));
    }
}
