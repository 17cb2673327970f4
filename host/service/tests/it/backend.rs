//! `ServiceBackend`, the `Backend` interface over the protocol, against a real `plinth-serve` on
//! a real PostgreSQL: stacks, phases as versions and history, the base of the next phase, edits
//! and imports, a held stack naming its holder, and a lost lease stopping the update.

use std::sync::Arc;
use std::time::SystemTime;

use crate::common::*;
use plinth_backend::secrets::{Crypter, PassphraseCrypter, SecretsProvider};
use plinth_backend::service::ServiceBackend;
use plinth_backend::{
    Backend, BackendError, HistoryEntry, PluginUse, UpdateKind, UpdateResult, UsedPlugins,
};
use plinth_engine::journal::JournalEntry;
use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::resource::ResourceState;
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::Value as PValue;

/// One key for every stack.
struct OneKey(Arc<PassphraseCrypter>);

impl SecretsProvider for OneKey {
    fn crypter(&self, _: &str) -> Arc<dyn Crypter> {
        self.0.clone()
    }
}

fn backend(url: &str, token: &str, workspaces: &std::path::Path) -> ServiceBackend {
    let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
    ServiceBackend::new(
        url,
        token,
        Arc::new(OneKey(Arc::new(crypter))),
        workspaces.to_owned(),
    )
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
        Default::default(),
    )
}

fn journal(seq: u64, name: &str, secret: bool) -> Vec<JournalEntry> {
    let inputs = if secret {
        [(
            "token".to_owned(),
            PValue::Secret(Box::new(PValue::String("hunter2".into()))),
        )]
        .into()
    } else {
        Default::default()
    };
    (creating(seq, &resource(name, inputs), false).into_iter())
        .map(|e| serde_json::from_value(e).unwrap())
        .collect()
}

fn plugin(name: &str) -> PluginUse {
    PluginUse {
        name: name.to_owned(),
        version: "1.0.0".to_owned(),
        sha256: "ab".repeat(32),
    }
}

/// The resource of `snapshot` named `name`.
fn named<'a>(snapshot: &'a Snapshot, name: &str) -> &'a ResourceState {
    (snapshot.resources.iter())
        .find(|r| r.urn.name() == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", snapshot.resources))
}

