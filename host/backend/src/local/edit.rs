//! Edits by hand on the file backend: load under the lock, write back if the edit is valid.

use plinth_engine::names::{ProjectName, StackName};

use super::lock::StackLock;
use super::{Fields, LocalBackend};
use crate::edit::{StateEdit, Verbatim};
use crate::error::BackendError;

impl LocalBackend {
    /// Loads the stack's state for an edit (under its lock), replaying any journal left by an
    /// interrupted update.
    pub fn load_for_edit(
        &self,
        project: &ProjectName,
        stack: &StackName,
        _lock: &StackLock,
    ) -> Result<StateEdit, BackendError> {
        let crypter = self.crypter(stack);
        let verbatim = Verbatim(crypter.as_ref());
        let loaded = self.load_checking(project, stack, &verbatim, Fields::Unchecked)?;
        Ok(StateEdit::new(loaded))
    }

    /// Writes an edited state back if it passes the integrity checks, keeping the previous
    /// checkpoint as a backup.
    pub fn save_edit(
        &self,
        project: &ProjectName,
        stack: &StackName,
        edit: StateEdit,
        _lock: &StackLock,
    ) -> Result<(), BackendError> {
        let json = edit.into_checkpoint(project, stack, self.crypter(stack).as_ref())?;
        self.replace_checkpoint(project, stack, &json)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use plinth_engine::snapshot::Snapshot;
    use plinth_state::Checkpoint;

    use plinth_engine::resource::ResourceState;
    use plinth_engine::urn::Urn;
    use plinth_engine::value::Value;

    use super::*;
    use plinth_state::CheckpointView;

    fn p() -> ProjectName {
        ProjectName::new("p").unwrap()
    }

    fn dev() -> StackName {
        StackName::new("dev").unwrap()
    }
    use crate::secrets::{Crypter, PassphraseCrypter, SecretsProvider};

    struct OneKey(Arc<PassphraseCrypter>);

    impl SecretsProvider for OneKey {
        fn crypter(&self, _: &str) -> Arc<dyn Crypter> {
            self.0.clone()
        }
    }

    fn resource(name: &str, deps: &[&str]) -> ResourceState {
        let urn = |name: &str| Urn::new("dev", "p", None, "t:T", name);
        ResourceState {
            urn: urn(name),
            ty: "t:T".into(),
            custom: true,
            id: format!("id-{name}"),
            inputs: Default::default(),
            outputs: Default::default(),
            parent: None,
            dependencies: deps.iter().map(|d| urn(d)).collect(),
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        }
    }

    /// A stack `dev` of project `p` holding `snapshot`, written through a keyed backend; and a
    /// backend on the same directory without any key.
    fn stack_with(snapshot: Snapshot) -> (tempfile::TempDir, LocalBackend, LocalBackend) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let keyless = LocalBackend::from_url(Some(&url)).unwrap();
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        let keyed = keyless
            .clone()
            .with_secrets(Arc::new(OneKey(Arc::new(crypter))));
        keyed.create_stack(&p(), &dev()).unwrap();
        let json = Checkpoint::new(&p(), &dev(), snapshot)
            .to_json(keyed.crypter("dev").as_ref())
            .unwrap();
        keyed.replace_checkpoint(&p(), &dev(), &json).unwrap();
        (dir, keyed, keyless)
    }

    fn checkpoint_text(b: &LocalBackend) -> String {
        std::fs::read_to_string(b.path(&p(), &dev(), "json")).unwrap()
    }

    fn ciphertexts(text: &str) -> Vec<&str> {
        text.match_indices("\"v1:")
            .map(|(i, _)| &text[i..i + 40])
            .collect()
    }

    #[test]
    fn edits_a_stack_with_secrets_without_its_key_leaving_them_sealed() {
        let secret = Value::Secret(Box::new("hunter2".into()));
        let mut a = resource("a", &[]);
        a.outputs.insert("token".into(), secret.clone());
        let mut snapshot = Snapshot {
            resources: vec![a, resource("b", &["a"])],
            ..Default::default()
        };
        snapshot.adopt_root("p", "dev", [("token".to_owned(), secret.clone())].into());
        let (_dir, keyed, keyless) = stack_with(snapshot);
        let before = checkpoint_text(&keyed);
        assert!(!before.contains("hunter2"));
        assert_eq!(ciphertexts(&before).len(), 2);

        let lock = keyless.lock(&p(), &dev(), "state delete").unwrap();
        let mut edit = keyless.load_for_edit(&p(), &dev(), &lock).unwrap();
        let b = edit.snapshot().resources[2].urn.clone();
        edit.snapshot_mut().remove(&b, false).unwrap();
        keyless.save_edit(&p(), &dev(), edit, &lock).unwrap();
        drop(lock);

        let after = checkpoint_text(&keyed);
        assert_eq!(ciphertexts(&after), ciphertexts(&before));
        let loaded = keyed.load(&p(), &dev()).unwrap().snapshot;
        assert_eq!(loaded.resources.len(), 2);
        assert_eq!(loaded.resources[1].outputs["token"], secret);
        assert_eq!(loaded.outputs()["token"], secret);
        assert_eq!(keyed.backups(&p(), &dev()).unwrap().len(), 2);
    }

