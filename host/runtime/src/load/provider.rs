//! Providers implemented by components of the `provider-plugin` world.
//!
//! A provider keeps a few idle instances, all created from one pre-instantiated component: a
//! call takes one (or creates one if none is idle, so concurrent calls run in parallel), and
//! gives it back when the call returns. An instance whose call trapped, panicked, ran out of
//! time or memory, or was cancelled, is dropped, never reused. The configuration given to
//! `configure` is replayed on every instance created afterwards.
//!
//! A provider built against an older `plinth:plugin` (0.1 or 0.2) is driven through that
//! version's bindings: what it is sent is converted down, what it returns is upgraded to the
//! current version's types (see [`crate::abi::abi_upgrade`]).

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use plinth_engine::provider::{
    CheckResult, Created, DiffResult, PartialState, Provider, ProviderError, ProviderInfo,
    ReadResult,
};
use plinth_engine::shown::escape_controls;
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use wasmtime::component::{self, Component, ComponentExportIndex, InstancePre, Linker};
use wasmtime::{Engine, Store};

use crate::abi::abi_upgrade::{Upgrade, downgrade};
use crate::abi::bindings::types;
use crate::abi::bindings::v0_3::provider::exports::plinth::plugin::provider as wit;
use crate::abi::bindings::{v0_1, v0_2, v0_3};
use crate::abi::guest::{FromGuest, ProviderMap};
use crate::abi::remark;
use crate::abi::schema;
use crate::abi::values::{self, Origin, ValueError};
use crate::abi::versions::WitVersion;
use crate::access::advice::GrantAdvice;
use crate::access::capabilities::{self, Capabilities};
use crate::access::grants::{Access, Grants};
use crate::access::missing::DirRequest;
use crate::error::LoadError;
use crate::load::hints::{self, Hints};
use crate::load::write_only;
use crate::sandbox::epoch::EpochTicker;
use crate::sandbox::limits::Limits;
use crate::sandbox::{self, Sandbox};

/// At most this many instances wait, idle, for the next call.
const MAX_IDLE: usize = 16;

/// A [`Provider`] backed by a component.
pub(crate) struct ComponentProvider {
    factory: Factory,
    info: ProviderInfo,
    /// What the provider asks for; the patterns that follow configuration are checked when it
    /// is configured.
    capabilities: Capabilities,
    /// What the provider stated about itself, to skip calls whose answer is known.
    hints: Hints,
    idle: Mutex<Vec<Instance>>,
    config: Mutex<Configuration>,
    /// Keeps deadlines working while the provider lives.
    _epoch: Arc<EpochTicker>,
}

/// The configuration every instance must have received.
#[derive(Default, Clone)]
struct Configuration {
    /// Incremented by every successful `configure`: an instance of an older generation is stale.
    generation: u64,
    value: Option<Arc<types::Value>>,
}

/// A provider component ready to instantiate: pre-instantiated once, with the indices of the
/// exports of the version it speaks and of the optional hints. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ProviderPre {
    instance_pre: InstancePre<Sandbox>,
    indices: Indices,
    hints: Option<ComponentExportIndex>,
    write_only: Option<ComponentExportIndex>,
}

/// Where a component's provider exports are, in the version it speaks.
#[derive(Clone)]
enum Indices {
    V0_1(v0_1::provider::ProviderPluginIndices),
    V0_2(v0_2::provider::ProviderPluginIndices),
    V0_3(v0_3::provider::ProviderPluginIndices),
}

/// An instance's bindings, in the version it speaks.
enum Bindings {
    V0_1(v0_1::provider::ProviderPlugin),
    V0_2(v0_2::provider::ProviderPlugin),
    V0_3(v0_3::provider::ProviderPlugin),
}

