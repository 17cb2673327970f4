//! The project (`Plinth.yaml`) and its per-stack configuration (`Plinth.<stack>.yaml`).

use plinth_engine::names::ProjectName;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use plinth_runtime::{AuthorityPattern, EndpointPattern};
use serde::Deserialize;

use crate::limits_spec::LimitsSpec;
use crate::program_spec::ProgramSpec;
use crate::stack_config::StackConfig;

pub const PROJECT_FILE: &str = "Plinth.yaml";

/// The contents of `Plinth.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectFile {
    pub name: ProjectName,
    #[serde(default)]
    pub description: Option<String>,
    /// The program (a `.wasm` component, or a directory to build) and its limits.
    #[serde(default)]
    pub program: ProgramSpec,
    /// Plugins by package name.
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginSpec>,
    /// Policy packs `preview` and `up` run, beside those `--policy-pack` names.
    #[serde(default, rename = "policy-packs")]
    pub policy_packs: Vec<PolicyPackSpec>,
    /// The keys whose signatures the project trusts, and what to do with other plugins.
    #[serde(default)]
    pub trust: crate::plugin::signature::TrustSpec,
}

/// One entry of `policy-packs:`: a path (a `.wasm` file or a guest directory, relative to the
/// project) or an `oci://` reference, or `{ path | source, limits }`. A pack is granted
/// nothing, so it takes no `grants`.
#[derive(Debug, Deserialize)]
#[serde(try_from = "RawPolicyPack")]
pub struct PolicyPackSpec {
    pub source: PackSource,
    pub limits: LimitsSpec,
}

/// Where a policy pack comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackSource {
    /// A `.wasm` file or a guest directory.
    Path(PathBuf),
    /// `oci://HOST[:PORT]/REPOSITORY[:TAG|@sha256:…]`, pulled and pinned in Plinth.lock.
    Registry(crate::plugin::oci::Reference),
}

