//! Turns a project's program or plugin reference into a component file: the file itself, or
//! the component a guest directory builds to, in whichever language it is written.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use crate::guest::{self, Built, LANGUAGES, Role};
use crate::plugin::store::file_sha256;

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

/// The program `path` names, built to run here: a component file as it is, a guest directory
/// as its language runs it (on a prebuilt runtime that loads its code, where there is one).
pub fn program_build(path: &Path, what: &str) -> Result<Built> {
    if path.is_dir()
        && let Some(language) = guest::detect(path)
    {
        return language.build_to_run(path, Role::Program, what);
    }
    Ok(Built {
        component: component_path(path, what, Role::Program)?,
        code: None,
    })
}

/// The SHA-256 that identifies what `built` runs: its component's, or for a prebuilt
/// runtime, one over the runtime's and every file of the code it loads, so that a plan
/// recorded for one version of the program refuses another.
pub fn built_sha256(built: &Built) -> Result<String> {
    let component = file_sha256(&built.component)
        .with_context(|| format!("cannot read the program {}", built.component.display()))?;
    let Some(code) = &built.code else {
        return Ok(component);
    };
    let mut hasher = Sha256::new();
    hasher.update(component.as_bytes());
    let mut files = Vec::new();
    files_under(&code.dir, &mut files)
        .with_context(|| format!("cannot read the program's code {}", code.dir.display()))?;
    files.sort();
    for file in files {
        // By its path in the code directory: a file that moves is a change.
        let name = file
            .strip_prefix(&code.dir)
            .unwrap_or(&file)
            .to_string_lossy();
        let digest = file_sha256(&file)
            .with_context(|| format!("cannot read the program's code {}", file.display()))?;
        hasher.update(format!("\n{}\n{digest}", name.len()).as_bytes());
        hasher.update(name.as_bytes());
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Every file under `dir`, its folders' included.
fn files_under(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files_under(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
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