impl ProviderPre {
    /// Pre-instantiates `component`, built against `version`, with `linker`.
    pub(crate) fn new(
        linker: &Linker<Sandbox>,
        component: &Component,
        version: WitVersion,
    ) -> wasmtime::Result<ProviderPre> {
        let instance_pre = linker.instantiate_pre(component)?;
        let indices = match version {
            WitVersion::V0_1 => {
                Indices::V0_1(v0_1::provider::ProviderPluginIndices::new(&instance_pre)?)
            }
            WitVersion::V0_2 => {
                Indices::V0_2(v0_2::provider::ProviderPluginIndices::new(&instance_pre)?)
            }
            WitVersion::V0_3 => {
                Indices::V0_3(v0_3::provider::ProviderPluginIndices::new(&instance_pre)?)
            }
        };
        Ok(ProviderPre {
            hints: hints::export_index(component),
            write_only: write_only::export_index(component),
            instance_pre,
            indices,
        })
    }

    fn engine(&self) -> &Engine {
        self.instance_pre.engine()
    }

    async fn instantiate(
        &self,
        store: &mut Store<Sandbox>,
    ) -> wasmtime::Result<(component::Instance, Bindings)> {
        let instance = self.instance_pre.instantiate_async(&mut *store).await?;
        let bindings = match &self.indices {
            Indices::V0_1(indices) => Bindings::V0_1(indices.load(&mut *store, &instance)?),
            Indices::V0_2(indices) => Bindings::V0_2(indices.load(&mut *store, &instance)?),
            Indices::V0_3(indices) => Bindings::V0_3(indices.load(&mut *store, &instance)?),
        };
        Ok((instance, bindings))
    }
}

/// One instance of the component, in its own store.
struct Instance {
    store: Store<Sandbox>,
    /// The instance itself, for the exports the version's bindings do not cover (the hints).
    exports: component::Instance,
    /// Boxed: the instance moves in and out of the idle list on every call, and the bindings
    /// are most of its size.
    bindings: Box<Bindings>,
    /// The configuration generation it received.
    generation: u64,
}

/// Calls the provider export `$method` of `$instance` (an [`Instance`]) with `$args`, in the
/// version the instance speaks; evaluates to its result in the current version's types. An
/// older guest gets `$legacy` instead: the same arguments with values converted down (evaluated
/// only for such a guest).
macro_rules! call {
    ($instance:expr, $method:ident($($arg:expr),* $(,)?), legacy($($legacy:expr),* $(,)?)) => {{
        let instance: &mut Instance = &mut $instance;
        let backstop = sandbox::backstop(&mut instance.store);
        let call = async {
            match &*instance.bindings {
                Bindings::V0_1(b) => b
                    .plinth_plugin_provider()
                    .$method(&mut instance.store, $($legacy),*)
                    .await
                    .map(Upgrade::upgrade),
                Bindings::V0_2(b) => b
                    .plinth_plugin_provider()
                    .$method(&mut instance.store, $($legacy),*)
                    .await
                    .map(Upgrade::upgrade),
                Bindings::V0_3(b) => b
                    .plinth_plugin_provider()
                    .$method(&mut instance.store, $($arg),*)
                    .await,
            }
        };
        let outcome = tokio::time::timeout_at(backstop, call).await;
        outcome.unwrap_or_else(|_| Err(sandbox::overran(&mut instance.store)))
    }};
}

/// Reads a provider's `info` from a fresh instance of `pre` in a sandbox with `grants`.
pub(crate) async fn read_info(
    name: &str,
    path: &Path,
    pre: ProviderPre,
    limits: Limits,
    grants: Grants,
) -> Result<(ProviderInfo, Capabilities), LoadError> {
    let factory = Factory {
        name: name.into(),
        pre,
        limits,
        grants,
        // Nothing is checked against the grants here: no advice is given.
        advice: Arc::new(crate::access::advice::PlainAdvice),
    };
    let (_, info, capabilities, _) = factory.first_instance(path).await?;
    Ok((info, capabilities))
}

