//! Which CPUs the benchmark's processes run on, for `--service-cpu`: the service and its
//! PostgreSQL on one CPU, every plinth command on the others, as a service deployed on a
//! machine of its own takes none of its clients' CPU. Children inherit the CPUs of the process
//! that starts them, so the harness moves itself before starting each side.

use anyhow::{Context, bail};

/// Where the service and the commands run.
pub struct Placement {
    pub service: usize,
    pub commands: Vec<usize>,
}

impl Placement {
    /// The last CPU this process may run on for the service, the rest for the commands.
    pub fn split() -> anyhow::Result<Placement> {
        let mut cpus = allowed_of(0)?;
        let Some(service) = cpus.pop() else {
            bail!("this process may run on no CPU");
        };
        if cpus.is_empty() {
            bail!(
                "--service-cpu needs at least two CPUs: this process may run only on CPU \
                 {service}"
            );
        }
        Ok(Placement {
            service,
            commands: cpus,
        })
    }

    /// Every CPU the harness began with.
    pub fn all(&self) -> Vec<usize> {
        let mut all = self.commands.clone();
        all.push(self.service);
        all
    }

    /// For the report: where each side ran.
    pub fn describe(&self) -> String {
        let commands: Vec<String> = self.commands.iter().map(usize::to_string).collect();
        format!(
            "the service and PostgreSQL on CPU {}, every plinth command on CPU {}",
            self.service,
            commands.join(", ")
        )
    }

    /// Fails unless process `pid` (the service, started since the harness moved) runs on the
    /// service's CPU only: the placement must hold, or the figures would say what it did not.
    pub fn check_service(&self, pid: u32) -> anyhow::Result<()> {
        let on = allowed_of(pid as libc::pid_t)?;
        if on != [self.service] {
            bail!(
                "the service (process {pid}) may run on CPUs {on:?}, not only on CPU {}",
                self.service
            );
        }
        Ok(())
    }
}

/// The CPUs process `pid` (0: this thread) may run on.
fn allowed_of(pid: libc::pid_t) -> anyhow::Result<Vec<usize>> {
    // SAFETY: `set` is a plain C bit set the kernel fills in.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to `set` and its size.
    let got = unsafe { libc::sched_getaffinity(pid, size_of::<libc::cpu_set_t>(), &mut set) };
    if got != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("reading the CPUs of process {pid}"));
    }
    let count = libc::CPU_SETSIZE as usize;
    // SAFETY: every index is below the set's size.
    Ok((0..count)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Runs this process, and what it starts from now on, on `cpus` only.
pub fn run_on(cpus: &[usize]) -> anyhow::Result<()> {
    // SAFETY: `set` is a plain C bit set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: `cpu` came from `allowed_of`, below the set's size.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: a valid pointer to `set` and its size. 0 names this thread: the harness's only
    // one when it moves (its tokio runtime is made after), and the one that starts every child.
    let set_ok = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if set_ok != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("moving to CPUs {cpus:?}"));
    }
    Ok(())
}
