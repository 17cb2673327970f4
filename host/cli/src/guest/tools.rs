//! Finding the tools a language's guests are built with: the componentizers `scripts/setup`
//! installs in plinth's tools directory (`PLINTH_TOOLS`, by default `<PLINTH_HOME>/tools`), and
//! programs on `PATH`. Each language checks its own (see its module); what is missing is one
//! line naming what to install.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::home::plinth_home;

/// A componentizer ready to run.
pub struct Toolchain {
    /// What built the component, part of the cache key: `componentize-js 0.23.0 + esbuild ...`.
    pub version: String,
    /// The program to run, and the arguments before plinth's own.
    pub componentizer: (PathBuf, Vec<PathBuf>),
    /// The bundler, for JavaScript.
    pub bundler: Option<(PathBuf, Vec<PathBuf>)>,
}

pub fn tools_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("PLINTH_TOOLS").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    Ok(plinth_home()?.join("tools"))
}

/// What to run to install the tools, and where they go.
pub fn setup_hint(tools: &Path) -> String {
    format!(
        "run `scripts/setup` from the plinth repository (it installs them into {}; \
         PLINTH_TOOLS names another directory)",
        tools.display()
    )
}

/// The executable `name` on `PATH`, if any.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
