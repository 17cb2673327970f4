//! Turns a project's program or plugin reference into a component file: the file itself, or
//! the component a guest directory builds to, in whichever language it is written.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::guest::{self, LANGUAGES, Role};

/// The component `path` names: the file itself, or the component its guest directory builds
/// to as a `role`.
pub fn component_path(path: &Path, what: &str, role: Role) -> Result<PathBuf> {
    // A file, or what the component reader refuses by name (a device, a FIFO).
    if path.exists() && !path.is_dir() {
        return Ok(path.to_owned());
    }
    if !path.is_dir() {
        bail!("{what}: {} does not exist", path.display())
    }
    match guest::detect(path) {
        Some(language) => language.build(path, role, what),
        None => bail!(
            "{what}: {} is a directory without a {}; point to a .wasm component, or a {} guest",
            path.display(),
            either(LANGUAGES.iter().map(|l| l.manifest())),
            either(LANGUAGES.iter().map(|l| l.name())),
        ),
    }
}

/// `a, b or c`.
fn either<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    match items.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}
