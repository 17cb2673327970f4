//! Supplies the engine with providers loaded from the project's plugins, each loaded once per
//! distinct configuration (the stack's, or a provider resource's), on first use.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use plinth_backend::{PluginUse, UsedPlugins};
use plinth_engine::provider::{LoadError, Provider, ProviderError, ProviderSource};
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Access, ComponentBytes, DirGrant, Grants, Limits, Runtime};
use tokio::sync::OnceCell;

use crate::build::component_path;
use crate::compiler::Compiler;
use crate::guest::Role;
use crate::plugin::resolve::Resolved;
use crate::project::{DirAccess, GrantsSpec, Project};

/// A provider loaded (and configured) at most once, however many steps ask for it at once.
type ProviderSlot = Arc<OnceCell<Arc<dyn Provider>>>;

/// Where a plugin's component comes from, with what it is granted.
struct PluginSource {
    /// A crate directory (built on first use) or a component file.
    path: PathBuf,
    /// The component file's bytes as resolved, their hash checked against Plinth.lock: what
    /// runs. None for a crate directory.
    component: Option<ComponentBytes>,
    grants: Grants,
    limits: Limits,
}

pub struct PluginProviders {
    runtime: Arc<Runtime>,
    /// Plugin sources, grants and limits by package name, resolved against the project
    /// directory.
    sources: BTreeMap<String, PluginSource>,
    /// Each plugin as it loads, for the checkpoint and the history.
    used: UsedPlugins,
    config: BTreeMap<String, Value>,
    /// Which tier compiles each plugin's component.
    compiler: Compiler,
    /// By package and configuration (as JSON).
    loaded: Mutex<HashMap<(String, String), ProviderSlot>>,
}

impl PluginProviders {
    pub fn new(
        runtime: Arc<Runtime>,
        project: &Project,
        resolved: &BTreeMap<String, Resolved>,
        config: BTreeMap<String, Value>,
        used: UsedPlugins,
        compiler: Compiler,
    ) -> PluginProviders {
        let sources = project
            .file
            .plugins
            .iter()
            .filter_map(|(name, spec)| {
                let resolved = resolved.get(name)?;
                let source = PluginSource {
                    path: resolved.source.clone(),
                    component: resolved.component.clone(),
                    grants: grants(project, &spec.grants),
                    limits: spec.limits.0,
                };
                Some((name.clone(), source))
            })
            .collect();
        // The stack's secret config is known before any guest runs: whichever guest prints
        // it, it is masked from the first line.
        let masker = plinth_runtime::secret_masker();
        config.values().for_each(|value| masker.learn(value));
        PluginProviders {
            runtime,
            sources,
            used,
            config,
            compiler,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    async fn load(
        &self,
        package: &str,
        config: &PropertyMap,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        let source = self.sources.get(package).ok_or_else(|| {
            LoadError(format!(
                "no plugin provides `{package}`: add it under `plugins:` in Plinth.yaml \
                 (e.g. `{package}: {{ path: path/to/{package}.wasm }}`)"
            ))
        })?;
        // A guest directory is built here; a component file is taken as it is.
        let tier = self.compiler.tier(source.component.is_none());
        let component = match &source.component {
            Some(component) => component.clone(),
            None => {
                let (what, path) = (format!("plugin `{package}`"), source.path.clone());
                tokio::task::spawn_blocking(move || {
                    let path = component_path(&path, &what, Role::Provider)?;
                    ComponentBytes::read(&path).map_err(|e| anyhow::anyhow!("{what}: {e}"))
                })
                .await
                .map_err(|e| LoadError(e.to_string()))?
                .map_err(|e| LoadError(format!("{e:#}")))?
            }
        };
        let sha256 = component.sha256().to_owned();
        let provider = self
            .runtime
            .load_provider_bytes(
                package,
                component,
                source.limits,
                source.grants.clone(),
                tier,
            )
            .await?;
        // The provider checks (and may normalize) its configuration before it is applied.
        let checked = (provider.check_config(config).await)
            .map_err(|e| LoadError(format!("plugin `{package}`: check-config failed: {e}")))?;
        if !checked.failures.is_empty() {
            let invalid = ProviderError::Invalid(checked.failures);
            return Err(LoadError(format!(
                "plugin `{package}`: invalid configuration: {invalid}"
            )));
        }
        provider
            .configure(&checked.inputs)
            .await
            .map_err(|e| LoadError(format!("plugin `{package}`: configure failed: {e}")))?;
        self.used.record(PluginUse {
            name: package.to_owned(),
            version: provider.info().version.clone(),
            sha256,
        });
        Ok(provider)
    }

    /// Stack config in the package's namespace (`random:seed` → `seed`) configures its provider.
    fn provider_config(&self, package: &str) -> PropertyMap {
        let prefix = format!("{package}:");
        self.config
            .iter()
            .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|k| (k.to_owned(), v.clone())))
            .collect()
    }
}

/// The runtime's form of a plugin's `grants:`, with host paths resolved against the project.
fn grants(project: &Project, spec: &GrantsSpec) -> Grants {
    Grants {
        dirs: spec
            .dirs
            .iter()
            .map(|dir| DirGrant {
                // `components` drops the `.` of `./world`, for messages that name the path.
                host: project.resolve(&dir.host).components().collect(),
                guest: dir.guest.clone(),
                access: match dir.access {
                    DirAccess::ReadOnly => Access::ReadOnly,
                    DirAccess::ReadWrite => Access::ReadWrite,
                },
            })
            .collect(),
        env: spec.env.clone(),
        tcp: spec.tcp.clone(),
        tcp_listen: spec.tcp_listen.clone(),
        udp_listen: spec.udp_listen.clone(),
        udp: spec.udp.clone(),
        http: spec.http.clone(),
        tls_insecure: spec.tls_insecure.clone(),
    }
}

#[async_trait]
impl ProviderSource for PluginProviders {
    async fn provider(&self, package: &str) -> Result<Arc<dyn Provider>, LoadError> {
        self.configured(package, &self.provider_config(package))
            .await
    }

    async fn configured(
        &self,
        package: &str,
        config: &PropertyMap,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        let key = serde_json::to_string(config).map_err(|e| LoadError(e.to_string()))?;
        let cell = self
            .loaded
            .lock()
            .expect("plugin table")
            .entry((package.to_owned(), key))
            .or_default()
            .clone();
        cell.get_or_try_init(|| self.load(package, config))
            .await
            .cloned()
    }
}
