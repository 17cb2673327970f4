//! Turns a project's program or plugin reference into a component file, building a Rust crate
//! for wasm32-wasip2 when the reference is a crate directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

pub const WASM_TARGET: &str = "wasm32-wasip2";

/// The component `path` names: the file itself, or the cdylib its crate builds to.
pub fn component_path(path: &Path, what: &str) -> Result<PathBuf> {
    if path.is_file() {
        return Ok(path.to_owned());
    }
    let manifest = path.join("Cargo.toml");
    if path.is_dir() && manifest.is_file() {
        return build_crate(&manifest, what);
    }
    if path.is_dir() {
        bail!(
            "{what}: {} is a directory without a Cargo.toml; point to a .wasm component or a Rust crate",
            path.display()
        )
    }
    bail!("{what}: {} does not exist", path.display())
}

#[derive(Deserialize)]
struct CargoMessage {
    reason: String,
    #[serde(default)]
    manifest_path: Option<PathBuf>,
    #[serde(default)]
    filenames: Vec<PathBuf>,
}

fn build_crate(manifest: &Path, what: &str) -> Result<PathBuf> {
    let manifest = manifest.canonicalize()?;
    tracing::info!("building {what} from {}", manifest.display());
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--quiet", "--target", WASM_TARGET])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("{what}: cannot run cargo to build {}", manifest.display()))?;
    if !output.status.success() {
        bail!(
            "{what}: building {} for {WASM_TARGET} failed (see cargo's messages above; \
             if the target is missing, run `rustup target add {WASM_TARGET}`)",
            manifest.display()
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<CargoMessage>(line).ok())
        .filter(|m| {
            m.reason == "compiler-artifact" && m.manifest_path.as_deref() == Some(&manifest)
        })
        .flat_map(|m| m.filenames)
        .find(|f| f.extension().is_some_and(|e| e == "wasm"))
        .with_context(|| {
            format!(
                "{what}: {} built no .wasm component; its crate needs `crate-type = [\"cdylib\"]`",
                manifest.display()
            )
        })
}
