//! The project (`Plinth.yaml`) and its per-stack configuration (`Plinth.<stack>.yaml`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::stack_config::StackConfig;

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

/// Where a plugin comes from, and what it may use.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSpec {
    /// A `.wasm` component, or a crate directory to build, relative to the project.
    pub path: PathBuf,
    /// What the plugin is granted beyond the bare sandbox; nothing by default.
    #[serde(default)]
    pub grants: GrantsSpec,
}

/// A plugin's `grants:`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsSpec {
    #[serde(default)]
    pub dirs: Vec<DirGrantSpec>,
}

/// One entry of `grants.dirs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirGrantSpec {
    /// The host directory, relative to the project.
    pub host: PathBuf,
    /// The absolute path at which the plugin sees it.
    pub guest: String,
    #[serde(default)]
    pub access: DirAccess,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DirAccess {
    #[default]
    ReadOnly,
    ReadWrite,
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

    /// The stack's configuration file, `Plinth.<stack>.yaml`, beside the project.
    pub fn stack_config(&self, stack: &str) -> StackConfig {
        StackConfig::of_stack(&self.dir, stack)
    }

    /// The fully qualified form of a config key: `key` belongs to the project's namespace.
    pub fn qualify_key(&self, key: &str) -> String {
        if key.contains(':') {
            key.to_owned()
        } else {
            format!("{}:{key}", self.name())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> Result<Project> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(PROJECT_FILE), yaml).unwrap();
        Project::load(dir.path())
    }

    #[test]
    fn plugins_are_granted_nothing_unless_asked() {
        let project = load("name: p\nplugins:\n  kit:\n    path: kit.wasm\n").unwrap();
        assert!(project.file.plugins["kit"].grants.dirs.is_empty());
    }

    #[test]
    fn parses_directory_grants() {
        let yaml = "name: p\nplugins:\n  kit:\n    path: kit.wasm\n    grants:\n      dirs:\n\
                    \x20       - host: ./world\n          guest: /world\n          access: read-write\n\
                    \x20       - host: data\n          guest: /data\n";
        let project = load(yaml).unwrap();
        let dirs = &project.file.plugins["kit"].grants.dirs;
        assert_eq!(dirs.len(), 2);
        assert_eq!(dirs[0].host, Path::new("./world"));
        assert_eq!(dirs[0].guest, "/world");
        assert_eq!(dirs[0].access, DirAccess::ReadWrite);
        assert_eq!(dirs[1].access, DirAccess::ReadOnly);
    }

    #[test]
    fn unknown_grant_keys_and_access_modes_are_errors() {
        let unknown =
            "name: p\nplugins:\n  kit:\n    path: kit.wasm\n    grants:\n      net: [a]\n";
        let err = load(unknown).unwrap_err().to_string();
        assert!(err.contains("unknown field `net`"), "{err}");
        let bad_access = "name: p\nplugins:\n  kit:\n    path: kit.wasm\n    grants:\n      dirs:\n\
                          \x20       - { host: w, guest: /w, access: write }\n";
        let err = load(bad_access).unwrap_err().to_string();
        assert!(err.contains("unknown variant `write`"), "{err}");
    }
}
