//! Supplies the engine with providers loaded from the project's plugins, each loaded and
//! configured once, on first use.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use plinth_engine::provider::{LoadError, Provider, ProviderSource};
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Access, DirGrant, Grants, Limits, Runtime};
use tokio::sync::OnceCell;

use crate::build::component_path;
use crate::project::{DirAccess, GrantsSpec, Project};

/// A provider loaded (and configured) at most once, however many steps ask for it at once.
type ProviderSlot = Arc<OnceCell<Arc<dyn Provider>>>;

pub struct PluginProviders {
    runtime: Arc<Runtime>,
    /// Plugin sources and grants by package name, resolved against the project directory.
    sources: BTreeMap<String, (PathBuf, Grants)>,
    config: BTreeMap<String, Value>,
    loaded: Mutex<HashMap<String, ProviderSlot>>,
}

impl PluginProviders {
    pub fn new(
        runtime: Arc<Runtime>,
        project: &Project,
        config: BTreeMap<String, Value>,
    ) -> PluginProviders {
        let sources = project
            .file
            .plugins
            .iter()
            .map(|(name, spec)| {
                let grants = grants(project, &spec.grants);
                (name.clone(), (project.resolve(&spec.path), grants))
            })
            .collect();
        PluginProviders {
            runtime,
            sources,
            config,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    async fn load(&self, package: &str) -> Result<Arc<dyn Provider>, LoadError> {
        let (source, grants) = self.sources.get(package).ok_or_else(|| {
            LoadError(format!(
                "no plugin provides `{package}`: add it under `plugins:` in Plinth.yaml \
                 (e.g. `{package}: {{ path: path/to/{package}.wasm }}`)"
            ))
        })?;
        let what = format!("plugin `{package}`");
        let source = source.clone();
        let path = tokio::task::spawn_blocking(move || component_path(&source, &what))
            .await
            .map_err(|e| LoadError(e.to_string()))?
            .map_err(|e| LoadError(format!("{e:#}")))?;
        let provider = self
            .runtime
            .load_provider(package, &path, Limits::default(), grants.clone())
            .await?;
        let config = self.provider_config(package);
        provider
            .configure(&config)
            .await
            .map_err(|e| LoadError(format!("plugin `{package}`: configure failed: {e}")))?;
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
    }
}

#[async_trait]
impl ProviderSource for PluginProviders {
    async fn provider(&self, package: &str) -> Result<Arc<dyn Provider>, LoadError> {
        let cell = self
            .loaded
            .lock()
            .expect("plugin table")
            .entry(package.to_owned())
            .or_default()
            .clone();
        cell.get_or_try_init(|| self.load(package)).await.cloned()
    }
}
