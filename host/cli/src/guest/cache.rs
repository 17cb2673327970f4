//! The cache of built components: `<PLINTH_HOME>/build-cache/<key>/<guest>.wasm`, where the key is a
//! SHA-256 over what the component is made of (the bundle or modules a build packs, the SDK,
//! the toolchain's version, the WIT world). A hit skips the build; entries are written
//! atomically, so an interrupted build leaves none.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::home::plinth_home;

/// A cache key under construction: labelled parts and files.
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

    /// Adds the file at `path`, under `label`, by its content; a file that is gone is a part
    /// of its own, so that deleting one changes the key.
    pub fn with_file(mut self, label: &str, path: &Path) -> Result<Key> {
        match std::fs::read(path) {
            Ok(bytes) => part(&mut self.0, label, &bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                part(&mut self.0, "missing", label.as_bytes())
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
        Ok(self)
    }

    pub fn digest(&self) -> String {
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

/// Built components by key: `<digest>/<name>.wasm`, so that the component's file name (what
/// the runtime names a guest by in messages) is the guest's, not its key's.
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

    /// A cache in `dir`, for tests.
    #[cfg(test)]
    pub fn at(dir: &Path) -> ComponentCache {
        ComponentCache {
            dir: dir.to_owned(),
        }
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry(&self, key: &Key) -> PathBuf {
        self.dir.join(key.digest())
    }

    /// The component cached under `key` as `name`, if it is.
    pub fn get(&self, key: &Key, name: &str) -> Option<PathBuf> {
        let cached = self.entry(key).join(format!("{name}.wasm"));
        cached.is_file().then_some(cached)
    }

    /// Whether `mark` (a check the build passed, like `typechecked`) was recorded for `key`.
    pub fn is_marked(&self, key: &Key, mark: &str) -> bool {
        self.entry(key).join(mark).is_file()
    }

    pub fn mark(&self, key: &Key, mark: &str) -> Result<()> {
        let entry = self.entry(key);
        std::fs::create_dir_all(&entry)?;
        std::fs::write(entry.join(mark), "")
            .with_context(|| format!("recording {mark} in {}", entry.display()))
    }

    /// The component cached under `key` as `name`, or else the one `build` stores there.
    /// One process builds an entry at a time: another that wants it meanwhile waits on the
    /// entry's lock file, then finds it built rather than building it again.
    pub fn get_or_build(
        &self,
        key: &Key,
        name: &str,
        build: impl FnOnce() -> Result<PathBuf>,
    ) -> Result<PathBuf> {
        if let Some(cached) = self.get(key, name) {
            return Ok(cached);
        }
        let _held = self.lock(key)?;
        match self.get(key, name) {
            Some(cached) => Ok(cached),
            None => build(),
        }
    }

    /// Locks the entry of `key` for this process until the file returned is dropped, waiting
    /// while another process holds it.
    fn lock(&self, key: &Key) -> Result<std::fs::File> {
        let path = self.dir.join(format!("{}.lock", key.digest()));
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("creating the build lock {}", path.display()))?;
        file.lock()
            .with_context(|| format!("waiting for the build lock {}", path.display()))?;
        Ok(file)
    }

    /// The directory cached under `key` as `name` (a prebuilt runtime's code), if it is.
    pub fn get_dir(&self, key: &Key, name: &str) -> Option<PathBuf> {
        let cached = self.entry(key).join(name);
        cached.is_dir().then_some(cached)
    }

    /// Moves the directory built at `out` into the cache under `key` as `name`, atomically;
    /// when another build stored it first, theirs (built from the same key) is kept.
    pub fn store_dir(&self, key: &Key, name: &str, out: &Path) -> Result<PathBuf> {
        let entry = self.entry(key);
        std::fs::create_dir_all(&entry)?;
        let cached = entry.join(name);
        match std::fs::rename(out, &cached) {
            Ok(()) => Ok(cached),
            Err(_) if cached.is_dir() => Ok(cached),
            Err(e) => {
                Err(e).with_context(|| format!("storing the built code in {}", cached.display()))
            }
        }
    }

    /// A scratch directory for one build, removed when dropped.
    pub fn staging(&self) -> Result<tempfile::TempDir> {
        tempfile::Builder::new()
            .prefix(".building-")
            .tempdir_in(&self.dir)
            .with_context(|| format!("creating a build directory in {}", self.dir.display()))
    }

    /// Moves the component built at `out` into the cache under `key` as `name`; an interrupted
    /// build leaves no entry, as the move is atomic.
    pub fn store(&self, key: &Key, name: &str, out: &Path) -> Result<PathBuf> {
        let entry = self.entry(key);
        std::fs::create_dir_all(&entry)?;
        let cached = entry.join(format!("{name}.wasm"));
        std::fs::rename(out, &cached)
            .with_context(|| format!("storing the built component in {}", cached.display()))?;
        Ok(cached)
    }
}

/// A guest's directory name as a file name: messages name the guest by it. Anything but
/// letters, digits, `-`, `_` and `.` is replaced, so no name can reach the cache's parent or
/// carry control characters into a message.
pub fn file_name_of(dir: &Path) -> String {
    let name: String = (dir
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default())
    .chars()
    .map(|c| {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
            c
        } else {
            '_'
        }
    })
    .collect();
    match name.trim_start_matches('.') {
        "" => "guest".to_owned(),
        name => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_follows_the_files_content_not_their_times() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bundle.js");
        let key = || {
            Key::new("k")
                .with_file("bundle.js", &file)
                .unwrap()
                .digest()
        };
        std::fs::write(&file, "a").unwrap();
        let first = key();
        std::fs::write(&file, "a").unwrap();
        assert_eq!(key(), first, "rewritten alike");
        std::fs::write(&file, "b").unwrap();
        assert_ne!(key(), first, "a changed file changes the key");
        std::fs::remove_file(&file).unwrap();
        let gone = key();
        assert_ne!(gone, first);
        std::fs::write(&file, "").unwrap();
        assert_ne!(key(), gone, "a file gone is not an empty one");
    }

    #[test]
    fn a_guest_is_named_by_its_directory_safely() {
        assert_eq!(file_name_of(Path::new("/p/hello-ts")), "hello-ts");
        assert_eq!(
            file_name_of(Path::new("/p/my notes\x1b[31m")),
            "my_notes__31m"
        );
        assert_eq!(file_name_of(Path::new("/p/..")), "guest");
        assert_eq!(file_name_of(Path::new("/")), "guest");
    }

    #[test]
    fn an_entry_is_built_under_its_lock_and_then_found() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ComponentCache::at(dir.path());
        let key = Key::new("k").with("runtime", "program");
        let lock_file = dir.path().join(format!("{}.lock", key.digest()));
        let build = || {
            // Another process (another open file) cannot take the lock meanwhile.
            let other = std::fs::File::open(&lock_file).unwrap();
            assert!(matches!(
                other.try_lock(),
                Err(std::fs::TryLockError::WouldBlock)
            ));
            let out = dir.path().join("built.wasm");
            std::fs::write(&out, "component").unwrap();
            cache.store(&key, "runtime", &out)
        };
        let built = cache.get_or_build(&key, "runtime", build).unwrap();
        let found = cache
            .get_or_build(&key, "runtime", || panic!("built twice"))
            .unwrap();
        assert_eq!(found, built);
        // Released once built.
        let other = std::fs::File::open(&lock_file).unwrap();
        other.try_lock().unwrap();
    }

    #[test]
    fn labelled_parts_do_not_run_together() {
        let a = Key::new("k").with("a", "bc").digest();
        let b = Key::new("k").with("ab", "c").digest();
        assert_ne!(a, b);
    }
}
