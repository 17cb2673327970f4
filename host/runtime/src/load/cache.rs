//! Loads components through a cache of precompiled artifacts, so that a plugin seen before starts
//! in a fraction of a millisecond instead of being compiled again.
//!
//! An artifact is `<cache_dir>/<sha256 of the .wasm>-<engine fingerprint>-<tier>.sealed.cwasm`:
//! the content hash names the component, the fingerprint (see
//! [`crate::load::engine::fingerprint`]) the wasmtime version and configuration it was compiled
//! for, and the [`Tier`] its compiler (which the fingerprint tells apart too; the name shows it).
//! A component the fast tier's compiler refused leaves `<sha256>-<fingerprint>-fast.refused`,
//! holding the reason, so that the next run goes straight to the optimizing compiler. wasmtime trusts an artifact to be its
//! own output (a damaged one can crash the process), so each ends with the CRC-32 of what
//! precedes it, checked before it is deserialized; one that fails the check is compiled again.
//! A checksum, not a cryptographic digest: it guards against damage (a flipped byte, a torn
//! file), and whoever can write the cache could rewrite a digest too. SHA-256 made a cache hit
//! 15 times slower (3.1 ms instead of 0.2 ms for a 1.3 MB artifact). The check streams the file
//! through a small buffer, and wasmtime then maps the file itself (its ELF reader ignores the
//! checksum after it), as it did before there was one: reading the artifact whole and having
//! wasmtime copy it into memory of its own took a hit from 0.2 ms to 0.91 ms. Loading by path
//! first looks the file's hash up by its fingerprint (see [`crate::load::file_index`]), and reads and
//! hashes the file only on a miss.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::error::LoadError;
use crate::load::bytes::{ComponentBytes, check_is_component};
use crate::load::file_index::{FileIndex, Fingerprint};
use crate::load::tier::Tier;

/// How a component was loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadStats {
    /// The SHA-256 of the `.wasm` file, in hex.
    pub sha256: String,
    /// A precompiled artifact was reused; otherwise the component was compiled.
    pub cache_hit: bool,
    /// Reading and hashing the `.wasm` file (once, by [`ComponentBytes`]), or finding its hash
    /// by the file's fingerprint.
    pub read: Duration,
    /// Loading the precompiled artifact on a hit; compiling on a miss.
    pub load: Duration,
    /// Writing the new artifact to the cache, on a miss.
    pub write: Option<Duration>,
    /// The tier the component was compiled by: the one asked for, or the optimized one when
    /// the fast tier's compiler refused the component.
    pub tier: Tier,
}

/// The directory of precompiled artifacts for one engine configuration, and the components
/// this process loaded from it already.
#[derive(Clone)]
pub(crate) struct ArtifactCache {
    dir: PathBuf,
    tier: Tier,
    fingerprint: String,
    hashes: FileIndex,
    /// By artifact: a plugin loaded again (another configuration of it) is not read again.
    loaded: Arc<Mutex<HashMap<PathBuf, Component>>>,
}

impl ArtifactCache {
    /// The cache of `tier`'s artifacts, compiled by `engine`, in `dir`.
    pub(crate) fn new(dir: PathBuf, engine: &Engine, tier: Tier) -> ArtifactCache {
        ArtifactCache {
            hashes: FileIndex::new(dir.join("hashes")),
            dir,
            tier,
            fingerprint: crate::load::engine::fingerprint(engine),
            loaded: Arc::default(),
        }
    }

    /// Records that the file at `path`, whose fingerprint was `before` it was read, holds
    /// `wasm`, for [`load_unchanged`](Self::load_unchanged) (the index is shared by the tiers).
    pub(crate) fn record_hash(
        &self,
        path: &Path,
        before: Option<Fingerprint>,
        wasm: &ComponentBytes,
    ) {
        self.hashes
            .record(path, before, Fingerprint::of(path), wasm.sha256());
    }

    /// The component at `path` if neither reading the file nor compiling it is needed: the file
    /// is unchanged since its hash was recorded, and the artifact of that hash is loaded already
    /// or in the cache. Costs a `stat`, a small read and, unless loaded already, mapping and
    /// deserializing the artifact (a fraction of a millisecond).
    pub(crate) fn load_unchanged(
        &self,
        engine: &Engine,
        path: &Path,
    ) -> Option<(Component, LoadStats)> {
        let started = Instant::now();
        let print = Fingerprint::of(path)?;
        let sha256 = self.hashes.lookup(path, &print)?;
        let read = started.elapsed();
        let started = Instant::now();
        let component = self.load_artifact(engine, &self.artifact(&sha256))?;
        let stats = self.hit(sha256, read, started.elapsed());
        tracing::debug!(
            path = %path.display(),
            tier = %self.tier,
            load = ?stats.load,
            "unchanged component loaded from the precompiled cache"
        );
        Some((component, stats))
    }

