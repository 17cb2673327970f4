//! A throwaway RabbitMQ broker for tests: Debian's `rabbitmq-server`, run as a node of its own
//! (its own name, Erlang cookie, EPMD, ports, data, logs and configuration, all in a temp dir, all
//! on loopback), with the management, shovel, federation and AMQP 1.0 plugins enabled. It is
//! killed and its directory removed when the handle is dropped — also when the test panics; a
//! broker left by a killed test process is removed by the next start.
//!
//! The server's scripts are found in `PLINTH_RABBITMQ_BINDIR`, else `/usr/lib/rabbitmq/bin`
//! (Debian's `rabbitmq-server` package; `scripts/setup` installs it). The broker has one user,
//! [`USERNAME`], an administrator with a password made for each broker.
//!
//! What a test reads of the broker (its definitions, its shovels, whether a password logs in)
//! goes over the management API and AMQP: each `rabbitmqctl` run starts an Erlang VM, about a
//! second of CPU, and the tests read the broker dozens of times. [`RabbitMq::ctl`] is for
//! changing it as an operator would.
//!
//! ```no_run
//! let broker = plinth_test_rabbitmq::RabbitMq::start().unwrap();
//! broker.ctl(&["add_vhost", "orders"]).unwrap();
//! let definitions = broker.definitions().unwrap();
//! assert!(definitions["vhosts"].as_array().unwrap().iter().any(|v| v["name"] == "orders"));
//! assert!(broker.logs_in(plinth_test_rabbitmq::USERNAME, broker.password()).unwrap());
//! ```

mod amqp;

use std::fmt;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine;
use tempfile::TempDir;

/// The broker's one user, an administrator.
pub const USERNAME: &str = "plinth";
/// Debian's `rabbitmq-server` puts the server's scripts here.
const DEFAULT_BINDIR: &str = "/usr/lib/rabbitmq/bin";
/// The plugins every broker runs: the HTTP API, what shovels and federation upstreams need, and
/// AMQP 1.0 (a listener beside 0-9-1 on the same port, which `amqp10` shovels connect to).
const PLUGINS: &[&str] = &[
    "rabbitmq_management",
    "rabbitmq_amqp1_0",
    "rabbitmq_shovel",
    "rabbitmq_shovel_management",
    "rabbitmq_federation",
    "rabbitmq_federation_management",
];
/// How long the broker may take to boot (seconds). Generous: CI machines are loaded, and the
/// bound only tells a hang from a slow start; a broker that dies is noticed at once.
const BOOT_TIMEOUT_SECONDS: &str = "180";
/// The prefix of each broker's temp dir.
const DIR_PREFIX: &str = "plinth-rabbitmq-";
/// The file in a broker's temp dir naming its server's process group and its EPMD port.
const SERVER_FILE: &str = "server";
/// A free port can be taken by another process between probing and binding; starts that fail
/// are retried on new ports this many times.
const START_ATTEMPTS: usize = 3;
/// How long a request to the management API may take: only tells a hung broker from a slow one.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long [`eventually`] waits for what the broker does on its own (a shovel starting or
/// stopping). Generous, as [`BOOT_TIMEOUT_SECONDS`]: the bound only tells "never" from "slowly".
const EVENTUALLY_TIMEOUT: Duration = Duration::from_secs(180);
/// How often [`eventually`] asks again.
const EVENTUALLY_PAUSE: Duration = Duration::from_millis(50);

/// What went wrong while setting up or talking to a test broker.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The loopback ports of one broker.
#[derive(Debug, Clone, Copy)]
struct Ports {
    amqp: u16,
    management: u16,
    /// Erlang distribution: how `rabbitmqctl` reaches the node.
    dist: u16,
    /// The node's own EPMD, so that no broker shares one with another or with the system's.
    epmd: u16,
}

/// A running broker. Killed and its directory removed on drop.
pub struct RabbitMq {
    bindir: PathBuf,
    dir: TempDir,
    node: String,
    ports: Ports,
    password: String,
    /// The server's process group (the server script's pid), killed whole on drop.
    group: u32,
    /// Reaps the server; ends when it exits.
    reaper: Option<JoinHandle<()>>,
}

