//! `plinth stack rename` and stack tags on the file backend. A rename moves everything the
//! stack keeps under its name: its checkpoint (every URN in it renamed), history, event logs,
//! checkpoint backups and tags.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use plinth_engine::names::{ProjectName, StackName};
use plinth_state::tags::{self, StackTags, TAGS_MAX, TagError};

use serde::{Deserialize, Serialize};

use super::LocalBackend;
use super::lock::StackLock;
use crate::error::BackendError;
use crate::files::write_atomically;

/// Renames `from` to `to`; a missing `from` is nothing to move (or moved already).
fn move_if_present(from: &Path, to: &Path) -> Result<(), BackendError> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(BackendError::io("moving", from)(e))
        }
        _ => Ok(()),
    }
}

fn remove_if_present(path: &Path) -> Result<(), BackendError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(BackendError::io("removing", path)(e))
        }
        _ => Ok(()),
    }
}

fn remove_dir_if_present(path: &Path) -> Result<(), BackendError> {
    match std::fs::remove_dir(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(BackendError::io("removing", path)(e))
        }
        _ => Ok(()),
    }
}

/// The stack an intent file names, checked: the file is state on disk, hostile until read.
fn parse_intent(bytes: &[u8]) -> Result<StackName, String> {
    let intent: RenameIntent = serde_json::from_slice(bytes)
        .map_err(|e| format!("expected a rename intent {{\"to\": STACK}}: {e}"))?;
    StackName::new(&intent.to).map_err(|e| format!("the stack it names: {e}"))
}

/// A rename's intent, `<from>.renaming`: written once the renamed checkpoint is in place beside
/// the old one (the rename's commit point), removed once everything has moved.
const INTENT: &str = "renaming";
/// The checkpoint under its new name, waiting beside the old one until the move.
const RENAMED: &str = "rename-checkpoint";

#[derive(Serialize, Deserialize)]
struct RenameIntent {
    to: String,
}

impl LocalBackend {
    /// Renames stack `from` to `to`, under `from`'s lock. Its state is rewritten under the new
    /// name first (a journal an interrupted update left is folded in; secrets stay sealed) and
    /// an intent naming `to` written beside it; then what the stack keeps is moved. A crash
    /// before the intent leaves `from` as it was; one after it is rolled forward by the next
    /// command that looks at the project (`finish_interrupted_renames`).
    pub fn rename_stack(
        &self,
        project: &ProjectName,
        from: &StackName,
        to: &StackName,
    ) -> Result<(), BackendError> {
        self.require_stack(project, from)?;
        if self.stack_exists(project, to) {
            return Err(BackendError::StackExists(to.to_string()));
        }
        let lock = self.lock(project, from, "stack rename")?;
        self.commit_rename(project, from, to, &lock)?;
        self.finish_rename(project, from, to)?;
        drop(lock);
        Ok(())
    }

    /// Writes the renamed checkpoint beside `from`'s, then the intent that commits the rename.
    fn commit_rename(
        &self,
        project: &ProjectName,
        from: &StackName,
        to: &StackName,
        lock: &StackLock,
    ) -> Result<(), BackendError> {
        let mut edit = self.load_for_edit(project, from, lock)?;
        plinth_state::rename_snapshot(edit.snapshot_mut(), to);
        let json = edit.into_checkpoint(project, to, self.crypter(from).as_ref())?;
        self.set_aside_backups(project, to)?;
        let renamed = self.path(project, from, RENAMED);
        write_atomically(&renamed, &json).map_err(BackendError::io("writing", &renamed))?;
        let intent = serde_json::to_vec(&RenameIntent { to: to.to_string() })
            .expect("rename intents serialize");
        let path = self.path(project, from, INTENT);
        write_atomically(&path, &intent).map_err(BackendError::io("writing", &path))
    }

