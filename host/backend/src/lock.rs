//! One update per stack at a time: a lock file created exclusively, naming its holder.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::BackendError;

/// Who holds a stack's lock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockInfo {
    pub pid: u32,
    pub host: String,
    pub user: String,
    pub command: String,
    /// Seconds since the Unix epoch.
    pub started: u64,
}

impl LockInfo {
    fn current(command: &str) -> LockInfo {
        LockInfo {
            pid: std::process::id(),
            host: hostname(),
            user: std::env::var("USER").unwrap_or_else(|_| "unknown".into()),
            command: command.to_owned(),
            started: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }

    /// True if the holder ran on this host and its process is gone.
    pub fn is_stale(&self) -> bool {
        self.host == hostname() && !Path::new(&format!("/proc/{}", self.pid)).exists()
    }

    fn describe(&self) -> String {
        let stale = if self.is_stale() {
            " (that process is gone)"
        } else {
            ""
        };
        format!(
            "`{}` by {}@{} (pid {}, started at unix time {}){stale}",
            self.command, self.user, self.host, self.pid, self.started
        )
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// A held lock; released on drop.
#[derive(Debug)]
pub struct StackLock {
    path: PathBuf,
}

impl StackLock {
    /// Takes the lock at `path`. A lock whose holder ran on this host and is gone (killed, or
    /// crashed) is taken over silently; any other held lock is an error naming its holder.
    pub(crate) fn acquire(
        path: PathBuf,
        stack: &str,
        command: &str,
    ) -> Result<StackLock, BackendError> {
        if create(&path, command)? || (take_over_stale(&path)? && create(&path, command)?) {
            return Ok(StackLock { path });
        }
        let holder = read(&path).map_or_else(
            || "an unknown process (unreadable lock file)".to_owned(),
            |info| info.describe(),
        );
        Err(BackendError::Locked {
            stack: stack.to_owned(),
            holder,
        })
    }
}

/// Creates the lock file holding this process's [`LockInfo`]; false if it exists. The file
/// appears whole or not at all (written aside, then hard-linked into place), so a crash never
/// leaves a lock that names nobody.
fn create(path: &Path, command: &str) -> Result<bool, BackendError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let info = serde_json::to_vec(&LockInfo::current(command)).expect("lock info serializes");
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).map_err(BackendError::io("writing lock", path))?;
    tmp.write_all(&info)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(BackendError::io("writing lock", path))?;
    match std::fs::hard_link(tmp.path(), path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(BackendError::io("creating lock", path)(e)),
    }
}

/// Removes the lock at `path` if its holder is provably gone; true if it did. Two processes
/// may try at once: each holds an exclusive `flock` on the lock file while it checks that the
/// path still names that very file and that its holder is gone, so only one removes it and
/// nobody removes a lock taken meanwhile.
fn take_over_stale(path: &Path) -> Result<bool, BackendError> {
    use std::os::unix::fs::MetadataExt;
    let file = match File::open(path) {
        Ok(file) => file,
        // Released meanwhile: free to take.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(BackendError::io("opening lock", path)(e)),
    };
    if file.try_lock().is_err() {
        return Ok(false);
    }
    let opened = file
        .metadata()
        .map_err(BackendError::io("reading lock", path))?;
    let same_file = match std::fs::metadata(path) {
        Ok(current) => (current.dev(), current.ino()) == (opened.dev(), opened.ino()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(BackendError::io("reading lock", path)(e)),
    };
    let stale = serde_json::from_reader::<_, LockInfo>(&file).is_ok_and(|info| info.is_stale());
    if !(same_file && stale) {
        return Ok(false);
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(BackendError::io("removing stale lock", path)(e)),
    }
}

pub(crate) fn read(path: &Path) -> Option<LockInfo> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

impl Drop for StackLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lock file as a process that has exited would have left it.
    fn dead_holder_lock(path: &Path) {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        let info = LockInfo {
            pid: child.id(),
            ..LockInfo::current("up")
        };
        std::fs::write(path, serde_json::to_vec(&info).unwrap()).unwrap();
    }

    #[test]
    fn a_lock_whose_holder_is_gone_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.lock");
        dead_holder_lock(&path);
        let lock = StackLock::acquire(path.clone(), "dev", "up").unwrap();
        assert_eq!(read(&path).unwrap().pid, std::process::id());
        drop(lock);
        assert!(!path.exists());
    }

    #[test]
    fn a_live_or_unreadable_lock_is_not_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.lock");
        let held = StackLock::acquire(path.clone(), "dev", "up").unwrap();
        let err = StackLock::acquire(path.clone(), "dev", "destroy").unwrap_err();
        assert!(err.to_string().contains("`up`"), "{err}");
        drop(held);
        std::fs::write(&path, "").unwrap();
        let err = StackLock::acquire(path.clone(), "dev", "up").unwrap_err();
        assert!(err.to_string().contains("unreadable"), "{err}");
    }

    #[test]
    fn a_held_lock_file_is_always_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.lock");
        let _lock = StackLock::acquire(path.clone(), "dev", "up").unwrap();
        // Only the lock itself: the file it was written as is gone.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        assert_eq!(read(&path).unwrap().command, "up");
    }
}