impl PackSource {
    /// An `oci://` reference, checked, or a path.
    pub fn parse(text: &Path) -> Result<PackSource, String> {
        match text.to_str() {
            Some(reference) if reference.starts_with("oci://") => {
                crate::plugin::oci::Reference::parse(reference)
                    .map(PackSource::Registry)
                    .map_err(|e| format!("{e:#}"))
            }
            _ => Ok(PackSource::Path(text.to_owned())),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawPolicyPack {
    Path(PathBuf),
    Full(FullPolicyPack),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FullPolicyPack {
    #[serde(default)]
    path: Option<PathBuf>,
    #[serde(default)]
    source: Option<PathBuf>,
    #[serde(default)]
    limits: LimitsSpec,
}

impl TryFrom<RawPolicyPack> for PolicyPackSpec {
    type Error = String;

    fn try_from(raw: RawPolicyPack) -> Result<PolicyPackSpec, String> {
        let (given, limits) = match raw {
            RawPolicyPack::Path(path) => (path, LimitsSpec::default()),
            RawPolicyPack::Full(FullPolicyPack {
                path: Some(path),
                source: None,
                limits,
            }) => (path, limits),
            RawPolicyPack::Full(FullPolicyPack {
                path: None,
                source: Some(source),
                limits,
            }) => {
                if !source.to_str().is_some_and(|s| s.starts_with("oci://")) {
                    return Err(format!(
                        "a policy pack's `source` is an `oci://` reference, not `{}`; give a \
                         file or directory as `path`",
                        plinth_engine::shown::escape_controls(&source.display().to_string())
                    ));
                }
                (source, limits)
            }
            RawPolicyPack::Full(_) => {
                return Err(
                    "a policy pack takes one of `path` (a .wasm file or a guest directory) and \
                     `source` (an oci:// reference)"
                        .into(),
                );
            }
        };
        if given.as_os_str().is_empty() {
            return Err("a policy pack's `path` is empty".into());
        }
        Ok(PolicyPackSpec {
            source: PackSource::parse(&given)?,
            limits,
        })
    }
}

/// Where a plugin comes from, and what it may use.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSpec {
    /// A `.wasm` component, or a crate directory to build, relative to the project.
    #[serde(default)]
    path: Option<PathBuf>,
    /// The version of a plugin installed in the store (`plinth plugin install`); with
    /// `source`, the version or semver range to resolve against the registry's tags. Exactly
    /// one of `path` and `version` is given.
    #[serde(default)]
    version: Option<String>,
    /// A registry repository, `oci://HOST[:PORT]/REPOSITORY`, to resolve `version` in.
    #[serde(default)]
    source: Option<String>,
    /// What the plugin is granted beyond the bare sandbox; nothing by default.
    #[serde(default)]
    pub grants: GrantsSpec,
    /// The memory and time each of its calls may use.
    #[serde(default)]
    pub limits: LimitsSpec,
}

/// Where a plugin's component comes from.
#[derive(Debug, Clone, Copy)]
pub enum PluginSource<'a> {
    /// A `.wasm` file or a crate directory, relative to the project.
    Path(&'a Path),
    /// A version installed in the plugin store.
    Store(&'a str),
    /// A version or semver range of a registry repository (`oci://…`), resolved and pinned in
    /// Plinth.lock.
    Registry {
        repository: &'a str,
        version: &'a str,
    },
}

/// A `version:` of a registry's plugin: an exact version (`0.3.1`, unlike Cargo, which reads
/// it as `^0.3.1`) or a semver range (`^0.3`, `>=1.2, <2`).
pub fn version_range(text: &str) -> Result<semver::VersionReq, String> {
    let text = text.trim();
    let exact = semver::Version::parse(text).map(|v| format!("={v}"));
    semver::VersionReq::parse(exact.as_deref().unwrap_or(text)).map_err(|e| {
        format!(
            "`{}` is not a version or a semver range ({e}): give e.g. `0.3.1`, `^0.3` or \
             `>=1.2, <2`",
            plinth_engine::shown::escape_controls(text)
        )
    })
}

impl PluginSpec {
    pub fn source(&self) -> PluginSource<'_> {
        match (&self.path, &self.version, &self.source) {
            (Some(path), None, None) => PluginSource::Path(path),
            (None, Some(version), None) => PluginSource::Store(version),
            (None, Some(version), Some(repository)) => PluginSource::Registry {
                repository,
                version,
            },
            _ => unreachable!("Project::load admits exactly one of `path` and `version`"),
        }
    }

    /// Checks that exactly one of `path` and `version` is given, and that a `source` is a
    /// repository with a version or range to resolve in it.
    fn validate(&self, name: &str) -> Result<(), String> {
        if let Some(source) = &self.source {
            let reference = crate::plugin::oci::Reference::parse(source)
                .map_err(|e| format!("plugin `{name}`: `source`: {e}"))?;
            if reference.tag.is_some() || reference.digest.is_some() {
                return Err(format!(
                    "plugin `{name}`: `source` names a tag or digest; give the repository, \
                     {}, and the version or range as `version:`",
                    reference.repository_url()
                ));
            }
            let Some(version) = &self.version else {
                return Err(format!(
                    "plugin `{name}` has a `source` but no `version`: give the version or \
                     semver range to resolve in it, e.g. `version: \"^0.3\"`"
                ));
            };
            version_range(version).map_err(|e| format!("plugin `{name}`: `version`: {e}"))?;
        }
        match (&self.path, &self.version) {
            (Some(_), None) => Ok(()),
            (None, Some(version)) if !version.trim().is_empty() => Ok(()),
            (None, Some(_)) => Err(format!("plugin `{name}` has an empty `version`")),
            (Some(_), Some(_)) => Err(format!(
                "plugin `{name}` has both `path` and `version`; give one: `path` for a .wasm \
                 file or a crate directory, `version` for a plugin installed with \
                 `plinth plugin install`"
            )),
            (None, None) => Err(format!(
                "plugin `{name}` needs `path` (a .wasm file or a crate directory) or `version` \
                 (a plugin installed with `plinth plugin install`; `plinth plugin ls` lists them)"
            )),
        }
    }
}

/// A plugin's `grants:`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsSpec {
    #[serde(default)]
    pub dirs: Vec<DirGrantSpec>,
    /// Environment variables passed from plinth's own environment, by name.
    #[serde(default)]
    pub env: Vec<String>,
    /// TCP endpoints, `host:port`: `127.0.0.1:8080`, `db.internal:5432`, `*.example.com:443`.
    #[serde(default, deserialize_with = "parse_each")]
    pub tcp: Vec<EndpointPattern>,
    /// Local addresses to listen on for TCP connections, written as the TCP endpoints.
    #[serde(default, rename = "tcp-listen", deserialize_with = "parse_each")]
    pub tcp_listen: Vec<EndpointPattern>,
    /// UDP endpoints, written as the TCP ones.
    #[serde(default, deserialize_with = "parse_each")]
    pub udp: Vec<EndpointPattern>,
    /// Local addresses to receive UDP datagrams on.
    #[serde(default, rename = "udp-listen", deserialize_with = "parse_each")]
    pub udp_listen: Vec<EndpointPattern>,
    /// Authorities of outbound HTTP requests: `api.example.com`, `127.0.0.1:8080`.
    #[serde(default, deserialize_with = "parse_each")]
    pub http: Vec<AuthorityPattern>,
    /// TCP endpoints, written as the `tcp` ones, whose TLS sessions may skip verifying the
    /// server's certificate (or its name).
    #[serde(default, rename = "tls-insecure", deserialize_with = "parse_each")]
    pub tls_insecure: Vec<EndpointPattern>,
}

/// Parses each string of a list with `FromStr`, failing with its error.
fn parse_each<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr<Err: std::fmt::Display>,
{
    Vec::<String>::deserialize(deserializer)?
        .iter()
        .map(|s| s.parse().map_err(serde::de::Error::custom))
        .collect()
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
        let text = crate::yaml_file::read(&path)?
            .with_context(|| format!("cannot read {}: it is gone", path.display()))?;
        let file: ProjectFile = crate::yaml_file::parse(&path, &text)?;
        for (name, spec) in &file.plugins {
            spec.validate(name)
                .map_err(|e| anyhow::anyhow!("{} is malformed: {e}", path.display()))?;
        }
        Ok(Project {
            dir: dir.to_owned(),
            file,
        })
    }

    pub fn name(&self) -> &ProjectName {
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
    use plinth_runtime::Limits;

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
    fn a_plugin_comes_from_a_path_or_the_store() {
        let project = load("name: p\nplugins:\n  kit:\n    version: 0.1.0\n").unwrap();
        assert!(matches!(
            project.file.plugins["kit"].source(),
            PluginSource::Store("0.1.0")
        ));
        let both = "name: p\nplugins:\n  kit:\n    path: kit.wasm\n    version: 0.1.0\n";
        let err = load(both).unwrap_err().to_string();
        assert!(err.contains("both `path` and `version`"), "{err}");
        let registry = "name: p\nplugins:\n  kit:\n    source: oci://r.io/kit\n    version: ^0.3\n";
        let project = load(registry).unwrap();
        assert!(matches!(
            project.file.plugins["kit"].source(),
            PluginSource::Registry {
                repository: "oci://r.io/kit",
                version: "^0.3"
            }
        ));
        for (bad, why) in [
            (
                "source: oci://r.io/kit:0.3.0\n    version: ^0.3",
                "names a tag",
            ),
            ("source: oci://r.io/kit", "no `version`"),
            (
                "source: oci://r.io/kit\n    version: banana",
                "not a version",
            ),
            (
                "source: https://r.io/kit\n    version: ^0.3",
                "not an OCI reference",
            ),
        ] {
            let yaml = format!("name: p\nplugins:\n  kit:\n    {bad}\n");
            let err = load(&yaml).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        }
        assert!(
            version_range("0.3.1")
                .unwrap()
                .matches(&"0.3.1".parse().unwrap())
        );
        assert!(
            !version_range("0.3.1")
                .unwrap()
                .matches(&"0.3.2".parse().unwrap())
        );
        let neither = "name: p\nplugins:\n  kit:\n    grants: {}\n";
        let err = load(neither).unwrap_err().to_string();
        assert!(
            err.contains("needs `path`") && err.contains("`version`"),
            "{err}"
        );
    }

    #[test]
    fn parses_policy_packs_as_paths_or_with_limits() {
        let yaml = "name: p\npolicy-packs:\n  - rules.wasm\n  - path: more\n\
                    \x20   limits: { memory: 64MiB, call-timeout: 2s }\n";
        let project = load(yaml).unwrap();
        let packs = &project.file.policy_packs;
        assert_eq!(packs[0].source, PackSource::Path("rules.wasm".into()));
        assert_eq!(packs[0].limits.0, Limits::default());
        assert_eq!(packs[1].source, PackSource::Path("more".into()));
        assert_eq!(packs[1].limits.0.memory_bytes, 64 << 20);
        let yaml = "name: p\npolicy-packs:\n  - oci://r.example/packs/base:1.0.0\n  \
                    - source: oci://r.example/packs/more\n    limits: { memory: 64MiB }\n";
        let project = load(yaml).unwrap();
        let packs = &project.file.policy_packs;
        let PackSource::Registry(first) = &packs[0].source else {
            panic!("{:?}", packs[0].source)
        };
        assert_eq!(first.tag.as_deref(), Some("1.0.0"));
        assert!(matches!(&packs[1].source, PackSource::Registry(r) if r.tag.is_none()));
        for bad in [
            "name: p\npolicy-packs:\n  - path: x\n    grants: {}\n",
            "name: p\npolicy-packs:\n  - \"\"\n",
            "name: p\npolicy-packs:\n  - oci://R.example/Packs:1\n",
            "name: p\npolicy-packs:\n  - source: rules.wasm\n",
            "name: p\npolicy-packs:\n  - { path: a, source: oci://r.example/b }\n",
        ] {
            assert!(load(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_network_and_environment_grants_and_limits() {
        let yaml = "name: p\nplugins:\n  kit:\n    path: kit.wasm\n    grants:\n\
                    \x20     env: [API_TOKEN]\n\
                    \x20     tcp: [\"127.0.0.1:8080\", \"*.example.com:443\"]\n\
                    \x20     udp: [\"10.0.0.5:*\"]\n\
                    \x20     http: [api.example.com]\n\
                    \x20   limits: { memory: 512MiB, call-timeout: 2m }\n";
        let project = load(yaml).unwrap();
        let kit = &project.file.plugins["kit"];
        assert_eq!(kit.grants.env, ["API_TOKEN"]);
        assert_eq!(kit.grants.tcp[1].to_string(), "*.example.com:443");
        assert_eq!(kit.grants.udp[0].to_string(), "10.0.0.5:*");
        assert_eq!(kit.grants.http[0].to_string(), "api.example.com");
        assert_eq!(kit.limits.0.memory_bytes, 512 << 20);
        assert_eq!(
            kit.limits.0.call_timeout,
            std::time::Duration::from_secs(120)
        );
        let defaults = load("name: p\nplugins:\n  kit:\n    path: kit.wasm\n").unwrap();
        assert_eq!(defaults.file.plugins["kit"].limits.0, Limits::default());
    }

    #[test]
    fn bad_endpoints_and_limits_are_errors_that_say_where() {
        let bad_port = "name: p\nplugins:\n  kit:\n    path: kit.wasm\n    grants:\n\
                        \x20     tcp: [\"db:70000\"]\n";
        let err = load(bad_port).unwrap_err().to_string();
        assert!(
            err.contains("plugins.kit.grants") && err.contains("the port `70000`"),
            "{err}"
        );
        let bad_size = "name: p\nplugins:\n  kit:\n    path: kit.wasm\n    limits:\n\
                        \x20     memory: 12 parsecs\n";
        let err = load(bad_size).unwrap_err().to_string();
        assert!(
            err.contains("plugins.kit") && err.contains("memory `12 parsecs` is not a size"),
            "{err}"
        );
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
