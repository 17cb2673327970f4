//! Skipping cargo for a Rust guest that has not changed. After a build, cargo's dep-info (the
//! `.d` file beside the component) lists every file the component was built from — the crate's
//! and its path dependencies' sources, the plinth SDK and the WIT it includes, registry crates.
//! plinth records those files' sizes and modification times (and their directories'), with the
//! manifests and lock files around them and the files that decide which toolchain builds (rustup's
//! settings and toolchains, `rust-toolchain` files, present or absent), next to a copy of the
//! component. While all of that is unchanged, the copy is the component and neither cargo nor
//! rustc is run at all (a no-op cargo build still costs a noticeable part of a second, and even
//! `rustc -vV` through rustup's proxy some tens of milliseconds).

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::home::plinth_home;

/// What the last build of one crate (for one toolchain and set of flags) was made from.
#[derive(Serialize, Deserialize, PartialEq)]
struct Record {
    files: Vec<Fingerprint>,
    /// Files whose appearance would change the build (a `rust-toolchain.toml`, say).
    absent: Vec<PathBuf>,
}

#[derive(Serialize, Deserialize, PartialEq)]
struct Fingerprint {
    path: PathBuf,
    size: u64,
    modified_ns: u128,
}

impl Fingerprint {
    fn of(path: &Path) -> Option<Fingerprint> {
        let meta = std::fs::metadata(path).ok()?;
        let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
        Some(Fingerprint {
            path: path.to_owned(),
            size: meta.len(),
            modified_ns: modified.as_nanos(),
        })
    }

    fn unchanged(&self) -> bool {
        Fingerprint::of(&self.path).is_some_and(|now| now == *self)
    }
}

/// The cache entry of one crate built by one toolchain with one set of flags.
pub struct CrateCache {
    record: PathBuf,
    component: PathBuf,
}

impl CrateCache {
    pub fn open(manifest: &Path, target: &str) -> Result<CrateCache> {
        let mut key = Sha256::new();
        for part in [
            manifest.to_string_lossy().into_owned(),
            target.to_owned(),
            // Which rustc runs, unless the files the record lists decide it.
            std::env::var("RUSTC").unwrap_or_default(),
            std::env::var("RUSTUP_TOOLCHAIN").unwrap_or_default(),
            std::env::var("PATH").unwrap_or_default(),
            std::env::var("CARGO_TARGET_DIR").unwrap_or_default(),
            std::env::var("RUSTFLAGS").unwrap_or_default(),
            std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default(),
        ] {
            key.update((part.len() as u64).to_le_bytes());
            key.update(part.as_bytes());
        }
        let key = hex::encode(key.finalize());
        let dir = plinth_home()?.join("build-cache/rust");
        Ok(CrateCache {
            record: dir.join(format!("{key}.json")),
            component: dir.join(format!("{key}.wasm")),
        })
    }

    /// The component of the last build, if nothing it was made from has changed since.
    pub fn fresh(&self) -> Option<PathBuf> {
        let record: Record = serde_json::from_slice(&std::fs::read(&self.record).ok()?).ok()?;
        let unchanged = !record.files.is_empty()
            && record.files.iter().all(Fingerprint::unchanged)
            && !record.absent.iter().any(|p| p.exists());
        (unchanged && self.component.is_file()).then(|| self.component.clone())
    }

    /// Records a build of `manifest` that produced `component`, from cargo's dep-info.
    pub fn store(&self, manifest: &Path, component: &Path) -> Result<()> {
        let dep_info = component.with_extension("d");
        let text = std::fs::read_to_string(&dep_info)
            .with_context(|| format!("reading cargo's dep-info {}", dep_info.display()))?;
        let sources = dependencies(&text);
        let mut paths = sources.clone();
        // Manifests and lock files decide what is built, but are not in the dep-info.
        paths.extend(manifests_around(manifest.parent().unwrap_or(manifest)));
        for file in sources.iter().filter(|p| !in_registry(p)) {
            let dir = file.parent().unwrap_or(file);
            paths.extend(manifests_around(dir));
            // A source directory's modification time moves when a file appears in it (a
            // module cargo would pick up). Not the project directory: plinth writes there.
            paths.push(dir.to_owned());
        }
        let (toolchain, absent) = toolchain_files(manifest);
        paths.extend(toolchain);
        paths.sort();
        paths.dedup();
        let files = paths
            .iter()
            .map(|p| Fingerprint::of(p).with_context(|| format!("reading {}", p.display())))
            .collect::<Result<Vec<_>>>()?;
        let dir = self
            .record
            .parent()
            .expect("the record is in the cache directory");
        std::fs::create_dir_all(dir)?;
        let copy = tempfile::NamedTempFile::new_in(dir)?;
        std::fs::copy(component, copy.path())?;
        copy.persist(&self.component)?;
        let record = tempfile::NamedTempFile::new_in(dir)?;
        std::fs::write(
            record.path(),
            serde_json::to_vec(&Record { files, absent })?,
        )?;
        record.persist(&self.record)?;
        Ok(())
    }
}

