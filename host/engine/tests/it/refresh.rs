//! How a refresh records what it finds, on in-process fakes.

use plinth_deploytest::*;
use plinth_engine::refresh::RefreshOptions;
use plinth_engine::value::Value;

/// A refresh that finds every one of `count` resources drifted, and how many times it flushed
/// the journal.
async fn flushes_of_a_refresh_of(count: usize) -> usize {
    // Declarations take static names.
    let names: Vec<&'static str> = (0..count)
        .map(|i| &*Box::leak(format!("r{i}").into_boxed_str()))
        .collect();
    let mut h = Harness::new();
    let outcome = h
        .up(names.iter().map(|n| decl(n).input("v", "1")).collect())
        .await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    for name in &names {
        let id = h.state(name).id.clone();
        let mut world = h.provider.world.lock().unwrap();
        let props = world.get_mut(&id).unwrap();
        props.insert("v".into(), Value::String("drifted".into()));
    }
    *h.checks.lock().unwrap() = 0;
    let outcome = h.refresh(RefreshOptions::default()).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.update, count);
    for name in &names {
        assert_eq!(h.state(name).inputs["v"], Value::String("drifted".into()));
    }
    *h.checks.lock().unwrap()
}

#[tokio::test]
async fn a_refresh_flushes_its_journal_once_however_many_resources_drifted() {
    assert_eq!(flushes_of_a_refresh_of(1).await, 1);
    assert_eq!(flushes_of_a_refresh_of(40).await, 1);
}
