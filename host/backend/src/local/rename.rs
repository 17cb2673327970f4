//! `plinth stack rename` and stack tags on the file backend. A rename moves everything the
//! stack keeps under its name: its checkpoint (every URN in it renamed), history, event logs,
//! checkpoint backups and tags.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use plinth_engine::names::{ProjectName, StackName};
use plinth_state::tags::{self, StackTags, TAGS_MAX, TagError};

use super::LocalBackend;
use crate::error::BackendError;
use crate::files::write_atomically;

/// Renames `from` to `to`; a missing `from` is nothing to move.
fn move_if_present(from: &Path, to: &Path) -> Result<(), BackendError> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(BackendError::io("moving", from)(e))
        }
        _ => Ok(()),
    }
}

impl LocalBackend {
    /// Renames stack `from` to `to`, under `from`'s lock. Its state is rewritten under the new
    /// name first (a journal an interrupted update left is folded in; secrets stay sealed),
    /// then what it keeps beside it is moved, then the new checkpoint is written and the old
    /// one removed.
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
        let mut edit = self.load_for_edit(project, from, &lock)?;
        plinth_state::rename_snapshot(edit.snapshot_mut(), to);
        let json = edit.into_checkpoint(project, to, self.crypter(from).as_ref())?;
        self.move_backups(project, from, to)?;
        for ext in ["history", "tags"] {
            move_if_present(&self.path(project, from, ext), &self.path(project, to, ext))?;
        }
        move_if_present(&self.logs_dir(project, from), &self.logs_dir(project, to))?;
        let path = self.path(project, to, "json");
        write_atomically(&path, &json).map_err(BackendError::io("writing", &path))?;
        let selected = self.selected_stack(project).as_ref() == Some(from);
        for ext in ["journal", "json"] {
            let path = self.path(project, from, ext);
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(BackendError::io("removing", &path)(e));
                }
                _ => {}
            }
        }
        drop(lock);
        if selected {
            self.select_stack(project, to)?;
        }
        Ok(())
    }

    /// Moves the checkpoint backups of `from` to `to`'s, each renamed as `to`'s backups are
    /// named (so `stack rollback` finds them; it renames the state they hold when it reads
    /// one). Backups a removed stack named `to` left are set aside, not mixed in.
    fn move_backups(
        &self,
        project: &ProjectName,
        from: &StackName,
        to: &StackName,
    ) -> Result<(), BackendError> {
        let (old, new) = (self.backup_dir(project, from), self.backup_dir(project, to));
        if new.exists() {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let aside = new.with_file_name(format!(".removed-{to}-{nanos}"));
            move_if_present(&new, &aside)?;
        }
        let backups = self.backups(project, from)?;
        if backups.is_empty() {
            return Ok(());
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
        match std::fs::remove_dir(&old) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(BackendError::io("removing", &old)(e))
            }
            _ => Ok(()),
        }
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
