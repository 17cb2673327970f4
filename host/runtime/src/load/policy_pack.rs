//! Policy packs implemented by components of the `plinth:policy/policy-pack` world.
//!
//! A pack runs in a sandbox granted nothing (no directory, network, environment variable),
//! under the same memory limit and per-call deadline as other guests. It keeps one instance:
//! calls are few (one per changing resource, one per stack) and a pack holds no state worth
//! parallel copies. An instance that trapped, panicked or ran out of time or memory cannot be
//! entered again: the pack then fails every later call with the first failure.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use plinth_engine::policy::{EnforcementLevel, PolicyError, PolicyPack, PolicyResource, Violation};
use plinth_engine::shown::escape_controls;
use plinth_engine::urn::Urn;
use wasmtime::Store;
use wasmtime::component::{Component, Linker};

use crate::abi::bindings::policy::PolicyPack as Bindings;
use crate::abi::bindings::policy::PolicyPackPre;
use crate::abi::bindings::policy::exports::plinth::policy::analyzer as wit;
use crate::abi::guest::FromGuest;
use crate::abi::values;
use crate::error::LoadError;
use crate::sandbox::epoch::EpochTicker;
use crate::sandbox::limits::Limits;
use crate::sandbox::{self, Sandbox};

/// How the user set up one policy: its level, if not the pack's, and its configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicySettings {
    pub level: Option<EnforcementLevel>,
    /// A JSON object, as text.
    pub config: Option<String>,
}

/// A loaded, configured policy pack.
pub struct ComponentPolicyPack {
    name: String,
    version: String,
    /// The SHA-256 of its component, in hex.
    digest: String,
    /// The level in force of each policy, by name.
    levels: BTreeMap<String, EnforcementLevel>,
    instance: tokio::sync::Mutex<Result<Instance, String>>,
    _epoch: Arc<EpochTicker>,
}

struct Instance {
    store: Store<Sandbox>,
    bindings: Bindings,
}

/// Links what a pack may import: WASI (through the sandbox's checks) and the (empty) value
/// types interface; no plinth function.
pub(crate) fn add_to_linker(linker: &mut Linker<Sandbox>) -> wasmtime::Result<()> {
    crate::sandbox::link::link_sandboxed_wasi(linker)?;
    Bindings::add_to_linker::<_, wasmtime::component::HasSelf<_>>(linker, |s| s)
}

/// Calls `$method` on `$instance` with `$args` under the sandbox's deadline and backstop.
macro_rules! call {
    ($instance:expr, $method:ident($($arg:expr),* $(,)?)) => {{
        let instance: &mut Instance = &mut $instance;
        sandbox::begin_call(&mut instance.store);
        let backstop = sandbox::backstop(&mut instance.store);
        let call = instance
            .bindings
            .plinth_policy_analyzer()
            .$method(&mut instance.store, $($arg),*);
        let outcome = tokio::time::timeout_at(backstop, call).await;
        outcome.unwrap_or_else(|_| Err(sandbox::overran(&mut instance.store)))
    }};
}

