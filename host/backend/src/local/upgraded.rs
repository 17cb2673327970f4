//! Checkpoints of older schemas, loaded by the file backend: upgraded as they are read, their
//! files left as they were.

use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::urn::{STACK_TYPE, Urn, stack_urn};
use sha2::{Digest, Sha256};

use plinth_state::StateError;

use crate::{BackendError, LocalBackend};

/// A checkpoint of schema 1 written by plinth before stacks had roots.
const FIXTURE: &str = include_str!("../../../../tests/e2e/fixtures/schema-1/legacy.json");

fn scenario() -> (ProjectName, StackName) {
    (
        ProjectName::new("scenario").unwrap(),
        StackName::new("legacy").unwrap(),
    )
}

/// A state directory holding `checkpoint` as stack `legacy` of project `scenario`.
fn state_with(checkpoint: &str) -> (tempfile::TempDir, LocalBackend, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let stacks = dir.path().join("stacks/scenario");
    std::fs::create_dir_all(&stacks).unwrap();
    let path = stacks.join("legacy.json");
    std::fs::write(&path, checkpoint).unwrap();
    let backend = LocalBackend::from_url(Some(&format!("file://{}", dir.path().display())));
    (dir, backend.unwrap(), path)
}

#[test]
fn a_schema_1_checkpoint_loads_with_a_root_and_its_file_is_left_as_it_was() {
    let (_dir, backend, path) = state_with(FIXTURE);
    let (project, stack) = scenario();
    let snapshot = backend.load_redacted(&project, &stack).unwrap().snapshot;
    snapshot.verify_integrity().unwrap();

    let root = &snapshot.resources[0];
    assert_eq!(root.urn, stack_urn("scenario", "legacy"));
    assert_eq!(root.ty, STACK_TYPE);
    let mut keys: Vec<&str> = snapshot.outputs().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["count", "names", "password"]);
    // URNs are those the file holds; parents are what the next update would record.
    let old: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    let old_urns: Vec<Urn> = (old["snapshot"]["resources"].as_array().unwrap().iter())
        .map(|r| Urn::parse(r["urn"].as_str().unwrap()).unwrap())
        .collect();
    let urns: Vec<Urn> = snapshot.resources[1..]
        .iter()
        .map(|r| r.urn.clone())
        .collect();
    assert_eq!(urns, old_urns);
    for r in &snapshot.resources[1..] {
        let parent = r.parent.as_ref().map(|p| p.name());
        let expected = match (r.ty.as_str(), r.urn.name()) {
            (t, _) if t.starts_with("plinth:providers:") => None,
            ("testkit:Echo", _) => Some("grp"),
            _ => Some("scenario-legacy"),
        };
        assert_eq!(parent, expected, "{}", r.urn);
    }
    // Reading never writes: only the next update writes the upgraded checkpoint.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), FIXTURE);
}

#[test]
fn a_schema_1_journal_is_replayed_before_the_upgrade_and_its_outputs_land_on_the_root() {
    let (_dir, backend, path) = state_with(FIXTURE);
    let (project, stack) = scenario();
    let digest = format!("sha256:{:x}", Sha256::digest(FIXTURE.as_bytes()));
    // What an interrupted schema-1 update left: the first resource carried over, then the
    // stack's outputs.
    let journal = format!(
        "{{\"base\":\"{digest}\"}}\n{{\"entry\":\"same\",\"old\":0}}\n\
         {{\"entry\":\"stack-outputs\",\"outputs\":{{\"count\":3.0}}}}\n"
    );
    std::fs::write(path.with_extension("journal"), journal).unwrap();
    let loaded = backend.load_redacted(&project, &stack).unwrap();
    assert!(loaded.recovered);
    let snapshot = loaded.snapshot;
    snapshot.verify_integrity().unwrap();
    assert_eq!(snapshot.resources[0].ty, STACK_TYPE);
    assert_eq!(snapshot.outputs().keys().collect::<Vec<_>>(), ["count"]);
    assert_eq!(snapshot.resources.len(), 7);
}

/// A checkpoint of schema 2: the schema-1 fixture as plinth upgraded and exported it
/// before schema 3.
const SCHEMA_2: &str = include_str!("../../../../tests/e2e/fixtures/schema-2/legacy.json");

#[test]
fn a_schema_2_checkpoint_loads_as_written_and_is_written_back_in_schema_3_unchanged() {
    let (_dir, backend, path) = state_with(SCHEMA_2);
    let (project, stack) = scenario();
    let snapshot = backend.load_redacted(&project, &stack).unwrap().snapshot;
    snapshot.verify_integrity().unwrap();
    // Every resource and parent as the file holds them, providers without one.
    let old: serde_json::Value = serde_json::from_str(SCHEMA_2).unwrap();
    let old = old["snapshot"]["resources"].as_array().unwrap();
    assert_eq!(snapshot.resources.len(), old.len());
    for (r, old) in snapshot.resources.iter().zip(old) {
        assert_eq!(r.urn.as_str(), old["urn"].as_str().unwrap());
        assert_eq!(r.parent.as_ref().map(Urn::as_str), old["parent"].as_str());
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), SCHEMA_2);

    // Written back (here as the service does, keeping secrets sealed): schema 3, smaller,
    // with no parent that is the root, and the same state.
    let base = Some(SCHEMA_2.as_bytes());
    let written =
        plinth_state::rebuild_sealed(&project, &stack, base, &[] as &[&[u8]], None, &path).unwrap();
    let text = String::from_utf8(written).unwrap();
    let root = stack_urn("scenario", "legacy");
    assert!(text.contains("\"version\": 3"), "{text}");
    assert!(!text.contains(&format!("\"parent\":\"{root}\"")), "{text}");
    assert!(text.contains("\"parent\":null"), "{text}");
    assert!(text.len() < SCHEMA_2.len());
    let (_dir, rewritten, _) = state_with(&text);
    let again = rewritten.load_redacted(&project, &stack).unwrap().snapshot;
    assert_eq!(again, snapshot);
}

#[test]
fn a_newer_schema_is_refused_naming_its_version() {
    let newer = FIXTURE.replace("\"version\": 1\n", "\"version\": 4\n");
    assert_ne!(newer, FIXTURE);
    let (_dir, backend, _) = state_with(&newer);
    let (project, stack) = scenario();
    let error = backend.load_redacted(&project, &stack).unwrap_err();
    assert!(
        matches!(
            error,
            BackendError::State(StateError::NewerSchema {
                found: 4,
                supported: 3,
                ..
            })
        ),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("schema 4") && message.contains("upgrade plinth"),
        "{message}"
    );
}
