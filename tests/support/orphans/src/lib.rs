//! The temp directories of throwaway test servers (a PostgreSQL cluster, a broker, a registry),
//! each marked with the test process that owns it, and the sweep of those whose owner is gone.
//!
//! A test process killed before it could drop its server (a timeout, a signal) leaves the server
//! running; without a sweep at the next start they would pile up on a machine that runs the tests
//! again and again.

use std::io;
use std::path::Path;

use tempfile::TempDir;

/// The file in a server's directory naming the process that owns it.
const OWNER_FILE: &str = "owner";

/// A new temp directory named `prefix…`, owned by this process.
pub fn owned_dir(prefix: &str) -> io::Result<TempDir> {
    let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
    mark_owner(dir.path(), std::process::id())?;
    Ok(dir)
}

/// Marks `dir` as owned by process `pid`.
pub fn mark_owner(dir: &Path, pid: u32) -> io::Result<()> {
    std::fs::write(dir.join(OWNER_FILE), pid.to_string())
}

/// Hands each directory in `temp` named `prefix…` whose owner is gone to `stop`, which ends
/// its server, then removes it. A directory without an owner file (another process is creating
/// it), or whose owner lives, is left alone; so is everything where `/proc` cannot tell the
/// living from the dead.
pub fn sweep(temp: &Path, prefix: &str, mut stop: impl FnMut(&Path)) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let named = (entry.file_name().to_str()).is_some_and(|n| n.starts_with(prefix));
        let dir = entry.path();
        let owner = std::fs::read_to_string(dir.join(OWNER_FILE));
        let gone = owner
            .ok()
            .filter(|_| named)
            .and_then(|owner| owner.trim().parse::<u32>().ok())
            .is_some_and(|pid| !is_running(pid));
        if gone {
            // Nothing to report to: a server that will not stop is removed all the same.
            stop(&dir);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// Whether process `pid` runs: it exists and is not a zombie waiting to be reaped.
pub fn is_running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name, which is in parentheses and may hold any character.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    state.is_some_and(|state| state != 'Z' && state != 'X')
}

/// Whether process `pid` runs with `dir` in its command line: a server started on that
/// directory, not another process given its id since.
pub fn runs_on(pid: u32, dir: &Path) -> bool {
    let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    is_running(pid) && String::from_utf8_lossy(&command).contains(&*dir.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    use super::*;

    /// The id of a process that has ended and been reaped.
    fn dead_pid() -> u32 {
        let mut dead = Command::new("true").spawn().unwrap();
        dead.wait().unwrap();
        dead.id()
    }

    #[test]
    fn only_the_dirs_of_dead_owners_are_stopped_and_removed() {
        let temp = tempfile::tempdir().unwrap();
        let make = |name: &str| {
            let dir = temp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            dir
        };
        let orphan = make("srv-orphan");
        mark_owner(&orphan, dead_pid()).unwrap();
        let owned = make("srv-owned");
        mark_owner(&owned, std::process::id()).unwrap();
        let unmarked = make("srv-being-made");
        let other = make("other-orphan");
        mark_owner(&other, dead_pid()).unwrap();

        let mut stopped = Vec::new();
        sweep(temp.path(), "srv-", |dir| stopped.push(dir.to_owned()));
        assert_eq!(stopped, std::slice::from_ref(&orphan));
        assert!(!orphan.exists());
        assert!(owned.exists() && unmarked.exists() && other.exists());
    }

    #[test]
    fn a_server_is_told_by_the_dir_in_its_command_line() {
        let dir = tempfile::tempdir().unwrap();
        // `sh -c SCRIPT NAME`: NAME, the dir, is in the shell's command line. Its first line
        // says it runs the script (a process just spawned may be still in `exec`, its command
        // line empty); two commands keep the shell from becoming `sleep`.
        let mut server = Command::new("sh")
            .args(["-c", "echo running; sleep 60; :"])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "running\n");
        assert!(runs_on(server.id(), dir.path()));
        let elsewhere = tempfile::tempdir().unwrap();
        assert!(!runs_on(server.id(), elsewhere.path()));
        server.kill().unwrap();
        server.wait().unwrap();
        assert!(!runs_on(server.id(), dir.path()), "ended");
        assert!(!runs_on(dead_pid(), dir.path()));
    }
}
