//! The plinth home: `PLINTH_HOME`, by default `~/.plinth`. The plugin store and the cache of
//! precompiled plugins live there, and the backend `plinth login` chose. (Stack state lives in
//! that backend, or in the one `PLINTH_BACKEND_URL` names; by default `~/.plinth` too.)

use std::path::PathBuf;

use anyhow::{Context, Result};

pub fn plinth_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("PLINTH_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .context("cannot find a home directory; set PLINTH_HOME")?;
    Ok(PathBuf::from(home).join(".plinth"))
}

/// Where the runtime keeps precompiled plugins, keyed by the SHA-256 of the `.wasm` and the
/// engine's configuration; stored plugins and plugins given by path share it.
pub fn artifact_cache() -> Result<PathBuf> {
    Ok(plinth_home()?.join("cache"))
}