#[test]
fn phases_become_versions_and_the_next_phase_starts_from_the_last() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    let workspaces = tempfile::tempdir().unwrap();
    let b = backend(&service.url, &alice, workspaces.path());
    let (p, dev) = names();
    assert_eq!(b.user().unwrap(), "alice");
    assert!(matches!(
        b.get_stack(&p, &dev),
        Err(BackendError::NoSuchStack(_))
    ));
    let stack = b.create_stack(&p, &dev).unwrap();
    assert!(matches!(
        b.create_stack(&p, &dev),
        Err(BackendError::StackExists(_))
    ));
    assert_eq!(b.selected_stack(&p).as_deref(), Some("dev"));
    assert_eq!(b.get_stack(&p, &dev).unwrap(), stack);

    let mut update = b.begin_update(&stack, "up").unwrap();
    assert!(update.base().unwrap().snapshot.resources.is_empty());
    // Another client finds the stack held, and who holds it.
    let err = b.begin_update(&stack, "destroy").err().unwrap();
    assert!(matches!(err, BackendError::Locked { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("`update` by alice") && message.contains("lease expires"),
        "{message}"
    );
    let holder = b.holder(&stack).unwrap().unwrap();
    assert!(holder.running);
    assert_eq!(holder.info.unwrap().user, "alice");
    assert!(b.list_stacks(&p).unwrap()[0].locked);

    for (i, name) in ["a", "b"].into_iter().enumerate() {
        let used = UsedPlugins::default();
        let mut recording = update.record(used.clone()).unwrap();
        // Plugins load while the phase runs; its checkpoint records them.
        used.record(plugin(name));
        for e in journal(i as u64 + 1, name, i == 0) {
            recording.persister.append(&e).unwrap();
        }
        recording.persister.sync().unwrap();
        update.complete(&entry(UpdateKind::Update)).unwrap();
        // The next phase starts from what this one left, secrets opened.
        let base = update.base().unwrap();
        assert_eq!(base.snapshot.resources.len(), i + 1);
        assert_eq!(
            named(&base.snapshot, "a").inputs.get("token"),
            Some(&PValue::Secret(Box::new(PValue::String("hunter2".into())))),
            "{:?}",
            base.snapshot.resources
        );
    }
    drop(update);
    assert!(
        b.holder(&stack).unwrap().is_none(),
        "dropping ends the update"
    );
    let history = b.history(&stack).unwrap();
    assert_eq!(history.len(), 2);
    let listed = b.list_stacks(&p).unwrap();
    assert_eq!((listed[0].resources, listed[0].locked), (2, false));
    let exported = b.export(&stack).unwrap();
    assert!(!String::from_utf8_lossy(&exported).contains("hunter2"));
    let loaded = b.load_redacted(&stack).unwrap();
    assert_eq!(loaded.snapshot.resources.len(), 2);
    assert_eq!(loaded.plugins, [plugin("b")]);

    // An edit by hand keeps secrets sealed; an import replaces the state.
    let mut update = b.begin_update(&stack, "state protect").unwrap();
    let mut edit = update.load_for_edit().unwrap();
    let urn = named(edit.snapshot(), "b").urn.clone();
    assert_eq!(edit.snapshot_mut().set_protect(&urn, true).unwrap(), 1);
    update
        .save_edit(edit, &entry(UpdateKind::StateEdit))
        .unwrap();
    drop(update);
    let loaded = b.load(&stack).unwrap();
    assert!(named(&loaded.snapshot, "b").protect);
    assert_eq!(
        named(&loaded.snapshot, "a").inputs.get("token"),
        Some(&PValue::Secret(Box::new(PValue::String("hunter2".into()))))
    );
    let mut update = b.begin_update(&stack, "stack import").unwrap();
    let report = update
        .import(&exported, false, &entry(UpdateKind::Import))
        .unwrap();
    assert_eq!(report.resources, 2);
    drop(update);
    assert!(!named(&b.load(&stack).unwrap().snapshot, "b").protect);
    let kinds: Vec<_> = b.history(&stack).unwrap().iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            UpdateKind::Import,
            UpdateKind::StateEdit,
            UpdateKind::Update,
            UpdateKind::Update
        ]
    );

    let err = b.remove_stack(&stack, false).unwrap_err().to_string();
    assert!(err.contains("still has 2 resources"), "{err}");
    b.remove_stack(&stack, true).unwrap();
    assert_eq!(b.selected_stack(&p), None);
    assert!(b.list_stacks(&p).unwrap().is_empty());
}

#[test]
fn a_lost_lease_stops_the_update_and_an_open_phase_is_left_as_journaled() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    let workspaces = tempfile::tempdir().unwrap();
    let b = backend(&service.url, &alice, workspaces.path());
    let (p, dev) = names();
    let stack = b.create_stack(&p, &dev).unwrap();
    let mut update = b.begin_update(&stack, "up").unwrap();
    let mut recording = update.record(UsedPlugins::default()).unwrap();
    let mut entries = journal(1, "a", false);
    // The operation on `b` begins, then the stack is cancelled under it.
    entries.push(journal(2, "b", false).remove(0));
    for e in &entries {
        recording.persister.append(e).unwrap();
    }
    recording.persister.sync().unwrap();
    b.cancel(&stack).unwrap();
    for e in journal(3, "c", false) {
        recording.persister.append(&e).unwrap();
    }
    let error = recording.persister.sync().unwrap_err();
    assert!(!error.is_transient(), "{error}");
    let error = update
        .complete(&entry(UpdateKind::Update))
        .unwrap_err()
        .to_string();
    assert!(error.contains("no longer holds its stack"), "{error}");
    drop(update);

    // The next update starts from what was journaled (the cancel made it a version), the
    // interrupted operation pending.
    let mut next = b.begin_update(&stack, "up").unwrap();
    let base = next.base().unwrap();
    assert_eq!(base.snapshot.resources.len(), 1);
    assert_eq!(base.snapshot.pending_operations.len(), 1);
    drop(next);
    let history = b.history(&stack).unwrap();
    assert_eq!(history[0].result, UpdateResult::Failed);
}
