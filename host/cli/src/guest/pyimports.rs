//! The modules of a Python guest's own code its entry module can import, at the top of a
//! module or inside a function, found by `pyimports.py` (run by the Python of plinth's tools).
//! componentize-py packs only the modules loaded while it builds the component: the app module
//! imports these, so that a lazily imported one is packed too, and their files key the build.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::json;

use super::run::run_with_input;

const SCANNER: &str = include_str!("pyimports.py");

/// What the scanner found.
#[derive(Debug, Deserialize)]
pub struct Found {
    /// Module names, the entry module first.
    pub modules: Vec<String>,
    /// Their files, in the same order.
    pub files: Vec<PathBuf>,
}

/// The modules `entry` can import from the directories of `path` (in search order), leaving
/// out those found in a directory of `stop` (PyPI packages, which are all packed anyway).
pub fn scan(
    python: &Path,
    entry: &str,
    path: &[&Path],
    stop: &[&Path],
    what: &str,
) -> Result<Found> {
    let request = json!({ "entry": entry, "path": path, "stop": stop });
    let stdout = run_with_input(
        Command::new(python).args(["-I", "-c", SCANNER]),
        &request.to_string(),
        what,
        "finding the modules its code imports",
    )?;
    let found: Found = serde_json::from_slice(&stdout)
        .with_context(|| format!("{what}: the module scan wrote no readable list"))?;
    Ok(found)
}