/// The files that decide which toolchain builds `manifest` and what it is: rustup's settings
/// (the default toolchain, overrides) and each installed toolchain's `rustc` (an update rewrites
/// it), with the directories listing them; and the `rust-toolchain` files beside the crate and
/// its ancestors — those present, and, separately, those absent, whose appearance is a change.
fn toolchain_files(manifest: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut present = Vec::new();
    let mut absent = Vec::new();
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::home_dir().map(|home| home.join(".rustup")));
    if let Some(home) = rustup_home.filter(|h| h.is_dir()) {
        let toolchains = home.join("toolchains");
        if let Ok(entries) = std::fs::read_dir(&toolchains) {
            present.extend(
                entries
                    .flatten()
                    .map(|e| e.path().join("bin").join("rustc"))
                    .filter(|rustc| rustc.is_file()),
            );
            present.push(toolchains);
        }
        let settings = home.join("settings.toml");
        if settings.is_file() {
            present.push(settings);
        }
        present.push(home);
    }
    for dir in manifest.parent().unwrap_or(manifest).ancestors() {
        for name in ["rust-toolchain", "rust-toolchain.toml"] {
            let file = dir.join(name);
            if file.is_file() {
                present.push(file);
            } else {
                absent.push(file);
            }
        }
    }
    (present, absent)
}

/// The files a Makefile-style dep-info line lists after `target:` (spaces escaped as `\ `).
fn dependencies(dep_info: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in dep_info.lines() {
        let Some((_, deps)) = line.split_once(": ") else {
            continue;
        };
        let mut current = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => current.push(chars.next().unwrap_or(' ')),
                ' ' => {
                    if !current.is_empty() {
                        files.push(PathBuf::from(std::mem::take(&mut current)));
                    }
                }
                c => current.push(c),
            }
        }
        if !current.is_empty() {
            files.push(PathBuf::from(current));
        }
    }
    files
}

/// Every `Cargo.toml` and `Cargo.lock` in `dir` and its ancestors: the package's manifest, the
/// workspace's (profiles, shared dependencies) and the lock file.
fn manifests_around(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .flat_map(|d| [d.join("Cargo.toml"), d.join("Cargo.lock")])
        .filter(|p| p.is_file())
        .collect()
}

/// Registry sources never change under a version (and their manifests are many).
fn in_registry(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "registry")
        && path.components().any(|c| c.as_os_str() == ".cargo")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dep_info_lists_files_with_escaped_spaces() {
        let text = "/t/x.wasm: /a/src/lib.rs /b/my\\ dir/wit.wit /c/d.rs\n\n/a/src/lib.rs:\n";
        assert_eq!(
            dependencies(text),
            [
                PathBuf::from("/a/src/lib.rs"),
                PathBuf::from("/b/my dir/wit.wit"),
                PathBuf::from("/c/d.rs")
            ]
        );
    }

    #[test]
    fn a_touched_file_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lib.rs");
        std::fs::write(&file, "a").unwrap();
        let print = Fingerprint::of(&file).unwrap();
        assert!(print.unchanged());
        std::fs::write(&file, "ab").unwrap();
        assert!(!print.unchanged());
        std::fs::remove_file(&file).unwrap();
        assert!(!print.unchanged());
    }

    #[test]
    fn a_new_rust_toolchain_file_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("guest/Cargo.toml");
        let (_, absent) = toolchain_files(&manifest);
        let pin = dir.path().join("rust-toolchain.toml");
        assert!(absent.contains(&pin), "{absent:?}");
        std::fs::write(&pin, "[toolchain]\nchannel = \"nightly\"\n").unwrap();
        let (present, absent) = toolchain_files(&manifest);
        assert!(present.contains(&pin) && !absent.contains(&pin));
    }
}