impl RabbitMq {
    /// A new broker, booted: its management API answers.
    pub fn start() -> Result<RabbitMq> {
        let bindir = bindir()?;
        sweep_orphans(&std::env::temp_dir());
        let mut last_error = None;
        for attempt in 0..START_ATTEMPTS {
            let dir = plinth_test_orphans::owned_dir(DIR_PREFIX)
                .map_err(|e| Error(format!("cannot create a temp dir for the broker: {e}")))?;
            let ports = Ports {
                amqp: free_port()?,
                management: free_port()?,
                dist: free_port()?,
                epmd: free_port()?,
            };
            let node = format!(
                "plinth-{}-{attempt}-{}@localhost",
                std::process::id(),
                ports.amqp
            );
            match boot(&bindir, dir, node, ports) {
                Ok(broker) => return Ok(broker),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.expect("at least one attempt"))
    }

    /// The management API's base URL, `http://127.0.0.1:PORT`: the provider's endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.management_authority())
    }

    /// `127.0.0.1:PORT` of the management API: what a project grants under `http:`.
    pub fn management_authority(&self) -> String {
        format!("127.0.0.1:{}", self.ports.management)
    }

    /// The AMQP 0-9-1 port clients connect to.
    pub fn amqp_port(&self) -> u16 {
        self.ports.amqp
    }

    /// The node's name, `plinth-...@localhost`.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The password of [`USERNAME`].
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Runs `rabbitmqctl` against this node and returns what it printed.
    pub fn ctl(&self, args: &[&str]) -> Result<String> {
        let output = ctl_command(&self.bindir, self.dir.path(), &self.node, self.ports.epmd)
            .args(args)
            .output()
            .map_err(|e| Error(format!("cannot run rabbitmqctl: {e}")))?;
        checked(&format!("rabbitmqctl {}", args.join(" ")), &output)?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Everything the broker is configured with — vhosts, users, permissions, topic
    /// permissions, exchanges, queues, bindings, policies, and parameters (shovels, federation
    /// upstreams, operator policies, vhost limits) — as the management API exports them, each
    /// list sorted so that two exports compare equal when the broker holds the same. Each vhost
    /// has its `name` and its `metadata` (description, tags, default queue type), which the
    /// export leaves out and `rabbitmqctl export_definitions` has; its limits are among the
    /// parameters. Unlike `rabbitmqctl`'s, a queue has no `type`: its `x-queue-type` argument
    /// names it.
    pub fn definitions(&self) -> Result<serde_json::Value> {
        let mut definitions = self.get("/api/definitions")?;
        let vhosts = match self.get("/api/vhosts")? {
            serde_json::Value::Array(vhosts) => vhosts,
            other => return Err(Error(format!("GET /api/vhosts gave no list: {other}"))),
        };
        let vhosts = (vhosts.into_iter())
            .map(|v| serde_json::json!({"name": v["name"], "metadata": v["metadata"]}))
            .collect();
        if let Some(object) = definitions.as_object_mut() {
            object.insert("vhosts".to_owned(), serde_json::Value::Array(vhosts));
            for list in object.values_mut().filter_map(|v| v.as_array_mut()) {
                list.sort_by_key(|item| item.to_string());
            }
        }
        Ok(definitions)
    }

    /// The shovels the broker runs, each with its `name`, `vhost` and `state`, as
    /// `rabbitmqctl shovel_status` lists them.
    pub fn shovels(&self) -> Result<Vec<serde_json::Value>> {
        match self.get("/api/shovels")? {
            serde_json::Value::Array(shovels) => Ok(shovels),
            other => Err(Error(format!("GET /api/shovels gave no list: {other}"))),
        }
    }

    /// Whether `user` logs in with `password`, over AMQP as an application does (what
    /// `rabbitmqctl authenticate_user` checks).
    pub fn logs_in(&self, user: &str, password: &str) -> Result<bool> {
        amqp::logs_in(self.ports.amqp, user, password)
    }

    /// `GET` of the management API's `path`, as [`USERNAME`], parsed.
    fn get(&self, path: &str) -> Result<serde_json::Value> {
        let failed = |e: &dyn fmt::Display| Error(format!("GET {path} of the broker: {e}"));
        let credentials = format!("{USERNAME}:{}", self.password);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
            .build()
            .into();
        let text = agent
            .get(format!("{}{path}", self.endpoint()))
            .header(
                "Authorization",
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(credentials)
                ),
            )
            .call()
            .and_then(|mut response| response.body_mut().read_to_string())
            .map_err(|e| failed(&e))?;
        serde_json::from_str(&text).map_err(|e| failed(&format!("not JSON ({e}): {text}")))
    }

    /// Where the broker writes its log, to show when a test fails.
    pub fn log_path(&self) -> PathBuf {
        self.dir
            .path()
            .join("log")
            .join(format!("{}.log", self.node))
    }

