//! In-process fakes for engine tests: a provider that keeps its resources in memory, a
//! scripted program, and a persister that checks every intermediate snapshot.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use plinth_engine::deployment::{self, Options, Outcome};
use plinth_engine::events::{Event, EventSink};
use plinth_engine::journal::{
    JournalEntry, PersistError, Persister, SnapshotError, SnapshotManager, replay,
};
use plinth_engine::program::{Monitor, Program, ProgramError, RegisterRequest, ResourceOptions};
use plinth_engine::provider::*;
use plinth_engine::refresh::{self, RefreshOptions, RefreshOutcome};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::{Urn, is_counted};
use plinth_engine::value::{OutputField, OutputRef, PropertyMap, Value};
use tokio_util::sync::CancellationToken;

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
        Arc::new(FakeProvider {
            info: Some(ProviderInfo {
                name: "fake".into(),
                version: "1.0.0".into(),
                // A change of `region` replaces everything the provider manages.
                config: vec![PropertySchema {
                    replace_on_change: true,
                    ..PropertySchema::new("region", PropertyType::String)
                }],
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

/// One resource a scripted program declares.
#[derive(Clone)]
pub struct Decl {
    pub name: &'static str,
    pub inputs: Vec<(&'static str, Input)>,
    pub depends_on: Vec<&'static str>,
    pub parent: Option<&'static str>,
    pub protect: bool,
    /// Options without handles: ignore_changes, aliases, import, custom timeouts, ...
    pub options: ResourceOptions,
    /// The type, `fake:Thing` unless set (e.g. `plinth:providers:fake`).
    pub ty: Option<&'static str>,
    /// An earlier declaration of a provider resource that manages this one.
    pub provider: Option<&'static str>,
    /// A component resource (registered with `custom` false): it only groups its children.
    pub component: bool,
    /// Outputs it registers (`register_outputs`) once registered: a component's.
    pub outputs: Vec<(&'static str, Input)>,
    /// Outputs it registers a second time, after `outputs`.
    pub outputs_again: Vec<(&'static str, Input)>,
    /// Stack outputs this declaration adds.
    pub exports: Vec<(&'static str, Input)>,
}

#[derive(Clone)]
pub enum Input {
    Value(Value),
    /// The `out` output of an earlier declaration.
    Out(&'static str),
}

pub fn decl(name: &'static str) -> Decl {
    Decl {
        name,
        inputs: vec![],
        depends_on: vec![],
        parent: None,
        protect: false,
        options: ResourceOptions::default(),
        ty: None,
        provider: None,
        component: false,
        outputs: vec![],
        outputs_again: vec![],
        exports: vec![],
    }
}

/// A component resource of type `fake:Group`.
pub fn component(name: &'static str) -> Decl {
    let mut d = decl(name);
    d.ty = Some("fake:Group");
    d.component = true;
    d
}

/// A provider resource for the fake package, configured with `config`.
pub fn provider_decl(name: &'static str, config: &[(&'static str, &str)]) -> Decl {
    let mut d = decl(name);
    d.ty = Some("plinth:providers:fake");
    for (k, v) in config {
        d = d.input(k, *v);
    }
    d
}

impl Decl {
    pub fn input(mut self, key: &'static str, value: impl Into<Value>) -> Decl {
        self.inputs.push((key, Input::Value(value.into())));
        self
    }
    pub fn from(mut self, key: &'static str, other: &'static str) -> Decl {
        self.inputs.push((key, Input::Out(other)));
        self
    }
    pub fn parent(mut self, parent: &'static str) -> Decl {
        self.parent = Some(parent);
        self
    }
    /// Registers output `key` of this (component) resource.
    pub fn output(mut self, key: &'static str, value: impl Into<Value>) -> Decl {
        self.outputs.push((key, Input::Value(value.into())));
        self
    }
    /// Registers output `key` of this (component) resource a second time, after those of
    /// [`output`](Self::output).
    pub fn output_again(mut self, key: &'static str, value: impl Into<Value>) -> Decl {
        self.outputs_again.push((key, Input::Value(value.into())));
        self
    }
    /// Adds stack output `key`.
    pub fn export(mut self, key: &'static str, value: Input) -> Decl {
        self.exports.push((key, value));
        self
    }
}

/// A program that declares `decls` in order and exports `greeting` = "hello " + first's out,
/// computed through an apply closure.
pub struct ScriptProgram {
    pub decls: Vec<Decl>,
    pub apply_runs: Arc<Mutex<usize>>,
}

fn out_ref(handle: u64) -> Value {
    Value::Output(OutputRef {
        handle,
        field: OutputField::Property(vec!["out".into()]),
    })
}

#[async_trait]
impl Program for ScriptProgram {
    async fn run(&mut self, monitor: &Monitor) -> Result<(), ProgramError> {
        let mut handles: HashMap<&str, u64> = HashMap::new();
        let mut exports = PropertyMap::new();
        for d in &self.decls {
            let values = |list: &[(&str, Input)], handles: &HashMap<&str, u64>| -> PropertyMap {
                list.iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Input::Value(v) => v.clone(),
                            Input::Out(other) => out_ref(handles[other]),
                        };
                        (k.to_string(), v)
                    })
                    .collect()
            };
            let inputs = values(&d.inputs, &handles);
            let options = ResourceOptions {
                depends_on: d.depends_on.iter().map(|o| handles[o]).collect(),
                parent: d.parent.map(|p| handles[p]),
                protect: d.protect,
                provider: d.provider.map(|p| handles[p]),
                ..d.options.clone()
            };
            let h = monitor
                .register_resource(RegisterRequest {
                    ty: d.ty.unwrap_or("fake:Thing").into(),
                    name: d.name.into(),
                    custom: !d.component,
                    inputs,
                    options,
                })
                .expect("within the budget");
            handles.insert(d.name, h);
            for outputs in [&d.outputs, &d.outputs_again] {
                if !outputs.is_empty() {
                    monitor
                        .register_outputs(Some(h), values(outputs, &handles))
                        .expect("within the budget");
                }
            }
            exports.extend(values(&d.exports, &handles));
        }
        let mut outputs = exports;
        if let Some(first) = self.decls.first() {
            let apply = monitor
                .register_apply(vec![out_ref(handles[first.name])])
                .expect("within the budget");
            outputs.insert(
                "greeting".into(),
                Value::Output(OutputRef {
                    handle: apply,
                    field: OutputField::Property(vec![]),
                }),
            );
        }
        monitor
            .register_outputs(None, outputs)
            .expect("within the budget");
        Ok(())
    }

    async fn resume(
        &mut self,
        _: &Monitor,
        _: u64,
        inputs: Vec<Value>,
    ) -> Result<Value, ProgramError> {
        *self.apply_runs.lock().unwrap() += 1;
        Ok(Value::String(format!("hello {}", inputs[0])))
    }
}

/// Persists in memory, replaying the whole journal after every sync to check that every
/// intermediate snapshot is valid.
pub struct CheckingPersister {
    base: Snapshot,
    /// The journal, shared with the harness.
    entries: Arc<Mutex<Vec<JournalEntry>>>,
    pub checks: Arc<Mutex<usize>>,
    pub saved: Arc<Mutex<Option<Snapshot>>>,
}

impl Persister for CheckingPersister {
    fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError> {
        self.entries.lock().unwrap().push(entry.clone());
        Ok(())
    }
    fn sync(&mut self) -> Result<(), PersistError> {
        let invalid = |e: SnapshotError| {
            PersistError::invalid("check the intermediate snapshot of", "<memory>", e)
        };
        let entries = self.entries.lock().unwrap().clone();
        let snap = replay(self.base.clone(), entries).map_err(invalid)?;
        snap.verify_integrity().map_err(|e| invalid(e.into()))?;
        *self.checks.lock().unwrap() += 1;
        Ok(())
    }
    fn compact(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
        *self.saved.lock().unwrap() = Some(snapshot.clone());
        Ok(())
    }
}

type Journal = Arc<Mutex<Vec<JournalEntry>>>;
type Saved = Arc<Mutex<Option<Snapshot>>>;

/// Called with each event of a deployment as it is emitted.
pub type EventWatcher = Arc<dyn Fn(&Event) + Send + Sync>;

/// Everything one test needs: the provider's world and the stack's snapshot across runs.
pub struct Harness {
    pub provider: Arc<FakeProvider>,
    /// Provider calls in flight at most.
    pub parallel: usize,
    pub snapshot: Snapshot,
    pub checks: Arc<Mutex<usize>>,
    /// Cancels the runs (a fresh token each `Harness::new`).
    pub cancel: CancellationToken,
    /// The events of the last deployment, in order.
    pub events: Vec<Event>,
    /// The journal entries the last deployment or refresh recorded, in order.
    pub journal: Vec<JournalEntry>,
    /// Sees each event of a deployment as it is emitted: what a test orders calls by when the
    /// order it needs is one of the engine's own events.
    pub on_event: Option<EventWatcher>,
}

impl Default for Harness {
    fn default() -> Harness {
        Harness::new()
    }
}

impl Harness {
    pub fn new() -> Harness {
        Harness {
            provider: FakeProvider::new(),
            parallel: 4,
            snapshot: Snapshot::default(),
            checks: Arc::new(Mutex::new(0)),
            cancel: CancellationToken::new(),
            events: Vec::new(),
            journal: Vec::new(),
            on_event: None,
        }
    }

    pub async fn run(&mut self, program: Box<dyn Program>, preview: bool) -> Outcome {
        self.run_with(program, preview, Options::default()).await
    }

    /// Runs with `options` (targets, replace, continue-on-error); the harness sets the rest.
    pub async fn run_with(
        &mut self,
        program: Box<dyn Program>,
        preview: bool,
        options: Options,
    ) -> Outcome {
        let (recorder, journal, saved) = self.recorder(preview);
        let options = Options {
            project: "proj".into(),
            stack: "dev".into(),
            preview,
            parallel: self.parallel,
            ..options
        };
        let (events, mut received) = EventSink::new();
        let watcher = match self.on_event.clone() {
            Some(on_event) => Ok(tokio::spawn(async move {
                let mut seen = Vec::new();
                while let Some(event) = received.recv().await {
                    on_event(&event);
                    seen.push(event);
                }
                seen
            })),
            None => Err(received),
        };
        let outcome = deployment::run(
            options,
            self.snapshot.clone(),
            program,
            Arc::new(FakeProviders(self.provider.clone())),
            recorder,
            events,
            self.cancel.clone(),
        )
        .await;
        self.events = match watcher {
            // The deployment has let go of every sink: the watcher has seen the last event.
            Ok(watcher) => watcher.await.expect("event watcher"),
            Err(mut received) => std::iter::from_fn(|| received.try_recv().ok()).collect(),
        };
        self.take_saved(&journal, &saved);
        outcome
    }

    /// A snapshot manager for a run on the current snapshot (none in preview), the journal it
    /// records and where its final snapshot is saved.
    fn recorder(&self, preview: bool) -> (Option<SnapshotManager>, Journal, Saved) {
        let journal = Journal::default();
        let saved = Saved::default();
        let recorder = (!preview).then(|| {
            SnapshotManager::start(
                self.snapshot.clone(),
                Box::new(CheckingPersister {
                    base: self.snapshot.clone(),
                    entries: journal.clone(),
                    checks: self.checks.clone(),
                    saved: saved.clone(),
                }),
            )
        });
        (recorder, journal, saved)
    }

    /// Takes in the snapshot a run saved, checking that the replay of its journal gives exactly
    /// that snapshot, and keeps the journal.
    fn take_saved(&mut self, journal: &Journal, saved: &Saved) {
        self.journal = std::mem::take(&mut *journal.lock().unwrap());
        if let Some(snapshot) = saved.lock().unwrap().take() {
            snapshot.verify_integrity().unwrap();
            let replayed =
                replay(self.snapshot.clone(), self.journal.clone()).expect("the journal replays");
            assert_eq!(
                replayed, snapshot,
                "the journal's replay differs from the engine's snapshot"
            );
            self.snapshot = snapshot;
        }
    }

    pub async fn up(&mut self, decls: Vec<Decl>) -> Outcome {
        let program = ScriptProgram {
            decls,
            apply_runs: Arc::default(),
        };
        self.run(Box::new(program), false).await
    }

    pub async fn up_with(&mut self, decls: Vec<Decl>, options: Options) -> Outcome {
        let program = ScriptProgram {
            decls,
            apply_runs: Arc::default(),
        };
        self.run_with(Box::new(program), false, options).await
    }

    /// Refreshes the state; with `preview`, records nothing.
    pub async fn refresh(&mut self, options: RefreshOptions) -> RefreshOutcome {
        let (recorder, journal, saved) = self.recorder(options.preview);
        let options = RefreshOptions {
            parallel: self.parallel,
            ..options
        };
        let outcome = refresh::run(
            options,
            self.snapshot.clone(),
            Arc::new(FakeProviders(self.provider.clone())),
            recorder,
            EventSink::discard(),
            CancellationToken::new(),
        )
        .await;
        self.take_saved(&journal, &saved);
        outcome
    }

    /// The recorded state of the live resource `name`.
    pub fn state(&self, name: &str) -> &plinth_engine::resource::ResourceState {
        self.snapshot
            .live_resources()
            .find(|r| r.urn.name() == name)
            .unwrap_or_else(|| panic!("no live resource {name}: {:?}", self.names()))
    }

    /// The URN the harness gives resource `name`.
    pub fn urn(name: &str) -> Urn {
        Urn::new("dev", "proj", None, "fake:Thing", name)
    }

    pub fn sorted_names(&self) -> Vec<String> {
        let mut names = self.names();
        names.sort();
        names
    }

    /// The resources in the state (provider resources left out), in state order.
    pub fn names(&self) -> Vec<String> {
        self.snapshot
            .resources
            .iter()
            .filter(|r| is_counted(&r.ty))
            .map(|r| format!("{}{}", r.urn.name(), if r.delete { "(delete)" } else { "" }))
            .collect()
    }
}

/// Runs `run`, turning a hang (a deadlock) into a failure. The bound is far above any honest
/// run's duration; nothing waits on it to order anything.
pub async fn bounded<T>(run: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the deployment hung (a deadlock?)")
}
