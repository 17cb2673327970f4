//! Supplies the engine with providers loaded from the project's plugins, each loaded and
//! configured once, on first use.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use plinth_engine::provider::{LoadError, Provider, ProviderSource};
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Limits, Runtime};
use tokio::sync::OnceCell;

use crate::build::component_path;
use crate::project::Project;

/// A provider loaded (and configured) at most once, however many steps ask for it at once.
type ProviderSlot = Arc<OnceCell<Arc<dyn Provider>>>;

pub struct PluginProviders {
    runtime: Arc<Runtime>,
    /// Plugin sources by package name, resolved against the project directory.
    sources: BTreeMap<String, PathBuf>,
    config: BTreeMap<String, String>,
    loaded: Mutex<HashMap<String, ProviderSlot>>,
}

impl PluginProviders {
    pub fn new(
        runtime: Arc<Runtime>,
        project: &Project,
        config: BTreeMap<String, String>,
    ) -> PluginProviders {
        let sources = project
            .file
            .plugins
            .iter()
            .map(|(name, spec)| (name.clone(), project.resolve(&spec.path)))
            .collect();
        PluginProviders {
            runtime,
            sources,
            config,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    async fn load(&self, package: &str) -> Result<Arc<dyn Provider>, LoadError> {
        let source = self.sources.get(package).ok_or_else(|| {
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
            .load_provider(package, &path, Limits::default())
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
            .filter_map(|(k, v)| {
                k.strip_prefix(&prefix)
                    .map(|k| (k.to_owned(), Value::String(v.clone())))
            })
            .collect()
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
