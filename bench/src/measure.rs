//! Runs one `plinth` command and measures it: wall time, CPU time (user + system, from
//! `wait4`: steadier than wall time on a loaded machine), the peak resident set of the process
//! (`ru_maxrss`) and the bytes it caused to be written to storage (`write_bytes`
//! of `/proc/<pid>/io`, read while the exited process is still a zombie).

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// What one command cost.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Cost {
    pub wall: Duration,
    /// CPU time, user + system, of the process and its threads.
    pub cpu: Duration,
    /// Peak resident set size, bytes.
    pub peak_rss: u64,
    /// Bytes the process caused to be sent to storage: pages it dirtied in files, counted by
    /// the kernel at page granularity (so an append of a few bytes to a new page counts 4 KiB,
    /// and rewriting a page already dirty counts nothing again).
    pub write_bytes: u64,
}

/// Runs `command` to completion, its output appended to `log`; fails, quoting the end of the
/// log, when it exits non-zero.
pub fn run(mut command: Command, log: &Path) -> anyhow::Result<Cost> {
    let out = File::options()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    let described = format!("{command:?}");
    let started = Instant::now();
    let child = command
        .spawn()
        .with_context(|| format!("starting {described}"))?;
    let pid = child.id() as libc::pid_t;
    wait_exited(pid)?;
    let wall = started.elapsed();
    let write_bytes = write_bytes(pid)?;
    let (status, rusage) = reap(pid)?;
    // The child is reaped: `Child` must not wait for it again (dropping it does not).
    drop(child);
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "{described} failed (wait status {status}); the end of {}:\n{}",
            log.display(),
            tail.join("\n")
        );
    }
    Ok(Cost {
        wall,
        cpu: duration(rusage.ru_utime) + duration(rusage.ru_stime),
        // Linux reports ru_maxrss in KiB.
        peak_rss: rusage.ru_maxrss as u64 * 1024,
        write_bytes,
    })
}

fn duration(time: libc::timeval) -> Duration {
    Duration::from_secs(time.tv_sec as u64) + Duration::from_micros(time.tv_usec as u64)
}

/// Waits until `pid` has exited, leaving it a zombie so that its `/proc` entry stays readable.
fn wait_exited(pid: libc::pid_t) -> anyhow::Result<()> {
    loop {
        // SAFETY: `info` is a plain C struct the kernel fills in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOWAIT;
        // SAFETY: a valid pointer to `info`; `pid` is our own child.
        let done = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        if done == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error).context("waiting for plinth");
        }
    }
}

/// `write_bytes` of the (exited, unreaped) process `pid`.
fn write_bytes(pid: libc::pid_t) -> anyhow::Result<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io"))
        .context("reading /proc/<pid>/io (is this Linux with task I/O accounting?)")?;
    io.lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|n| n.trim().parse().ok())
        .context("/proc/<pid>/io has no write_bytes line")
}

/// Reaps `pid`: its wait status and resource usage.
fn reap(pid: libc::pid_t) -> anyhow::Result<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: `rusage` is a plain C struct the kernel fills in.
    let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers; `pid` is our own child, exited and not yet reaped.
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut rusage) };
        if reaped == pid {
            return Ok((status, rusage));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error).context("reaping plinth");
        }
    }
}
