//! A throwaway PostgreSQL server for tests: a new cluster in a temp dir, started on a free
//! loopback port, stopped and removed when the last handle is dropped (the shared one: when the
//! test process exits).
//!
//! The server binaries are found through `PLINTH_PG_BINDIR` or `pg_config --bindir`. `initdb`
//! refuses to run as root, so when the tests run as root the cluster is created and served by the
//! `postgres` system user (through `runuser`). Clients authenticate with SCRAM-SHA-256 as the
//! superuser `postgres`, with a password made for each cluster, as a real server would ask.
//!
//! ```no_run
//! let pg = plinth_test_postgres::Postgres::shared().unwrap();
//! let rows = pg.psql("postgres", "SELECT 1").unwrap();
//! assert_eq!(rows.trim(), "1");
//! ```

use std::fmt;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex, PoisonError};

use tempfile::TempDir;

mod tls;

pub use tls::{SERVER_NAME, Tls};

/// The system user that owns and serves clusters when the tests run as root.
const SERVICE_USER: &str = "postgres";
/// The superuser every cluster is created with.
pub const SUPERUSER: &str = "postgres";
/// On a cluster started by [`Postgres::start_tls`]: a superuser that logs in by client
/// certificate only (`cert` in `pg_hba.conf`).
pub const CERT_USER: &str = "plinth_cert_user";
/// How long `pg_ctl` may wait for the server to start or stop (seconds). Generous: CI machines
/// are loaded, and the bound only tells a hang from a slow start.
const PG_CTL_WAIT_SECONDS: &str = "120";
/// The prefix of each cluster's temp dir.
const DIR_PREFIX: &str = "plinth-pg-";
/// A free port can be taken by another process between probing and binding; starts that fail
/// are retried on a new port this many times.
const START_ATTEMPTS: usize = 5;

/// What went wrong while setting up or talking to a test server.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A running PostgreSQL cluster. Stopped (immediately) and deleted on drop.
pub struct Postgres {
    bindir: PathBuf,
    run_as_service_user: bool,
    dir: TempDir,
    port: u16,
    password: String,
    /// The certificates, for a cluster that speaks TLS.
    tls: Option<Tls>,
    /// Commits are flushed to disk before they are acknowledged, as a production server's are.
    durable: bool,
}

/// The server [`Postgres::shared`] hands out, from its first call to the process's exit.
static SHARED: Mutex<Option<Arc<Postgres>>> = Mutex::new(None);
/// The server [`Postgres::shared_tls`] hands out, likewise.
static SHARED_TLS: Mutex<Option<Arc<Postgres>>> = Mutex::new(None);

