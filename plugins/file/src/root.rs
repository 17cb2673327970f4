//! The root: the directory the provider manages, as the plugin sees it (`/root` unless the
//! `file:root` config says otherwise), and every file system operation the resources perform
//! inside it. The sandbox is what keeps those operations inside: the root is a preopened
//! directory, and WASI resolves no path out of it, through `..` or through a symbolic link.

use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use plinth_sdk::ProviderError;

use crate::relpath::RelPath;

/// Where the plugin expects its granted directory unless configured otherwise.
pub(crate) const DEFAULT_ROOT: &str = "/root";

/// The most entries a message about a non-empty directory names.
const LISTED_ENTRIES: usize = 5;

/// The managed directory, as an absolute path in the plugin's file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Root(String);

impl Default for Root {
    fn default() -> Root {
        Root(DEFAULT_ROOT.to_owned())
    }
}

impl Root {
    /// Validates a configured root: an absolute path without `..`.
    pub(crate) fn parse(dir: &str) -> Result<Root, String> {
        let trimmed = dir.trim_end_matches('/');
        if !dir.starts_with('/') {
            return Err(format!(
                "`{dir}` must be absolute: the path where the directory is granted to the \
                 plugin, like `{DEFAULT_ROOT}`"
            ));
        }
        if trimmed.split('/').any(|name| name == "..") {
            return Err(format!("`{dir}` must not contain `..`"));
        }
        if trimmed.is_empty() {
            return Err("must not be `/`: name the granted directory, like `/root`".into());
        }
        Ok(Root(trimmed.to_owned()))
    }

    /// Fails, saying how to grant it, unless the root is a directory the plugin can see.
    pub(crate) fn ensure_granted(&self) -> Result<(), String> {
        match std::fs::metadata(&self.0) {
            Ok(meta) if meta.is_dir() => Ok(()),
            Ok(_) => Err(format!("the root `{}` is not a directory", self.0)),
            Err(e) => Err(format!(
                "the root `{}` is not available to the plugin ({e}): grant a directory there in \
                 Plinth.yaml, e.g. `plugins: {{ file: {{ grants: {{ dirs: [{{ host: ./site, \
                 guest: {}, access: read-write }}] }} }} }}`, or set `file:root` to where one is \
                 granted",
                self.0, self.0
            )),
        }
    }

    fn full(&self, path: &str) -> PathBuf {
        Path::new(&self.0).join(path)
    }