    /// The hash recorded for the file at `path`, if the file is unchanged since: no reading.
    pub(crate) fn known_hash(&self, path: &Path) -> Option<String> {
        self.hashes.lookup(path, &Fingerprint::of(path)?)
    }

    fn hit(&self, sha256: String, read: Duration, load: Duration) -> LoadStats {
        LoadStats {
            sha256,
            cache_hit: true,
            read,
            load,
            write: None,
            tier: self.tier,
        }
    }

    fn artifact(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!(
            "{sha256}-{}-{}.sealed.cwasm",
            self.fingerprint, self.tier
        ))
    }

    fn refusal(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!(
            "{sha256}-{}-{}.refused",
            self.fingerprint, self.tier
        ))
    }

    /// Why this tier's compiler refused the component `sha256` before, if it did.
    pub(crate) fn refused(&self, sha256: &str) -> Option<String> {
        std::fs::read_to_string(self.refusal(sha256)).ok()
    }

    /// Remembers that this tier's compiler refused the component `sha256`, and why. Only costs
    /// time if it cannot be written: the next run tries again.
    pub(crate) fn record_refusal(&self, sha256: &str, reason: &str) {
        let written = std::fs::create_dir_all(&self.dir).and_then(|()| {
            let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
            file.write_all(reason.as_bytes())?;
            file.persist(self.refusal(sha256))?;
            Ok(())
        });
        if let Err(e) = written {
            tracing::warn!(dir = %self.dir.display(), "cannot write to the precompiled cache: {e}");
        }
    }

    /// Loads the component `wasm`, from its precompiled artifact when there is one, found by
    /// the hash `wasm` carries (the file is not read again). A cache that cannot be read or
    /// written only costs time: it is reported, never an error.
    pub(crate) fn load(
        &self,
        engine: &Engine,
        wasm: &ComponentBytes,
    ) -> Result<(Component, LoadStats), LoadError> {
        let path = wasm.path();
        check_is_component(path, wasm.bytes())?;
        let sha256 = wasm.sha256().to_owned();
        let artifact = self.artifact(&sha256);
        let read = wasm.read_time();

        let started = Instant::now();
        if let Some(component) = self.load_artifact(engine, &artifact) {
            let stats = self.hit(sha256, read, started.elapsed());
            tracing::debug!(
                path = %path.display(),
                tier = %self.tier,
                read = ?stats.read,
                load = ?stats.load,
                "component loaded from the precompiled cache"
            );
            return Ok((component, stats));
        }

        let component = compile(engine, wasm.bytes()).map_err(|message| LoadError::Compile {
            path: path.to_owned(),
            message,
        })?;
        let load = started.elapsed();
        let started = Instant::now();
        if let Err(e) = self.store_artifact(&component, &artifact) {
            tracing::warn!(
                artifact = %artifact.display(),
                "cannot write to the precompiled cache: {e}"
            );
        }
        let stats = LoadStats {
            sha256,
            cache_hit: false,
            read,
            load,
            write: Some(started.elapsed()),
            tier: self.tier,
        };
        tracing::debug!(
            path = %path.display(),
            tier = %self.tier,
            read = ?stats.read,
            compile = ?stats.load,
            write = ?stats.write,
            "component compiled (precompiled cache miss)"
        );
        Ok((component, stats))
    }

    fn load_artifact(&self, engine: &Engine, artifact: &Path) -> Option<Component> {
        if let Some(component) = lock(&self.loaded).get(artifact) {
            return Some(component.clone());
        }
        let component = self.deserialize(engine, artifact)?;
        lock(&self.loaded).insert(artifact.to_owned(), component.clone());
        Some(component)
    }

    fn deserialize(&self, engine: &Engine, artifact: &Path) -> Option<Component> {
        match sealed_intact(artifact) {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(
                    artifact = %artifact.display(),
                    "a precompiled artifact is damaged (it does not match the checksum it ends \
                     with); compiling the component again"
                );
                return None;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(
                    artifact = %artifact.display(),
                    "cannot read a precompiled artifact, compiling the component again: {e}"
                );
                return None;
            }
        }
        // SAFETY: wasmtime trusts a precompiled artifact to be its own output. This file is
        // what `store_artifact` wrote from `Component::serialize` (its checksum matches), for
        // an engine with the same fingerprint, and is replaced only by a rename of another
        // such file. The cache directory belongs to the user running plinth, like the binary.
        match unsafe { Component::deserialize_file(engine, artifact) } {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(
                    artifact = %artifact.display(),
                    "ignoring an unusable precompiled artifact: {e:#}"
                );
                None
            }
        }
    }

    /// Writes the artifact through a temporary file renamed into place, so that a reader sees
    /// either no artifact or a complete one, even with several processes at work.
    fn store_artifact(&self, component: &Component, artifact: &Path) -> std::io::Result<()> {
        let bytes = component.serialize().map_err(std::io::Error::other)?;
        std::fs::create_dir_all(&self.dir)?;
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        file.write_all(&bytes)?;
        file.write_all(&crc32fast::hash(&bytes).to_le_bytes())?;
        file.as_file().sync_all()?;
        file.persist(artifact)?;
        Ok(())
    }
}

