//! The `file` provider: text files, rendered templates and directories inside one directory the
//! project grants the plugin — the root, `/root` in the plugin's file system unless the stack
//! config `file:root` names another granted path.
//!
//! | type | inputs | outputs | update in place | replace |
//! |---|---|---|---|---|
//! | `file:File` | `path`, `content`, `mode` | `path`, `size`, `sha256`, `mode` | `content`, `mode` | `path` |
//! | `file:Template` | `path`, `template`, `vars`, `mode` | as File | `template`, `vars`, `mode` | `path` |
//! | `file:Directory` | `path` | `path` | — | `path` |
//!
//! Paths are relative to the root; absolute paths and `..` are refused by `check`. The sandbox
//! keeps every operation inside the root, symbolic links included. `mode` is recorded as desired
//! state only: WASI 0.2 cannot set permission bits (see [`mode`]). `read`, which `refresh` uses,
//! reports each file as it is on disk.

mod directory;
mod inputs;
mod mode;
mod relpath;
mod render;
mod root;
mod text;

use plinth_sdk::{
    Capabilities, Checked, PropertyMap, PropertySchema, Provider, ProviderError, ResourceType,
    Type, Value,
};

use crate::root::{DEFAULT_ROOT, Root};

/// The provider config key naming the root.
const ROOT_KEY: &str = "root";

/// The file provider, configured with its root.
#[derive(Default)]
struct Files {
    root: Root,
}

impl Provider for Files {
    fn name(&self) -> &str {
        "file"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn description(&self) -> &str {
        "Files, rendered templates and directories inside a directory the project grants."
    }

    fn config_schema(&self) -> Vec<PropertySchema> {
        vec![
            PropertySchema::new(ROOT_KEY)
                .of(Type::String)
                .describe("Where the root is, an absolute path the plugin sees (default `/root`).")
                .default_value(DEFAULT_ROOT),
        ]
    }

    /// The default root, writable. Capabilities are declared when the plugin loads, before any
    /// configuration: `file:root` may name a subdirectory of `/root`, or another directory
    /// granted in addition.
    fn capabilities(&self) -> Capabilities {
        Capabilities::new().dir(
            DEFAULT_ROOT,
            true,
            "the files and directories this provider manages live there",
        )
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![
            Box::new(text::TextFile::file(self.root.clone())),
            Box::new(text::TextFile::template(self.root.clone())),
            Box::new(directory::Directory {
                root: self.root.clone(),
            }),
        ]
    }

    fn check_config(&self, config: PropertyMap) -> Result<Checked, ProviderError> {
        let failures = match root_from(&config) {
            Ok(_) => Vec::new(),
            Err(ProviderError::Invalid(failures)) => failures,
            Err(other) => return Err(other),
        };
        Ok(Checked {
            inputs: config,
            failures,
        })
    }

    fn configure(&mut self, config: PropertyMap) -> Result<(), ProviderError> {
        let root = root_from(&config)?;
        root.ensure_granted()
            .map_err(|reason| ProviderError::invalid(ROOT_KEY, reason))?;
        self.root = root;
        Ok(())
    }
}

/// The root the config names (`root`), or the default; any other key is refused.
fn root_from(config: &PropertyMap) -> Result<Root, ProviderError> {
    if let Some(key) = config.keys().find(|key| *key != ROOT_KEY) {
        return Err(ProviderError::invalid(
            key,
            format!("is not a setting of the file provider; it takes `file:{ROOT_KEY}`"),
        ));
    }
    match config.get(ROOT_KEY).map(Value::as_str) {
        None => Ok(Root::default()),
        Some(Some(dir)) => {
            Root::parse(dir).map_err(|reason| ProviderError::invalid(ROOT_KEY, reason))
        }
        Some(None) => Err(ProviderError::invalid(ROOT_KEY, "must be a string")),
    }
}

plinth_sdk::export_provider!(Files);

#[cfg(test)]
mod tests {
    use super::*;

    fn config(entries: &[(&str, Value)]) -> PropertyMap {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn the_root_defaults_and_is_configurable() {
        assert_eq!(root_from(&config(&[])).unwrap(), Root::default());
        let root = root_from(&config(&[("root", "/site/".into())])).unwrap();
        assert_eq!(root, Root::parse("/site").unwrap());
    }

    #[test]
    fn bad_config_is_refused_by_check_config() {
        let files = Files::default();
        let checked = files
            .check_config(config(&[("rooot", "/x".into())]))
            .unwrap();
        assert_eq!(checked.failures[0].property, "rooot");
        let checked = files.check_config(config(&[("root", "x".into())])).unwrap();
        assert!(checked.failures[0].reason.contains("must be absolute"));
        let checked = files.check_config(config(&[("root", 1.into())])).unwrap();
        assert_eq!(checked.failures[0].reason, "must be a string");
    }

    #[test]
    fn configure_needs_the_root_to_be_granted() {
        let mut files = Files::default();
        let missing = "/nonexistent-plinth-file-root";
        let err = files
            .configure(config(&[("root", missing.into())]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not available to the plugin"), "{err}");
        assert_eq!(files.root, Root::default());
    }
}
