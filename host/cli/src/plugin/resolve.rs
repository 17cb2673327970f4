//! Resolves each plugin of `Plinth.yaml` to the component it loads and, for a `.wasm` file, a
//! plugin from the store or one from a registry, to what `Plinth.lock` pins. Such a file is read
//! and hashed once, here: the bytes whose hash the lock checks are the bytes the runtime
//! compiles.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::plugin::lockfile::{self, Pin};
use crate::plugin::registry::{self, Options};
use crate::plugin::signature::TrustPolicy;
use plinth_runtime::ComponentBytes;

use crate::plugin::store::Store;
use crate::project::{PluginSource, Project};

/// A plugin of the project, resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// A component file, or a crate directory to build.
    pub source: PathBuf,
    /// What the lock pins; none for a crate directory, a development build rebuilt as it
    /// changes.
    pub pin: Option<Pin>,
    /// The component file's bytes, whose hash is the pin's; none for a crate directory.
    pub component: Option<ComponentBytes>,
}

/// What the lock pins of `resolved`: the plugins that have a hash, by name.
pub fn pins(resolved: &BTreeMap<String, Resolved>) -> BTreeMap<String, Pin> {
    resolved
        .iter()
        .filter_map(|(name, r)| Some((name.clone(), r.pin.clone()?)))
        .collect()
}

/// Every plugin of `project`, by package name, with the store's plugins found in `store` and a
/// registry's resolved against the pins of its `Plinth.lock` as `options` allow.
pub async fn resolve(
    project: &Project,
    store: &Store,
    options: &Options,
) -> Result<BTreeMap<String, Resolved>> {
    let locked = lockfile::locked(&project.dir)?;
    let trust = TrustPolicy::new(&project.file.trust).map_err(|e| anyhow::anyhow!(e))?;
    let mut resolved = BTreeMap::new();
    for (name, spec) in &project.file.plugins {
        let plugin = match spec.source() {
            PluginSource::Path(path) => from_path(project, name, path)?,
            PluginSource::Store(version) => from_store(store, name, version)?,
            PluginSource::Registry {
                repository,
                version,
            } => {
                let fetched = registry::resolve(
                    store,
                    name,
                    repository,
                    version,
                    locked.get(name),
                    options,
                    &trust,
                )
                .await?;
                Resolved {
                    source: fetched.component.path().to_owned(),
                    pin: Some(fetched.pin),
                    component: Some(fetched.component),
                }
            }
        };
        resolved.insert(name.clone(), plugin);
    }
    Ok(resolved)
}

fn from_path(project: &Project, name: &str, path: &std::path::Path) -> Result<Resolved> {
    let source = project.resolve(path);
    if source.is_dir() {
        return Ok(Resolved {
            source,
            pin: None,
            component: None,
        });
    }
    if !source.exists() {
        bail!("plugin `{name}`: {} does not exist", source.display());
    }
    let component = ComponentBytes::read(&source)
        .with_context(|| format!("plugin `{name}`: cannot read {}", source.display()))?;
    Ok(Resolved {
        pin: Some(Pin {
            sha256: component.sha256().to_owned(),
            path: Some(path.to_owned()),
            ..Pin::default()
        }),
        source,
        component: Some(component),
    })
}

fn from_store(store: &Store, name: &str, version: &str) -> Result<Resolved> {
    let plugin = store.find(name, Some(version))?;
    let source = store.blob(&plugin.sha256);
    // The blob is named by its hash: a different hash means the file was damaged or replaced.
    let component = ComponentBytes::read(&source).with_context(|| {
        format!(
            "plugin `{}`: its file {} is missing from the store; reinstall it with \
             `plinth plugin install --force {}`",
            plugin.id(),
            source.display(),
            plugin.source
        )
    })?;
    let actual = component.sha256();
    if actual != plugin.sha256 {
        bail!(
            "plugin `{}`: its file {} in the store has changed (sha256 {actual}); reinstall it \
             with `plinth plugin install --force {}`",
            plugin.id(),
            source.display(),
            plugin.source
        );
    }
    let signature = store.signature(&plugin.sha256)?;
    Ok(Resolved {
        source,
        pin: Some(Pin {
            sha256: plugin.sha256,
            version: Some(plugin.version),
            signature,
            ..Pin::default()
        }),
        component: Some(component),
    })
}
