//! The team backend for the benchmark: a PostgreSQL cluster of its own and one `plinth serve`
//! on it, on loopback; an access token for the runs. The cluster runs as the tests' do (`fsync`
//! and `synchronous_commit` off) or as a production server does (both on).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use anyhow::{Context, bail};
use plinth_test_postgres::Postgres;

/// What the CLI is given to reach the service.
pub struct Service {
    /// The backend's name in the report: `service`, or `service (fsync on)`.
    pub name: &'static str,
    pub url: String,
    pub token: String,
    /// `plinth serve`, stopped when this is dropped.
    pub serve: Child,
    _stdout: BufReader<ChildStdout>,
    /// Holds the service's master key, as a team's service has one: stacks on it default to the
    /// service-managed secrets provider.
    _key_dir: tempfile::TempDir,
    /// Dropped last: the cluster is stopped and removed after the service.
    _postgres: Postgres,
}

impl Service {
    /// Starts PostgreSQL, durable (`fsync` and `synchronous_commit` on) if `durable`, and
    /// `serve` (the `plinth-serve` binary) on it; the service's warnings go to `log`.
    pub fn start(serve: &Path, log: &Path, durable: bool) -> anyhow::Result<Service> {
        let postgres = match durable {
            true => Postgres::start_durable(),
            false => Postgres::start(),
        }
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        check_durability(&postgres, durable)?;
        postgres
            .create_database("plinth")
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let database = postgres.url("plinth");
        let token = Command::new(serve)
            .args(["token", "create", "--user", "bench"])
            .env("PLINTH_DATABASE_URL", &database)
            .output()
            .with_context(|| format!("running {}", serve.display()))?;
        if !token.status.success() {
            bail!(
                "plinth serve token create failed: {}",
                String::from_utf8_lossy(&token.stderr)
            );
        }
        let token = String::from_utf8(token.stdout)?.trim().to_owned();
        let key_dir = tempfile::tempdir()?;
        let master_key = key_dir.path().join("master.key");
        let created = Command::new(serve)
            .args(["key", "create"])
            .arg(&master_key)
            .output()
            .with_context(|| format!("running {}", serve.display()))?;
        if !created.status.success() {
            bail!(
                "plinth serve key create failed: {}",
                String::from_utf8_lossy(&created.stderr)
            );
        }

        let mut child = Command::new(serve)
            .args(["--listen", "127.0.0.1:0"])
            .env("PLINTH_DATABASE_URL", &database)
            // Warnings only, as the measurements before the request log were taken.
            .env("RUST_LOG", "warn")
            .arg("--master-key")
            .arg(&master_key)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log)?)
            .spawn()
            .with_context(|| format!("starting {}", serve.display()))?;
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let Some(listening) = line.trim().strip_prefix("listening on http://") else {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "plinth serve did not start ({line:?}); see {}",
                log.display()
            );
        };
        Ok(Service {
            name: match durable {
                true => "service (fsync on)",
                false => "service",
            },
            url: format!("http://{listening}"),
            token,
            serve: child,
            _stdout: stdout,
            _key_dir: key_dir,
            _postgres: postgres,
        })
    }
}

/// Makes sure the cluster runs with the settings the report names: a figure measured with
/// `fsync` off must never be reported as one with it on.
fn check_durability(postgres: &Postgres, durable: bool) -> anyhow::Result<()> {
    let wanted = if durable { "on" } else { "off" };
    for setting in ["fsync", "synchronous_commit", "full_page_writes"] {
        let shown = (postgres.psql("postgres", &format!("SHOW {setting}")))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        if shown.trim() != wanted {
            bail!(
                "the benchmark's PostgreSQL runs with {setting} = {}, not {wanted}",
                shown.trim()
            );
        }
    }
    Ok(())
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.serve.kill();
        let _ = self.serve.wait();
    }
}