    /// Kills the server's processes and its EPMD.
    fn kill(&mut self) {
        // Nothing to report to: a broker that will not die leaves processes, not a test failure.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.group)])
            .stderr(Stdio::null())
            .status();
        if let Some(reaper) = self.reaper.take() {
            let _ = reaper.join();
        }
        kill_epmd(self.ports.epmd);
    }
}

impl Drop for RabbitMq {
    fn drop(&mut self) {
        self.kill();
    }
}

impl fmt::Debug for RabbitMq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RabbitMq")
            .field("node", &self.node)
            .field("ports", &self.ports)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// Writes the broker's configuration into `dir`, starts it and waits until it has booted.
fn boot(bindir: &Path, dir: TempDir, node: String, ports: Ports) -> Result<RabbitMq> {
    let password = random_password();
    write(
        &dir.path().join("rabbitmq.conf"),
        &format!(
            "listeners.tcp.1 = 127.0.0.1:{amqp}\n\
             management.tcp.ip = 127.0.0.1\n\
             management.tcp.port = {management}\n\
             default_user = {USERNAME}\n\
             default_pass = {password}\n\
             default_user_tags.administrator = true\n\
             default_permissions.configure = .*\n\
             default_permissions.read = .*\n\
             default_permissions.write = .*\n\
             log.console = false\n\
             log.file.level = info\n",
            amqp = ports.amqp,
            management = ports.management,
        ),
    )?;
    write(
        &dir.path().join("enabled_plugins"),
        &format!("[{}].\n", PLUGINS.join(",")),
    )?;
    // An empty environment file: not Debian's /etc/rabbitmq/rabbitmq-env.conf.
    write(&dir.path().join("rabbitmq-env.conf"), "")?;
    let output = std::fs::File::create(dir.path().join("server.out"))
        .map_err(|e| Error(format!("cannot create the server's output file: {e}")))?;
    let errors = output
        .try_clone()
        .map_err(|e| Error(format!("cannot create the server's output file: {e}")))?;
    let mut server = broker_env(
        Command::new(bindir.join("rabbitmq-server")),
        dir.path(),
        &node,
        ports.epmd,
    );
    server
        .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
        .env("RABBITMQ_NODE_PORT", ports.amqp.to_string())
        .env("RABBITMQ_DIST_PORT", ports.dist.to_string())
        // The script then execs the VM rather than waiting on it, so the group's leader is the
        // VM: reaping it on drop means the broker is gone. `-noinput` as without it.
        .env("RABBITMQ_ALLOW_INPUT", "true")
        .env(
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
            "-noinput -kernel inet_dist_use_interface {127,0,0,1}",
        )
        .stdin(Stdio::null())
        .stdout(output)
        .stderr(errors)
        .current_dir(dir.path())
        // A group of its own, so that drop kills the server and every process it started.
        .process_group(0);
    let mut child = server.spawn().map_err(|e| {
        Error(format!(
            "cannot start {}: {e}",
            bindir.join("rabbitmq-server").display()
        ))
    })?;
    let group = child.id();
    write(
        &dir.path().join(SERVER_FILE),
        &format!("{group} {}", ports.epmd),
    )?;

    // `rabbitmqctl wait` returns once the node has booted, or fails at its timeout; a server that
    // dies first ends the wait at once instead (the reaper kills the waiter).
    let waiter = ctl_command(bindir, dir.path(), &node, ports.epmd)
        .arg("wait")
        .arg(dir.path().join("rabbitmq.pid"))
        .args(["--timeout", BOOT_TIMEOUT_SECONDS])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error(format!("cannot run rabbitmqctl wait: {e}")))?;
    let waiter_pid = waiter.id();
    let (exited, exit) = mpsc::channel();
    let reaper = std::thread::spawn(move || {
        let status = child.wait();
        if exited.send(status).is_ok() {
            let _ = Command::new("kill")
                .arg(waiter_pid.to_string())
                .stderr(Stdio::null())
                .status();
        }
    });
    let mut broker = RabbitMq {
        bindir: bindir.to_owned(),
        dir,
        node,
        ports,
        password,
        group,
        reaper: Some(reaper),
    };
    let waited = waiter
        .wait_with_output()
        .map_err(|e| Error(format!("cannot run rabbitmqctl wait: {e}")))?;
    // The server exited while booting: that is the error, whatever `wait` said.
    if let Ok(status) = exit.try_recv() {
        let status = status
            .map(|s| s.to_string())
            .unwrap_or_else(|e| e.to_string());
        let error = Error(format!(
            "rabbitmq-server exited while booting ({status}):\n{}",
            broker.tail()
        ));
        broker.kill();
        return Err(error);
    }
    if let Err(e) = checked("rabbitmqctl wait", &waited) {
        let error = Error(format!("{e}\n{}", broker.tail()));
        broker.kill();
        return Err(error);
    }
    Ok(broker)
}