/// Creates instances of the provider's component.
struct Factory {
    name: Arc<str>,
    pre: ProviderPre,
    limits: Limits,
    grants: Grants,
    advice: Arc<dyn GrantAdvice>,
}

impl Factory {
    /// Instantiates the component and gives the new instance the configuration, if any.
    async fn create(&self, config: Configuration) -> Result<Instance, ProviderError> {
        let started = Instant::now();
        let sandbox = Sandbox::granted(
            self.name.clone(),
            log_stdout,
            self.limits,
            &self.grants,
            self.advice.clone(),
        )
        .map_err(|e| ProviderError::Failed(format!("plugin `{}`: {e}", self.name)))?;
        let mut store = sandbox::new_store(self.pre.engine(), sandbox);
        sandbox::begin_call(&mut store);
        let (exports, bindings) = match self.pre.instantiate(&mut store).await {
            Ok(instantiated) => instantiated,
            Err(e) => return Err(self.crashed(&store, "instantiate", &e)),
        };
        let mut instance = Instance {
            store,
            exports,
            bindings: Box::new(bindings),
            generation: config.generation,
        };
        if let Some(value) = config.value {
            sandbox::begin_call(&mut instance.store);
            match call!(instance, call_configure(&value), legacy(&downgrade(&value))) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(ProviderError::Failed(format!(
                        "plugin `{}`: `configure`, replayed on a new instance, failed: {}",
                        self.name,
                        e.into_host()
                    )));
                }
                Err(e) => return Err(self.crashed(&instance.store, "configure", &e)),
            }
        }
        tracing::debug!(
            target: "plinth::runtime",
            plugin = %self.name,
            elapsed = ?started.elapsed(),
            "provider instance created"
        );
        Ok(instance)
    }

    /// Creates the first instance and asks it for the provider's `info` (with its write-only
    /// inputs marked) and hints.
    async fn first_instance(
        &self,
        path: &Path,
    ) -> Result<(Instance, ProviderInfo, Capabilities, Hints), LoadError> {
        let start_error = |message: String| LoadError::Start {
            path: path.to_owned(),
            message,
        };
        let mut instance = self
            .create(Configuration::default())
            .await
            .map_err(|e| start_error(e.to_string()))?;
        sandbox::begin_call(&mut instance.store);
        let (mut info, capabilities) = match call!(instance, call_info(), legacy()) {
            Ok(info) => {
                check_identity(&info.name, &info.version).map_err(start_error)?;
                // A schema error quotes property names the guest chose: escaped, on one line.
                provider_info(info).map_err(|e| {
                    let e = e.to_string();
                    start_error(format!(
                        "`info` returned a malformed schema: {}",
                        escape_controls(&e)
                    ))
                })?
            }
            Err(e) => return Err(start_error(instance.store.data().failure("info", &e))),
        };
        let hints = match &self.pre.hints {
            Some(index) => {
                sandbox::begin_call(&mut instance.store);
                let backstop = sandbox::backstop(&mut instance.store);
                let read = hints::read(&mut instance.store, &instance.exports, index);
                let outcome = tokio::time::timeout_at(backstop, read).await;
                match outcome.unwrap_or_else(|_| Err(sandbox::overran(&mut instance.store))) {
                    Ok(hints) => hints,
                    Err(e) => {
                        let failure = instance.store.data().failure(hints::OPERATION, &e);
                        return Err(start_error(failure));
                    }
                }
            }
            None => Hints::default(),
        };
        if let Some(index) = &self.pre.write_only {
            sandbox::begin_call(&mut instance.store);
            let backstop = sandbox::backstop(&mut instance.store);
            let read = write_only::read(&mut instance.store, &instance.exports, index);
            let outcome = tokio::time::timeout_at(backstop, read).await;
            let marks = match outcome.unwrap_or_else(|_| Err(sandbox::overran(&mut instance.store)))
            {
                Ok(marks) => marks,
                Err(e) => {
                    let failure = instance.store.data().failure(write_only::OPERATION, &e);
                    return Err(start_error(failure));
                }
            };
            write_only::apply(&mut info, marks).map_err(|e| {
                start_error(format!(
                    "`{}` returned a malformed schema: {}",
                    write_only::OPERATION,
                    escape_controls(&e)
                ))
            })?;
        }
        Ok((instance, info, capabilities, hints))
    }

    fn crashed(&self, store: &Store<Sandbox>, op: &str, error: &wasmtime::Error) -> ProviderError {
        // The failure quotes what the plugin printed last (its panic message): masked.
        ProviderError::Crashed(format!(
            "plugin `{}`: {}",
            self.name,
            store.data().failure(op, error).into_host()
        ))
    }

    fn malformed(&self, op: &str, what: &str, error: ValueError) -> ProviderError {
        ProviderError::Failed(format!(
            "plugin `{}`: `{op}` returned malformed {what}: {error}",
            self.name
        ))
    }

    /// Converts a property map the provider returned from `op`.
    fn map(&self, op: &str, what: &str, value: types::Value) -> Result<PropertyMap, ProviderError> {
        ProviderMap(value)
            .into_host()
            .map_err(|e| self.malformed(op, what, e))
    }
}

