//! The program host, on the `plinth-scenario` component, driven by the engine's real deployment
//! loop with `plinth-testkit` as the provider.

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use plinth_engine::deployment::{self, Options, Outcome};
use plinth_engine::events::EventSink;
use plinth_engine::provider::{LoadError, Provider, ProviderSource};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Grants, Limits, Runtime, Tier};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

/// Loads `testkit` from the runtime on first use.
struct Testkit {
    runtime: Arc<Runtime>,
    wasm: PathBuf,
    provider: OnceCell<Arc<dyn Provider>>,
}

#[async_trait]
impl ProviderSource for Testkit {
    async fn provider(&self, package: &str) -> Result<Arc<dyn Provider>, LoadError> {
        if package != "testkit" {
            return Err(LoadError(format!("no provider `{package}` in this test")));
        }
        let provider = self
            .provider
            .get_or_try_init(|| {
                self.runtime.load_provider(
                    "testkit",
                    &self.wasm,
                    Limits::default(),
                    Grants::default(),
                    Tier::Optimized,
                )
            })
            .await?;
        Ok(provider.clone())
    }

    /// The testkit takes no configuration: every provider resource shares one instance.
    async fn configured(
        &self,
        package: &str,
        _config: &PropertyMap,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        self.provider(package).await
    }
}

/// Deploys the scenario program with `config` (keys without the `test:` namespace).
async fn deploy(config: &[(&str, &str)], preview: bool) -> Outcome {
    let program_wasm = support::guest("plinth-scenario");
    let testkit_wasm = support::guest("plinth-testkit");
    let runtime = Arc::new(Runtime::new(crate::shared_cache()).unwrap());
    let program = runtime
        .load_program(&program_wasm, Limits::default(), Tier::Optimized)
        .await
        .unwrap();
    let providers = Arc::new(Testkit {
        runtime,
        wasm: testkit_wasm,
        provider: OnceCell::new(),
    });
    let options = Options {
        project: "test".into(),
        stack: "dev".into(),
        preview,
        parallel: 4,
        config: config
            .iter()
            .map(|(k, v)| (format!("test:{k}"), Value::from(*v)))
            .collect::<BTreeMap<_, _>>(),
        ..Options::default()
    };
    deployment::run(
        options,
        Snapshot::default(),
        program,
        providers,
        None,
        EventSink::discard(),
        CancellationToken::new(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_scenario_deploys_through_the_engine() {
    let outcome = deploy(&[("resources", "a,b,c"), ("chain", "true")], false).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.create, 3);
    assert_eq!(outcome.outputs["count"], Value::Number(3.0));
    assert_eq!(outcome.outputs["names"], Value::from("v,v,v"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_preview_plans_the_same_resources() {
    let outcome = deploy(&[("resources", "a,b")], true).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.changes.create, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_provider_fails_its_step_with_the_panic_message() {
    let outcome = deploy(&[("resources", "a"), ("fault", "panic")], false).await;
    let errors = outcome.errors.join("\n");
    assert!(
        errors.contains("plugin `testkit`: `create` panicked"),
        "{errors}"
    );
    assert!(errors.contains("testkit: panic requested"), "{errors}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_returned_by_the_program_fails_the_deployment() {
    let outcome = deploy(&[("fault", "bogus")], false).await;
    let errors = outcome.errors.join("\n");
    assert!(
        errors.contains("program `plinth_scenario`: `run` failed"),
        "{errors}"
    );
    assert!(errors.contains("unknown fault `bogus`"), "{errors}");
}
