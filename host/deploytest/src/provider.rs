//! A provider whose "real world" is a map in memory, and the provider source that serves it as
//! package `fake`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use plinth_engine::provider::*;
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};

/// A provider whose "real world" is a map from id to inputs. `replace_key` forces replacement;
/// an input `fail = "create"` makes create fail; `created_id` is the id create returns.
#[derive(Default)]
pub struct FakeProvider {
    info: Option<ProviderInfo>,
    pub world: Mutex<BTreeMap<String, PropertyMap>>,
    pub calls: Mutex<Vec<String>>,
    /// Every configuration a provider was asked for, in order.
    pub configs: Mutex<Vec<PropertyMap>>,
    next_id: Mutex<u64>,
    /// Every diff, create, update and delete as it starts ("diff b", "update c"), and every
    /// `signal`: what tests order calls by, instead of sleeping.
    started: Mutex<Vec<String>>,
    started_count: tokio::sync::watch::Sender<usize>,
    /// Calls that, once started, wait until another has started: "diff b" -> "delete c".
    holds: Mutex<HashMap<String, String>>,
}

impl FakeProvider {
    pub fn new() -> Arc<FakeProvider> {
        FakeProvider::with_resources(Vec::new())
    }

    /// A fake provider whose schema declares `resources` (`new`'s declares none, and so takes
    /// a resource of any type).
    pub fn with_resources(resources: Vec<ResourceSchema>) -> Arc<FakeProvider> {
        Arc::new(FakeProvider {
            info: Some(ProviderInfo {
                name: "fake".into(),
                version: "1.0.0".into(),
                // A change of `region` replaces everything the provider manages.
                config: vec![PropertySchema {
                    replace_on_change: true,
                    ..PropertySchema::new("region", PropertyType::String)
                }],
                resources,
                ..ProviderInfo::default()
            }),
            ..Default::default()
        })
    }

    fn log(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }

    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    pub fn clear_calls(&self) {
        self.calls.lock().unwrap().clear();
    }

    /// Makes `call` ("create a"), once started, wait until `until` has started (or been
    /// signalled).
    pub fn hold(&self, call: &str, until: &str) {
        self.holds
            .lock()
            .unwrap()
            .insert(call.to_owned(), until.to_owned());
    }

    /// Marks `what` as started: releases the calls held until it.
    pub fn signal(&self, what: &str) {
        self.started.lock().unwrap().push(what.to_owned());
        self.started_count.send_modify(|n| *n += 1);
    }

    /// Waits until `call` has started (or been signalled).
    pub async fn started(&self, call: &str) {
        let mut count = self.started_count.subscribe();
        let _ = count
            .wait_for(|_| self.started.lock().unwrap().iter().any(|c| c == call))
            .await;
    }

    /// The calls started so far, in order.
    pub fn started_calls(&self) -> Vec<String> {
        self.started.lock().unwrap().clone()
    }

    /// Records that `call` starts, then waits as `hold` told it to.
    async fn start(&self, call: String) {
        let until = self.holds.lock().unwrap().get(&call).cloned();
        self.signal(&call);
        if let Some(until) = until {
            self.started(&until).await;
        }
    }
}

