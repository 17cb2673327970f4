//! Where a plugin named on the command line is: a `.wasm` file, a crate directory (built first)
//! or an installed `name[@version]`; and the names and versions a stored plugin may carry.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use plinth_engine::shown::escape_controls;

use super::store::{Store, StoredPlugin};
use crate::build::component_path;
use crate::guest::Role;

/// The component file `plugin` names: a .wasm file, a crate directory (built first) or an
/// installed `name[@version]`, with the store's record of an installed one.
pub async fn locate(store: &Store, plugin: &str) -> Result<(PathBuf, Option<StoredPlugin>)> {
    let as_file = Path::new(plugin);
    Ok(if as_file.is_file() || plugin.ends_with(".wasm") {
        (as_file.to_owned(), None)
    } else if as_file.is_dir() {
        let dir = as_file.to_owned();
        let path =
            tokio::task::spawn_blocking(move || component_path(&dir, "plugin", Role::Provider))
                .await??;
        (path, None)
    } else {
        let (name, version) = split_id(plugin)?;
        let found = store.find(name, version)?;
        (store.blob(&found.sha256), Some(found))
    })
}

/// A name and version that `name@version` and Plinth.yaml can carry.
pub(super) fn check_name(name: &str, version: &str) -> Result<()> {
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let version_ok = !version.is_empty()
        && !version
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '@' | '/' | '\\'));
    if !name_ok || !version_ok {
        bail!(
            "the plugin calls itself `{}` version `{}`: a name must be letters, \
             digits, `-`, `_` or `.`, and a version must not be empty or contain spaces, `@` or \
             slashes; it cannot be installed",
            escape_controls(name),
            escape_controls(version)
        );
    }
    Ok(())
}

/// `name` or `name@version`.
pub(super) fn split_id(id: &str) -> Result<(&str, Option<&str>)> {
    let (name, version) = match id.split_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (id, None),
    };
    if name.is_empty() || version.is_some_and(str::is_empty) {
        bail!("`{id}` is not a plugin name; give `name` or `name@version`");
    }
    Ok((name, version))
}