impl RabbitMq {
    /// The end of the server's output and log, for an error.
    fn tail(&self) -> String {
        let read = |path: PathBuf| std::fs::read_to_string(path).unwrap_or_default();
        let out = read(self.dir.path().join("server.out"));
        let log = read(self.log_path());
        let last = |text: &str| {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        };
        format!(
            "server output:\n{}\nserver log:\n{}",
            last(&out),
            last(&log)
        )
    }
}

/// `command` with the environment that makes the server scripts and the CLI use the broker in
/// `dir`: its node name, its EPMD, its Erlang cookie (in `dir`, as `HOME`), its files.
fn broker_env(mut command: Command, dir: &Path, node: &str, epmd: u16) -> Command {
    // Nothing of the caller's RabbitMQ environment: it would point at another broker's files.
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|n| n.starts_with("RABBITMQ_")) {
            command.env_remove(name);
        }
    }
    command
        .env("HOME", dir)
        .env("RABBITMQ_NODENAME", node)
        .env("ERL_EPMD_PORT", epmd.to_string())
        .env("ERL_EPMD_ADDRESS", "127.0.0.1")
        // The EPMD the node starts inherits this: `epmd -kill` then stops it even while the
        // node it knows is still being killed.
        .env("ERL_EPMD_RELAXED_COMMAND_CHECK", "1")
        .env("RABBITMQ_CONF_ENV_FILE", dir.join("rabbitmq-env.conf"))
        .env("RABBITMQ_CONFIG_FILE", dir.join("rabbitmq.conf"))
        .env("RABBITMQ_ADVANCED_CONFIG_FILE", dir.join("advanced.config"))
        .env("RABBITMQ_ENABLED_PLUGINS_FILE", dir.join("enabled_plugins"))
        .env("RABBITMQ_MNESIA_BASE", dir.join("mnesia"))
        .env("RABBITMQ_LOG_BASE", dir.join("log"))
        .env("RABBITMQ_PID_FILE", dir.join("rabbitmq.pid"));
    command
}

/// `rabbitmqctl -n NODE`, for the broker in `dir`.
fn ctl_command(bindir: &Path, dir: &Path, node: &str, epmd: u16) -> Command {
    let mut command = broker_env(Command::new(bindir.join("rabbitmqctl")), dir, node, epmd);
    command.args(["-n", node]);
    command
}

