//! The provider host, on the `plinth-testkit` component.

use crate::support;

use std::sync::Arc;

use plinth_engine::provider::{Provider, ProviderError};
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Grants, Limits, LoadError, Runtime, Tier};

fn urn(ty: &str, name: &str) -> Urn {
    Urn::new("test", "runtime", None, ty, name)
}

fn props(entries: &[(&str, Value)]) -> PropertyMap {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// A runtime on the shared cache, and testkit loaded into it.
async fn testkit(limits: Limits) -> Arc<dyn Provider> {
    testkit_on(limits, Tier::Optimized).await
}

/// [`testkit`], compiled on `tier`: panics, traps and limits behave alike on both.
async fn testkit_on(limits: Limits, tier: Tier) -> Arc<dyn Provider> {
    let wasm = support::guest("plinth-testkit");
    let runtime = Runtime::new(crate::shared_cache()).unwrap();
    runtime
        .load_provider("testkit", &wasm, limits, Grants::default(), tier)
        .await
        .unwrap()
}

/// Checks that the provider still works after a failed call.
async fn still_works(provider: &dyn Provider) {
    let created = provider
        .create(
            &urn("testkit:Echo", "after"),
            &props(&[("value", "ok".into())]),
            false,
        )
        .await
        .unwrap();
    assert_eq!(created.outputs["value"], Value::from("ok"));
}

fn crash_message(result: Result<impl std::fmt::Debug, ProviderError>) -> String {
    match result {
        Err(ProviderError::Crashed(message)) => message,
        other => panic!("expected a crash, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reports_its_info() {
    let provider = testkit(Limits::default()).await;
    let info = provider.info();
    assert_eq!(info.name, "testkit");
    assert!(!info.version.is_empty());
    let echo = info
        .resources
        .iter()
        .find(|r| r.token == "testkit:Echo")
        .expect("testkit:Echo is described");
    assert!(
        echo.inputs
            .iter()
            .any(|p| p.name == "replace_key" && p.replace_on_change)
    );
    assert!(echo.outputs.iter().any(|p| p.name == "generation"));
    for token in [
        "testkit:Panic",
        "testkit:Trap",
        "testkit:Fail",
        "testkit:Partial",
    ] {
        assert!(info.resources.iter().any(|r| r.token == token), "{token}");
    }
}

/// `testkit:Fail`'s diff always fails, but the type states that unchanged inputs mean no
/// change: the host answers that itself, and asks the guest only about changed inputs.
/// `testkit:Trap` states nothing: its diff is entered (and traps) even for unchanged inputs.
#[tokio::test(flavor = "multi_thread")]
async fn diff_of_unchanged_inputs_is_answered_by_the_host_only_for_hinted_types() {
    let provider = testkit(Limits::default()).await;
    provider.configure(&PropertyMap::new()).await.unwrap();
    let inputs = props(&[("value", "one".into())]);
    let changed = props(&[("value", "two".into())]);
    let outputs = props(&[("value", "one".into()), ("id", "x".into())]);

    let hinted = urn("testkit:Fail", "f");
    let diff = provider
        .diff(&hinted, "x", &inputs, &outputs, &inputs.clone())
        .await
        .unwrap();
    assert!(
        diff.changed.is_empty() && diff.replaces.is_empty(),
        "{diff:?}"
    );
    let asked = provider
        .diff(&hinted, "x", &inputs, &outputs, &changed)
        .await;
    assert!(
        matches!(&asked, Err(ProviderError::Failed(m)) if m.contains("failure requested")),
        "{asked:?}"
    );

    let unhinted = urn("testkit:Trap", "t");
    let asked = provider
        .diff(&unhinted, "x", &inputs, &outputs, &inputs.clone())
        .await;
    assert!(crash_message(asked).contains("trapped"));
    still_works(&*provider).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn echo_round_trip() {
    let provider = testkit(Limits::default()).await;
    provider.configure(&PropertyMap::new()).await.unwrap();
    let urn = urn("testkit:Echo", "e");
    let secret = Value::Secret(Box::new("hunter2".into()));
    let inputs = props(&[
        ("value", "one".into()),
        ("replace_key", "r".into()),
        ("password", secret.clone()),
        ("list", Value::Array(vec![1.0.into(), Value::Null])),
    ]);

    let checked = provider.check(&urn, None, &inputs).await.unwrap();
    assert!(checked.failures.is_empty(), "{:?}", checked.failures);
    assert_eq!(checked.inputs, inputs);

    let created = provider.create(&urn, &inputs, false).await.unwrap();
    assert!(!created.id.is_empty());
    assert_eq!(created.outputs["generation"], Value::Number(1.0));
    assert_eq!(created.outputs["password"], secret, "secrets stay secret");

    let mut news = inputs.clone();
    news.insert("value".into(), "two".into());
    let diff = provider
        .diff(&urn, &created.id, &inputs, &created.outputs, &news)
        .await
        .unwrap();
    assert_eq!(diff.changed, ["value"]);
    assert!(diff.replaces.is_empty());

    let mut replaced = news.clone();
    replaced.insert("replace_key".into(), "s".into());
    let diff = provider
        .diff(&urn, &created.id, &inputs, &created.outputs, &replaced)
        .await
        .unwrap();
    assert!(
        diff.replaces.contains(&"replace_key".to_owned()),
        "{diff:?}"
    );

    let outputs = provider
        .update(&urn, &created.id, &inputs, &created.outputs, &news, false)
        .await
        .unwrap();
    assert_eq!(outputs["generation"], Value::Number(2.0));
    assert_eq!(outputs["value"], Value::from("two"));

    provider
        .delete(&urn, &created.id, &news, &outputs)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panic_is_a_crash_naming_the_plugin_and_the_next_call_works() {
    for tier in Tier::ALL {
        let provider = testkit_on(Limits::default(), tier).await;
        let result = provider
            .create(&urn("testkit:Panic", "p"), &PropertyMap::new(), false)
            .await;
        let message = crash_message(result);
        assert!(
            message.starts_with("plugin `testkit`: `create` panicked"),
            "{tier}: {message}"
        );
        assert!(
            message.contains("testkit: panic requested"),
            "{tier}: {message}"
        );
        still_works(&*provider).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_is_a_crash_naming_the_plugin_and_the_next_call_works() {
    for tier in Tier::ALL {
        let provider = testkit_on(Limits::default(), tier).await;
        let result = provider
            .create(&urn("testkit:Trap", "t"), &PropertyMap::new(), false)
            .await;
        let message = crash_message(result);
        assert!(
            message.starts_with("plugin `testkit`: `create` trapped"),
            "{tier}: {message}"
        );
        assert!(message.contains("unreachable"), "{tier}: {message}");
        still_works(&*provider).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_the_plugin_reports_are_typed_errors() {
    let provider = testkit(Limits::default()).await;
    let inputs = props(&[("value", "x".into())]);
    match provider
        .create(&urn("testkit:Fail", "f"), &inputs, false)
        .await
    {
        Err(ProviderError::Failed(message)) => assert_eq!(message, "testkit: failure requested"),
        other => panic!("expected a failure, got {other:?}"),
    }
    match provider
        .create(&urn("testkit:Partial", "p"), &inputs, false)
        .await
    {
        Err(ProviderError::PartiallyCreated(partial)) => {
            assert!(!partial.id.is_empty());
            assert_eq!(partial.outputs, inputs);
            assert_eq!(partial.reasons, ["testkit: partial creation requested"]);
        }
        other => panic!("expected a partial creation, got {other:?}"),
    }
    match provider
        .create(&urn("testkit:Nope", "n"), &inputs, false)
        .await
    {
        Err(ProviderError::UnknownType(token)) => assert_eq!(token, "testkit:Nope"),
        other => panic!("expected an unknown type, got {other:?}"),
    }
    still_works(&*provider).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn running_out_of_memory_is_a_crash() {
    let limits = Limits {
        memory_bytes: 8 << 20,
        ..Limits::default()
    };
    for tier in Tier::ALL {
        let provider = testkit_on(limits, tier).await;
        let huge = Value::from("x".repeat(16 << 20));
        let result = provider
            .create(
                &urn("testkit:Echo", "huge"),
                &props(&[("huge", huge)]),
                false,
            )
            .await;
        let message = crash_message(result);
        assert!(message.contains("ran out of memory"), "{tier}: {message}");
        assert!(message.contains("the limit is 8 MiB"), "{tier}: {message}");
        still_works(&*provider).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_all_succeed() {
    let provider = testkit(Limits::default()).await;
    provider
        .configure(&props(&[("anything", "goes".into())]))
        .await
        .unwrap();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..16 {
        let provider = provider.clone();
        calls.spawn(async move {
            let inputs = props(&[("value", Value::from(f64::from(i)))]);
            let created = provider
                .create(&urn("testkit:Echo", &format!("e{i}")), &inputs, false)
                .await
                .unwrap();
            assert_eq!(created.outputs["value"], Value::from(f64::from(i)));
        });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_loaded_under_another_name_is_refused() {
    let wasm = support::guest("plinth-testkit");
    let runtime = Runtime::new(crate::shared_cache()).unwrap();
    let error = runtime
        .load_provider(
            "random",
            &wasm,
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .err()
        .expect("a name mismatch");
    assert!(
        matches!(&error, LoadError::NameMismatch { expected, actual, .. } if expected == "random" && actual == "testkit"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_is_not_a_provider() {
    let wasm = support::guest("plinth-scenario");
    let runtime = Runtime::new(crate::shared_cache()).unwrap();
    let error = runtime
        .load_provider(
            "scenario",
            &wasm,
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .err()
        .expect("a link error");
    assert!(
        matches!(
            error,
            LoadError::Link {
                world: "provider",
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_random_provider_draws_from_the_sandbox_and_keeps_secrets_secret() {
    let wasm = support::guest("plinth-random");
    let runtime = Runtime::new(crate::shared_cache()).unwrap();
    let random = runtime
        .load_provider(
            "random",
            &wasm,
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .unwrap();
    let urn = urn("random:RandomPassword", "pw");
    let checked = random
        .check(&urn, None, &props(&[("length", 24.0.into())]))
        .await
        .unwrap();
    assert!(checked.failures.is_empty(), "{:?}", checked.failures);
    let inputs = checked.inputs;

    let planned = random.create(&urn, &inputs, true).await.unwrap();
    assert_eq!(planned.outputs["result"], Value::Unknown);

    let created = random.create(&urn, &inputs, false).await.unwrap();
    match &created.outputs["result"] {
        Value::Secret(password) => assert_eq!(password.as_str().map(str::len), Some(24)),
        other => panic!("expected a secret password, got {other:?}"),
    }
    let again = random.create(&urn, &inputs, false).await.unwrap();
    assert_ne!(again.outputs["result"], created.outputs["result"]);
}