impl ComponentPolicyPack {
    /// Instantiates the pack `component` (at `path`), reads what it holds, and configures it
    /// with `settings`, keyed by policy name. A setting for a policy the pack does not hold is
    /// left for the caller, who knows every pack, to judge (see [`Self::policies`]).
    pub(crate) async fn start(
        linker: &Linker<Sandbox>,
        component: &Component,
        digest: String,
        path: &Path,
        limits: Limits,
        settings: &BTreeMap<String, PolicySettings>,
        epoch: Arc<EpochTicker>,
    ) -> Result<ComponentPolicyPack, LoadError> {
        let start_error = |message: String| LoadError::Start {
            path: path.to_owned(),
            message,
        };
        let pre = linker
            .instantiate_pre(component)
            .and_then(PolicyPackPre::new)
            .map_err(|e| LoadError::Link {
                path: path.to_owned(),
                world: "policy pack",
                message: format!("{e:#}"),
            })?;
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        let sandbox = Sandbox::for_policy_pack(Arc::from(&*stem), log_stdout, limits);
        let mut store = sandbox::new_store(pre.engine(), sandbox);
        sandbox::begin_call(&mut store);
        let bindings = match pre.instantiate_async(&mut store).await {
            Ok(bindings) => bindings,
            Err(e) => return Err(start_error(store.data().failure("instantiate", &e))),
        };
        let mut instance = Instance { store, bindings };
        let info = match call!(instance, call_info()) {
            Ok(info) => info,
            Err(e) => return Err(start_error(instance.store.data().failure("info", &e))),
        };
        let (name, version, levels, schemas) = read_info(info, settings).map_err(start_error)?;
        // Checked by the host before the pack sees it, against what the pack itself declares.
        for (policy, setting) in settings {
            if let (Some(schema), Some(config)) = (schemas.get(policy), &setting.config) {
                super::policy_config::check(&name, policy, schema, config).map_err(start_error)?;
            }
        }
        let config: Vec<wit::PolicyConfig> = (settings.iter())
            .filter(|(policy, _)| levels.contains_key(*policy))
            .filter_map(|(policy, s)| {
                let config = s.config.clone()?;
                Some(wit::PolicyConfig {
                    policy: policy.clone(),
                    config,
                })
            })
            .collect();
        match call!(instance, call_configure(&config)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(start_error(format!(
                    "policy pack `{}` refused its configuration: {}",
                    escape_controls(&name),
                    escape_controls(&e.into_host())
                )));
            }
            Err(e) => return Err(start_error(instance.store.data().failure("configure", &e))),
        }
        Ok(ComponentPolicyPack {
            name,
            version,
            digest,
            levels,
            instance: tokio::sync::Mutex::new(Ok(instance)),
            _epoch: epoch,
        })
    }

    /// The names of the policies the pack holds.
    pub fn policies(&self) -> impl Iterator<Item = &str> {
        self.levels.keys().map(String::as_str)
    }

    /// The instance in `slot`, or the failure that broke the pack.
    fn usable<'a>(
        &self,
        slot: &'a mut Result<Instance, String>,
    ) -> Result<&'a mut Instance, PolicyError> {
        match slot {
            Ok(instance) => Ok(instance),
            Err(failure) => Err(self.error(failure.clone())),
        }
    }

    /// Ends the call `op` on the instance in `slot`: a failure breaks the pack for good.
    fn settle<R>(
        &self,
        slot: &mut Result<Instance, String>,
        op: &str,
        result: wasmtime::Result<R>,
    ) -> Result<R, PolicyError> {
        match (result, &*slot) {
            (Ok(result), _) => Ok(result),
            (Err(e), Ok(instance)) => {
                let failure = instance.store.data().failure(op, &e).into_host();
                *slot = Err(failure.clone());
                Err(self.error(failure))
            }
            (Err(_), Err(failure)) => Err(self.error(failure.clone())),
        }
    }

    fn error(&self, message: String) -> PolicyError {
        PolicyError {
            pack: escape_controls(&self.name).into_owned(),
            message,
        }
    }

    /// `violations` as the engine takes them: masked, leveled, those of disabled policies
    /// dropped. A violation naming a policy the pack does not hold is mandatory: a pack cannot
    /// make its objection advisory by misnaming it.
    fn violations(&self, violations: Vec<wit::Violation>, urn: Option<&Urn>) -> Vec<Violation> {
        (violations.into_iter())
            .filter_map(|v| {
                let wit::Violation {
                    policy,
                    message,
                    property,
                    urn: named,
                } = v;
                let level = (self.levels.get(&policy)).map_or(EnforcementLevel::Mandatory, |l| *l);
                if level == EnforcementLevel::Disabled {
                    return None;
                }
                let urn = match urn {
                    Some(urn) => Some(urn.clone()),
                    None => Urn::parse(&named).ok(),
                };
                Some(Violation {
                    pack: self.name.clone(),
                    policy: policy.into_host(),
                    level,
                    message: message.into_host(),
                    property: property.into_host(),
                    urn,
                })
            })
            .collect()
    }
}

/// What a pack says of itself: its name and version, the level in force of each of its
/// policies (`settings` applied) and the configuration schema each declares.
type Info = (
    String,
    String,
    BTreeMap<String, EnforcementLevel>,
    BTreeMap<String, String>,
);