/// Stops the EPMD on `port`, which the node started and which outlives it.
fn kill_epmd(port: u16) {
    let _ = Command::new("epmd")
        .args(["-port", &port.to_string(), "-kill"])
        .env("ERL_EPMD_ADDRESS", "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Kills and removes the brokers in `temp` that a killed test process left behind.
fn sweep_orphans(temp: &Path) {
    plinth_test_orphans::sweep(temp, DIR_PREFIX, |dir| {
        let server = std::fs::read_to_string(dir.join(SERVER_FILE)).unwrap_or_default();
        let mut fields = server.split_whitespace().map(str::parse::<u32>);
        if let (Some(Ok(group)), Some(Ok(epmd))) = (fields.next(), fields.next()) {
            // Only a group whose leader is still this broker's VM (a pid may be reused).
            if plinth_test_orphans::runs_on(group, dir) {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{group}")])
                    .stderr(Stdio::null())
                    .status();
            }
            if let Ok(epmd) = u16::try_from(epmd) {
                kill_epmd(epmd);
            }
        }
    });
}

/// Waits until `done` holds, for what the broker does on its own after a change (a shovel
/// starting, or stopping once deleted): asks again every [`EVENTUALLY_PAUSE`], and fails naming
/// `what` after [`EVENTUALLY_TIMEOUT`] — a bound that tells a broker that never gets there from
/// a slow one, not a deadline a loaded machine could miss.
pub fn eventually(what: &str, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + EVENTUALLY_TIMEOUT;
    while !done()? {
        if Instant::now() >= deadline {
            return Err(Error(format!(
                "{what}: not so after {} s",
                EVENTUALLY_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(EVENTUALLY_PAUSE);
    }
    Ok(())
}

fn bindir() -> Result<PathBuf> {
    let dir = std::env::var_os("PLINTH_RABBITMQ_BINDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_BINDIR));
    if !dir.join("rabbitmq-server").exists() {
        return Err(Error(format!(
            "{} has no rabbitmq-server: install it (Debian: apt-get install rabbitmq-server, \
             which scripts/setup does) or set PLINTH_RABBITMQ_BINDIR to its scripts' directory",
            dir.display()
        )));
    }
    Ok(dir)
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

/// A password for one throwaway broker, from the OS's randomness (no extra crate for a test
/// helper); letters and digits only, as the configuration file takes them bare.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether something accepts connections on the loopback `port`.
    fn listening(port: u16) -> bool {
        std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok()
    }

    #[test]
    fn a_broker_starts_answers_and_is_removed() {
        let broker = RabbitMq::start().unwrap();
        assert!(listening(broker.amqp_port()));
        broker.ctl(&["add_vhost", "x/\"y"]).unwrap();
        let definitions = broker.definitions().unwrap();
        let vhosts = definitions["vhosts"].as_array().unwrap();
        assert!(vhosts.iter().any(|v| v["name"] == "x/\"y"), "{definitions}");
        let users = definitions["users"].as_array().unwrap();
        assert_eq!(users.len(), 1, "{definitions}");
        assert_eq!(users[0]["name"], USERNAME);
        // What rabbitmqctl exports, but for the vhosts' limits (among the parameters) and
        // what names the cluster and the product.
        broker
            .ctl(&["set_vhost_limits", "-p", "x/\"y", "{\"max-queues\": 7}"])
            .unwrap();
        let definitions = broker.definitions().unwrap();
        let exported = broker
            .ctl(&["export_definitions", "-", "--silent"])
            .unwrap();
        let mut exported: serde_json::Value = serde_json::from_str(&exported).unwrap();
        for vhost in exported["vhosts"].as_array_mut().unwrap() {
            vhost.as_object_mut().unwrap().remove("limits");
        }
        for (key, list) in exported.as_object().unwrap() {
            let mut list = list.clone();
            if let Some(list) = list.as_array_mut() {
                list.sort_by_key(|item| item.to_string());
            }
            if key != "global_parameters" {
                assert_eq!(definitions[key], list, "{key}");
            }
        }
        let vhost = (definitions["vhosts"].as_array().unwrap().iter())
            .find(|v| v["name"] == "/")
            .unwrap();
        assert_eq!(vhost["metadata"]["description"], "Default virtual host");
        assert_eq!(broker.shovels().unwrap(), Vec::<serde_json::Value>::new());
        assert!(broker.logs_in(USERNAME, broker.password()).unwrap());
        assert!(!broker.logs_in(USERNAME, "not-the-password").unwrap());
        assert!(!broker.logs_in("nobody", broker.password()).unwrap());
        let plugins = broker.ctl(&["eval", "rabbit_plugins:active()."]).unwrap();
        for plugin in PLUGINS {
            assert!(
                plugins.contains(plugin),
                "{plugin} is not active: {plugins}"
            );
        }

        let (dir, ports, group) = (broker.dir.path().to_owned(), broker.ports, broker.group);
        drop(broker);
        assert!(!dir.exists(), "the broker's directory is removed");
        assert!(
            !plinth_test_orphans::is_running(group),
            "the server is killed"
        );
        assert!(!listening(ports.management) && !listening(ports.amqp));
        assert!(!listening(ports.epmd), "its EPMD is stopped");
    }

    #[test]
    fn a_broker_left_by_a_dead_process_is_killed_and_removed() {
        let broker = RabbitMq::start().unwrap();
        // As a killed test process leaves it: running, never dropped, its owner gone.
        let mut dead = Command::new("true").spawn().unwrap();
        dead.wait().unwrap();
        let dir = broker.dir.path().to_owned();
        plinth_test_orphans::mark_owner(&dir, dead.id()).unwrap();
        let (group, ports) = (broker.group, broker.ports);
        let mut broker = broker;
        let reaper = broker.reaper.take().unwrap();
        std::mem::forget(broker);
        assert!(plinth_test_orphans::is_running(group));

        sweep_orphans(dir.parent().unwrap());
        // The server is this process's child: its reaper returns once the sweep's kill ended it.
        reaper.join().unwrap();
        assert!(!dir.exists(), "the orphan's dir is removed");
        assert!(
            !listening(ports.management),
            "the orphan's broker is killed"
        );
        assert!(!listening(ports.epmd), "the orphan's EPMD is stopped");
    }
}
