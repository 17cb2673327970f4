//! Finding the componentizers `scripts/setup` installs in plinth's tools directory
//! (`PLINTH_TOOLS`, by default `<PLINTH_HOME>/tools`), and node for the JavaScript ones. What is
//! missing is one line naming what to install.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::home::plinth_home;

/// The versions `scripts/setup` installs (keep the two in step).
pub const COMPONENTIZE_JS: &str = "0.23.0";
pub const ESBUILD: &str = "0.25.12";
pub const COMPONENTIZE_PY: &str = "0.25.1";

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

fn setup_hint(tools: &Path) -> String {
    format!(
        "run `scripts/setup` from the plinth repository (it installs them into {}; \
         PLINTH_TOOLS names another directory)",
        tools.display()
    )
}

#[derive(Deserialize)]
struct PackageJson {
    version: String,
}

fn installed_version(package_json: &Path) -> Option<String> {
    let text = std::fs::read_to_string(package_json).ok()?;
    serde_json::from_str::<PackageJson>(&text)
        .ok()
        .map(|p| p.version)
}

/// componentize-js and esbuild, run by node.
pub fn javascript(what: &str) -> Result<Toolchain> {
    let tools = tools_dir()?;
    let Some(node) = on_path("node") else {
        bail!(
            "{what} is TypeScript/JavaScript (it has a package.json), and building it needs \
             Node.js: install node (18 or later, e.g. `apt-get install nodejs npm`), then {}",
            setup_hint(&tools)
        );
    };
    let modules = tools.join("js/node_modules");
    let cjs = modules.join("@bytecodealliance/componentize-js");
    let esbuild = modules.join("esbuild");
    let (Some(cjs_version), Some(esbuild_version)) = (
        installed_version(&cjs.join("package.json")),
        installed_version(&esbuild.join("package.json")),
    ) else {
        bail!(
            "{what} is TypeScript/JavaScript, and building it needs componentize-js \
             {COMPONENTIZE_JS} and esbuild {ESBUILD}, which are not installed: {}",
            setup_hint(&tools)
        );
    };
    if !cjs_version.starts_with("0.23.") {
        bail!(
            "{what}: componentize-js {cjs_version} is installed, but plinth builds with \
             {COMPONENTIZE_JS}: {}",
            setup_hint(&tools)
        );
    }
    Ok(Toolchain {
        version: format!("componentize-js {cjs_version} + esbuild {esbuild_version}"),
        componentizer: (node, vec![cjs.join("src/cli.js")]),
        // The native binary once esbuild's install script ran, else a node script with a
        // shebang: executable either way.
        bundler: Some((esbuild.join("bin/esbuild"), Vec::new())),
    })
}

/// componentize-py, from its virtual environment.
pub fn python(what: &str) -> Result<Toolchain> {
    let tools = tools_dir()?;
    let binary = tools.join("py/bin/componentize-py");
    if !binary.is_file() {
        let python = if on_path("python3").is_some() {
            ""
        } else {
            "python3 (e.g. `apt-get install python3 python3-venv`) and "
        };
        bail!(
            "{what} is Python (it has a pyproject.toml), and building it needs {python}\
             componentize-py {COMPONENTIZE_PY}, which is not installed: {}",
            setup_hint(&tools)
        );
    }
    let output = Command::new(&binary)
        .arg("--version")
        .output()
        .with_context(|| {
            format!(
                "{what}: cannot run {} (is python3 still installed?): {}",
                binary.display(),
                setup_hint(&tools)
            )
        })?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || !version.starts_with("componentize-py 0.25.") {
        bail!(
            "{what}: {} does not run as componentize-py {COMPONENTIZE_PY} (it says `{version}`): {}",
            binary.display(),
            setup_hint(&tools)
        );
    }
    Ok(Toolchain {
        version,
        componentizer: (binary, Vec::new()),
        bundler: None,
    })
}

/// The executable `name` on `PATH`, if any.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
