//! A throwaway OCI registry for tests: the CNCF distribution server (`docker-registry`, Debian's
//! package of distribution 2.8) started on a free loopback port with its storage in a temp dir,
//! stopped and removed when its handle is dropped (also while a failing test unwinds).
//!
//! [`Registry::start`] serves plain HTTP with no authentication; [`Registry::start_secure`]
//! serves TLS with a certificate from a CA made for it (see [`Registry::ca_file`]) and asks for
//! basic authentication against an htpasswd file holding one user.
//!
//! ```no_run
//! let registry = plinth_test_registry::Registry::start().unwrap();
//! let reference = format!("oci://{}/plugins/random:0.1.0", registry.authority());
//! ```

use std::fmt;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The binary of the distribution server, as Debian installs it.
const SERVER: &str = "docker-registry";
/// The prefix of each registry's temp dir.
const DIR_PREFIX: &str = "plinth-registry-";
/// The file in a registry's temp dir naming its server's process.
const SERVER_FILE: &str = "server";
/// The user [`Registry::start_secure`] creates.
pub const USER: &str = "plinth";
/// A free port can be taken by another process between probing and binding; starts that fail
/// are retried on a new port this many times.
const START_ATTEMPTS: usize = 5;
/// How long a start may take before it counts as hung. Generous: CI machines are loaded; the
/// bound only tells a hang from a slow start.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// What went wrong while setting up a test registry.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A running registry. Killed and its storage deleted on drop.
pub struct Registry {
    dir: TempDir,
    port: u16,
    tls: bool,
    password: Option<String>,
    child: Option<Child>,
}

impl Registry {
    /// A registry serving plain HTTP on loopback, without authentication.
    pub fn start() -> Result<Registry> {
        Registry::launch(false)
    }

    /// A registry serving TLS (its CA in [`Registry::ca_file`]) that asks for basic
    /// authentication as [`USER`] with [`Registry::password`].
    pub fn start_secure() -> Result<Registry> {
        Registry::launch(true)
    }

    fn launch(tls: bool) -> Result<Registry> {
        sweep_orphans(&std::env::temp_dir());
        let dir = plinth_test_orphans::owned_dir(DIR_PREFIX)
            .map_err(|e| Error(format!("cannot create a temp dir for the registry: {e}")))?;
        let mut registry = Registry {
            dir,
            port: 0,
            tls,
            password: None,
            child: None,
        };
        if tls {
            registry.make_certificates()?;
            let password = random_password();
            let hash = bcrypt::hash(&password, 4)
                .map_err(|e| Error(format!("cannot hash the registry's password: {e}")))?;
            write(
                &registry.dir.path().join("htpasswd"),
                &format!("{USER}:{hash}\n"),
            )?;
            registry.password = Some(password);
        }
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            registry.port = free_port()?;
            match registry.serve() {
                Ok(()) => return Ok(registry),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.expect("at least one attempt"))
    }

