//! The deployment lifecycle on in-process fakes: every snapshot persisted along the way is
//! replayed and checked for integrity by `CheckingPersister`.

use std::sync::{Arc, Mutex};

use plinth_deploytest::*;
use plinth_engine::program::EmptyProgram;
use plinth_engine::value::Value;

fn chain() -> Vec<Decl> {
    vec![
        decl("a").input("v", "1"),
        decl("b").from("prev", "a"),
        decl("c").from("prev", "b").input("v", "x"),
        decl("d").input("v", "independent"),
    ]
}

#[tokio::test]
async fn up_creates_in_dependency_order_then_a_second_up_changes_nothing() {
    let mut h = Harness::new();
    let outcome = h.up(chain()).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.create, 4);
    let calls = h.provider.calls();
    let pos = |n: &str| {
        calls
            .iter()
            .position(|c| c == &format!("create {n}"))
            .unwrap()
    };
    assert!(pos("a") < pos("b") && pos("b") < pos("c"));
    assert_eq!(
        outcome.outputs.get("greeting"),
        Some(&Value::String("hello \"a-out\"".into()))
    );
    let b = &h
        .snapshot
        .resources
        .iter()
        .find(|r| r.urn.name() == "b")
        .unwrap();
    assert_eq!(b.inputs.get("prev"), Some(&Value::String("a-out".into())));
    assert_eq!(b.dependencies.len(), 1);
    assert!(*h.checks.lock().unwrap() > 0);

    h.provider.clear_calls();
    let outcome = h.up(chain()).await;
    assert!(outcome.errors.is_empty());
    assert_eq!(outcome.changes.changes(), 0);
    assert_eq!(outcome.changes.same, 4);
    assert!(h.provider.calls().is_empty(), "{:?}", h.provider.calls());
}

#[tokio::test]
async fn changed_inputs_update_or_replace_only_the_affected_resources() {
    let mut h = Harness::new();
    h.up(chain()).await;
    h.provider.clear_calls();
    let mut decls = chain();
    decls[3] = decl("d").input("v", "changed");
    decls[2] = decl("c")
        .from("prev", "b")
        .input("v", "x")
        .input("replace_key", "new");
    let outcome = h.up(decls).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.update, 1);
    assert_eq!(outcome.changes.replace, 1);
    assert_eq!(outcome.changes.same, 2);
    let calls = h.provider.calls();
    // Create-before-delete: the replacement exists before the old resource goes.
    let create_c = calls.iter().position(|c| c == "create c").unwrap();
    let delete_c = calls.iter().position(|c| c == "delete c").unwrap();
    assert!(create_c < delete_c, "{calls:?}");
    assert!(calls.contains(&"update d".to_string()));
    // Steps complete in any topological order; the old `c` is gone.
    let mut names = h.names();
    names.sort();
    assert_eq!(names, ["a", "b", "c", "d"]);
    assert_eq!(h.provider.world.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn delete_before_replace_deletes_first() {
    let mut h = Harness::new();
    h.up(vec![decl("a").input("replace_key", "1")]).await;
    h.provider.clear_calls();
    let outcome = h
        .up(vec![decl("a").input("replace_key", "2").input("dbr", true)])
        .await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(h.provider.calls(), ["delete a", "create a"]);
    assert_eq!(h.names(), ["a"]);
}

#[tokio::test]
async fn removed_resources_are_deleted_dependents_first() {
    let mut h = Harness::new();
    h.up(chain()).await;
    h.provider.clear_calls();
    let outcome = h.up(vec![decl("d").input("v", "independent")]).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.delete, 3);
    assert_eq!(h.provider.calls(), ["delete c", "delete b", "delete a"]);
    assert_eq!(h.names(), ["d"]);
}

#[tokio::test]
async fn preview_changes_nothing_and_shows_new_outputs_as_unknown() {
    let mut h = Harness::new();
    let runs = Arc::new(Mutex::new(0));
    let program = ScriptProgram {
        decls: chain(),
        apply_runs: runs.clone(),
    };
    let outcome = h.run(Box::new(program), true).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.create, 4);
    assert!(outcome.snapshot.is_none());
    assert!(h.snapshot.resources.is_empty());
    assert!(h.provider.world.lock().unwrap().is_empty());
    // The apply's input is unknown, so the closure did not run and its result is unknown.
    assert_eq!(*runs.lock().unwrap(), 0);
    assert_eq!(outcome.outputs.get("greeting"), Some(&Value::Unknown));
}

#[tokio::test]
async fn a_failed_create_skips_its_dependents_and_keeps_state_valid() {
    let mut h = Harness::new();
    let decls = vec![
        decl("a").input("fail", "create"),
        decl("b").from("prev", "a"),
        decl("d").input("v", "independent"),
    ];
    let outcome = h.up(decls).await;
    assert_eq!(outcome.errors.len(), 1, "{:?}", outcome.errors);
    assert!(
        outcome.errors[0].contains("fake:Thing::a"),
        "{:?}",
        outcome.errors
    );
    assert!(outcome.errors[0].contains("plugin `fake`"));
    let calls = h.provider.calls();
    assert!(!calls.iter().any(|c| c.ends_with(" b")), "{calls:?}");
    assert!(h.snapshot.pending_operations.is_empty());
    h.snapshot.verify_integrity().unwrap();
}

#[tokio::test]
async fn destroy_deletes_everything_in_reverse_order() {
    let mut h = Harness::new();
    h.up(chain()).await;
    h.provider.clear_calls();
    let outcome = h.run(Box::new(EmptyProgram), false).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.delete, 4);
    assert!(h.snapshot.resources.is_empty());
    assert!(h.snapshot.outputs().is_empty());
    assert!(h.provider.world.lock().unwrap().is_empty());
    let calls = h.provider.calls();
    let pos = |n: &str| {
        calls
            .iter()
            .position(|c| c == &format!("delete {n}"))
            .unwrap()
    };
    assert!(pos("c") < pos("b") && pos("b") < pos("a"));
}

#[tokio::test]
async fn protected_resources_are_not_deleted() {
    let mut h = Harness::new();
    let mut a = decl("a");
    a.protect = true;
    h.up(vec![a]).await;
    let outcome = h.run(Box::new(EmptyProgram), false).await;
    assert_eq!(outcome.errors.len(), 1);
    assert!(
        outcome.errors[0].contains("protected"),
        "{:?}",
        outcome.errors
    );
    assert_eq!(h.names(), ["a"]);
}

#[tokio::test]
async fn duplicate_names_are_an_error() {
    let mut h = Harness::new();
    let outcome = h.up(vec![decl("a"), decl("a")]).await;
    assert!(
        outcome
            .errors
            .iter()
            .any(|e| e.contains("registered twice"))
    );
    h.snapshot.verify_integrity().unwrap();
}

#[tokio::test]
async fn parents_and_explicit_dependencies_are_recorded() {
    let mut h = Harness::new();
    let mut child = decl("child");
    child.parent = Some("a");
    child.depends_on = vec!["b"];
    h.up(vec![decl("a"), decl("b"), child]).await;
    let c = h.snapshot.resources.last().unwrap();
    assert_eq!(c.urn.qualified_type(), "fake:Thing$fake:Thing");
    assert_eq!(c.parent.as_ref().map(|p| p.name()), Some("a"));
    assert_eq!(
        c.dependencies.iter().map(|d| d.name()).collect::<Vec<_>>(),
        ["b"]
    );
}
