//! One update per stack at a time. The holder keeps an OS file lock (`flock`) on the stack's
//! lock file for as long as it runs, and the kernel releases it when the process ends, however
//! it ends: a lock file whose file lock is free is stale, whatever it says, and one whose file
//! lock is held belongs to a running process. The file also names its holder, for messages.

use std::fs::{File, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

use plinth_state::{LockHolder, LockInfo};

use crate::error::BackendError;

/// A held lock; released on drop.
#[derive(Debug)]
pub struct StackLock {
    /// Holds the file lock, until it is closed.
    file: File,
    path: PathBuf,
}

impl StackLock {
    /// Takes the lock at `path`. A lock file whose file lock is free (its holder ended without
    /// removing it) is taken over; one whose file lock is held is an error naming its holder.
    pub(crate) fn acquire(
        path: PathBuf,
        stack: &str,
        command: &str,
    ) -> Result<StackLock, BackendError> {
        let failed = |action| BackendError::io(action, &path);
        // Written aside and locked first, then put in place: the lock file appears whole and
        // held, never empty or free.
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut ours = tempfile::NamedTempFile::new_in(dir).map_err(failed("writing lock"))?;
        ours.as_file()
            .try_lock()
            .map_err(|e| failed("locking")(e.into()))?;
        let info = serde_json::to_vec(&LockInfo::current(command)).expect("lock info serializes");
        ours.write_all(&info)
            .and_then(|()| ours.as_file().sync_all())
            .map_err(failed("writing lock"))?;
        loop {
            match std::fs::hard_link(ours.path(), &path) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(failed("creating lock")(e)),
            }
            match take_over(&path, ours.path())? {
                TakeOver::Done => break,
                TakeOver::Retry => continue,
                TakeOver::Held(holder) => {
                    return Err(BackendError::Locked {
                        stack: stack.to_owned(),
                        holder: holder.map_or_else(
                            || "a process whose lock file cannot be read".to_owned(),
                            |info| info.to_string(),
                        ),
                    });
                }
            }
        }
        // Only the name it was written under goes; the file stays, open and locked.
        let (file, _aside) = ours.into_parts();
        Ok(StackLock { file, path })
    }
}

enum TakeOver {
    /// `ours` is the lock file now.
    Done,
    /// The lock file changed meanwhile: try again.
    Retry,
    /// A running process holds it.
    Held(Option<LockInfo>),
}

/// The lock file at `path` exists: puts `ours` (written and locked) in its place if its file
/// lock is free.
fn take_over(path: &Path, ours: &Path) -> Result<TakeOver, BackendError> {
    let existing = match File::open(path) {
        Ok(file) => file,
        // Released meanwhile.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TakeOver::Retry),
        Err(e) => return Err(BackendError::io("opening lock", path)(e)),
    };
    match existing.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            // A holder locks exclusively; someone only looking (`lock_holder`) locks shared,
            // for an instant. That is no reason to give up.
            if existing.try_lock_shared().is_ok() {
                drop(existing);
                std::thread::yield_now();
                return Ok(TakeOver::Retry);
            }
            return Ok(TakeOver::Held(read(path)));
        }
        Err(TryLockError::Error(e)) => return Err(BackendError::io("locking", path)(e)),
    }
    // Its holder is gone. If the path names another file by now (this one was removed, and
    // maybe another lock taken), start over.
    if !same_file(&existing, path).map_err(BackendError::io("reading lock", path))? {
        return Ok(TakeOver::Retry);
    }
    std::fs::rename(ours, path).map_err(BackendError::io("taking over lock", path))?;
    Ok(TakeOver::Done)
}

/// Who holds the lock at `path`, if there is a lock file, and whether they still run.
pub(crate) fn holder(path: &Path) -> Result<Option<LockHolder>, BackendError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BackendError::io("opening lock", path)(e)),
    };
    let running = match file.try_lock_shared() {
        Ok(()) => false,
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(e)) => return Err(BackendError::io("locking", path)(e)),
    };
    Ok(Some(LockHolder {
        info: serde_json::from_reader(&file).ok(),
        running,
    }))
}