// SAFETY: C's `atexit`, from the C library every Rust program on these platforms links.
unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// Run by `exit` (a test binary's end, passed or failed): stops and removes the shared servers.
extern "C" fn stop_shared_at_exit() {
    // `try_lock`: a thread still inside `shared` must not hang the exit; the next start of any
    // test process sweeps the cluster left behind, as for a killed one.
    for slot in [&SHARED, &SHARED_TLS] {
        let server = match slot.try_lock() {
            Ok(mut shared) => shared.take(),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner().take(),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        drop(server);
    }
}

/// The server in `slot`, started by `start` on the first call.
fn shared_in(
    slot: &Mutex<Option<Arc<Postgres>>>,
    start: fn() -> Result<Postgres>,
) -> Result<Arc<Postgres>> {
    static AT_EXIT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let mut shared = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(server) = &*shared {
        return Ok(Arc::clone(server));
    }
    let server = Arc::new(start()?);
    // SAFETY: registers a plain function once; it touches nothing the exit has torn down (the
    // mutexes and the servers' own files).
    if !*AT_EXIT.get_or_init(|| unsafe { atexit(stop_shared_at_exit) } == 0) {
        return Err(Error(
            "cannot register the shared server's stop at exit (atexit failed)".into(),
        ));
    }
    *shared = Some(Arc::clone(&server));
    Ok(server)
}

impl Postgres {
    /// A server shared by the tests of one process: started by the first caller, stopped and
    /// removed when the process exits. It outlives its handles so that tests that follow one
    /// another do not each create, start and stop a cluster of their own. Tests that stop or
    /// restart the server must use [`Postgres::start`] for their own.
    pub fn shared() -> Result<Arc<Postgres>> {
        shared_in(&SHARED, Postgres::start)
    }

    /// A server started by [`Postgres::start_tls`], shared as [`Postgres::shared`] is.
    pub fn shared_tls() -> Result<Arc<Postgres>> {
        shared_in(&SHARED_TLS, Postgres::start_tls)
    }

    /// A new cluster of its own, started.
    pub fn start() -> Result<Postgres> {
        Postgres::start_with(false, false)
    }

    /// A new cluster of its own that keeps a production server's durability: `fsync`,
    /// `synchronous_commit` and `full_page_writes` on (every commit waits for its WAL to reach
    /// the disk), for measuring what that costs.
    pub fn start_durable() -> Result<Postgres> {
        Postgres::start_with(false, true)
    }

    /// A new cluster of its own that takes TLS connections only: `ssl = on` with a CA and a
    /// server certificate made for it (valid for [`SERVER_NAME`] only), `hostssl` lines only in
    /// `pg_hba.conf` (SCRAM-SHA-256, and `cert` for [`CERT_USER`]). [`Postgres::tls`] holds
    /// the PEM texts a client needs. `psql` connects with libpq's default `prefer`.
    pub fn start_tls() -> Result<Postgres> {
        let server = Postgres::start_with(true, false)?;
        let role = format!("CREATE ROLE {CERT_USER} LOGIN SUPERUSER");
        server.psql("postgres", &role)?;
        Ok(server)
    }

    /// The certificates of a cluster started by [`Postgres::start_tls`].
    pub fn tls(&self) -> Option<&Tls> {
        self.tls.as_ref()
    }

    fn start_with(tls: bool, durable: bool) -> Result<Postgres> {
        let bindir = bindir()?;
        let run_as_service_user = running_as_root();
        sweep_orphans(&std::env::temp_dir(), &bindir, run_as_service_user);
        let dir = plinth_test_orphans::owned_dir(DIR_PREFIX)
            .map_err(|e| Error(format!("cannot create a temp dir for the cluster: {e}")))?;
        let password = random_password();
        let mut server = Postgres {
            bindir,
            run_as_service_user,
            dir,
            port: 0,
            password,
            tls: None,
            durable,
        };
        server.init()?;
        if tls {
            server.tls = Some(server.configure_tls()?);
        }
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            server.port = free_port()?;
            match server.pg_ctl_start() {
                Ok(()) => return Ok(server),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.expect("at least one attempt"))
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Always `127.0.0.1`: the server listens on loopback only.
    pub fn host(&self) -> &'static str {
        "127.0.0.1"
    }

    /// The superuser's password.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// A `postgres://` URL for `database` as the superuser.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@127.0.0.1:{}/{database}",
            self.password, self.port
        )
    }

    /// Runs SQL through `psql` as the superuser and returns the rows, unaligned, one per line,
    /// fields separated by `|`. Fails with psql's error if a statement fails.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String> {
        let output = Command::new(self.bindir.join("psql"))
            .args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", SUPERUSER, "-d", database, "-c", sql])
            .env("PGPASSWORD", &self.password)
            .env("PGCONNECT_TIMEOUT", "30")
            .output()
            .map_err(|e| Error(format!("cannot run psql: {e}")))?;
        checked("psql", &output)?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// What `pg_dump` makes of `database` (plain SQL, data included), as a backup would hold it.
    pub fn dump(&self, database: &str) -> Result<Vec<u8>> {
        let output = Command::new(self.bindir.join("pg_dump"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", SUPERUSER, "-d", database])
            .env("PGPASSWORD", &self.password)
            .env("PGCONNECT_TIMEOUT", "30")
            .output()
            .map_err(|e| Error(format!("cannot run pg_dump: {e}")))?;
        checked("pg_dump", &output)?;
        Ok(output.stdout)
    }

    /// Creates a database owned by the superuser, for a test of its own.
    pub fn create_database(&self, name: &str) -> Result<()> {
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        self.psql("postgres", &format!("CREATE DATABASE {quoted}"))
            .map(drop)
    }

    /// Stops the server (fast shutdown: clients are disconnected) and starts it again on the same
    /// port, as a database restart in production would.
    pub fn restart(&self) -> Result<()> {
        // Not `pg_ctl restart`: it would start the server without `-l`, logging to the pipe this
        // process reads, which then never closes.
        self.pg_ctl(&["stop", "-m", "fast"])?;
        self.pg_ctl_start()
    }

    /// Stops the server at once; [`Postgres::resume`] starts it again on the same port.
    pub fn stop(&self) -> Result<()> {
        self.pg_ctl(&["stop", "-m", "immediate"])
    }

    /// Shuts the server down cleanly (fast shutdown: clients are disconnected, and every
    /// transaction it acknowledged is kept); [`Postgres::resume`] starts it again on the same
    /// port. Unlike [`Postgres::stop`]: with `synchronous_commit` off, as these clusters run, an
    /// immediate stop may lose commits the server acknowledged, which no durable server would.
    pub fn shut_down(&self) -> Result<()> {
        self.pg_ctl(&["stop", "-m", "fast"])
    }

    /// Starts a server stopped by [`Postgres::stop`] or [`Postgres::shut_down`] on the same port.
    pub fn resume(&self) -> Result<()> {
        self.pg_ctl_start()
    }

    /// Where the server writes its log, to show when a test fails.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn init(&self) -> Result<()> {
        if self.run_as_service_user {
            // The temp dir is root's and private; the service user must own it to create the
            // cluster and the log inside.
            let status = Command::new("chown")
                .arg(format!("{SERVICE_USER}:"))
                .arg(self.dir.path())
                .output()
                .map_err(|e| Error(format!("cannot run chown: {e}")))?;
            checked("chown", &status)?;
        }
        let password_file = self.dir.path().join("pwfile");
        std::fs::write(&password_file, format!("{}\n", self.password))
            .map_err(|e| Error(format!("cannot write the password file: {e}")))?;
        if self.run_as_service_user {
            let status = Command::new("chown")
                .arg(format!("{SERVICE_USER}:"))
                .arg(&password_file)
                .output()
                .map_err(|e| Error(format!("cannot run chown: {e}")))?;
            checked("chown", &status)?;
        }
        let output = self
            .server_command("initdb")
            .arg("-D")
            .arg(self.data_dir())
            .args([
                "-U",
                SUPERUSER,
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ])
            .args(["--auth-host=scram-sha-256", "--auth-local=scram-sha-256"])
            .arg(format!("--pwfile={}", password_file.display()))
            .output()
            .map_err(|e| Error(format!("cannot run initdb: {e}")))?;
        checked("initdb", &output)?;
        std::fs::remove_file(&password_file)
            .map_err(|e| Error(format!("cannot remove the password file: {e}")))
    }

    /// Makes the cluster's certificates and lets it take TLS connections only.
    fn configure_tls(&self) -> Result<Tls> {
        let dir = self.dir.path().join("tls");
        std::fs::create_dir(&dir)
            .map_err(|e| Error(format!("cannot create {}: {e}", dir.display())))?;
        let tls = tls::make(&dir, CERT_USER)?;
        let file = |name: &str| dir.join(name).display().to_string();
        for secret in ["server.key", "ca.key", "other-ca.key", "client.key"] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.join(secret), std::fs::Permissions::from_mode(0o600))
                .map_err(|e| Error(format!("cannot protect {secret}: {e}")))?;
        }
        if self.run_as_service_user {
            let output = Command::new("chown")
                .args(["-R", &format!("{SERVICE_USER}:")])
                .arg(&dir)
                .output()
                .map_err(|e| Error(format!("cannot run chown: {e}")))?;
            checked("chown", &output)?;
        }
        let conf = self.data_dir().join("postgresql.conf");
        let mut settings = std::fs::read_to_string(&conf)
            .map_err(|e| Error(format!("cannot read {}: {e}", conf.display())))?;
        settings.push_str(&format!(
            "\nssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\nssl_ca_file = '{}'\n",
            file("server.crt"),
            file("server.key"),
            file("ca.crt"),
        ));
        std::fs::write(&conf, settings)
            .map_err(|e| Error(format!("cannot write {}: {e}", conf.display())))?;
        // TLS or nothing over TCP; the superuser's `psql` uses TLS too (libpq's `prefer`).
        let hba = self.data_dir().join("pg_hba.conf");
        std::fs::write(
            &hba,
            format!(
                "local all all scram-sha-256\n\
                 hostssl all {CERT_USER} 127.0.0.1/32 cert\n\
                 hostssl all all 127.0.0.1/32 scram-sha-256\n"
            ),
        )
        .map_err(|e| Error(format!("cannot write {}: {e}", hba.display())))?;
        Ok(tls)
    }

    /// Options of the server process: loopback only, its socket in the temp dir (not the
    /// system's), and, unless the cluster is durable, durability traded for speed (a test
    /// cluster is thrown away).
    fn server_options(&self) -> String {
        let durability = match self.durable {
            true => "on",
            false => "off",
        };
        format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync={durability} \
             -c synchronous_commit={durability} -c full_page_writes={durability} \
             -c max_connections=200",
            self.port,
            self.dir.path().display()
        )
    }

    fn pg_ctl_start(&self) -> Result<()> {
        let log = self.log_path();
        self.pg_ctl(&[
            "start",
            "-l",
            &log.display().to_string(),
            "-o",
            &self.server_options(),
        ])
        .map_err(|e| {
            let server_log = std::fs::read_to_string(&log).unwrap_or_default();
            Error(format!("{e}\nserver log:\n{server_log}"))
        })
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<()> {
        let output = self
            .server_command("pg_ctl")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-w", "-t", PG_CTL_WAIT_SECONDS])
            .args(args)
            .output()
            .map_err(|e| Error(format!("cannot run pg_ctl: {e}")))?;
        checked("pg_ctl", &output)
    }

    /// A server binary, run as the service user when the tests run as root.
    fn server_command(&self, program: &str) -> Command {
        server_command(&self.bindir, self.run_as_service_user, program)
    }
}

