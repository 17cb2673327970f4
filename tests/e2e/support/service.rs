//! A real `plinth serve` for the tests that drive the CLI against the service: a database of its
//! own on the shared test PostgreSQL, real `plinth-serve` processes (any number of replicas on
//! that database), tokens made by `plinth-serve token create`.
//!
//! `plinth serve` execs the `plinth-serve` binary; the tests run that binary themselves, built
//! once per test process apart from the outer `cargo test`'s target directory (whose lock that
//! command holds while the tests run), so it is always the service of the sources under test.
//! `PLINTH_TEST_SERVE` names one already built instead, as for the service's own tests:
//! scripts/test passes the one its `cargo test` of plinth-service built from the same sources,
//! sparing a second debug build of the service and its dependencies.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};

use plinth_test_postgres::Postgres;

use super::repo_root;

/// The `plinth-serve` binary of the sources under test: `PLINTH_TEST_SERVE`, or built on first
/// use.
pub fn serve_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(built) = std::env::var_os("PLINTH_TEST_SERVE").filter(|v| !v.is_empty()) {
                return PathBuf::from(built);
            }
            let target = repo_root().join("target/e2e-service");
            let status = Command::new(env!("CARGO"))
                .args([
                    "build",
                    "--quiet",
                    "-p",
                    "plinth-service",
                    "--bin",
                    "plinth-serve",
                ])
                .env("CARGO_TARGET_DIR", &target)
                .current_dir(repo_root())
                .status()
                .expect("running cargo");
            assert!(status.success(), "building plinth-serve failed");
            target.join("debug/plinth-serve")
        })
        .clone()
}

/// A database of its own for one test's service, on the shared test server.
pub struct ServiceDatabase {
    pub server: Arc<Postgres>,
    /// Its name on the server (for `server.psql(name, …)`).
    pub name: String,
    /// Its `postgres://` URL, as `plinth serve --database` takes it.
    pub url: String,
    /// The master key every replica on this database is given, so that stacks on the service
    /// use its secrets provider by default, as a team's would.
    pub master_key: PathBuf,
    _key_dir: tempfile::TempDir,
}

impl ServiceDatabase {
    pub fn new() -> ServiceDatabase {
        ServiceDatabase::on(Postgres::shared().expect("a PostgreSQL server for the tests"))
    }

    /// A database on a server of its own, which the test may stop and start.
    pub fn on_own_server() -> ServiceDatabase {
        ServiceDatabase::on(Arc::new(
            Postgres::start().expect("a PostgreSQL server for the test"),
        ))
    }

    fn on(server: Arc<Postgres>) -> ServiceDatabase {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "e2e_service_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        server.create_database(&name).unwrap();
        let url = server.url(&name);
        let key_dir = tempfile::tempdir().unwrap();
        let master_key = key_dir.path().join("master.key");
        let out = Command::new(serve_binary())
            .args(["key", "create"])
            .arg(&master_key)
            .output()
            .expect("running plinth-serve key create");
        assert!(
            out.status.success(),
            "plinth serve key create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ServiceDatabase {
            server,
            name,
            url,
            master_key,
            _key_dir: key_dir,
        }
    }

    /// Starts a service (a replica, if one runs already) on this database on a free loopback
    /// port, with `extra` arguments (`--lease 2s`, say).
    pub fn serve(&self, extra: &[&str]) -> ServiceProcess {
        self.serve_logging(extra, Stdio::inherit())
    }

    /// [`serve`](Self::serve), what the service logs (its warnings: the database errors it
    /// answered 503) going to `log`.
    pub fn serve_logging(&self, extra: &[&str], log: impl Into<Stdio>) -> ServiceProcess {
        let mut child = Command::new(serve_binary())
            // As the README says to: the password off the command line.
            .env("PLINTH_DATABASE_URL", &self.url)
            // Warnings only: a line per request would drown the tests' output.
            .env("RUST_LOG", "warn")
            .args(["--listen", "127.0.0.1:0"])
            .arg("--master-key")
            .arg(&self.master_key)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("starting plinth-serve");
        // The service prints the address it listens on once it accepts connections.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = (line.trim().strip_prefix("listening on "))
            .unwrap_or_else(|| panic!("plinth-serve did not start: {line:?}"))
            .to_owned();
        ServiceProcess { child, url }
    }

    /// A new access token for `user` (created if new) that may do anything, as `plinth serve
    /// token create` prints it.
    pub fn token(&self, user: &str) -> String {
        self.token_granting(user, &["--level", "admin"])
    }

    /// [`token`](Self::token), made with the `token create` options `grants` (`--level read`, …).
    pub fn token_granting(&self, user: &str, grants: &[&str]) -> String {
        let out = Command::new(serve_binary())
            .args(["token", "create", "--user", user])
            .env("PLINTH_DATABASE_URL", &self.url)
            .args(grants)
            .output()
            .expect("running plinth-serve token create");
        assert!(
            out.status.success(),
            "plinth serve token create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }
}

/// A running `plinth-serve`; killed when dropped.
pub struct ServiceProcess {
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl ServiceProcess {
    /// Kills the service at once (SIGKILL), as a crashed replica.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A service on a database of its own, and a token of user `alice` on it: what most tests on
/// the service start from.
pub struct TestService {
    pub database: ServiceDatabase,
    pub process: ServiceProcess,
    pub token: String,
}

impl TestService {
    pub fn start() -> TestService {
        TestService::start_with(&[])
    }

    /// [`start`](Self::start), the service given `extra` arguments.
    pub fn start_with(extra: &[&str]) -> TestService {
        let database = ServiceDatabase::new();
        let process = database.serve(extra);
        let token = database.token("alice");
        TestService {
            database,
            process,
            token,
        }
    }

    pub fn url(&self) -> &str {
        &self.process.url
    }
}