    #[test]
    fn a_secret_stored_unsealed_is_sealed_by_the_stacks_key() {
        let mut a = resource("a", &[]);
        a.inputs.insert(
            "token".into(),
            serde_json::from_str(r#"{"plinth:sig":"secret","value":"hunter2"}"#).unwrap(),
        );
        let (_dir, keyed, keyless) = stack_with(Snapshot::default());
        // As an older plinth wrote it: the secret in the clear.
        let snapshot = Snapshot {
            resources: vec![a],
            ..Default::default()
        };
        let (project, stack) = (p(), dev());
        let legacy = CheckpointView::current(&project, &stack, &[], &snapshot);
        let path = keyed.path(&p(), &dev(), "json");
        std::fs::write(&path, serde_json::to_vec(&legacy).unwrap()).unwrap();

        let lock = keyless.lock(&p(), &dev(), "state protect").unwrap();
        let mut edit = keyless.load_for_edit(&p(), &dev(), &lock).unwrap();
        let urn = edit.snapshot().resources[0].urn.clone();
        edit.snapshot_mut().set_protect(&urn, true).unwrap();
        // Without the key it cannot be sealed, so nothing is written.
        let err = keyless.save_edit(&p(), &dev(), edit, &lock).unwrap_err();
        assert!(
            matches!(
                err,
                BackendError::State(plinth_state::StateError::Secrets(_))
            ),
            "{err}"
        );
        assert!(checkpoint_text(&keyed).contains("hunter2"));

        let mut edit = keyed.load_for_edit(&p(), &dev(), &lock).unwrap();
        edit.snapshot_mut().set_protect(&urn, true).unwrap();
        keyed.save_edit(&p(), &dev(), edit, &lock).unwrap();
        assert!(!checkpoint_text(&keyed).contains("hunter2"));
        assert!(keyed.load(&p(), &dev()).unwrap().snapshot.resources[0].protect);
    }

    #[test]
    fn an_interrupted_journal_is_folded_in_and_discarded() {
        use plinth_engine::journal::JournalEntry;
        let (_dir, keyed, _) = stack_with(Snapshot::default());
        let lock = keyed.lock(&p(), &dev(), "up").unwrap();
        let loaded = keyed.load(&p(), &dev()).unwrap();
        let mut journal = keyed.begin_update(&p(), &dev(), &loaded, &lock).unwrap();
        let a = resource("a", &[]);
        let entries = [
            JournalEntry::Begin {
                seq: 1,
                kind: plinth_engine::snapshot::PendingKind::Creating,
                resource: a.clone(),
                old: None,
            },
            JournalEntry::Created {
                seq: 1,
                resource: a.clone(),
                replaces: None,
            },
        ];
        for entry in &entries {
            journal.append(entry).unwrap();
        }
        journal.sync().unwrap();
        drop(journal);

        let mut edit = keyed.load_for_edit(&p(), &dev(), &lock).unwrap();
        assert!(edit.recovered());
        edit.snapshot_mut().set_protect(&a.urn, true).unwrap();
        keyed.save_edit(&p(), &dev(), edit, &lock).unwrap();
        assert!(!keyed.path(&p(), &dev(), "journal").exists());
        let loaded = keyed.load(&p(), &dev()).unwrap();
        assert!(!loaded.recovered);
        assert!(loaded.snapshot.resources[0].protect);
    }

    #[test]
    fn an_invalid_edit_is_not_written() {
        let (_dir, keyed, _) = stack_with(Snapshot {
            resources: vec![resource("a", &[]), resource("b", &["a"])],
            ..Default::default()
        });
        let before = checkpoint_text(&keyed);
        let lock = keyed.lock(&p(), &dev(), "state delete").unwrap();
        let mut edit = keyed.load_for_edit(&p(), &dev(), &lock).unwrap();
        edit.snapshot_mut().resources.remove(0);
        let err = keyed.save_edit(&p(), &dev(), edit, &lock).unwrap_err();
        assert!(matches!(err, BackendError::InvalidEdit { .. }), "{err}");
        assert_eq!(checkpoint_text(&keyed), before);
    }
}