/// `program` of `bindir`, run as the service user if `run_as_service_user`.
fn server_command(bindir: &Path, run_as_service_user: bool, program: &str) -> Command {
    let program = bindir.join(program);
    if run_as_service_user {
        let mut command = Command::new("runuser");
        command.args(["-u", SERVICE_USER, "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// Stops and removes the clusters in `temp` that a killed test process left behind.
fn sweep_orphans(temp: &Path, bindir: &Path, run_as_service_user: bool) {
    plinth_test_orphans::sweep(temp, DIR_PREFIX, |dir| {
        let _ = server_command(bindir, run_as_service_user, "pg_ctl")
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-w", "-t", PG_CTL_WAIT_SECONDS, "stop", "-m", "immediate"])
            .output();
    });
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Nothing to report to: a server that will not stop is killed with its data dir removed.
        let _ = self.pg_ctl(&["stop", "-m", "immediate"]);
    }
}

impl fmt::Debug for Postgres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Postgres")
            .field("port", &self.port)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

fn bindir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("PLINTH_PG_BINDIR") {
        return Ok(PathBuf::from(dir));
    }
    let output = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .map_err(|e| {
            Error(format!(
                "cannot run pg_config ({e}): install PostgreSQL's server binaries \
             (Debian: postgresql-15) or set PLINTH_PG_BINDIR to their directory"
            ))
        })?;
    checked("pg_config --bindir", &output)?;
    let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if !dir.join("initdb").exists() {
        return Err(Error(format!(
            "{} has no initdb: install PostgreSQL's server binaries (Debian: postgresql-15) \
             or set PLINTH_PG_BINDIR",
            dir.display()
        )));
    }
    Ok(dir)
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| Error(format!("cannot find a free loopback port: {e}")))?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|e| Error(format!("cannot find a free loopback port: {e}")))
}

