//! Fuzzing the state loaders: a checkpoint and a journal, truncated, bit-flipped, spliced with
//! garbage or with lines repeated, must load as a valid snapshot or fail with an error, never
//! panic and never load an invalid snapshot. Cases the generator found stay as regressions.

use plinth_backend::{BackendError, LocalBackend, StateError};
use plinth_engine::journal::JournalEntry;
use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::resource::ResourceState;
use plinth_engine::snapshot::PendingKind;
use plinth_engine::urn::Urn;
use plinth_engine::value::Value;
use proptest::prelude::*;

const PROJECT: &str = "p";
const STACK: &str = "dev";

fn project() -> ProjectName {
    ProjectName::new(PROJECT).unwrap()
}

fn stack() -> StackName {
    StackName::new(STACK).unwrap()
}

fn state(name: &str, deps: &[&str]) -> ResourceState {
    let urn = |n: &str| Urn::new(STACK, PROJECT, None, "t:Thing", n);
    ResourceState {
        urn: urn(name),
        ty: "t:Thing".into(),
        custom: true,
        id: format!("id-{name}"),
        inputs: [("n".to_owned(), Value::Number(1.0))].into(),
        outputs: [("s".to_owned(), Value::String(name.to_owned()))].into(),
        parent: None,
        dependencies: deps.iter().map(|d| urn(d)).collect(),
        protect: false,
        retain_on_delete: false,
        delete: false,
        provider: None,
        custom_timeouts: None,
    }
}

/// A stack with a committed checkpoint of two resources and an interrupted journal that adds
/// a third and starts a fourth.
fn fixture() -> (
    tempfile::TempDir,
    LocalBackend,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let dir = tempfile::tempdir().unwrap();
    let backend =
        LocalBackend::from_url(Some(&format!("file://{}", dir.path().display()))).unwrap();
    backend.create_stack(&project(), &stack()).unwrap();
    for round in [
        vec![("a", vec![]), ("b", vec!["a"])],
        vec![("c", vec!["b"]), ("d", vec![])],
    ] {
        let loaded = backend.load(&project(), &stack()).unwrap();
        let lock = backend.lock(&project(), &stack(), "test").unwrap();
        let mut persister = backend
            .begin_update(&project(), &stack(), &loaded, &lock)
            .unwrap();
        let keep = loaded.snapshot.resources.len();
        // Resources of the checkpoint are carried over first, as an update does.
        for old in 0..keep {
            persister
                .append(&JournalEntry::Same {
                    old,
                    resource: None,
                })
                .unwrap();
        }
        for (i, (name, deps)) in round.iter().enumerate() {
            let resource = state(name, deps);
            let seq = i as u64 + 1;
            persister
                .append(&JournalEntry::Begin {
                    seq,
                    kind: PendingKind::Creating,
                    resource: resource.clone(),
                    old: None,
                })
                .unwrap();
            if *name != "d" {
                persister
                    .append(&JournalEntry::Created {
                        seq,
                        resource,
                        replaces: None,
                    })
                    .unwrap();
            }
        }
        persister.sync().unwrap();
        if keep == 0 {
            // The first round completes: compaction writes the checkpoint.
            let snapshot = backend.load(&project(), &stack()).unwrap().snapshot;
            persister.compact(&snapshot).unwrap();
        }
        // The second round is "killed": its journal stays behind.
    }
    let stacks = dir.path().join("stacks").join(PROJECT);
    let checkpoint = stacks.join(format!("{STACK}.json"));
    let journal = stacks.join(format!("{STACK}.journal"));
    assert!(journal.exists());
    (dir, backend, checkpoint, journal)
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    RepeatLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1u8..=255).prop_map(|(at, bit)| Mutation::Flip(at, bit)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        any::<usize>().prop_map(Mutation::RepeatLine),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    match m {
        Mutation::Truncate(at) => bytes.truncate(at % bytes.len()),
        Mutation::Flip(at, bit) => {
            let i = at % bytes.len();
            bytes[i] ^= bit;
        }
        Mutation::Insert(at, garbage) => {
            let i = at % bytes.len();
            bytes.splice(i..i, garbage.iter().copied());
        }
        Mutation::RepeatLine(at) => {
            let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
            let line = lines[at % lines.len()].to_vec();
            bytes.extend_from_slice(&line);
            bytes.push(b'\n');
        }
    }
}

/// Loading either fails with an error or gives a snapshot that passes the integrity checks.
fn check_load(backend: &LocalBackend) {
    match backend.load(&project(), &stack()) {
        Ok(loaded) => loaded.snapshot.verify_integrity().unwrap(),
        Err(
            BackendError::State(StateError::Corrupt { .. })
            // A flipped byte in the stack's name makes it another stack's state.
            | BackendError::State(StateError::OtherStack { .. })
            | BackendError::State(StateError::NewerSchema { .. })
            | BackendError::State(StateError::OlderSchema { .. }),
        ) => {}
        Err(other) => panic!("unexpected error kind: {other}"),
    }
    // Listing stacks goes through the loader too, and must not panic either.
    let _ = backend.stacks(&project());
}

