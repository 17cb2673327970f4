//! One update per stack at a time: a lock file created exclusively, naming its holder.

use std::fs::OpenOptions;
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
    pub(crate) fn acquire(
        path: PathBuf,
        stack: &str,
        command: &str,
    ) -> Result<StackLock, BackendError> {
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut file) => {
                let info =
                    serde_json::to_vec(&LockInfo::current(command)).expect("lock info serializes");
                file.write_all(&info)
                    .and_then(|()| file.sync_all())
                    .map_err(BackendError::io("writing lock", &path))?;
                Ok(StackLock { path })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let holder = read(&path).map_or_else(
                    || "an unknown process (unreadable lock file)".to_owned(),
                    |info| info.describe(),
                );
                Err(BackendError::Locked {
                    stack: stack.to_owned(),
                    holder,
                })
            }
            Err(e) => Err(BackendError::io("creating lock", &path)(e)),
        }
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
