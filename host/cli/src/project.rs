//! The project (`Plinth.yaml`) and its per-stack configuration (`Plinth.<stack>.yaml`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

pub const PROJECT_FILE: &str = "Plinth.yaml";

/// The contents of `Plinth.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectFile {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// A `.wasm` component, or a directory holding a Rust crate to build for wasm32-wasip2.
    #[serde(default = "default_program")]
    pub program: PathBuf,
    /// Plugins by package name.
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginSpec>,
}

fn default_program() -> PathBuf {
    PathBuf::from(".")
}

/// Where a plugin comes from.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSpec {
    /// A `.wasm` component, or a crate directory to build, relative to the project.
    pub path: PathBuf,
}

/// A loaded project.
#[derive(Debug)]
pub struct Project {
    pub dir: PathBuf,
    pub file: ProjectFile,
}

impl Project {
    /// Finds `Plinth.yaml` in `start` or the nearest ancestor.
    pub fn find(start: &Path) -> Result<Project> {
        let start = start
            .canonicalize()
            .with_context(|| format!("cannot open directory {}", start.display()))?;
        let dir = start
            .ancestors()
            .find(|d| d.join(PROJECT_FILE).is_file())
            .with_context(|| {
                format!(
                    "no {PROJECT_FILE} in {} or its parents; run plinth inside a project or pass --cwd",
                    start.display()
                )
            })?;
        Project::load(dir)
    }

    fn load(dir: &Path) -> Result<Project> {
        let path = dir.join(PROJECT_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let file: ProjectFile = serde_yaml_ng::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{} is malformed: {}",
                path.display(),
                e.to_string().replace('\n', " ")
            )
        })?;
        if file.name.is_empty()
            || !file
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            bail!(
                "{} is malformed: `name` must be a non-empty identifier (letters, digits, `-`, `_`, `.`), not `{}`",
                path.display(),
                file.name
            );
        }
        Ok(Project {
            dir: dir.to_owned(),
            file,
        })
    }

    pub fn name(&self) -> &str {
        &self.file.name
    }

    pub fn resolve(&self, path: &Path) -> PathBuf {
        self.dir.join(path)
    }

    fn stack_config_path(&self, stack: &str) -> PathBuf {
        self.dir.join(format!("Plinth.{stack}.yaml"))
    }

    /// The stack's configuration, keyed `namespace:key`.
    pub fn stack_config(&self, stack: &str) -> Result<BTreeMap<String, String>> {
        let path = self.stack_config_path(stack);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let file: StackConfigFile = serde_yaml_ng::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{} is malformed: {}",
                path.display(),
                e.to_string().replace('\n', " ")
            )
        })?;
        file.config
            .into_iter()
            .map(|(k, v)| Ok((k, scalar_to_string(&path, v)?)))
            .collect()
    }

    /// The fully qualified form of a config key: `key` belongs to the project's namespace.
    pub fn qualify_key(&self, key: &str) -> String {
        if key.contains(':') {
            key.to_owned()
        } else {
            format!("{}:{key}", self.name())
        }
    }

    pub fn set_config(&self, stack: &str, key: &str, value: &str) -> Result<()> {
        let mut config = self.stack_config(stack)?;
        config.insert(self.qualify_key(key), value.to_owned());
        self.write_config(stack, config)
    }

    /// Removes a key; false if it was not set.
    pub fn remove_config(&self, stack: &str, key: &str) -> Result<bool> {
        let mut config = self.stack_config(stack)?;
        if config.remove(&self.qualify_key(key)).is_none() {
            return Ok(false);
        }
        self.write_config(stack, config)?;
        Ok(true)
    }

    fn write_config(&self, stack: &str, config: BTreeMap<String, String>) -> Result<()> {
        let file = StackConfigFile {
            config: config
                .into_iter()
                .map(|(k, v)| (k, serde_yaml_ng::Value::String(v)))
                .collect(),
        };
        let path = self.stack_config_path(stack);
        let text = serde_yaml_ng::to_string(&file)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StackConfigFile {
    #[serde(default)]
    config: BTreeMap<String, serde_yaml_ng::Value>,
}

fn scalar_to_string(path: &Path, value: serde_yaml_ng::Value) -> Result<String> {
    use serde_yaml_ng::Value as Y;
    Ok(match value {
        Y::String(s) => s,
        Y::Bool(b) => b.to_string(),
        Y::Number(n) => n.to_string(),
        other => bail!(
            "{} is malformed: config values must be strings, numbers or booleans, not {other:?}",
            path.display()
        ),
    })
}