#[test]
fn the_fixture_recovers_its_interrupted_journal() {
    let (_dir, backend, _, _) = fixture();
    let loaded = backend.load(&project(), &stack()).unwrap();
    assert!(loaded.recovered);
    let names: Vec<_> = loaded
        .snapshot
        .resources
        .iter()
        .map(|r| r.urn.name())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(loaded.snapshot.pending_operations.len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300)
    ))]

    #[test]
    fn a_damaged_checkpoint_never_loads_wrong(mutations in prop::collection::vec(mutation(), 1..4)) {
        let (_dir, backend, checkpoint, _) = fixture();
        let mut bytes = std::fs::read(&checkpoint).unwrap();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        std::fs::write(&checkpoint, bytes).unwrap();
        check_load(&backend);
    }

    #[test]
    fn a_damaged_journal_never_loads_wrong(mutations in prop::collection::vec(mutation(), 1..4)) {
        let (_dir, backend, _, journal) = fixture();
        let mut bytes = std::fs::read(&journal).unwrap();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        std::fs::write(&journal, bytes).unwrap();
        check_load(&backend);
    }
}

/// A field of the exported state to replace, by its key in a resource.
#[derive(Debug, Clone, Copy)]
enum Field {
    Urn,
    Type,
    Id,
    Parent,
    Dependency,
    ProviderUrn,
    ProviderId,
}

impl Field {
    fn key(self) -> &'static str {
        match self {
            Field::Urn => "urn",
            Field::Type => "type",
            Field::Id => "id",
            Field::Parent => "parent",
            Field::Dependency => "dependencies",
            Field::ProviderUrn | Field::ProviderId => "provider",
        }
    }

    fn set(self, resource: &mut serde_json::Value, value: &str) {
        let value = serde_json::Value::String(value.to_owned());
        let provider_urn = "urn:plinth:dev::p::plinth:providers:t::default";
        match self {
            Field::Dependency => resource["dependencies"] = serde_json::json!([value]),
            Field::ProviderUrn => {
                resource["provider"] = serde_json::json!({ "urn": value, "id": "pid" })
            }
            Field::ProviderId => {
                resource["provider"] = serde_json::json!({ "urn": provider_urn, "id": value })
            }
            other => resource[other.key()] = value,
        }
    }
}

fn field() -> impl Strategy<Value = Field> {
    prop_oneof![
        Just(Field::Urn),
        Just(Field::Type),
        Just(Field::Id),
        Just(Field::Parent),
        Just(Field::Dependency),
        Just(Field::ProviderUrn),
        Just(Field::ProviderId),
    ]
}

/// Malformed URNs, type tokens and ids: valid ones with a troublesome piece spliced in, or
/// anything at all.
fn malformed() -> impl Strategy<Value = String> {
    let valid = prop_oneof![
        Just("urn:plinth:dev::p::t:Thing::a".to_owned()),
        Just("urn:plinth:dev::p::my:Web$t:Thing::a".to_owned()),
        Just("t:Thing".to_owned()),
        Just("id-a".to_owned()),
    ];
    let piece = prop_oneof![
        Just(""),
        Just("::"),
        Just(":"),
        Just("$"),
        Just(".."),
        Just("/"),
        Just(" "),
        Just("\n"),
        Just("é"),
        Just("\u{0}"),
    ];
    prop_oneof![
        (valid, any::<usize>(), any::<usize>(), piece).prop_map(|(s, at, len, piece)| {
            let chars: Vec<char> = s.chars().collect();
            let at = at % (chars.len() + 1);
            let end = (at + len % 4).min(chars.len());
            let mut out: String = chars[..at].iter().collect();
            out.push_str(piece);
            out.extend(&chars[end..]);
            out
        }),
        "\\PC{0,24}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300)
    ))]

    /// `stack import` of a state with one field replaced: refused with an error naming the
    /// field, or imported as a state every later load reads (or refuses) without a panic.
    #[test]
    fn an_import_with_a_malformed_field_is_refused_naming_it(
        field in field(),
        value in malformed(),
        which in any::<usize>(),
        force in any::<bool>(),
    ) {
        let (_dir, backend, _, _) = fixture();
        let mut state: serde_json::Value =
            serde_json::from_slice(&backend.export(&project(), &stack()).unwrap()).unwrap();
        let resources = state["snapshot"]["resources"].as_array_mut().unwrap();
        let len = resources.len();
        field.set(&mut resources[which % len], &value);
        let bytes = serde_json::to_vec(&state).unwrap();
        let lock = backend.lock(&project(), &stack(), "stack import").unwrap();
        match backend.import(&project(), &stack(), &bytes, force, &lock) {
            Err(BackendError::State(StateError::Corrupt { reason, .. })) => {
                let named = reason.contains(field.key())
                    // An order or reference problem, which `--force` lets through.
                    || (!force && reason.contains("--force"));
                prop_assert!(named, "{field:?} = {value:?}: {reason}");
            }
            Err(other) => prop_assert!(false, "unexpected error kind: {other}"),
            Ok(_) => {
                drop(lock);
                match backend.load(&project(), &stack()) {
                    Ok(loaded) => loaded.snapshot.check_fields().unwrap(),
                    Err(BackendError::State(StateError::Corrupt { .. })) => {}
                    Err(other) => prop_assert!(false, "unexpected error kind: {other}"),
                }
            }
        }
    }
}

#[test]
fn a_malformed_urn_in_an_import_is_refused_naming_the_field() {
    let (_dir, backend, _, _) = fixture();
    let mut state: serde_json::Value =
        serde_json::from_slice(&backend.export(&project(), &stack()).unwrap()).unwrap();
    state["snapshot"]["resources"][1]["dependencies"][0] = "urn:plinth:x".into();
    let lock = backend.lock(&project(), &stack(), "stack import").unwrap();
    let bytes = serde_json::to_vec(&state).unwrap();
    let err = backend
        .import(&project(), &stack(), &bytes, true, &lock)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("snapshot.resources[1].dependencies[0]") && err.contains("not a valid URN"),
        "{err}"
    );
}
