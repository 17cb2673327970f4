//! A stack's configuration file, `Plinth.<stack>.yaml`: its configuration values, plain or
//! sealed (`key: {secure: v1:...}`), and the `encryptionsalt` of the stack's secrets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plinth_backend::write_atomically;
use serde::{Deserialize, Serialize};
use serde_yaml_ng::Value as Yaml;

/// The key under which a sealed configuration value is stored.
const SECURE: &str = "secure";

/// One configuration value as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigValue {
    Plain(String),
    /// Set with `--secret`: the value sealed by the stack's secrets provider (`v1:...`).
    Sealed(String),
}

/// `Plinth.<stack>.yaml`.
#[derive(Debug, Clone)]
pub struct StackConfig {
    path: PathBuf,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StackConfigFile {
    /// The provider that seals the stack's secrets (`passphrase` or `service`); when absent,
    /// the backend's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secretsprovider: Option<String>,
    /// The salt of the stack's passphrase key and a sealed check value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    encryptionsalt: Option<String>,
    #[serde(default)]
    config: BTreeMap<String, Yaml>,
}

impl StackConfig {
    /// The configuration file of `stack` in the project directory `project_dir`.
    pub fn of_stack(project_dir: &Path, stack: &str) -> StackConfig {
        StackConfig {
            path: project_dir.join(format!("Plinth.{stack}.yaml")),
        }
    }

    /// The configuration, keyed `namespace:key`.
    pub fn values(&self) -> Result<BTreeMap<String, ConfigValue>> {
        let file = self.read()?;
        file.config
            .into_iter()
            .map(|(k, v)| Ok((k, parse_value(&self.path, v)?)))
            .collect()
    }

    /// Sets `key` (fully qualified) to `value`.
    pub fn set(&self, key: String, value: ConfigValue) -> Result<()> {
        let mut file = self.read()?;
        let yaml = match value {
            ConfigValue::Plain(text) => Yaml::String(text),
            ConfigValue::Sealed(sealed) => {
                let mut map = serde_yaml_ng::Mapping::new();
                map.insert(Yaml::String(SECURE.to_owned()), Yaml::String(sealed));
                Yaml::Mapping(map)
            }
        };
        file.config.insert(key, yaml);
        self.write(&file)
    }

    /// Removes `key` (fully qualified); false if it was not set.
    pub fn remove(&self, key: &str) -> Result<bool> {
        let mut file = self.read()?;
        if file.config.remove(key).is_none() {
            return Ok(false);
        }
        self.write(&file)?;
        Ok(true)
    }

    /// The stack's `encryptionsalt`, once a secret has been sealed for it.
    pub fn encryption_salt(&self) -> Result<Option<String>> {
        Ok(self.read()?.encryptionsalt)
    }

    /// The secrets provider the stack's configuration names, if it names one.
    pub fn secrets_provider(&self) -> Result<Option<ProviderKind>> {
        match self.read()?.secretsprovider {
            None => Ok(None),
            Some(name) => match ProviderKind::parse(&name) {
                Some(kind) => Ok(Some(kind)),
                None => bail!(
                    "{} is malformed: `secretsprovider: {name}` is not a secrets provider \
                     (use `passphrase` or `service`)",
                    self.path.display()
                ),
            },
        }
    }

    pub fn set_secrets_provider(&self, kind: ProviderKind) -> Result<()> {
        let mut file = self.read()?;
        file.secretsprovider = Some(kind.name().to_owned());
        self.write(&file)
    }

    /// The file, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn set_encryption_salt(&self, salt: String) -> Result<()> {
        let mut file = self.read()?;
        file.encryptionsalt = Some(salt);
        self.write(&file)
    }

    fn read(&self) -> Result<StackConfigFile> {
        match crate::yaml_file::read(&self.path)? {
            Some(text) => crate::yaml_file::parse(&self.path, &text),
            None => Ok(StackConfigFile::default()),
        }
    }

    fn write(&self, file: &StackConfigFile) -> Result<()> {
        // Atomic: the file holds the stack's encryption salt, without which no secret opens.
        let text = serde_yaml_ng::to_string(file)?;
        write_atomically(&self.path, text.as_bytes())
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

fn parse_value(path: &Path, value: Yaml) -> Result<ConfigValue> {
    Ok(match value {
        Yaml::String(s) => ConfigValue::Plain(s),
        Yaml::Bool(b) => ConfigValue::Plain(b.to_string()),
        Yaml::Number(n) => ConfigValue::Plain(n.to_string()),
        Yaml::Mapping(map) if map.len() == 1 => match map.get(SECURE) {
            Some(Yaml::String(sealed)) => ConfigValue::Sealed(sealed.clone()),
            _ => bail!(
                "{} is malformed: a config value that is a map must be `{{{SECURE}: <sealed value>}}`",
                path.display()
            ),
        },
        other => bail!(
            "{} is malformed: config values must be strings, numbers, booleans or `{{{SECURE}: ...}}`, not {other:?}",
            path.display()
        ),
    })
}

/// Which provider seals a stack's secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderKind {
    /// A key derived from a passphrase (`PLINTH_CONFIG_PASSPHRASE`) and the stack's salt.
    Passphrase,
    /// A key the service keeps for the stack, sealed by its master key; no passphrase to share.
    Service,
}

impl ProviderKind {
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Passphrase => "passphrase",
            ProviderKind::Service => "service",
        }
    }

    pub fn parse(name: &str) -> Option<ProviderKind> {
        match name {
            "passphrase" => Some(ProviderKind::Passphrase),
            "service" => Some(ProviderKind::Service),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_plain_and_sealed_values_and_the_salt() {
        let dir = tempfile::tempdir().unwrap();
        let config = StackConfig::of_stack(dir.path(), "dev");
        assert!(config.values().unwrap().is_empty());
        config
            .set("p:a".into(), ConfigValue::Plain("1".into()))
            .unwrap();
        config
            .set("p:b".into(), ConfigValue::Sealed("v1:xyz".into()))
            .unwrap();
        config
            .set_encryption_salt("v1:salt:v1:check".into())
            .unwrap();
        let values = config.values().unwrap();
        assert_eq!(values["p:a"], ConfigValue::Plain("1".into()));
        assert_eq!(values["p:b"], ConfigValue::Sealed("v1:xyz".into()));
        assert!(config.remove("p:a").unwrap());
        assert!(!config.remove("p:a").unwrap());
        assert_eq!(
            config.encryption_salt().unwrap().as_deref(),
            Some("v1:salt:v1:check")
        );
        let text = std::fs::read_to_string(dir.path().join("Plinth.dev.yaml")).unwrap();
        assert!(text.contains("secure: v1:xyz"), "{text}");
    }

    #[test]
    fn malformed_values_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Plinth.dev.yaml");
        for bad in [
            "config:\n  p:a: [1]\n",
            "config:\n  p:a: {other: x}\n",
            "bogus: 1\n",
        ] {
            std::fs::write(&path, bad).unwrap();
            let err = StackConfig::of_stack(dir.path(), "dev")
                .values()
                .unwrap_err();
            assert!(err.to_string().contains("is malformed"), "{bad}: {err}");
        }
    }
}
