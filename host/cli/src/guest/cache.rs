//! The cache of built components: `<PLINTH_HOME>/build-cache/<key>.wasm`, where the key is a
//! SHA-256 over everything the build reads (sources, SDK, toolchain version, WIT world). A hit
//! skips the build; entries are written atomically, so an interrupted build leaves none.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::home::plinth_home;

/// Directories never part of a guest's sources.
const SKIPPED_DIRS: &[&str] = &["node_modules", "__pycache__", "target", "dist", "build"];

/// A cache key under construction: labelled parts, then the source files.
pub struct Key(Sha256);

impl Key {
    pub fn new(kind: &str) -> Key {
        let mut hasher = Sha256::new();
        part(&mut hasher, "kind", kind.as_bytes());
        Key(hasher)
    }

    pub fn with(mut self, label: &str, value: &str) -> Key {
        part(&mut self.0, label, value.as_bytes());
        self
    }

    /// Adds every file under `dir` that `is_source` accepts, by relative path and content, in
    /// a stable order. Hidden directories and dependency or output directories are skipped.
    pub fn with_sources(mut self, dir: &Path, is_source: impl Fn(&Path) -> bool) -> Result<Key> {
        let mut files = Vec::new();
        collect(dir, dir, &is_source, &mut files)?;
        files.sort();
        for relative in files {
            let bytes = std::fs::read(dir.join(&relative))
                .with_context(|| format!("reading {}", dir.join(&relative).display()))?;
            part(&mut self.0, &relative, &bytes);
        }
        Ok(self)
    }

    fn digest(&self) -> String {
        hex::encode(self.0.clone().finalize())
    }
}

/// Length-prefixed, so that no two different sequences of parts hash alike.
fn part(hasher: &mut Sha256, label: &str, bytes: &[u8]) {
    hasher.update((label.len() as u64).to_le_bytes());
    hasher.update(label.as_bytes());
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

fn collect(
    root: &Path,
    dir: &Path,
    is_source: &impl Fn(&Path) -> bool,
    files: &mut Vec<String>,
) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_ref()) {
                collect(root, &path, is_source, files)?;
            }
        } else if is_source(&path) {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            files.push(relative.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

/// Built components by key.
pub struct ComponentCache {
    dir: PathBuf,
}

impl ComponentCache {
    pub fn open() -> Result<ComponentCache> {
        let dir = plinth_home()?.join("build-cache");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the build cache {}", dir.display()))?;
        Ok(ComponentCache { dir })
    }

    /// The component cached under `key`, or the one `build` writes to the path it is given,
    /// then cached.
    pub fn get_or_build(
        &self,
        key: &Key,
        build: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<PathBuf> {
        let cached = self.dir.join(format!("{}.wasm", key.digest()));
        if cached.is_file() {
            return Ok(cached);
        }
        let staging = tempfile::Builder::new()
            .prefix(".building-")
            .tempdir_in(&self.dir)
            .with_context(|| format!("creating a build directory in {}", self.dir.display()))?;
        let out = staging.path().join("component.wasm");
        build(&out)?;
        std::fs::rename(&out, &cached)
            .with_context(|| format!("storing the built component in {}", cached.display()))?;
        Ok(cached)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(dir: &Path) -> String {
        Key::new("test")
            .with_sources(dir, |p| p.extension().is_some_and(|e| e == "ts"))
            .unwrap()
            .digest()
    }

    #[test]
    fn the_key_follows_sources_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.ts"), "a").unwrap();
        let first = key_of(dir.path());
        assert_eq!(key_of(dir.path()), first, "stable");
        std::fs::write(dir.path().join("notes.txt"), "not a source").unwrap();
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        std::fs::write(dir.path().join("node_modules/dep.ts"), "skipped").unwrap();
        assert_eq!(key_of(dir.path()), first, "non-sources are ignored");
        std::fs::write(dir.path().join("index.ts"), "b").unwrap();
        assert_ne!(
            key_of(dir.path()),
            first,
            "a changed source changes the key"
        );
        std::fs::write(dir.path().join("index.ts"), "a").unwrap();
        std::fs::rename(dir.path().join("index.ts"), dir.path().join("main.ts")).unwrap();
        assert_ne!(
            key_of(dir.path()),
            first,
            "a renamed source changes the key"
        );
    }

    #[test]
    fn labelled_parts_do_not_run_together() {
        let a = Key::new("k").with("a", "bc").digest();
        let b = Key::new("k").with("ab", "c").digest();
        assert_ne!(a, b);
    }
}