    /// Replaces the file at `path` with `text`, creating missing parent directories. The text is
    /// written to a temporary file beside it and renamed into place, so that a reader never sees
    /// half a file.
    pub(crate) fn write(&self, path: &RelPath, text: &str) -> Result<(), ProviderError> {
        let full = self.full(path.as_str());
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(self.full(parent))
                .map_err(|e| self.failure("creating the directories of", path, &e))?;
        }
        if std::fs::symlink_metadata(&full).is_ok_and(|meta| meta.is_dir()) {
            return Err(ProviderError::failed(format!(
                "`{path}` in {} is a directory, not a file",
                self.0
            )));
        }
        let tmp = full.with_file_name(format!(".{}.plinth-tmp", file_name(path)));
        let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &full));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.failure("writing", path, &e));
        }
        Ok(())
    }

    /// The bytes of the file at `path`, or `None` if there is nothing there.
    pub(crate) fn read(&self, path: &RelPath) -> Result<Option<Vec<u8>>, ProviderError> {
        let full = self.full(path.as_str());
        match std::fs::metadata(&full) {
            Ok(meta) if meta.is_dir() => Err(ProviderError::failed(format!(
                "`{path}` in {} is now a directory, not a file",
                self.0
            ))),
            Ok(_) => std::fs::read(&full)
                .map(Some)
                .map_err(|e| self.failure("reading", path, &e)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.failure("reading", path, &e)),
        }
    }

    /// Removes the file at `path`; one already gone is not an error.
    pub(crate) fn remove_file(&self, path: &RelPath) -> Result<(), ProviderError> {
        let full = self.full(path.as_str());
        if std::fs::symlink_metadata(&full).is_ok_and(|meta| meta.is_dir()) {
            return Err(ProviderError::failed(format!(
                "`{path}` in {} is now a directory; remove it yourself if it should go",
                self.0
            )));
        }
        match std::fs::remove_file(&full) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(self.failure("deleting", path, &e)),
            _ => Ok(()),
        }
    }

    /// Creates the directory `path` and any missing parents; one that exists is kept.
    pub(crate) fn create_dir(&self, path: &RelPath) -> Result<(), ProviderError> {
        let full = self.full(path.as_str());
        if std::fs::metadata(&full).is_ok_and(|meta| !meta.is_dir()) {
            return Err(ProviderError::failed(format!(
                "`{path}` in {} exists and is not a directory",
                self.0
            )));
        }
        std::fs::create_dir_all(&full).map_err(|e| self.failure("creating", path, &e))
    }

    /// Whether the directory `path` exists; something else at that path is an error.
    pub(crate) fn dir_exists(&self, path: &RelPath) -> Result<bool, ProviderError> {
        match std::fs::metadata(self.full(path.as_str())) {
            Ok(meta) if meta.is_dir() => Ok(true),
            Ok(_) => Err(ProviderError::failed(format!(
                "`{path}` in {} is now a file, not a directory",
                self.0
            ))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.failure("reading", path, &e)),
        }
    }

    /// Removes the directory `path` if it is empty; one already gone is not an error. A
    /// directory that still holds something is kept, and the error names what it holds.
    pub(crate) fn remove_dir(&self, path: &RelPath) -> Result<(), ProviderError> {
        let full = self.full(path.as_str());
        let entries = match std::fs::read_dir(&full) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.failure("deleting", path, &e)),
        };
        let mut names: Vec<String> = entries
            .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| self.failure("listing", path, &e))?;
        if !names.is_empty() {
            names.sort();
            let count = names.len();
            names.truncate(LISTED_ENTRIES);
            let more = if count > LISTED_ENTRIES { ", ..." } else { "" };
            let entries = if count == 1 { "entry" } else { "entries" };
            return Err(ProviderError::failed(format!(
                "the directory `{path}` in {} is not empty ({count} {entries}: {}{more}), so it is \
                 kept: delete what it holds first, or make the resources that write there depend \
                 on the directory so that they are deleted before it",
                self.0,
                names.join(", ")
            )));
        }
        match std::fs::remove_dir(&full) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(self.failure("deleting", path, &e)),
            _ => Ok(()),
        }
    }

    /// An I/O failure on `path`, explained where the sandbox is the likely cause.
    fn failure(&self, action: &str, path: &RelPath, error: &io::Error) -> ProviderError {
        let what = format!("{action} `{path}` in {}", self.0);
        if let Some(link) = self.blocked_link(path) {
            return ProviderError::failed(format!(
                "{what}: `{link}` is a symbolic link that leads out of the root (or to nothing), \
                 and the sandbox does not follow it ({error})"
            ));
        }
        let hint = if error.kind() == ErrorKind::PermissionDenied {
            ": check the permissions of the granted directory on the host"
        } else {
            ""
        };
        ProviderError::failed(format!("{what}: {error}{hint}"))
    }

    /// The first part of `path` that is a symbolic link the plugin cannot follow.
    fn blocked_link(&self, path: &RelPath) -> Option<String> {
        let mut prefix = String::new();
        for name in path.as_str().split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(name);
            let full = self.full(&prefix);
            let is_link = std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_symlink());
            if is_link && std::fs::metadata(&full).is_err() {
                return Some(prefix);
            }
        }
        None
    }
}

/// The last name of `path`.
fn file_name(path: &RelPath) -> &str {
    path.as_str().rsplit('/').next().unwrap_or(path.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_roots_are_absolute_and_stay_put() {
        assert_eq!(Root::parse("/data/").unwrap().0, "/data");
        assert_eq!(Root::default().0, "/root");
        assert!(
            Root::parse("data")
                .unwrap_err()
                .contains("must be absolute")
        );
        assert!(Root::parse("/data/../etc").unwrap_err().contains("`..`"));
        assert!(Root::parse("/").unwrap_err().contains("must not be `/`"));
    }

    /// A link the plugin cannot follow is named; natively that is a dangling one (in the
    /// sandbox, also one that leads out of the root).
    #[cfg(unix)]
    #[test]
    fn failures_name_the_link_that_cannot_be_followed() {
        let dir = std::env::temp_dir().join(format!("plinth-file-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("out")).unwrap();
        let root = Root::parse(dir.to_str().unwrap()).unwrap();
        let err = root
            .write(&RelPath::parse("out/x.txt").unwrap(), "x")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`out` is a symbolic link that leads out of the root (or to nothing)"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The operations on a real directory, natively: the same code runs in the sandbox.
    #[test]
    fn writes_reads_and_removes_inside_the_root() {
        let dir = std::env::temp_dir().join(format!("plinth-file-root-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = Root::parse(dir.to_str().unwrap()).unwrap();
        let file = RelPath::parse("a/b/c.txt").unwrap();
        let subdir = RelPath::parse("a/b").unwrap();

        root.write(&file, "hello\n").unwrap();
        assert_eq!(root.read(&file).unwrap().as_deref(), Some(&b"hello\n"[..]));
        assert_eq!(std::fs::read_dir(dir.join("a/b")).unwrap().count(), 1);
        assert!(root.dir_exists(&subdir).unwrap());

        let err = root.remove_dir(&subdir).unwrap_err().to_string();
        assert!(err.contains("is not empty (1 entry: c.txt)"), "{err}");
        assert!(
            root.write(&subdir, "x")
                .unwrap_err()
                .to_string()
                .contains("is a directory")
        );

        root.remove_file(&file).unwrap();
        root.remove_file(&file).unwrap();
        assert_eq!(root.read(&file).unwrap(), None);
        root.remove_dir(&subdir).unwrap();
        assert!(!root.dir_exists(&subdir).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
