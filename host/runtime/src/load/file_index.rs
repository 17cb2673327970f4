//! Remembers the SHA-256 of component files by a cheap fingerprint of the file (device, inode,
//! size, modification and change times), so that starting a plugin from the precompiled cache
//! need not read and hash its `.wasm` every time.
//!
//! Safety against stale code: an entry is used only when every part of the fingerprint matches;
//! any write to the file changes its change time (`ctime`), which no user call can set back.
//! An entry is recorded only when the file was stable while it was read and hashed (the same
//! fingerprint before and after) and last modified long enough ago that a later write cannot
//! fall into the same timestamp tick (the "racily clean" case that git guards against too).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// A file modified more recently than this is hashed every time until it is older.
const SETTLE: Duration = Duration::from_secs(2);

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Fingerprint {
    /// The fingerprint of the file at `path`, or `None` where the platform gives none.
    #[cfg(unix)]
    pub(crate) fn of(path: &Path) -> Option<Fingerprint> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        Some(Fingerprint {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        })
    }

    #[cfg(not(unix))]
    pub(crate) fn of(_path: &Path) -> Option<Fingerprint> {
        None
    }

    /// Old enough that a write in the same timestamp tick is no longer possible.
    fn settled(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let newest = self.mtime_ns.max(self.ctime_ns);
        newest + (SETTLE.as_nanos() as i128) < now
    }

    fn encode(&self, sha256: &str) -> String {
        format!(
            "{} {} {} {} {} {sha256}\n",
            self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns
        )
    }

    /// The hash recorded in `entry` if it was recorded for exactly this fingerprint.
    fn matching_hash<'e>(&self, entry: &'e str) -> Option<&'e str> {
        let (recorded, sha256) = entry.trim_end().rsplit_once(' ')?;
        let valid_hash = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit());
        (valid_hash && self.encode(sha256).trim_end() == format!("{recorded} {sha256}"))
            .then_some(sha256)
    }
}

/// A directory of one small entry per component path.
#[derive(Debug, Clone)]
pub(crate) struct FileIndex {
    dir: PathBuf,
}

impl FileIndex {
    pub(crate) fn new(dir: PathBuf) -> FileIndex {
        FileIndex { dir }
    }

    /// The SHA-256 recorded for `path` at `fingerprint`, if any.
    pub(crate) fn lookup(&self, path: &Path, fingerprint: &Fingerprint) -> Option<String> {
        let entry = std::fs::read_to_string(self.entry(path)?).ok()?;
        fingerprint.matching_hash(&entry).map(str::to_owned)
    }

    /// Records that `path` hashed to `sha256` while its fingerprint was `before` and `after`
    /// (taken before reading and after hashing). A failure only costs a hash next time.
    pub(crate) fn record(
        &self,
        path: &Path,
        before: Option<Fingerprint>,
        after: Option<Fingerprint>,
        sha256: &str,
    ) {
        let (Some(before), Some(after)) = (before, after) else {
            return;
        };
        if before != after || !before.settled() {
            return;
        }
        let Some(entry) = self.entry(path) else {
            return;
        };
        if let Err(e) = self.write(&entry, &before.encode(sha256)) {
            tracing::debug!(entry = %entry.display(), "cannot record a component's hash: {e}");
        }
    }

    /// The entry's file, named by the hash of the absolute path.
    fn entry(&self, path: &Path) -> Option<PathBuf> {
        let absolute = std::path::absolute(path).ok()?;
        let digest = Sha256::digest(absolute.as_os_str().as_encoded_bytes());
        Some(self.dir.join(hex::encode(&digest[..16])))
    }

    /// Through a temporary file renamed into place: a reader never sees half an entry.
    fn write(&self, entry: &Path, contents: &str) -> std::io::Result<()> {
        use std::io::Write;
        std::fs::create_dir_all(&self.dir)?;
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        file.write_all(contents.as_bytes())?;
        file.persist(entry)?;
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn age(path: &Path) {
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    #[test]
    fn an_entry_serves_only_the_exact_version_it_was_recorded_for() {
        let dir = tempfile::tempdir().unwrap();
        let index = FileIndex::new(dir.path().join("index"));
        let file = dir.path().join("c.wasm");
        std::fs::write(&file, b"first").unwrap();
        age(&file);
        let print = Fingerprint::of(&file);
        let sha = "a".repeat(64);
        // ctime is now, so even an old mtime does not settle the file at once.
        index.record(&file, print, print, &sha);
        assert_eq!(
            index.lookup(&file, &print.unwrap()),
            None,
            "ctime too recent"
        );

        let mut settled = print.unwrap();
        settled.ctime_ns -= 60_000_000_000;
        index.record(&file, Some(settled), Some(settled), &sha);
        assert_eq!(index.lookup(&file, &settled), Some(sha.clone()));

        let mut changed = settled;
        changed.size += 1;
        assert_eq!(index.lookup(&file, &changed), None);
        changed = settled;
        changed.ctime_ns += 1;
        assert_eq!(index.lookup(&file, &changed), None);
        changed = settled;
        changed.ino += 1;
        assert_eq!(index.lookup(&file, &changed), None);
    }

    #[test]
    fn a_file_that_changed_while_hashed_is_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let index = FileIndex::new(dir.path().join("index"));
        let file = dir.path().join("c.wasm");
        let mut before = Fingerprint::of(&std::env::current_exe().unwrap()).unwrap();
        before.ctime_ns = 0;
        before.mtime_ns = 0;
        let mut after = before;
        after.mtime_ns = 1;
        index.record(&file, Some(before), Some(after), &"b".repeat(64));
        assert_eq!(index.lookup(&file, &before), None);
        assert_eq!(index.lookup(&file, &after), None);
    }

    #[test]
    fn a_garbled_entry_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let index = FileIndex::new(dir.path().join("index"));
        let file = dir.path().join("c.wasm");
        std::fs::write(&file, b"x").unwrap();
        let print = Fingerprint::of(&file).unwrap();
        let entry = index.entry(&file).unwrap();
        std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
        std::fs::write(&entry, "1 2 3 garbage").unwrap();
        assert_eq!(index.lookup(&file, &print), None);
    }
}
