//! Rust guests: a crate directory (with a `Cargo.toml`) is built by cargo for wasm32-wasip2
//! into its cdylib. Its SDK is the `plinth-sdk` crate the guest's manifest depends on, so
//! plinth embeds none; cargo is the tool. The component of the last build is reused while
//! nothing cargo's dep-info lists has changed ([`CrateCache`]).

use std::cell::Cell;
use std::io::{BufRead, BufReader, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;

use super::crate_cache::CrateCache;
use super::language::{GuestLanguage, Role};

pub const WASM_TARGET: &str = "wasm32-wasip2";

pub struct Rust;

impl GuestLanguage for Rust {
    fn id(&self) -> &'static str {
        "rust"
    }

    fn name(&self) -> &'static str {
        "Rust"
    }

    fn manifest(&self) -> &'static str {
        "Cargo.toml"
    }

    /// A crate's world is chosen by the SDK features its manifest enables, not by the role.
    fn build(&self, dir: &Path, _role: Role, what: &str) -> Result<PathBuf> {
        build_crate(&dir.join(self.manifest()), what)
    }
}

/// The cargo that builds Rust guests, and whether it has the wasm32-wasip2 target.
pub fn toolchain() -> Result<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let version = |program: &str| -> Result<String> {
        let out = Command::new(program)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {program}: install Rust with rustup"))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let cargo = version(&cargo)?;
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .context("cannot run rustc: install Rust with rustup")?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if !sysroot.join("lib/rustlib").join(WASM_TARGET).is_dir() {
        bail!("{cargo}, without the {WASM_TARGET} target: run `rustup target add {WASM_TARGET}`");
    }
    Ok(format!("{cargo}, target {WASM_TARGET}"))
}

#[derive(Deserialize)]
struct CargoMessage {
    reason: String,
    #[serde(default)]
    manifest_path: Option<PathBuf>,
    #[serde(default)]
    filenames: Vec<PathBuf>,
    #[serde(default)]
    target: Option<CargoTarget>,
    /// Up to date: nothing was compiled for it.
    #[serde(default)]
    fresh: bool,
}

#[derive(Deserialize)]
struct CargoTarget {
    name: String,
}

/// Builds the crate, unless the component of its last build is still what cargo would build.
fn build_crate(manifest: &Path, what: &str) -> Result<PathBuf> {
    let manifest = manifest.canonicalize()?;
    let cache = CrateCache::open(&manifest, WASM_TARGET)?;
    if let Some(component) = cache.fresh() {
        return Ok(component);
    }
    let component = run_cargo(&manifest, what)?;
    if let Err(e) = cache.store(&manifest, &component) {
        // Only the next build's speed depends on it.
        tracing::warn!("cannot cache the build of {}: {e:#}", manifest.display());
    }
    Ok(component)
}

fn run_cargo(manifest: &Path, what: &str) -> Result<PathBuf> {
    let manifest = manifest.to_owned();
    let crate_dir = manifest.parent().unwrap_or(&manifest);
    let label = format!(
        "{what} `{}`",
        crate_dir.file_name().map_or_else(
            || crate_dir.display().to_string(),
            |n| n.to_string_lossy().into_owned()
        )
    );
    let progress = BuildProgress::start(&label, crate_dir);
    let mut child = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--quiet", "--target", WASM_TARGET])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("{what}: cannot run cargo to build {}", manifest.display()))?;
    // cargo's rendered diagnostics are shown as they come, above the spinner.
    let stderr = child.stderr.take().expect("piped stderr");
    let echo = {
        let progress = progress.bar.clone();
        std::thread::spawn(move || forward_diagnostics(stderr, progress.as_ref()))
    };
    let mut component = None;
    for line in BufReader::new(child.stdout.take().expect("piped stdout")).lines() {
        let Ok(message) = serde_json::from_str::<CargoMessage>(&line?) else {
            continue;
        };
        if message.reason != "compiler-artifact" {
            continue;
        }
        if !message.fresh {
            progress.announce();
        }
        if message.manifest_path.as_deref() == Some(&manifest) {
            component = (message.filenames.into_iter())
                .find(|f| f.extension().is_some_and(|e| e == "wasm"))
                .or(component);
        } else if let Some(target) = message.target {
            progress.compiled(&target.name);
        }
    }
    let status = child.wait()?;
    let _ = echo.join();
    progress.finish(status.success());
    if !status.success() {
        bail!(
            "{what}: building {} for {WASM_TARGET} failed (see cargo's messages above; \
             if the target is missing, run `rustup target add {WASM_TARGET}`)",
            manifest.display()
        );
    }
    component.with_context(|| {
        format!(
            "{what}: {} built no .wasm component; its crate needs `crate-type = [\"cdylib\"]`",
            manifest.display()
        )
    })
}

/// Copies cargo's stderr to ours, above the spinner when there is one.
fn forward_diagnostics(stderr: impl Read, bar: Option<&ProgressBar>) {
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        match bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }
}

/// What a build shows while cargo runs: a spinner with the crate, the dependencies compiled so
/// far and the time taken on a terminal; without one, a line once cargo compiles something and
/// one when it is done. An up-to-date crate builds silently.
struct BuildProgress {
    label: String,
    dir: PathBuf,
    bar: Option<ProgressBar>,
    started: Instant,
    compiled: Cell<usize>,
    /// Whether cargo compiled anything (the plain line was printed).
    announced: Cell<bool>,
}

impl BuildProgress {
    fn start(label: &str, dir: &Path) -> BuildProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                    .expect("valid template"),
            );
            bar.set_message(format!(
                "Building {label} for {WASM_TARGET} (a first build compiles every dependency \
                 and takes a while)"
            ));
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        BuildProgress {
            label: label.to_owned(),
            dir: dir.to_owned(),
            bar,
            started: Instant::now(),
            compiled: Default::default(),
            announced: Default::default(),
        }
    }

    /// Cargo compiles something: without a terminal, say so once.
    fn announce(&self) {
        if self.announced.replace(true) || self.bar.is_some() {
            return;
        }
        eprintln!(
            "Building {} from {} for {WASM_TARGET} (a first build compiles every dependency \
             and takes a while)...",
            self.label,
            self.dir.display()
        );
    }

    /// A dependency was compiled (or found fresh).
    fn compiled(&self, name: &str) {
        self.compiled.set(self.compiled.get() + 1);
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "Building {} for {WASM_TARGET}: {} crates ready, last `{name}` (a first build \
                 takes a while)",
                self.label,
                self.compiled.get()
            ));
        }
    }

    fn finish(&self, succeeded: bool) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if succeeded && self.announced.get() {
            eprintln!(
                "Built {} in {:.1}s.",
                self.label,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}