    /// `127.0.0.1:PORT`, the authority of `oci://` references to this registry.
    pub fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The loopback port the registry listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The password of [`USER`], for a secure registry.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The CA certificate (PEM) the secure registry's certificate is signed by.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Where the registry keeps its blobs and repositories (distribution's filesystem layout:
    /// `docker/registry/v2/blobs/sha256/<2 hex>/<hex>/data`), for tests that tamper with it.
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    /// What the registry logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// Stops the registry (killed: its storage is on disk already), keeping its storage.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the stopped registry again on the same port, with the same storage.
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        self.serve()
    }

    /// Starts the server with a config for the current port and waits until `/v2/` answers.
    fn serve(&mut self) -> Result<()> {
        let config = self.dir.path().join("config.yml");
        write(&config, &self.config())?;
        let log = std::fs::File::create(self.dir.path().join("registry.log"))
            .map_err(|e| Error(format!("cannot create the registry's log: {e}")))?;
        let err_log = log
            .try_clone()
            .map_err(|e| Error(format!("cannot open the registry's log: {e}")))?;
        let child = Command::new(SERVER)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .spawn()
            .map_err(|e| {
                Error(format!(
                    "cannot run `{SERVER}` ({e}): install Debian's docker-registry package \
                     (scripts/setup does)"
                ))
            })?;
        // For the sweep, should this process be killed before it drops the registry.
        write(&self.dir.path().join(SERVER_FILE), &child.id().to_string())?;
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(Error(format!(
                    "the registry exited ({status}) while starting:\n{}",
                    self.log()
                )));
            }
            if self.answers() {
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                self.stop();
                return Err(Error(format!(
                    "the registry did not answer within {START_TIMEOUT:?}:\n{}",
                    self.log()
                )));
            }
            // Polls readiness only: nothing a test asserts depends on this interval.
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether `GET /v2/` gets an HTTP answer (401 counts: the server is up and asks for
    /// credentials).
    fn answers(&self) -> bool {
        let scheme = if self.tls { "https" } else { "http" };
        let mut tls = ureq::tls::TlsConfig::builder();
        if self.tls {
            let Ok(pem) = std::fs::read(self.ca_file()) else {
                return false;
            };
            let certs: Vec<_> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
                    _ => None,
                })
                .collect();
            tls = tls.root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(certs)));
        }
        let agent = ureq::Agent::config_builder()
            .tls_config(tls.build())
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .new_agent();
        agent
            .get(format!("{scheme}://127.0.0.1:{}/v2/", self.port))
            .call()
            .is_ok()
    }

    fn config(&self) -> String {
        let dir = self.dir.path();
        let mut config = format!(
            "version: 0.1\n\
             log:\n  level: info\n  accesslog:\n    disabled: false\n\
             storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:{port}\n  secret: plinth-test-secret\n",
            storage = self.storage().display(),
            port = self.port
        );
        if self.tls {
            config.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n\
                 auth:\n  htpasswd:\n    realm: plinth-test\n    path: {}\n",
                dir.join("server.pem").display(),
                dir.join("server.key").display(),
                dir.join("htpasswd").display()
            ));
        }
        config
    }

    /// A CA and a server certificate for 127.0.0.1 and localhost, signed by it, with `openssl`.
    fn make_certificates(&self) -> Result<()> {
        let dir = self.dir.path();
        let ext = dir.join("server.ext");
        write(
            &ext,
            "subjectAltName = IP:127.0.0.1, DNS:localhost\n\
             basicConstraints = CA:FALSE\n\
             keyUsage = digitalSignature, keyEncipherment\n\
             extendedKeyUsage = serverAuth\n",
        )?;
        let steps: [&[&str]; 3] = [
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=plinth test CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "2",
                "-extfile",
                "server.ext",
            ],
        ];
        for args in steps {
            let output = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .map_err(|e| Error(format!("cannot run openssl: {e}")))?;
            if !output.status.success() {
                return Err(Error(format!(
                    "openssl {} failed: {}",
                    args[0],
                    String::from_utf8_lossy(&output.stderr)
                )));
            }
        }
        Ok(())
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Kills and removes the registries in `temp` that a killed test process left behind.
fn sweep_orphans(temp: &Path) {
    plinth_test_orphans::sweep(temp, DIR_PREFIX, |dir| {
        let server = std::fs::read_to_string(dir.join(SERVER_FILE)).unwrap_or_default();
        // Only the server started on this dir's config (a pid may be reused).
        if let Ok(pid) = server.trim().parse::<u32>()
            && plinth_test_orphans::runs_on(pid, dir)
        {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .stderr(Stdio::null())
                .status();
        }
    });
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error(format!("cannot write {}: {e}", path.display())))
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| Error(format!("cannot find a free loopback port: {e}")))?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|e| Error(format!("cannot find a free loopback port: {e}")))
}

/// A password for one throwaway registry, from the OS's randomness (no extra crate for a test
/// helper).
fn random_password() -> String {
    use std::hash::{BuildHasher, RandomState};
    let a = RandomState::new().hash_one(std::process::id());
    let b = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("pw{a:016x}{b:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn plain_registry_answers_and_stops() {
        let registry = Registry::start().unwrap();
        let port = registry.port();
        assert!(registry.answers());
        drop(registry);
        assert!(
            std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err(),
            "the registry still listens after its handle was dropped"
        );
    }

    #[test]
    fn a_registry_left_by_a_dead_process_is_killed_and_removed() {
        let mut registry = Registry::start().unwrap();
        // As a killed test process leaves it: running, never dropped, its owner gone.
        let mut dead = Command::new("true").spawn().unwrap();
        dead.wait().unwrap();
        let dir = registry.dir.path().to_owned();
        plinth_test_orphans::mark_owner(&dir, dead.id()).unwrap();
        let mut server = registry.child.take().unwrap();
        std::mem::forget(registry);
        assert!(plinth_test_orphans::runs_on(server.id(), &dir));

        // A registry of a living process is left alone.
        let alive = Registry::start().unwrap();
        sweep_orphans(dir.parent().unwrap());
        // The server is this process's child: reaped once the sweep's kill ended it.
        server.wait().unwrap();
        assert!(!dir.exists(), "the orphan's dir is removed");
        assert!(alive.answers());
    }

    #[test]
    fn secure_registry_asks_for_credentials() {
        let registry = Registry::start_secure().unwrap();
        let pem = std::fs::read(registry.ca_file()).unwrap();
        let certs: Vec<_> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
                _ => None,
            })
            .collect();
        let agent = ureq::Agent::config_builder()
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(certs)))
                    .build(),
            )
            .http_status_as_error(false)
            .build()
            .new_agent();
        let url = format!("https://{}/v2/", registry.authority());
        let anonymous = agent.get(&url).call().unwrap();
        assert_eq!(anonymous.status(), 401, "{}", registry.log());
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD
                .encode(format!("{USER}:{}", registry.password().unwrap()))
        );
        let authorized = agent
            .get(&url)
            .header("Authorization", basic)
            .call()
            .unwrap();
        assert_eq!(authorized.status(), 200, "{}", registry.log());
    }
}
