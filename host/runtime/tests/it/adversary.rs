//! The provider host against the hostile `plinth-adversary` component, for what the end-to-end
//! tests (tests/e2e/adversarial.rs) cannot reach or time precisely: `check-config`, which the
//! CLI never calls, an endless loop under a deadline of milliseconds, and the instance that
//! serves the call after a refused oversized result.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use plinth_engine::provider::{Provider, ProviderError};
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Grants, Limits, Runtime, Tier};

fn urn(ty: &str, name: &str) -> Urn {
    Urn::new("test", "runtime", None, ty, name)
}

fn props(entries: &[(&str, &str)]) -> PropertyMap {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect()
}

/// A runtime on the shared cache, and the adversary loaded into it with no grants, compiled on
/// `tier`: every attack here meets the same limits on both tiers.
async fn adversary(limits: Limits, tier: Tier) -> Arc<dyn Provider> {
    let wasm = support::guest("plinth-adversary");
    let runtime = Runtime::new(crate::shared_cache()).unwrap();
    runtime
        .load_provider("adversary", &wasm, limits, Grants::default(), tier)
        .await
        .unwrap()
}

fn crash_message(result: Result<impl std::fmt::Debug, ProviderError>) -> String {
    match result {
        Err(ProviderError::Crashed(message)) => message,
        other => panic!("expected a crash, got {other:?}"),
    }
}

/// Checks that the provider still serves calls.
async fn still_works(provider: &dyn Provider) {
    let created = provider
        .create(
            &urn("adversary:Crash", "after"),
            &props(&[("value", "ok")]),
            false,
        )
        .await
        .unwrap();
    assert_eq!(created.outputs["value"], Value::from("ok"));
}

/// Runs `attack` on every tier at once (the deadlines of one overlap the other's), and
/// resumes a failure's panic.
async fn on_both_tiers<F: Future<Output = ()> + Send + 'static>(attack: impl Fn(Tier) -> F) {
    let runs = Tier::ALL.map(|tier| tokio::spawn(attack(tier)));
    for run in runs {
        if let Err(e) = run.await {
            std::panic::resume_unwind(e.into_panic());
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_in_check_config_names_the_operation() {
    on_both_tiers(crash_in_check_config).await;
}

async fn crash_in_check_config(tier: Tier) {
    let provider = adversary(Limits::default(), tier).await;
    for (how, expected) in [
        ("panic", "`check-config` panicked"),
        ("trap", "`check-config` trapped"),
    ] {
        let config = props(&[("crash_in", "check-config"), ("crash_how", how)]);
        let message = crash_message(provider.check_config(&config).await);
        assert!(message.starts_with("plugin `adversary`: "), "{message}");
        assert!(message.contains(expected), "{message}");
        if how == "panic" {
            assert!(
                message.contains("adversary: panic requested in `check-config`"),
                "{message}"
            );
        }
        still_works(&*provider).await;
    }
    // Asking for the crash elsewhere leaves check-config alone.
    let config = props(&[("crash_in", "configure")]);
    let checked = provider.check_config(&config).await.unwrap();
    assert_eq!(checked.inputs, config);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_loop_is_stopped_at_its_deadline_and_the_next_call_gets_a_fresh_instance() {
    on_both_tiers(endless_loop_stopped).await;
}

async fn endless_loop_stopped(tier: Tier) {
    // Long enough that the call after it, on a fresh instance, never meets it on a loaded
    // machine; the loop is endless, so any deadline stops it.
    let limits = Limits {
        call_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let provider = adversary(limits, tier).await;
    let spin = urn("adversary:Runaway", "spin");
    for _ in 0..2 {
        let started = Instant::now();
        let result = provider
            .create(&spin, &props(&[("attack", "loop")]), false)
            .await;
        let elapsed = started.elapsed();
        println!("an endless loop under a 2s deadline ({tier}) was stopped after {elapsed:?}");
        let message = crash_message(result);
        assert!(
            message.contains("`create` timed out after 2s"),
            "{tier}: {message}"
        );
        // Never before the deadline; the upper bound only tells the deadline from a hang (a
        // loaded machine may be slow to get there).
        assert!(
            elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(60),
            "{elapsed:?}"
        );
        still_works(&*provider).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_does_not_hold_up_concurrent_calls() {
    on_both_tiers(loop_beside_calls).await;
}

async fn loop_beside_calls(tier: Tier) {
    let limits = Limits {
        call_timeout: Duration::from_secs(10),
        ..Limits::default()
    };
    let provider = adversary(limits, tier).await;
    let spinning = {
        let provider = provider.clone();
        tokio::spawn(async move {
            provider
                .create(
                    &urn("adversary:Runaway", "spin"),
                    &props(&[("attack", "loop")]),
                    false,
                )
                .await
        })
    };
    // Other calls run on other instances meanwhile: they are over while the loop still runs
    // (only its deadline ends it), so none waited for it.
    for _ in 0..5 {
        still_works(&*provider).await;
    }
    assert!(
        !spinning.is_finished(),
        "{tier}: the calls waited for the loop"
    );
    let message = crash_message(spinning.await.unwrap());
    assert!(message.contains("timed out after 10s"), "{tier}: {message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_too_large_to_lift_is_refused_and_the_next_call_works() {
    on_both_tiers(result_too_large).await;
}

async fn result_too_large(tier: Tier) {
    let provider = adversary(Limits::default(), tier).await;
    let huge = props(&[("attack", "huge-output"), ("size_mb", "100")]);
    let result = provider
        .create(&urn("adversary:Runaway", "huge"), &huge, false)
        .await;
    let message = crash_message(result);
    assert!(
        message.contains("`create` tried to pass the host more than 64 MiB in one call"),
        "{message}"
    );
    // Under the limit, a large result is accepted.
    let large = props(&[("attack", "huge-output"), ("size_mb", "32")]);
    let created = provider
        .create(&urn("adversary:Runaway", "large"), &large, false)
        .await
        .unwrap();
    assert_eq!(
        created.outputs["blob"].as_str().map(str::len),
        Some(32 << 20)
    );
    still_works(&*provider).await;
}