/// A password for one throwaway cluster: unpredictable enough that a test never authenticates
/// by accident, from the OS's randomness (no extra crate for a test helper).
fn random_password() -> String {
    use std::hash::{BuildHasher, RandomState};
    let a = RandomState::new().hash_one(std::process::id());
    let b = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("pw{a:016x}{b:016x}")
}

fn checked(what: &str, output: &Output) -> Result<()> {
    if output.status.success() {
        return Ok(());
    }
    Err(Error(format!(
        "{what} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim(),
        String::from_utf8_lossy(&output.stdout).trim()
    )))
}

/// True if `path` is inside a cluster's temp dir; for tests of this crate.
#[doc(hidden)]
pub fn is_inside(server: &Postgres, path: &Path) -> bool {
    path.starts_with(server.dir.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_starts_answers_restarts_and_is_removed() {
        let pg = Postgres::start().unwrap();
        assert_eq!(pg.psql("postgres", "SELECT 1 + 1").unwrap().trim(), "2");
        pg.create_database("x\"; DROP DATABASE postgres; --")
            .unwrap();
        let names = pg
            .psql("postgres", "SELECT datname FROM pg_database")
            .unwrap();
        assert!(
            names
                .lines()
                .any(|n| n == "x\"; DROP DATABASE postgres; --")
        );
        assert!(names.lines().any(|n| n == "postgres"));

        pg.restart().unwrap();
        assert_eq!(pg.psql("postgres", "SELECT 3").unwrap().trim(), "3");
        pg.stop().unwrap();
        assert!(pg.psql("postgres", "SELECT 1").is_err());
        pg.resume().unwrap();
        assert_eq!(pg.psql("postgres", "SELECT 4").unwrap().trim(), "4");
        pg.psql(
            "postgres",
            "CREATE TABLE kept (n int); INSERT INTO kept VALUES (5)",
        )
        .unwrap();
        pg.shut_down().unwrap();
        assert!(pg.psql("postgres", "SELECT 1").is_err());
        pg.resume().unwrap();
        assert_eq!(
            pg.psql("postgres", "SELECT n FROM kept").unwrap().trim(),
            "5"
        );

        let dir = pg.dir.path().to_path_buf();
        drop(pg);
        assert!(!dir.exists(), "the cluster's directory is removed");
    }

    #[test]
    fn a_wrong_password_is_refused() {
        let pg = Postgres::shared().unwrap();
        let output = Command::new(pg.bindir.join("psql"))
            .args(["-X", "-At", "-h", "127.0.0.1", "-p", &pg.port().to_string()])
            .args(["-U", SUPERUSER, "-d", "postgres", "-c", "SELECT 1"])
            .env("PGPASSWORD", "not-the-password")
            .output()
            .unwrap();
        assert!(!output.status.success());
        assert!(String::from_utf8_lossy(&output.stderr).contains("password authentication failed"));
    }

    #[test]
    fn a_cluster_left_by_a_dead_process_is_stopped_and_removed() {
        let server = Postgres::start().unwrap();
        let dir = server.dir.path().to_owned();
        // As a killed test process leaves it: running, never dropped, its owner gone.
        let mut dead = Command::new("true").spawn().unwrap();
        dead.wait().unwrap();
        plinth_test_orphans::mark_owner(&dir, dead.id()).unwrap();
        let (bindir, as_service_user) = (server.bindir.clone(), server.run_as_service_user);
        let postmaster = std::fs::read_to_string(server.data_dir().join("postmaster.pid")).unwrap();
        let postmaster: u32 = postmaster.lines().next().unwrap().parse().unwrap();
        assert!(plinth_test_orphans::is_running(postmaster));
        std::mem::forget(server);

        // A cluster of a living process is left alone.
        let alive = Postgres::start().unwrap();
        let temp = dir.parent().unwrap();
        sweep_orphans(temp, &bindir, as_service_user);
        assert!(!dir.exists(), "the orphan's dir is removed");
        assert!(
            !plinth_test_orphans::is_running(postmaster),
            "the orphan's server is stopped"
        );
        assert!(alive.dir.path().exists());
        alive.psql("postgres", "SELECT 1").unwrap();
    }

    #[test]
    fn a_tls_cluster_takes_tls_connections_only() {
        let pg = Postgres::start_tls().unwrap();
        let tls = pg.tls().unwrap();
        assert!(tls.ca.contains("BEGIN CERTIFICATE"));
        assert!(tls.client_key.contains("PRIVATE KEY"));
        assert_eq!(pg.psql("postgres", "SHOW ssl").unwrap().trim(), "on");
        let connect = |mode: &str, user: &str, extra: &[(&str, String)]| {
            let mut command = Command::new(pg.bindir.join("psql"));
            command
                .args(["-X", "-At", "-h", "127.0.0.1", "-p", &pg.port().to_string()])
                .args(["-U", user, "-d", "postgres", "-c"])
                .arg("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                .env("PGPASSWORD", pg.password())
                .env("PGSSLMODE", mode);
            for (key, value) in extra {
                command.env(key, value);
            }
            command.output().unwrap()
        };
        let plain = connect("disable", SUPERUSER, &[]);
        assert!(!plain.status.success());
        let stderr = String::from_utf8_lossy(&plain.stderr);
        assert!(stderr.contains("no encryption"), "{stderr}");
        let encrypted = connect("require", SUPERUSER, &[]);
        assert_eq!(String::from_utf8_lossy(&encrypted.stdout).trim(), "t");

        // The client certificate logs in as its user, without a password.
        let dir = pg.dir.path().join("tls");
        let by_cert = connect(
            "verify-ca",
            CERT_USER,
            &[
                ("PGSSLROOTCERT", dir.join("ca.crt").display().to_string()),
                ("PGSSLCERT", dir.join("client.crt").display().to_string()),
                ("PGSSLKEY", dir.join("client.key").display().to_string()),
                ("PGPASSWORD", String::new()),
            ],
        );
        assert!(
            by_cert.status.success(),
            "{}",
            String::from_utf8_lossy(&by_cert.stderr)
        );
    }

    #[test]
    fn shared_handles_are_one_server() {
        let a = Postgres::shared().unwrap();
        let b = Postgres::shared().unwrap();
        assert_eq!(a.port(), b.port());
        assert!(is_inside(&a, &a.log_path()));
    }

    #[test]
    fn the_shared_server_outlives_its_handles() {
        let first = Postgres::shared().unwrap();
        let (port, dir) = (first.port(), first.dir.path().to_owned());
        drop(first);
        let again = Postgres::shared().unwrap();
        assert_eq!((again.port(), again.dir.path()), (port, dir.as_path()));
        assert_eq!(again.psql("postgres", "SELECT 1").unwrap().trim(), "1");
    }

    /// Run by [`the_shared_server_is_removed_when_the_process_exits`] in a process of its own:
    /// starts the shared server and prints its directory and its postmaster's pid.
    #[test]
    #[ignore = "run by the_shared_server_is_removed_when_the_process_exits"]
    fn start_the_shared_server_and_exit() {
        let server = Postgres::shared().unwrap();
        let pid = std::fs::read_to_string(server.data_dir().join("postmaster.pid")).unwrap();
        println!("cluster dir: {}", server.dir.path().display());
        println!("postmaster: {}", pid.lines().next().unwrap());
    }

    #[test]
    fn the_shared_server_is_removed_when_the_process_exits() {
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "--nocapture"])
            .arg("tests::start_the_shared_server_and_exit")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&child.stdout);
        assert!(child.status.success(), "{stdout}");
        let line = |prefix: &str| {
            (stdout.lines().find_map(|l| l.strip_prefix(prefix)))
                .unwrap_or_else(|| panic!("no {prefix:?} in:\n{stdout}"))
                .to_owned()
        };
        let (dir, postmaster) = (line("cluster dir: "), line("postmaster: "));
        // `exit` ran the stop, which waits for the server (`pg_ctl -w`), then removed its dir.
        assert!(
            !plinth_test_orphans::is_running(postmaster.parse().unwrap()),
            "the server still runs"
        );
        assert!(!Path::new(&dir).exists(), "{dir} is left behind");
    }
}