fn read(path: &Path) -> Option<LockInfo> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Whether `path` names the file `file` is open on.
fn same_file(file: &File, path: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let opened = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(named) => Ok((named.dev(), named.ino()) == (opened.dev(), opened.ino())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

impl Drop for StackLock {
    fn drop(&mut self) {
        // Only our own file: `plinth cancel` may have broken this lock, and another update
        // hold the one at the path now. The file lock goes with the file, once it is closed.
        if same_file(&self.file, &self.path).unwrap_or(false) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lock file as the update `info` describes would have left it, its file lock held by
    /// the returned handle while `held`.
    fn lock_file(path: &Path, info: &LockInfo, held: bool) -> File {
        std::fs::write(path, serde_json::to_vec(info).unwrap()).unwrap();
        let file = File::open(path).unwrap();
        if held {
            file.try_lock().unwrap();
        }
        file
    }

    /// Held while a test forks, and while a test releases a file lock and takes it again: a
    /// child forked by another test thread shares every open file until it execs, file locks
    /// included, so a release could otherwise stay unseen for that moment.
    static FORKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn no_fork_in_flight() -> std::sync::MutexGuard<'static, ()> {
        FORKING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The info of a process that has exited.
    fn exited() -> LockInfo {
        let forking = no_fork_in_flight();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        // `spawn` returns once the child has exec'd: it no longer shares our files.
        drop(forking);
        child.wait().unwrap();
        LockInfo {
            pid: child.id(),
            ..LockInfo::current("up")
        }
    }

    #[test]
    fn a_lock_whose_file_lock_is_free_is_taken_over_whatever_its_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.lock");
        // Names this very process, which runs: the file lock decides, not the pid.
        let _file = lock_file(&path, &LockInfo::current("up"), false);
        assert!(!holder(&path).unwrap().unwrap().running);
        let lock = StackLock::acquire(path.clone(), "dev", "destroy").unwrap();
        assert_eq!(read(&path).unwrap().command, "destroy");
        assert!(holder(&path).unwrap().unwrap().running);
        drop(lock);
        assert!(!path.exists());
        assert_eq!(holder(&path).unwrap(), None);
    }

    #[test]
    fn a_lock_whose_file_lock_is_held_is_refused_whatever_its_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.lock");
        let gone = exited();
        let held = lock_file(&path, &gone, true);
        let err = StackLock::acquire(path.clone(), "dev", "up").unwrap_err();
        assert!(
            err.to_string().contains(&format!("pid {}", gone.pid)),
            "{err}"
        );
        let seen = holder(&path).unwrap().unwrap();
        assert!(seen.running);
        assert_eq!(seen.info, Some(gone));
        // Released (the holder ends): taken over.
        let _no_fork = no_fork_in_flight();
        drop(held);
        StackLock::acquire(path.clone(), "dev", "up").unwrap();
    }

    #[test]
    fn a_held_lock_is_refused_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.lock");
        let held = StackLock::acquire(path.clone(), "dev", "up").unwrap();
        let err = StackLock::acquire(path.clone(), "dev", "destroy").unwrap_err();
        assert!(err.to_string().contains("`up`"), "{err}");
        // Only the lock itself: the file it was written as is gone.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let _no_fork = no_fork_in_flight();
        drop(held);
        assert!(!path.exists());
        StackLock::acquire(path.clone(), "dev", "destroy").unwrap();
    }

    #[test]
    fn an_unreadable_lock_is_judged_by_its_file_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.lock");
        std::fs::write(&path, "").unwrap();
        let held = File::open(&path).unwrap();
        held.try_lock().unwrap();
        let err = StackLock::acquire(path.clone(), "dev", "up").unwrap_err();
        assert!(err.to_string().contains("cannot be read"), "{err}");
        let _no_fork = no_fork_in_flight();
        drop(held);
        StackLock::acquire(path.clone(), "dev", "up").unwrap();
    }

    #[test]
    fn a_broken_lock_is_not_removed_from_under_the_next_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.lock");
        let first = StackLock::acquire(path.clone(), "dev", "up").unwrap();
        // `plinth cancel` breaks it; another update takes the lock.
        std::fs::remove_file(&path).unwrap();
        let second = StackLock::acquire(path.clone(), "dev", "refresh").unwrap();
        drop(first);
        assert_eq!(read(&path).unwrap().command, "refresh");
        drop(second);
        assert!(!path.exists());
    }

    #[test]
    fn someone_looking_at_a_stale_lock_is_no_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.lock");
        let _stale = lock_file(&path, &exited(), false);
        let ours = dir.path().join("ours");
        lock_file(&ours, &LockInfo::current("up"), true);
        // Someone looks, holding the file lock shared, as `holder` does for an instant: the
        // acquirer tries again rather than report a holder.
        let looking = File::open(&path).unwrap();
        looking.try_lock_shared().unwrap();
        assert!(matches!(take_over(&path, &ours), Ok(TakeOver::Retry)));
        let _no_fork = no_fork_in_flight();
        drop(looking);
        assert!(matches!(take_over(&path, &ours), Ok(TakeOver::Done)));
        assert_eq!(read(&path).unwrap().pid, std::process::id());
    }
}