    /// Rolls forward every rename of the project that a crashed `plinth stack rename` committed
    /// to, so no stack stays half under each name; and removes a renamed checkpoint a rename
    /// left before committing. A stack still locked is being renamed by a running process: left
    /// alone.
    pub(crate) fn finish_interrupted_renames(
        &self,
        project: &ProjectName,
    ) -> Result<(), BackendError> {
        let dir = self.project_dir(project);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(BackendError::io("listing", &dir)(e)),
        };
        let mut left = BTreeSet::new();
        for entry in entries {
            let path = entry.map_err(BackendError::io("listing", &dir))?.path();
            let from = path
                .file_stem()
                .and_then(|stem| StackName::new(stem.to_str()?).ok());
            if let Some(from) = from
                && path
                    .extension()
                    .is_some_and(|e| e == RENAMED || e == INTENT)
            {
                left.insert(from);
            }
        }
        for from in left {
            let lock = match StackLock::acquire(
                self.path(project, &from, "lock"),
                &from,
                "stack rename",
            ) {
                Ok(lock) => lock,
                Err(BackendError::Locked { .. }) => continue,
                Err(e) => return Err(e),
            };
            let path = self.path(project, &from, INTENT);
            match std::fs::read(&path) {
                Ok(bytes) => {
                    let to = parse_intent(&bytes).map_err(|reason| {
                        BackendError::State(plinth_state::StateError::Corrupt {
                            path: path.clone(),
                            reason,
                        })
                    })?;
                    self.finish_rename(project, &from, &to)?;
                }
                // Not committed: `from` is whole, the renamed checkpoint is litter.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    remove_if_present(&self.path(project, &from, RENAMED))?;
                }
                Err(e) => return Err(BackendError::io("reading", &path)(e)),
            }
            drop(lock);
        }
        Ok(())
    }

    /// The moves of a committed rename, each one done or not yet (so running it again after a
    /// crash finishes what is left): backups, history, tags, logs, then the checkpoint; the
    /// intent goes last.
    fn finish_rename(
        &self,
        project: &ProjectName,
        from: &StackName,
        to: &StackName,
    ) -> Result<(), BackendError> {
        self.move_backups(project, from, to)?;
        for ext in ["history", "tags"] {
            move_if_present(&self.path(project, from, ext), &self.path(project, to, ext))?;
        }
        move_if_present(&self.logs_dir(project, from), &self.logs_dir(project, to))?;
        move_if_present(
            &self.path(project, from, RENAMED),
            &self.path(project, to, "json"),
        )?;
        for ext in ["journal", "json"] {
            remove_if_present(&self.path(project, from, ext))?;
        }
        if self.selected_stack(project).as_ref() == Some(from) {
            self.write_selected(project, to)?;
        }
        remove_if_present(&self.path(project, from, INTENT))
    }

    /// Sets aside the checkpoint backups a removed stack named `to` left, so that the renamed
    /// stack's are not mixed with them.
    fn set_aside_backups(&self, project: &ProjectName, to: &StackName) -> Result<(), BackendError> {
        let new = self.backup_dir(project, to);
        if !new.exists() {
            return Ok(());
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        move_if_present(&new, &new.with_file_name(format!(".removed-{to}-{nanos}")))
    }

    /// Moves the checkpoint backups of `from` to `to`'s, each renamed as `to`'s backups are
    /// named (so `stack rollback` finds them; it renames the state they hold when it reads
    /// one).
    fn move_backups(
        &self,
        project: &ProjectName,
        from: &StackName,
        to: &StackName,
    ) -> Result<(), BackendError> {
        let (old, new) = (self.backup_dir(project, from), self.backup_dir(project, to));
        let backups = self.backups(project, from)?;
        if backups.is_empty() {
            return remove_dir_if_present(&old);
        }
        std::fs::create_dir_all(&new).map_err(BackendError::io("creating", &new))?;
        for backup in backups {
            let name = backup.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let renamed: PathBuf = match name.strip_prefix(from.as_str()) {
                Some(rest) => new.join(format!("{to}{rest}")),
                None => new.join(name),
            };
            move_if_present(&backup, &renamed)?;
        }
        remove_dir_if_present(&old)
    }

    /// The stack's tags (`<stack>.tags`, a JSON object); none if it has no such file.
    pub fn tags(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<StackTags, BackendError> {
        self.require_stack(project, stack)?;
        self.read_tags(project, stack)
    }

    pub(crate) fn read_tags(
        &self,
        project: &ProjectName,
        stack: &StackName,
    ) -> Result<StackTags, BackendError> {
        let path = self.path(project, stack, "tags");
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StackTags::new()),
            Err(e) => return Err(BackendError::io("reading", &path)(e)),
        };
        serde_json::from_slice(&bytes).map_err(|e| {
            BackendError::State(plinth_state::StateError::Corrupt {
                path,
                reason: format!("expected a JSON object of tag names and values: {e}"),
            })
        })
    }

    /// Sets tag `name` of the stack to `value`, after checking both.
    pub fn set_tag(
        &self,
        project: &ProjectName,
        stack: &StackName,
        name: &str,
        value: &str,
    ) -> Result<(), BackendError> {
        tags::check_name(name)?;
        tags::check_value(name, value)?;
        let mut tags = self.tags(project, stack)?;
        if tags.len() >= TAGS_MAX && !tags.contains_key(name) {
            return Err(TagError::TooMany.into());
        }
        tags.insert(name.to_owned(), value.to_owned());
        self.write_tags(project, stack, &tags)
    }

    /// Removes tag `name`; whether the stack had it.
    pub fn remove_tag(
        &self,
        project: &ProjectName,
        stack: &StackName,
        name: &str,
    ) -> Result<bool, BackendError> {
        tags::check_name(name)?;
        let mut tags = self.tags(project, stack)?;
        if tags.remove(name).is_none() {
            return Ok(false);
        }
        self.write_tags(project, stack, &tags)?;
        Ok(true)
    }

    fn write_tags(
        &self,
        project: &ProjectName,
        stack: &StackName,
        tags: &StackTags,
    ) -> Result<(), BackendError> {
        let path = self.path(project, stack, "tags");
        let json = serde_json::to_vec_pretty(tags).expect("tags serialize");
        write_atomically(&path, &json).map_err(BackendError::io("writing", &path))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use plinth_engine::events::ChangeSummary;
    use plinth_engine::urn::Urn;
    use plinth_engine::value::Value;
    use plinth_state::{Checkpoint, HistoryEntry, UpdateKind, UpdateResult};

    use super::*;
    use crate::secrets::{Crypter, PassphraseCrypter, SecretsProvider};

    struct OneKey(Arc<PassphraseCrypter>);

    impl SecretsProvider for OneKey {
        fn crypter(&self, _: &str) -> Arc<dyn Crypter> {
            self.0.clone()
        }
    }

    fn names() -> (ProjectName, StackName, StackName) {
        (
            ProjectName::new("p").unwrap(),
            StackName::new("dev").unwrap(),
            StackName::new("prod").unwrap(),
        )
    }

    fn entry() -> HistoryEntry {
        HistoryEntry::ended_now(
            UpdateKind::StateEdit,
            SystemTime::now(),
            UpdateResult::Succeeded,
            ChangeSummary::default(),
        )
    }

    /// Stack `dev` with one resource holding a secret, two versions in its history, tagged.
    fn stack() -> (tempfile::TempDir, LocalBackend) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        let b = LocalBackend::from_url(Some(&url))
            .unwrap()
            .with_secrets(Arc::new(OneKey(Arc::new(crypter))));
        let (p, dev, _) = names();
        b.create_stack(&p, &dev).unwrap();
        b.append_history(&p, &dev, &entry()).unwrap();
        let mut a = super::super::tests::resource("a");
        a.inputs.insert(
            "token".into(),
            Value::Secret(Box::new(Value::String("hunter2".into()))),
        );
        let json = Checkpoint::new(
            &p,
            &dev,
            plinth_engine::snapshot::Snapshot {
                resources: vec![a],
                pending_operations: vec![],
            },
        )
        .to_json(b.crypter("dev").as_ref())
        .unwrap();
        b.replace_checkpoint(&p, &dev, &json).unwrap();
        b.append_history(&p, &dev, &entry()).unwrap();
        b.set_tag(&p, &dev, "owner", "ana").unwrap();
        (dir, b)
    }

    #[test]
    fn a_rename_moves_state_history_backups_and_tags() {
        let (dir, b) = stack();
        let (p, dev, prod) = names();
        b.rename_stack(&p, &dev, &prod).unwrap();
        assert!(!b.stack_exists(&p, &dev));
        assert_eq!(b.selected_stack(&p), Some(prod.clone()));
        let loaded = b.load(&p, &prod).unwrap();
        assert_eq!(
            loaded.snapshot.resources[0].urn,
            Urn::new("prod", "p", None, "t:T", "a")
        );
        assert_eq!(
            loaded.snapshot.resources[0].inputs["token"],
            Value::Secret(Box::new(Value::String("hunter2".into())))
        );
        assert_eq!(b.history(&p, &prod).unwrap().len(), 2);
        assert_eq!(b.tags(&p, &prod).unwrap()["owner"], "ana");
        // Version 1 (the empty state) is found under the new name, still naming the old
        // stack: rollback renames it as it reads it.
        let v1 = b.version(&p, &prod, 1).unwrap();
        let origin = Path::new("v1");
        let renamed = plinth_state::version_as_stack(&v1, "p", &prod, origin).unwrap();
        Checkpoint::parse(&renamed, &prod, origin, b.crypter("prod").as_ref()).unwrap();
        // Nothing is left under the old name.
        let left: Vec<String> = walk(dir.path())
            .into_iter()
            .filter(|name| name.contains("dev"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // A stack of the old name can be made again, from nothing.
        b.create_stack(&p, &dev).unwrap();
        assert!(b.history(&p, &dev).unwrap().is_empty());
        assert!(b.tags(&p, &dev).unwrap().is_empty());
    }

    fn walk(dir: &Path) -> Vec<String> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                names.extend(walk(&path));
            }
            names.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
        names
    }

    #[test]
    fn a_rename_onto_an_existing_stack_or_of_a_locked_one_is_refused_changing_nothing() {
        let (_dir, b) = stack();
        let (p, dev, prod) = names();
        b.create_stack(&p, &prod).unwrap();
        assert!(matches!(
            b.rename_stack(&p, &dev, &prod),
            Err(BackendError::StackExists(_))
        ));
        let other = StackName::new("other").unwrap();
        let held = b.lock(&p, &dev, "up").unwrap();
        let err = b.rename_stack(&p, &dev, &other).unwrap_err().to_string();
        assert!(err.contains("`up`"), "{err}");
        drop(held);
        assert_eq!(b.history(&p, &dev).unwrap().len(), 2);
        assert!(!b.stack_exists(&p, &other));
    }

    /// A rename that crashed after its commit, with the history moved and nothing else.
    fn crashed_mid_rename() -> (tempfile::TempDir, LocalBackend) {
        let (dir, b) = stack();
        let (p, dev, prod) = names();
        let lock = b.lock(&p, &dev, "stack rename").unwrap();
        b.commit_rename(&p, &dev, &prod, &lock).unwrap();
        move_if_present(&b.path(&p, &dev, "history"), &b.path(&p, &prod, "history")).unwrap();
        // The process ends: the kernel frees its file lock.
        drop(lock);
        (dir, b)
    }

    #[test]
    fn a_rename_that_crashed_after_its_commit_is_finished_by_the_next_command() {
        let (dir, b) = crashed_mid_rename();
        let (p, dev, prod) = names();
        let stacks: Vec<String> = (b.stacks(&p).unwrap().into_iter())
            .map(|s| s.name.to_string())
            .collect();
        assert_eq!(stacks, ["prod"]);
        assert_eq!(b.selected_stack(&p), Some(prod.clone()));
        let loaded = b.load(&p, &prod).unwrap();
        assert_eq!(
            loaded.snapshot.resources[0].urn,
            Urn::new("prod", "p", None, "t:T", "a")
        );
        assert_eq!(b.history(&p, &prod).unwrap().len(), 2);
        assert_eq!(b.tags(&p, &prod).unwrap()["owner"], "ana");
        assert!(b.version(&p, &prod, 1).is_ok());
        let left: Vec<String> = walk(dir.path())
            .into_iter()
            .filter(|name| name.contains("dev") || name.contains("rename"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert!(matches!(
            b.rename_stack(&p, &dev, &prod),
            Err(BackendError::NoSuchStack(_))
        ));
    }

    #[test]
    fn a_rename_that_crashed_before_its_commit_leaves_the_stack_whole() {
        let (_dir, b) = stack();
        let (p, dev, prod) = names();
        let lock = b.lock(&p, &dev, "stack rename").unwrap();
        b.commit_rename(&p, &dev, &prod, &lock).unwrap();
        drop(lock);
        // The intent never reached the disk.
        std::fs::remove_file(b.path(&p, &dev, INTENT)).unwrap();
        assert!(b.require_stack(&p, &dev).is_ok());
        assert!(!b.path(&p, &dev, RENAMED).exists());
        assert!(!b.stack_exists(&p, &prod));
        assert_eq!(b.history(&p, &dev).unwrap().len(), 2);
    }

    #[test]
    fn a_rename_still_running_elsewhere_is_left_alone() {
        let (_dir, b) = crashed_mid_rename();
        let (p, dev, prod) = names();
        let held = StackLock::acquire(b.path(&p, &dev, "lock"), "dev", "stack rename").unwrap();
        b.finish_interrupted_renames(&p).unwrap();
        assert!(b.path(&p, &dev, INTENT).exists());
        assert!(!b.stack_exists(&p, &prod));
        drop(held);
        b.finish_interrupted_renames(&p).unwrap();
        assert!(b.stack_exists(&p, &prod) && !b.stack_exists(&p, &dev));
    }

    #[test]
    fn a_hostile_intent_is_refused_naming_its_file() {
        let (_dir, b) = crashed_mid_rename();
        let (p, dev, _) = names();
        let path = b.path(&p, &dev, INTENT);
        std::fs::write(&path, br#"{"to": "../../elsewhere"}"#).unwrap();
        let err = b.stacks(&p).unwrap_err().to_string();
        assert!(err.contains("dev.renaming"), "{err}");
        assert!(b.path(&p, &dev, "json").exists());
    }

    #[test]
    fn tags_are_checked_set_listed_and_removed() {
        let (_dir, b) = stack();
        let (p, dev, _) = names();
        b.set_tag(&p, &dev, "env", "staging").unwrap();
        b.set_tag(&p, &dev, "owner", "bo").unwrap();
        let listed = &b.stacks(&p).unwrap()[0];
        assert_eq!(listed.tags.len(), 2);
        assert_eq!(listed.tags["owner"], "bo");
        assert!(matches!(
            b.set_tag(&p, &dev, "bad name", "x"),
            Err(BackendError::Tag(TagError::Name(_)))
        ));
        assert!(matches!(
            b.set_tag(&p, &dev, "env", "a\u{1b}[2Jb"),
            Err(BackendError::Tag(TagError::Value(_)))
        ));
        assert!(b.remove_tag(&p, &dev, "env").unwrap());
        assert!(!b.remove_tag(&p, &dev, "env").unwrap());
        assert_eq!(b.tags(&p, &dev).unwrap().len(), 1);
        for i in 0..TAGS_MAX - 1 {
            b.set_tag(&p, &dev, &format!("t{i}"), "").unwrap();
        }
        assert!(matches!(
            b.set_tag(&p, &dev, "one-more", ""),
            Err(BackendError::Tag(TagError::TooMany))
        ));
        // Setting one it has is no new tag.
        b.set_tag(&p, &dev, "owner", "cy").unwrap();
    }
}
