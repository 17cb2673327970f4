//! Running a guest's type check once per version of what it read. A check reads more than the
//! build packs (a module imported only for its types is in no bundle), so it is keyed on the
//! files the checker itself reports reading: the last passing check's list is kept per guest,
//! and a check whose build key and listed files are unchanged is not run again.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::cache::{ComponentCache, Key};
use super::language::Role;

/// The mark of a build whose types were checked.
const TYPECHECKED: &str = "typechecked";

/// Runs `check` on the guest in `dir` built as a `role` (it returns the files it read) unless
/// a check passed on the same build key and the same files.
pub fn once(
    dir: &Path,
    role: Role,
    cache: &ComponentCache,
    build: &Key,
    check: impl FnOnce() -> Result<Vec<PathBuf>>,
) -> Result<()> {
    let record = record_path(cache, dir, role);
    if let Some(files) = read_record(&record)
        && cache.is_marked(&key(build, &files)?, TYPECHECKED)
    {
        return Ok(());
    }
    let started = SystemTime::now();
    let files = check()?;
    write_record(cache, &record, &files)?;
    // A file edited while the checker ran may not be what it checked: no mark, so the next
    // build checks again.
    if files.iter().all(|f| unchanged_since(f, started)) {
        cache.mark(&key(build, &files)?, TYPECHECKED)?;
    }
    Ok(())
}

/// The check's key: the build's, and every file the checker read, by path and content.
fn key(build: &Key, files: &[PathBuf]) -> Result<Key> {
    let mut key = Key::new("typecheck").with("build", &build.digest());
    for file in files {
        key = key.with_file(&file.to_string_lossy(), file)?;
    }
    Ok(key)
}

/// Where the files of the guest's last passing check are listed: one record per guest
/// directory and role.
fn record_path(cache: &ComponentCache, dir: &Path, role: Role) -> PathBuf {
    let mut hasher = Sha256::new();
    hasher.update(role.world().as_bytes());
    hasher.update([0]);
    hasher.update(dir.as_os_str().as_encoded_bytes());
    (cache.dir().join("checks")).join(hex::encode(hasher.finalize()))
}

fn read_record(path: &Path) -> Option<Vec<PathBuf>> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Written beside, then renamed: a concurrent build reads a whole record or none.
fn write_record(cache: &ComponentCache, path: &Path, files: &[PathBuf]) -> Result<()> {
    let dir = path.parent().expect("records are in a directory");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let staging = tempfile::NamedTempFile::new_in(cache.dir())?;
    std::fs::write(staging.path(), serde_json::to_vec(files)?)?;
    staging
        .persist(path)
        .with_context(|| format!("recording the type check's files in {}", path.display()))?;
    Ok(())
}

/// Whether `file` was last modified before `since`. A file that is not there is keyed as
/// missing, which its appearing changes.
fn unchanged_since(file: &Path, since: SystemTime) -> bool {
    match std::fs::metadata(file).and_then(|m| m.modified()) {
        Ok(modified) => modified < since,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A check runs again only when the build or a file it read changes, a file it found
    /// missing included.
    #[test]
    fn a_check_runs_once_per_version_of_what_it_read() {
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = ComponentCache::at(cache_dir.path());
        let project = tempfile::tempdir().unwrap();
        let types = project.path().join("types.ts");
        let config = project.path().join("tsconfig.json");
        std::fs::write(&types, "a").unwrap();
        let runs = Cell::new(0);
        let check = |build: &str| {
            let key = Key::new("test").with("build", build);
            once(project.path(), Role::Program, &cache, &key, || {
                runs.set(runs.get() + 1);
                Ok(vec![types.clone(), config.clone()])
            })
            .unwrap();
            runs.get()
        };
        assert_eq!(check("one"), 1);
        assert_eq!(check("one"), 1, "nothing changed");
        std::fs::write(&types, "b").unwrap();
        assert_eq!(check("one"), 2, "a file it read changed");
        assert_eq!(check("two"), 3, "the build changed");
        std::fs::write(&config, "{}").unwrap();
        assert_eq!(check("two"), 4, "a file it found missing appeared");
        assert_eq!(check("two"), 4);
    }
}