#[async_trait]
impl Provider for FakeProvider {
    fn info(&self) -> &ProviderInfo {
        self.info.as_ref().unwrap()
    }
    async fn check_config(&self, c: &PropertyMap) -> Result<CheckResult, ProviderError> {
        Ok(CheckResult {
            inputs: c.clone(),
            failures: vec![],
        })
    }
    async fn configure(&self, _: &PropertyMap) -> Result<(), ProviderError> {
        Ok(())
    }
    async fn check(
        &self,
        _: &Urn,
        _: Option<&PropertyMap>,
        news: &PropertyMap,
    ) -> Result<CheckResult, ProviderError> {
        Ok(CheckResult {
            inputs: news.clone(),
            failures: vec![],
        })
    }
    async fn diff(
        &self,
        urn: &Urn,
        _: &str,
        olds: &PropertyMap,
        _: &PropertyMap,
        news: &PropertyMap,
    ) -> Result<DiffResult, ProviderError> {
        self.start(format!("diff {}", urn.name())).await;
        // Lets other tasks run first: generated scenarios vary which step gets where first.
        if let Some(Value::Number(n)) = news.get("diff_yields") {
            for _ in 0..*n as u32 {
                tokio::task::yield_now().await;
            }
        }
        let mut keys: Vec<&String> = olds.keys().chain(news.keys()).collect();
        keys.sort();
        keys.dedup();
        let changed: Vec<String> = keys
            .into_iter()
            .filter(|k| olds.get(*k) != news.get(*k))
            .cloned()
            .collect();
        let replaces = changed
            .iter()
            .filter(|k| *k == "replace_key")
            .cloned()
            .collect();
        Ok(DiffResult {
            changed,
            replaces,
            delete_before_replace: news.get("dbr") == Some(&Value::Bool(true)),
        })
    }
    async fn create(
        &self,
        urn: &Urn,
        inputs: &PropertyMap,
        preview: bool,
    ) -> Result<Created, ProviderError> {
        if !preview {
            self.start(format!("create {}", urn.name())).await;
        }
        if let Some(Value::Number(ms)) = inputs.get("sleep_ms") {
            tokio::time::sleep(std::time::Duration::from_millis(*ms as u64)).await;
        }
        if inputs.get("fail").and_then(Value::as_str) == Some("create") {
            self.log(format!("create-failed {}", urn.name()));
            return Err(ProviderError::Failed("asked to fail".into()));
        }
        let mut outputs = inputs.clone();
        if preview {
            outputs.insert("out".into(), Value::Unknown);
            return Ok(Created {
                id: String::new(),
                outputs,
            });
        }
        self.log(format!("create {}", urn.name()));
        let id = match inputs.get("created_id") {
            // The id a hostile provider might return.
            Some(Value::String(id)) => id.clone(),
            _ => {
                let mut n = self.next_id.lock().unwrap();
                *n += 1;
                format!("id{n}")
            }
        };
        outputs.insert("out".into(), Value::String(format!("{}-out", urn.name())));
        self.world
            .lock()
            .unwrap()
            .insert(id.clone(), outputs.clone());
        Ok(Created { id, outputs })
    }
    async fn read(
        &self,
        _: &Urn,
        id: &str,
        _: &PropertyMap,
        _: &PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        // The world keeps outputs: the inputs plus `out`.
        Ok(self.world.lock().unwrap().get(id).map(|o| {
            let mut inputs = o.clone();
            inputs.remove("out");
            ReadResult {
                id: id.into(),
                inputs,
                outputs: o.clone(),
            }
        }))
    }
    async fn update(
        &self,
        urn: &Urn,
        id: &str,
        _: &PropertyMap,
        old_outputs: &PropertyMap,
        news: &PropertyMap,
        preview: bool,
    ) -> Result<PropertyMap, ProviderError> {
        if !preview {
            self.start(format!("update {}", urn.name())).await;
        }
        let mut outputs = news.clone();
        outputs.insert(
            "out".into(),
            old_outputs.get("out").cloned().unwrap_or_default(),
        );
        if !preview {
            self.log(format!("update {}", urn.name()));
            self.world
                .lock()
                .unwrap()
                .insert(id.into(), outputs.clone());
        }
        Ok(outputs)
    }
    async fn delete(
        &self,
        urn: &Urn,
        id: &str,
        _: &PropertyMap,
        _: &PropertyMap,
    ) -> Result<(), ProviderError> {
        self.start(format!("delete {}", urn.name())).await;
        let slow =
            self.world
                .lock()
                .unwrap()
                .get(id)
                .and_then(|o| match o.get("delete_sleep_ms") {
                    Some(Value::Number(ms)) => Some(*ms as u64),
                    _ => None,
                });
        if let Some(ms) = slow {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        self.log(format!("delete {}", urn.name()));
        self.world
            .lock()
            .unwrap()
            .remove(id)
            .map(drop)
            .ok_or(ProviderError::NotFound)
    }
    async fn invoke(&self, token: &str, _: &PropertyMap) -> Result<Value, ProviderError> {
        Err(ProviderError::UnknownType(token.into()))
    }
}

pub struct FakeProviders(pub Arc<FakeProvider>);

#[async_trait]
impl ProviderSource for FakeProviders {
    async fn provider(&self, package: &str) -> Result<Arc<dyn Provider>, LoadError> {
        if package == "fake" {
            Ok(self.0.clone())
        } else {
            Err(LoadError(format!("no plugin `{package}`")))
        }
    }

    async fn configured(
        &self,
        package: &str,
        config: &PropertyMap,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        if config.get("fail").is_some() {
            return Err(LoadError("asked to fail configuring".into()));
        }
        self.0.configs.lock().unwrap().push(config.clone());
        self.provider(package).await
    }
}
