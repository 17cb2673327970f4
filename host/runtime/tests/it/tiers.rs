//! The compiler tiers: each compiles into artifacts of its own, a component the fast tier
//! refuses runs optimized (and is not tried fast again), and a guest behaves the same on both.

use crate::support;

use std::path::{Path, PathBuf};

use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Grants, Limits, Runtime, Tier};

/// The precompiled artifacts in `cache`, by file name, sorted.
fn artifacts(cache: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".cwasm"))
        .collect();
    names.sort();
    names
}

#[test]
fn each_tier_compiles_into_artifacts_of_its_own() {
    let wasm = support::guest("plinth-testkit");
    let cache = tempfile::tempdir().unwrap();

    let runtime = Runtime::new(cache.path().to_owned()).unwrap();
    let (_, fast) = runtime.load_component(&wasm, Tier::Fast).unwrap();
    assert!(!fast.cache_hit);
    assert_eq!(fast.tier, Tier::Fast);
    // The fast artifact is not taken for an optimized one.
    let (_, optimized) = runtime.load_component(&wasm, Tier::Optimized).unwrap();
    assert!(!optimized.cache_hit);
    assert_eq!(optimized.tier, Tier::Optimized);
    assert_eq!(fast.sha256, optimized.sha256);

    let names = artifacts(cache.path());
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().any(|n| n.ends_with("-fast.sealed.cwasm")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.ends_with("-optimized.sealed.cwasm")),
        "{names:?}"
    );

    // The next process finds each where it left it.
    let runtime = Runtime::new(cache.path().to_owned()).unwrap();
    for tier in Tier::ALL {
        let (_, again) = runtime.load_component(&wasm, tier).unwrap();
        assert!(again.cache_hit, "{tier}");
        assert_eq!(again.tier, tier);
    }
}

/// A component whose core module makes a tail call, which Winch does not implement and
/// Cranelift does.
fn tail_calling_component(dir: &Path) -> PathBuf {
    let wasm = wat::parse_str(
        r#"(component
            (core module $m
                (func $count (param i32) (result i32)
                    local.get 0
                    i32.eqz
                    if (result i32)
                        i32.const 7
                    else
                        local.get 0
                        i32.const 1
                        i32.sub
                        return_call $count
                    end)
                (export "count" (func $count)))
            (core instance $i (instantiate $m)))"#,
    )
    .unwrap();
    let path = dir.join("tail-call.wasm");
    std::fs::write(&path, wasm).unwrap();
    path
}

#[test]
fn a_component_the_fast_compiler_refuses_is_compiled_optimized_once_for_all() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = tail_calling_component(dir.path());
    let cache = dir.path().join("cache");

    let runtime = Runtime::new(cache.clone()).unwrap();
    let (_, first) = runtime.load_component(&wasm, Tier::Fast).unwrap();
    assert!(!first.cache_hit);
    assert_eq!(first.tier, Tier::Optimized, "compiled by Cranelift instead");
    let refusals: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "refused"))
        .collect();
    assert_eq!(refusals.len(), 1, "the refusal is remembered");
    let reason = std::fs::read_to_string(&refusals[0]).unwrap();
    assert!(!reason.is_empty());

    // The next process goes straight to the optimized artifact: no compile at all.
    let runtime = Runtime::new(cache.clone()).unwrap();
    let (_, second) = runtime.load_component(&wasm, Tier::Fast).unwrap();
    assert!(second.cache_hit);
    assert_eq!(second.tier, Tier::Optimized);
    assert_eq!(artifacts(&cache).len(), 1, "{:?}", artifacts(&cache));
}

#[test]
fn an_invalid_component_is_an_error_on_either_tier_and_leaves_no_refusal() {
    let dir = tempfile::tempdir().unwrap();
    // A component whose core module's function returns nothing but claims an i32.
    let wasm = wat::parse_str(r#"(component (core module (func (result i32) nop)))"#);
    // `wat` checks syntax, not types: the bytes are an invalid component.
    let path = dir.path().join("invalid.wasm");
    std::fs::write(&path, wasm.unwrap()).unwrap();
    let cache = dir.path().join("cache");
    let runtime = Runtime::new(cache.clone()).unwrap();
    for tier in Tier::ALL {
        let error = runtime.load_component(&path, tier).unwrap_err().to_string();
        assert!(error.starts_with("cannot compile `"), "{tier}: {error}");
        assert!(error.contains("invalid.wasm"), "{tier}: {error}");
    }
    let left: Vec<_> = std::fs::read_dir(&cache)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(
        !left
            .iter()
            .any(|n| n.to_string_lossy().ends_with(".refused")),
        "{left:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_answers_the_same_on_both_tiers() {
    let wasm = support::guest("plinth-testkit");
    let mut answers = Vec::new();
    for tier in Tier::ALL {
        let runtime = Runtime::new(crate::shared_cache()).unwrap();
        let testkit = runtime
            .load_provider("testkit", &wasm, Limits::default(), Grants::default(), tier)
            .await
            .unwrap();
        let urn = Urn::new("test", "runtime", None, "testkit:Echo", "e");
        let inputs: PropertyMap = [
            ("text".to_owned(), Value::from("same on both tiers")),
            ("number".to_owned(), Value::Integer(42)),
        ]
        .into();
        let checked = testkit.check(&urn, None, &inputs).await.unwrap();
        assert!(
            checked.failures.is_empty(),
            "{tier}: {:?}",
            checked.failures
        );
        let created = testkit.create(&urn, &checked.inputs, false).await.unwrap();
        let info = testkit.info();
        let types: Vec<String> = info.resources.iter().map(|r| r.token.clone()).collect();
        answers.push((info.name.clone(), types, checked.inputs, created.outputs));
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0].3["text"], Value::from("same on both tiers"));
}