/// Compiles `wasm`. A compiler that panics on it (a bug wasmtime guards against by refusing
/// the features a compiler does not implement, but a guest is untrusted input) has refused it:
/// an error, never a crash of the host.
fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component, String> {
    let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Component::from_binary(engine, wasm)
    }));
    match compiled {
        Ok(Ok(component)) => Ok(component),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(panic) => Err(format!(
            "the compiler failed on it: {}",
            (panic.downcast_ref::<&str>().copied())
                .or(panic.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("a panic")
        )),
    }
}

/// Whether the artifact at `path` ends with the CRC-32 of what precedes it. Streamed through a
/// small buffer: the file is never held whole (wasmtime maps it).
fn sealed_intact(path: &Path) -> std::io::Result<bool> {
    let mut file = File::open(path)?;
    let Some(body) = file.metadata()?.len().checked_sub(4) else {
        return Ok(false);
    };
    let mut crc = crc32fast::Hasher::new();
    let mut buffer = vec![0; 64 << 10];
    let mut read = 0;
    let mut reader = (&mut file).take(body);
    loop {
        match reader.read(&mut buffer)? {
            0 => break,
            n => {
                crc.update(&buffer[..n]);
                read += n as u64;
            }
        }
    }
    let mut checksum = [0; 4];
    // A file cut short meanwhile is damaged too.
    if read < body || file.read_exact(&mut checksum).is_err() {
        return Ok(false);
    }
    Ok(crc.finalize().to_le_bytes() == checksum)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is one lookup or one insertion: the map is whole after a panic.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest component: the preamble alone.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";
    const EMPTY_MODULE: &[u8] = b"\0asm\x01\0\0\0";

    fn reason(bytes: &[u8]) -> String {
        check_is_component(Path::new("x.wasm"), bytes)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn tells_what_a_non_component_is() {
        assert!(check_is_component(Path::new("x.wasm"), EMPTY_COMPONENT).is_ok());
        assert!(reason(EMPTY_MODULE).contains("core WebAssembly module"));
        assert!(reason(b"\x7fELF\x02\x01").contains("precompiled"));
        assert!(reason(b"hello").contains("magic number"));
        assert!(reason(b"").starts_with("`x.wasm` is not a WebAssembly component"));
    }

    #[test]
    fn a_second_load_hits_the_cache_and_a_corrupt_artifact_is_recompiled() {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("empty.wasm");
        std::fs::write(&wasm, EMPTY_COMPONENT).unwrap();
        let engine = crate::load::engine::new_engine(Tier::Optimized).unwrap();
        let cache = ArtifactCache::new(dir.path().join("cache"), &engine, Tier::Optimized);

        let load = |path: &Path| cache.load(&engine, &ComponentBytes::read(path).unwrap());
        let (_, first) = load(&wasm).unwrap();
        assert!(!first.cache_hit);
        let (_, second) = load(&wasm).unwrap();
        assert!(second.cache_hit);
        assert_eq!(first.sha256, second.sha256);

        let artifacts: Vec<_> = std::fs::read_dir(dir.path().join("cache"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(artifacts.len(), 1, "no temporary file is left behind");
        // Another process maps the artifact from the disk.
        let (_, mapped) = ArtifactCache::new(dir.path().join("cache"), &engine, Tier::Optimized)
            .load(&engine, &ComponentBytes::read(&wasm).unwrap())
            .unwrap();
        assert!(mapped.cache_hit);
        let sealed = std::fs::read(&artifacts[0]).unwrap();
        let damaged = dir.path().join("damaged");
        let intact = |bytes: &[u8]| {
            std::fs::write(&damaged, bytes).unwrap();
            sealed_intact(&damaged).unwrap()
        };
        assert!(intact(&sealed));
        let mut flipped = sealed.clone();
        flipped[sealed.len() / 2] ^= 0x40;
        assert!(!intact(&flipped));
        assert!(!intact(&sealed[..sealed.len() - 1]));
        assert!(!intact(&sealed[..10]));
        assert!(!intact(b"abc"));
        std::fs::write(&artifacts[0], b"torn").unwrap();
        // This process goes on with the component it loaded; another one recompiles it.
        assert!(load(&wasm).unwrap().1.cache_hit);
        let cache = ArtifactCache::new(dir.path().join("cache"), &engine, Tier::Optimized);
        let load = |path: &Path| cache.load(&engine, &ComponentBytes::read(path).unwrap());
        let (_, third) = load(&wasm).unwrap();
        assert!(!third.cache_hit);
        assert!(load(&wasm).unwrap().1.cache_hit);
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let error = ComponentBytes::read(Path::new("/nonexistent/p.wasm")).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/p.wasm"), "{error}");
    }
}