fn log_stdout(guest: &str, line: &str) {
    tracing::debug!(target: "plinth::guest", guest, "stdout: {line}");
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is a push, a pop or a swap: the data is consistent after a panic.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ComponentProvider {
    /// Starts the provider `name` from `pre`: creates a first instance, asks for its `info`,
    /// checks that it is the provider it was requested as and that `grants` cover every
    /// capability it asks for.
    pub(crate) async fn start(
        name: &str,
        path: &Path,
        pre: ProviderPre,
        limits: Limits,
        grants: Grants,
        advice: Arc<dyn GrantAdvice>,
        epoch: Arc<EpochTicker>,
    ) -> Result<ComponentProvider, LoadError> {
        let factory = Factory {
            name: name.into(),
            pre,
            limits,
            grants,
            advice,
        };
        let (instance, info, capabilities, hints) = factory.first_instance(path).await?;
        if info.name != name {
            return Err(LoadError::NameMismatch {
                path: path.to_owned(),
                expected: name.to_owned(),
                actual: info.name,
            });
        }
        capabilities::check(
            name,
            &capabilities,
            &info.config,
            &factory.grants,
            factory.advice.as_ref(),
        )?;
        Ok(ComponentProvider {
            factory,
            info,
            capabilities,
            hints,
            idle: Mutex::new(vec![instance]),
            config: Mutex::default(),
            _epoch: epoch,
        })
    }

    /// An instance ready for a call: an idle one of the current configuration, or a new one.
    async fn checkout(&self) -> Result<Instance, ProviderError> {
        let generation = lock(&self.config).generation;
        let idle = loop {
            let popped = lock(&self.idle).pop();
            match popped {
                Some(instance) if instance.generation != generation => continue,
                other => break other,
            }
        };
        let mut instance = match idle {
            Some(instance) => instance,
            None => {
                let config = lock(&self.config).clone();
                self.factory.create(config).await?
            }
        };
        sandbox::begin_call(&mut instance.store);
        Ok(instance)
    }

    /// Gives an instance whose call returned back to the idle ones, unless it is stale or
    /// enough are idle already.
    fn release(&self, instance: Instance) {
        if instance.generation != lock(&self.config).generation {
            return;
        }
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE {
            idle.push(instance);
        }
    }

    /// Ends the call `op` on `instance`: a returned call gives the instance back and converts
    /// the provider's error; a failed one (a trap, a panic, a timeout) drops the instance.
    fn settle<R>(
        &self,
        instance: Instance,
        op: &str,
        result: wasmtime::Result<Result<R, wit::ProviderError>>,
    ) -> Result<R, ProviderError> {
        match result {
            Ok(returned) => {
                let returned = returned
                    .map_err(|e| sandbox::explain_refusals(instance.store.data(), e.into_host()));
                self.release(instance);
                returned
            }
            Err(e) => Err(self.factory.crashed(&instance.store, op, &e)),
        }
    }

    /// Keeps secret, in `outputs` of a resource `urn`, what was secret in each of `sent` and
    /// what the schema declares secret, among its inputs (echoed in outputs) and outputs.
    fn keep_secret(&self, urn: &Urn, sent: &[&PropertyMap], outputs: &mut PropertyMap) {
        sent.iter().for_each(|sent| remark::like(sent, outputs));
        if let Some(schema) = self.info.resources.iter().find(|r| r.token == urn.ty()) {
            remark::by_schema(&schema.inputs, outputs);
            remark::by_schema(&schema.outputs, outputs);
        }
    }

    /// [`keep_secret`](Self::keep_secret) for the outputs of a partially created resource.
    fn keep_partial_secret(&self, urn: &Urn, sent: &[&PropertyMap], error: &mut ProviderError) {
        if let ProviderError::PartiallyCreated(partial) = error {
            self.keep_secret(urn, sent, &mut partial.outputs);
        }
    }

    fn check_result(
        &self,
        op: &str,
        result: wit::CheckResult,
    ) -> Result<CheckResult, ProviderError> {
        result
            .into_host()
            .map_err(|e| self.factory.malformed(op, "inputs", e))
    }
}

#[async_trait]
impl Provider for ComponentProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn check_config(&self, config: &PropertyMap) -> Result<CheckResult, ProviderError> {
        let sent = config;
        let config = values::map_to_wit(sent);
        let mut instance = self.checkout().await?;
        let result = call!(
            instance,
            call_check_config(&config),
            legacy(&downgrade(&config))
        );
        let checked = self.settle(instance, "check-config", result)?;
        let mut checked = self.check_result("check-config", checked)?;
        remark::like(sent, &mut checked.inputs);
        remark::by_schema(&self.info.config, &mut checked.inputs);
        Ok(checked)
    }

    async fn configure(&self, config: &PropertyMap) -> Result<(), ProviderError> {
        // The endpoints the configuration names must be granted before the provider may use them.
        capabilities::check_configured(
            &self.factory.name,
            &self.capabilities,
            config,
            &self.info.config,
            &self.factory.grants,
            self.factory.advice.as_ref(),
        )
        .map_err(|e| ProviderError::Failed(e.to_string()))?;
        let value = Arc::new(values::map_to_wit(config));
        let mut instance = self.checkout().await?;
        let returned = match call!(instance, call_configure(&value), legacy(&downgrade(&value))) {
            Ok(returned) => returned,
            Err(e) => return Err(self.factory.crashed(&instance.store, "configure", &e)),
        };
        // A rejected configuration may have left the instance half-configured: drop it.
        returned.map_err(FromGuest::into_host)?;
        let generation = {
            let mut config = lock(&self.config);
            config.generation += 1;
            config.value = Some(value);
            config.generation
        };
        instance.generation = generation;
        lock(&self.idle).clear();
        self.release(instance);
        Ok(())
    }

    async fn check(
        &self,
        urn: &Urn,
        olds: Option<&PropertyMap>,
        news: &PropertyMap,
    ) -> Result<CheckResult, ProviderError> {
        let sent = news;
        let olds = olds.map(values::map_to_wit);
        let news = values::map_to_wit(sent);
        let mut instance = self.checkout().await?;
        let result = call!(
            instance,
            call_check(urn.as_str(), olds.as_ref(), &news),
            legacy(
                urn.as_str(),
                olds.as_ref().map(downgrade).as_ref(),
                &downgrade(&news)
            )
        );
        let checked = self.settle(instance, "check", result)?;
        let mut checked = self.check_result("check", checked)?;
        // What the program sent secret stays secret, whatever the provider normalized it to.
        remark::like(sent, &mut checked.inputs);
        if let Some(schema) = self.info.resources.iter().find(|r| r.token == urn.ty()) {
            remark::by_schema(&schema.inputs, &mut checked.inputs);
        }
        Ok(checked)
    }

    async fn diff(
        &self,
        urn: &Urn,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<DiffResult, ProviderError> {
        if old_inputs == new_inputs && self.hints.equal_inputs_mean_no_change(urn.ty()) {
            return Ok(DiffResult::default());
        }
        let old_inputs = values::map_to_wit(old_inputs);
        let old_outputs = values::map_to_wit(old_outputs);
        let new_inputs = values::map_to_wit(new_inputs);
        let mut instance = self.checkout().await?;
        let result = call!(
            instance,
            call_diff(urn.as_str(), id, &old_inputs, &old_outputs, &new_inputs),
            legacy(
                urn.as_str(),
                id,
                &downgrade(&old_inputs),
                &downgrade(&old_outputs),
                &downgrade(&new_inputs)
            )
        );
        Ok(self.settle(instance, "diff", result)?.into_host())
    }

    async fn create(
        &self,
        urn: &Urn,
        inputs: &PropertyMap,
        preview: bool,
    ) -> Result<Created, ProviderError> {
        let sent = inputs;
        let inputs = values::map_to_wit(sent);
        let mut instance = self.checkout().await?;
        let result = call!(
            instance,
            call_create(urn.as_str(), &inputs, preview),
            legacy(urn.as_str(), &downgrade(&inputs), preview)
        );
        let returned = self.settle(instance, "create", result);
        let returned = returned.map_err(|mut e| {
            self.keep_partial_secret(urn, &[sent], &mut e);
            e
        })?;
        let created: Result<Created, _> = returned.into_host().map(|mut created: Created| {
            self.keep_secret(urn, &[sent], &mut created.outputs);
            created
        });
        // The resource exists: if its outputs are malformed, report it as partially created so
        // that its id is recorded.
        created.map_err(|(id, e)| {
            ProviderError::PartiallyCreated(PartialState {
                id,
                outputs: PropertyMap::new(),
                reasons: vec![self.factory.malformed("create", "outputs", e).to_string()],
            })
        })
    }

    async fn read(
        &self,
        urn: &Urn,
        id: &str,
        inputs: &PropertyMap,
        outputs: &PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        let sent = (inputs, outputs);
        let inputs = values::map_to_wit(sent.0);
        let outputs = values::map_to_wit(sent.1);
        let mut instance = self.checkout().await?;
        let result = call!(
            instance,
            call_read(urn.as_str(), id, &inputs, &outputs),
            legacy(urn.as_str(), id, &downgrade(&inputs), &downgrade(&outputs))
        );
        let read: Option<Result<ReadResult, _>> =
            self.settle(instance, "read", result)?.into_host();
        let mut read =
            (read.transpose()).map_err(|(what, e)| self.factory.malformed("read", what, e))?;
        if let Some(read) = &mut read {
            remark::like(sent.0, &mut read.inputs);
            if let Some(schema) = self.info.resources.iter().find(|r| r.token == urn.ty()) {
                remark::by_schema(&schema.inputs, &mut read.inputs);
            }
            self.keep_secret(urn, &[sent.0, sent.1], &mut read.outputs);
        }
        Ok(read)
    }

    async fn update(
        &self,
        urn: &Urn,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
        preview: bool,
    ) -> Result<PropertyMap, ProviderError> {
        let sent = [new_inputs, old_outputs];
        let old_inputs = values::map_to_wit(old_inputs);
        let old_outputs = values::map_to_wit(old_outputs);
        let new_inputs = values::map_to_wit(new_inputs);
        let mut instance = self.checkout().await?;
        let result = call!(
            instance,
            call_update(
                urn.as_str(),
                id,
                &old_inputs,
                &old_outputs,
                &new_inputs,
                preview
            ),
            legacy(
                urn.as_str(),
                id,
                &downgrade(&old_inputs),
                &downgrade(&old_outputs),
                &downgrade(&new_inputs),
                preview
            )
        );
        let returned = self.settle(instance, "update", result);
        let returned = returned.map_err(|mut e| {
            self.keep_partial_secret(urn, &sent, &mut e);
            e
        })?;
        let mut outputs = self.factory.map("update", "outputs", returned)?;
        self.keep_secret(urn, &sent, &mut outputs);
        Ok(outputs)
    }

    async fn delete(
        &self,
        urn: &Urn,
        id: &str,
        inputs: &PropertyMap,
        outputs: &PropertyMap,
    ) -> Result<(), ProviderError> {
        let inputs = values::map_to_wit(inputs);
        let outputs = values::map_to_wit(outputs);
        let mut instance = self.checkout().await?;
        let result = call!(
            instance,
            call_delete(urn.as_str(), id, &inputs, &outputs),
            legacy(urn.as_str(), id, &downgrade(&inputs), &downgrade(&outputs))
        );
        self.settle(instance, "delete", result)
    }

    async fn invoke(&self, token: &str, args: &PropertyMap) -> Result<Value, ProviderError> {
        let sent = args;
        let args = values::map_to_wit(sent);
        let mut instance = self.checkout().await?;
        let result = call!(
            instance,
            call_invoke(token, &args),
            legacy(token, &downgrade(&args))
        );
        let value = self.settle(instance, "invoke", result)?;
        let mut value = values::from_wit(value, Origin::Provider)
            .map_err(|e| self.factory.malformed("invoke", "a result", e))?;
        remark::whole_if_any(sent, &mut value);
        Ok(value)
    }
}

/// The engine's part of a provider's `info`, and the capabilities it asks for.
/// Refuses a name or version that no Plinth.yaml or plugin store could carry, before either
/// reaches a message, a path (`plinth gen-sdk` writes under the name) or the state.
fn check_identity(name: &str, version: &str) -> Result<(), String> {
    let name_ok = !name.is_empty()
        && (name.chars()).all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !matches!(name, "." | "..");
    if !name_ok {
        return Err(format!(
            "`info` returned the name \"{}\": a plugin's name is letters, digits, `-`, `_` or \
             `.`; the plugin is broken, ask its author for a fixed build",
            escape_controls(name)
        ));
    }
    if version.is_empty() || escape_controls(version) != version {
        return Err(format!(
            "`info` returned the version \"{}\": a version is not empty and holds no control \
             characters; the plugin is broken, ask its author for a fixed build",
            escape_controls(version)
        ));
    }
    Ok(())
}

fn provider_info(
    info: wit::PluginInfo,
) -> Result<(ProviderInfo, Capabilities), schema::SchemaError> {
    let provider = ProviderInfo {
        name: info.name,
        version: info.version,
        description: info.description,
        config: schema::properties(info.config)?,
        resources: (info.resources.into_iter())
            .map(schema::resource)
            .collect::<Result<_, _>>()?,
        functions: (info.functions.into_iter())
            .map(schema::function)
            .collect::<Result<_, _>>()?,
    };
    Ok((provider, capabilities(info.capabilities)))
}

fn capabilities(asked: wit::Capabilities) -> Capabilities {
    Capabilities {
        dirs: asked
            .dirs
            .into_iter()
            .map(|d| DirRequest {
                guest: d.guest,
                access: if d.write {
                    Access::ReadWrite
                } else {
                    Access::ReadOnly
                },
                why: d.why,
            })
            .collect(),
        env: asked.env,
        tcp: asked.tcp,
        udp: asked.udp,
        http: asked.http,
    }
}

/// The provider world imports only types: there is nothing to implement.
impl types::Host for Sandbox {}
impl v0_3::provider::plinth::plugin::schema::Host for Sandbox {}
impl crate::abi::bindings::legacy_types::Host for Sandbox {}
