//! The team backend for the tests: a real PostgreSQL (a database of the test's own on the
//! shared server, or a server of its own for a test that stops it) and real `plinth serve`
//! processes on free loopback ports, run through the CLI as a user runs them, with an access
//! token made by `plinth serve token create`. Everything stops when the test drops it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use plinth_test_postgres::Postgres;

use super::{Backend, repo_root};

/// The user the tests' tokens are made for; a refused update names it as the holder.
pub const USER: &str = "e2e-user";

/// Where the service binary is built: apart from the outer `cargo test`'s target dir, whose
/// lock that command holds while the tests run.
fn service_target_dir() -> PathBuf {
    repo_root().join("target/e2e-service")
}

/// The directory holding `plinth-serve`, built from source once per test process, so that
/// `plinth serve` (which runs the binary from its PATH) runs the service of this source tree.
fn service_bin_dir() -> &'static PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "plinth-service", "--bin"])
            .arg("plinth-serve")
            .env("CARGO_TARGET_DIR", service_target_dir())
            .current_dir(repo_root())
            .status()
            .expect("running cargo");
        assert!(status.success(), "building plinth-serve failed");
        service_target_dir().join("debug")
    })
}

/// `plinth serve ARGS`: the real CLI, finding the service binary on its PATH.
fn plinth_serve(args: &[&str]) -> Command {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::iter::once(service_bin_dir().clone()).chain(std::env::split_paths(&path)),
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_plinth"));
    command
        .arg("serve")
        .args(args)
        .env("PATH", path)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

/// A database for one test, on the shared server or on a server of its own.
pub struct Database {
    server: Arc<Postgres>,
    pub url: String,
    pub name: String,
}

impl Database {
    /// A database of its own on the server the tests of this process share.
    pub fn shared() -> Database {
        Database::on(Postgres::shared().expect("starting PostgreSQL"))
    }

    /// A database on a server of its own, which the test may stop and start.
    pub fn own_server() -> Database {
        Database::on(Arc::new(Postgres::start().expect("starting PostgreSQL")))
    }

    fn on(server: Arc<Postgres>) -> Database {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "e2e_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        server.create_database(&name).unwrap();
        let url = server.url(&name);
        Database { server, url, name }
    }

    pub fn server(&self) -> &Postgres {
        &self.server
    }

    /// One query's rows, as `psql -At` prints them.
    pub fn query(&self, sql: &str) -> String {
        self.server.psql(&self.name, sql).unwrap()
    }
}

/// One `plinth serve` process; killed when dropped.
pub struct Replica {
    child: Child,
    /// Kept open: the service never meets a closed stdout.
    _stdout: BufReader<ChildStdout>,
    pub url: String,
    /// What the service logged (warnings: the database errors it answered 503).
    pub log: PathBuf,
    _log_dir: tempfile::TempDir,
}

impl Replica {
    /// Starts a replica on `database`, on a free loopback port, leases lasting `lease`.
    pub fn start(database: &Database, lease: &str) -> Replica {
        let log_dir = tempfile::tempdir().unwrap();
        let log = log_dir.path().join("serve.log");
        let mut child = plinth_serve(&["--database", &database.url])
            .args(["--listen", "127.0.0.1:0", "--lease", lease])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("starting plinth serve");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "plinth serve did not start: {line:?}\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        };
        Replica {
            url: url.to_owned(),
            child,
            _stdout: stdout,
            log,
            _log_dir: log_dir,
        }
    }

    /// Kills the process at once (SIGKILL), as a crashed machine would stop it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// What the replica logged so far.
    pub fn logged(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `plinth serve token create`: a new access token for `user`, printed once.
pub fn create_token(database: &Database, user: &str) -> String {
    let out = plinth_serve(&[
        "token",
        "create",
        "--database",
        &database.url,
        "--user",
        user,
    ])
    .output()
    .expect("running plinth serve token create");
    assert!(
        out.status.success(),
        "plinth serve token create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(!token.is_empty(), "no token printed");
    token
}

/// A database, replicas of the service in front of it, and a token of [`USER`].
pub struct Team {
    pub replicas: Vec<Replica>,
    pub token: String,
    /// Dropped last: the replicas stop before their database goes.
    pub database: Database,
}

impl Team {
    /// `replicas` services on a database of their own on the shared server, leases lasting
    /// `lease` (`300s` is the service's default; tests of expiry use a short one).
    pub fn start(replicas: usize, lease: &str) -> Team {
        Team::on(Database::shared(), replicas, lease)
    }

    /// [`start`](Self::start) on `database`.
    pub fn on(database: Database, replicas: usize, lease: &str) -> Team {
        let token = create_token(&database, USER);
        let replicas = (0..replicas)
            .map(|_| Replica::start(&database, lease))
            .collect();
        Team {
            replicas,
            token,
            database,
        }
    }

    /// The backend as `plinth` reaches it through replica `i`.
    pub fn backend(&self, i: usize) -> Backend {
        Backend::Service {
            url: self.replicas[i].url.clone(),
            token: self.token.clone(),
        }
    }
}

/// Polls `condition` every 20 ms until it holds, failing after `limit` (far above what it
/// should take: the limit only tells a hang from a slow machine).
pub fn eventually(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen in {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
