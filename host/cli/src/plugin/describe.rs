//! What a component file is, as `plugin install` records it and `plugin inspect` shows it.

use plinth_engine::shown::escape_controls as e;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use plinth_engine::provider::{FunctionSchema, ProviderInfo, ResourceSchema};
use plinth_runtime::{Access, Capabilities, ComponentInfo, Kind, Runtime};
use serde::Serialize;

use super::properties;

use crate::home::artifact_cache;

/// A component, described.
#[derive(Debug, Serialize)]
pub struct Description {
    /// A provider's name and version; a program has neither.
    pub name: Option<String>,
    pub version: Option<String>,
    /// `provider` or `program`.
    pub kind: String,
    /// The WIT world it implements, with the `plinth:plugin` package version.
    pub world: String,
    pub wit_version: String,
    pub capabilities: CapabilitiesView,
    /// Each resource type with its typed inputs and outputs.
    pub resources: Vec<ResourceSchema>,
    /// Each function with its typed arguments and result.
    pub functions: Vec<FunctionSchema>,
    pub sha256: String,
    pub size: u64,
}

/// The capabilities a plugin asks for, as JSON shows them.
#[derive(Debug, Default, Serialize)]
pub struct CapabilitiesView {
    pub dirs: Vec<DirView>,
    pub env: Vec<String>,
    pub tcp: Vec<String>,
    pub udp: Vec<String>,
    pub http: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct DirView {
    pub guest: String,
    pub access: &'static str,
    pub why: String,
}

/// Describes the component at `path`, starting a provider in the bare sandbox to read its
/// `info`. Compiling it fills the precompiled cache, so its first real use starts fast.
pub async fn describe(path: &Path) -> Result<Description> {
    let runtime = Runtime::new(artifact_cache()?)?;
    Ok(Description::from(runtime.inspect(path).await?))
}

/// What the provider at `path` says it is and manages: its `info`, schemas included.
pub async fn provider_info(path: &Path) -> Result<ProviderInfo> {
    let runtime = Runtime::new(artifact_cache()?)?;
    let info = runtime.inspect(path).await?;
    match info.provider {
        Some(provider) => Ok(provider),
        None => anyhow::bail!(
            "{} is a {} component, not a provider plugin",
            path.display(),
            info.kind
        ),
    }
}

impl From<ComponentInfo> for Description {
    fn from(info: ComponentInfo) -> Description {
        let world = match info.kind {
            Kind::Provider => "provider-plugin",
            Kind::Program => "program",
        };
        let provider = info.provider;
        Description {
            name: provider.as_ref().map(|p| p.name.clone()),
            version: provider.as_ref().map(|p| p.version.clone()),
            kind: info.kind.to_string(),
            world: format!("plinth:plugin/{world}@{}", info.wit_version),
            wit_version: info.wit_version.to_string(),
            capabilities: capabilities(info.capabilities),
            resources: provider
                .as_ref()
                .map(|p| p.resources.clone())
                .unwrap_or_default(),
            functions: provider.map(|p| p.functions).unwrap_or_default(),
            sha256: info.sha256,
            size: info.size,
        }
    }
}

fn capabilities(c: Capabilities) -> CapabilitiesView {
    CapabilitiesView {
        dirs: c
            .dirs
            .into_iter()
            .map(|d| DirView {
                guest: d.guest,
                access: match d.access {
                    Access::ReadOnly => "read-only",
                    Access::ReadWrite => "read-write",
                },
                why: d.why,
            })
            .collect(),
        env: c.env,
        tcp: c.tcp,
        udp: c.udp,
        http: c.http,
    }
}

impl Description {
    /// The description as `plinth plugin inspect` prints it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Everything but the hash and size is what the plugin said: shown escaped, on its line.
        let unknown = |v: &Option<String>| e(v.as_deref().unwrap_or("-")).into_owned();
        let _ = writeln!(out, "name:         {}", unknown(&self.name));
        let _ = writeln!(out, "version:      {}", unknown(&self.version));
        let _ = writeln!(out, "kind:         {}", self.kind);
        let _ = writeln!(out, "WIT world:    {}", self.world);
        let _ = writeln!(out, "sha256:       {}", self.sha256);
        let _ = writeln!(out, "size:         {} bytes", self.size);
        let caps = &self.capabilities;
        let asks_nothing = caps.dirs.is_empty()
            && [&caps.env, &caps.tcp, &caps.udp, &caps.http]
                .iter()
                .all(|items| items.is_empty());
        if asks_nothing {
            let _ = writeln!(out, "capabilities: none (runs in the bare sandbox)");
        } else {
            let _ = writeln!(out, "capabilities:");
            for dir in &caps.dirs {
                let (guest, why) = (e(&dir.guest), e(&dir.why));
                let _ = writeln!(out, "  dir   {guest} ({}): {why}", dir.access);
            }
            for (what, items) in [
                ("env ", &caps.env),
                ("tcp ", &caps.tcp),
                ("udp ", &caps.udp),
                ("http", &caps.http),
            ] {
                for item in items {
                    let _ = writeln!(out, "  {what}  {}", e(item));
                }
            }
        }
        if self.kind == "provider" {
            out.push_str(&properties::render_resources(&self.resources));
            out.push_str(&properties::render_functions(&self.functions));
        }
        out
    }
}
