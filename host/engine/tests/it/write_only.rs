//! Write-only inputs: sent to the provider's create, and to its update when their version input
//! changes; never in the snapshot, the journal or the events.

use plinth_deploytest::*;
use plinth_engine::provider::{PropertySchema, PropertyType, ResourceSchema};
use plinth_engine::refresh::RefreshOptions;
use plinth_engine::value::Value;

const PASSWORD: &str = "correct-horse-battery-staple";
const NEW_PASSWORD: &str = "tr0ub4dor-and-3";

fn harness() -> Harness {
    let input = |name: &str, version: Option<&str>| PropertySchema {
        write_only_version: version.map(str::to_owned),
        ..PropertySchema::new(name, PropertyType::String)
    };
    let role = ResourceSchema {
        token: "fake:Thing".into(),
        inputs: vec![
            input("name", None),
            input("passwordWo", Some("passwordWoVersion")),
            input("passwordWoVersion", None),
        ],
        ..ResourceSchema::default()
    };
    Harness {
        provider: FakeProvider::with_resources(vec![role]),
        ..Harness::new()
    }
}

fn role(password: &str, version: &str) -> Vec<Decl> {
    vec![
        decl("role")
            .input("name", "app")
            .input("passwordWo", password.to_owned())
            .input("passwordWoVersion", version.to_owned()),
    ]
}

/// The password the fake's world holds for the role: what the provider was last sent.
fn world_password(h: &Harness) -> Option<Value> {
    let world = h.provider.world.lock().unwrap();
    let outputs = world.values().next().expect("the role exists");
    outputs.get("passwordWo").cloned()
}

/// Fails if `secret` appears anywhere in the snapshot, the last journal or the last events.
fn assert_nowhere(h: &Harness, secret: &str) {
    let snapshot = serde_json::to_string(&h.snapshot).unwrap();
    assert!(!snapshot.contains(secret), "in the snapshot: {snapshot}");
    let journal = serde_json::to_string(&h.journal).unwrap();
    assert!(!journal.contains(secret), "in the journal: {journal}");
    let events = format!("{:?}", h.events);
    assert!(!events.contains(secret), "in the events: {events}");
}

fn secret(s: &str) -> Value {
    Value::Secret(Box::new(Value::from(s)))
}

#[tokio::test]
async fn a_write_only_input_reaches_the_create_and_nothing_records_it() {
    let mut h = harness();
    let outcome = h.up(role(PASSWORD, "1")).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.create, 1);
    // Sent, and secret although the program gave it in the clear.
    assert_eq!(world_password(&h), Some(secret(PASSWORD)));
    let state = h.state("role");
    assert!(
        !state.inputs.contains_key("passwordWo"),
        "{:?}",
        state.inputs
    );
    assert!(
        !state.outputs.contains_key("passwordWo"),
        "{:?}",
        state.outputs
    );
    assert_eq!(
        state.inputs.get("passwordWoVersion"),
        Some(&Value::from("1"))
    );
    assert_nowhere(&h, PASSWORD);
    // The display learns that it was sent, by name.
    let named = h
        .events
        .iter()
        .any(|e| format!("{e:?}").contains("write_only: [\"passwordWo\"]"));
    assert!(named, "{:?}", h.events);
}

#[tokio::test]
async fn a_new_value_changes_nothing_until_its_version_changes() {
    let mut h = harness();
    h.up(role(PASSWORD, "1")).await;
    h.provider.clear_calls();

    let outcome = h.up(role(NEW_PASSWORD, "1")).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.changes(), 0, "no diff without the version");
    assert!(h.provider.calls().is_empty(), "{:?}", h.provider.calls());
    assert_eq!(world_password(&h), Some(secret(PASSWORD)));

    let outcome = h.up(role(NEW_PASSWORD, "2")).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.update, 1);
    assert_eq!(h.provider.calls(), ["update role"]);
    assert_eq!(world_password(&h), Some(secret(NEW_PASSWORD)));
    assert_nowhere(&h, NEW_PASSWORD);
    assert!(!h.state("role").outputs.contains_key("passwordWo"));
}

#[tokio::test]
async fn an_update_for_another_input_does_not_send_it_again() {
    let mut h = harness();
    h.up(role(PASSWORD, "1")).await;
    let mut decls = role(NEW_PASSWORD, "1");
    decls[0] = decls[0].clone().input("name", "renamed");
    let outcome = h.up(decls).await;
    assert_eq!(outcome.changes.update, 1, "{:?}", outcome.errors);
    // The fake keeps what the update sent: no password this time.
    assert_eq!(world_password(&h), None);
}

#[tokio::test]
async fn refresh_records_no_write_only_value_the_provider_reads_back() {
    let mut h = harness();
    h.up(role(PASSWORD, "1")).await;
    // The fake reads back everything it was sent, the password included.
    let outcome = h.refresh(RefreshOptions::default()).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.changes(), 0, "{:?}", outcome.changes);
    assert_nowhere(&h, PASSWORD);
}

#[tokio::test]
async fn a_write_only_value_without_its_version_is_refused() {
    let mut h = harness();
    let decls = vec![decl("role").input("passwordWo", PASSWORD.to_owned())];
    let outcome = h.up(decls).await;
    let errors = outcome.errors.join("\n");
    assert!(errors.contains("give passwordWoVersion too"), "{errors}");
    assert!(!errors.contains(PASSWORD), "{errors}");
    assert!(h.provider.calls().is_empty(), "{:?}", h.provider.calls());
}
