//! Who holds a stack: a lock file's holder, or a service lease's.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Who holds, or held, a stack's lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    pub pid: u32,
    pub host: String,
    pub user: String,
    pub command: String,
    /// Seconds since the Unix epoch.
    pub started: u64,
    /// When the holder's lease on a service runs out unless renewed, in seconds since the Unix
    /// epoch; `None` for a lock file, which its holder keeps for as long as it runs. (The pid
    /// and host of a lease are the service's to know: 0 and empty. Which replica began it is
    /// no one's concern: any replica serves the update.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_expires: Option<u64>,
}

impl LockInfo {
    /// This process, taking a stack for `command`.
    pub fn current(command: &str) -> LockInfo {
        LockInfo {
            pid: std::process::id(),
            host: hostname(),
            user: std::env::var("USER").unwrap_or_else(|_| "unknown".into()),
            command: command.to_owned(),
            started: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            lease_expires: None,
        }
    }
}

impl std::fmt::Display for LockInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let time = |seconds: u64| {
            humantime::format_rfc3339_seconds(UNIX_EPOCH + std::time::Duration::from_secs(seconds))
        };
        // Read from a file anyone with the state directory can write: shown escaped.
        let (command, user, host) = (
            self.command.escape_debug(),
            self.user.escape_debug(),
            self.host.escape_debug(),
        );
        match self.lease_expires {
            Some(expires) => write!(
                f,
                "`{command}` by {user} (started {}, its lease expires {} unless renewed)",
                time(self.started),
                time(expires)
            ),
            None => write!(
                f,
                "`{command}` by {user}@{host} (pid {}, started {})",
                self.pid,
                time(self.started)
            ),
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// A stack's lock file, as someone other than its holder sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    /// What the file says (`None`: it cannot be read).
    pub info: Option<LockInfo>,
    /// The holder still runs: it holds the file lock. Otherwise the file is stale, and the
    /// next update takes it over.
    pub running: bool,
}