/// The pack's name, version, levels in force and schemas; or why what it said of itself is
/// unusable.
fn read_info(
    info: wit::PackInfo,
    settings: &BTreeMap<String, PolicySettings>,
) -> Result<Info, String> {
    let wit::PackInfo {
        name,
        version,
        policies,
    } = info;
    let name = name.into_host();
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err(format!(
            "`info` returned the pack name \"{}\": a name is one line of text",
            escape_controls(&name)
        ));
    }
    // Recorded with the update and shown by `stack history`: one short line.
    let version = version.into_host();
    if version.len() > 128 || version.chars().any(char::is_control) {
        return Err(format!(
            "`info` returned the pack version \"{}\": a version is one short line of text",
            escape_controls(&version)
        ));
    }
    let mut levels = BTreeMap::new();
    let mut schemas = BTreeMap::new();
    let mut seen = HashSet::new();
    for policy in policies {
        let wit::PolicyInfo {
            name: policy,
            description: _,
            enforcement_level,
            config_schema,
        } = policy;
        let policy = policy.into_host();
        if !seen.insert(policy.clone()) {
            return Err(format!(
                "`info` lists the policy `{}` twice",
                escape_controls(&policy)
            ));
        }
        let level = match enforcement_level {
            wit::EnforcementLevel::Advisory => EnforcementLevel::Advisory,
            wit::EnforcementLevel::Mandatory => EnforcementLevel::Mandatory,
            wit::EnforcementLevel::Disabled => EnforcementLevel::Disabled,
        };
        let level = (settings.get(&policy).and_then(|s| s.level)).unwrap_or(level);
        schemas.insert(policy.clone(), config_schema.into_host());
        levels.insert(policy, level);
    }
    Ok((name, version, levels, schemas))
}

/// `resource` as the pack sees it.
fn to_wit(resource: &PolicyResource) -> wit::Resource {
    let PolicyResource {
        ty,
        urn,
        inputs,
        old_inputs,
        provider,
        parent,
        dependencies,
    } = resource;
    wit::Resource {
        type_: ty.clone(),
        urn: urn.to_string(),
        inputs: values::map_to_wit(inputs),
        old_inputs: old_inputs.as_ref().map(values::map_to_wit),
        provider: provider.as_ref().map(Urn::to_string),
        parent: parent.as_ref().map(Urn::to_string),
        dependencies: dependencies.iter().map(Urn::to_string).collect(),
    }
}

fn log_stdout(guest: &str, line: &str) {
    tracing::debug!(target: "plinth::guest", guest, "stdout: {line}");
}

#[async_trait]
impl PolicyPack for ComponentPolicyPack {
    fn name(&self) -> &str {
        &self.name
    }

    fn version(&self) -> &str {
        &self.version
    }

    fn digest(&self) -> &str {
        &self.digest
    }

    async fn analyze_resource(
        &self,
        resource: &PolicyResource,
    ) -> Result<Vec<Violation>, PolicyError> {
        if self
            .levels
            .values()
            .all(|l| *l == EnforcementLevel::Disabled)
        {
            return Ok(Vec::new());
        }
        let sent = to_wit(resource);
        let mut slot = self.instance.lock().await;
        let instance = self.usable(&mut slot)?;
        let result = call!(*instance, call_analyze_resource(&sent));
        let violations = self.settle(&mut slot, "analyze-resource", result)?;
        Ok(self.violations(violations, Some(&resource.urn)))
    }

    async fn analyze_stack(
        &self,
        resources: &[PolicyResource],
    ) -> Result<Vec<Violation>, PolicyError> {
        if self
            .levels
            .values()
            .all(|l| *l == EnforcementLevel::Disabled)
        {
            return Ok(Vec::new());
        }
        let sent: Vec<wit::Resource> = resources.iter().map(to_wit).collect();
        let mut slot = self.instance.lock().await;
        let instance = self.usable(&mut slot)?;
        let result = call!(*instance, call_analyze_stack(&sent));
        let violations = self.settle(&mut slot, "analyze-stack", result)?;
        Ok(self.violations(violations, None))
    }
}
