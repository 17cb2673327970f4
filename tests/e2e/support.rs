//! Drives the real `plinth` binary on real components built from source.

pub mod balancer;
pub mod module_graph;
pub mod service;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Where guests build, apart from the host's target dir so that builds from inside tests never
/// wait on the outer `cargo test`'s lock.
pub fn guest_target_dir() -> PathBuf {
    repo_root().join("target/wasm")
}

/// The `PLINTH_HOME` the tests share: its plugin store, build caches and precompiled artifacts.
fn shared_home() -> PathBuf {
    repo_root().join("target/e2e-home")
}

/// A `PLINTH_HOME` of its own (logins, plugin store, keys, settings), for a test about what a
/// home holds, whose precompiled artifacts are the shared home's: the components every test
/// runs then compile once a suite, not once a home. The cache is safe to share: an artifact is
/// written to a temporary file and renamed into place. Not for a test about the cache itself.
pub fn own_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let cache = shared_home().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::os::unix::fs::symlink(&cache, home.path().join("cache")).unwrap();
    home
}

/// The Rust guest crates the tests run, one a line; `scripts/build-guests` builds the same list
/// the same way beside the host build, so that on CI the builds here find nothing to do.
const RUST_GUESTS: &str = include_str!("../rust-guests.txt");

/// Builds the guest crates the tests use, once per test process.
pub fn guest(package: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let packages = RUST_GUESTS
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'));
        // One invocation per crate, as plinth builds a guest: a grouped build would unify the
        // SDK's `provider` and `program` features, which change what it compiles.
        for package in packages {
            let status = Command::new(env!("CARGO"))
                .args([
                    "build",
                    "--release",
                    "--quiet",
                    "--target",
                    "wasm32-wasip2",
                    "-p",
                ])
                .arg(package)
                .env("CARGO_TARGET_DIR", guest_target_dir())
                .current_dir(repo_root())
                .status()
                .expect("running cargo");
            assert!(
                status.success(),
                "building {package} for wasm32-wasip2 failed"
            );
        }
    });
    assert!(
        RUST_GUESTS.lines().any(|l| l == package),
        "{package} is not in tests/rust-guests.txt"
    );
    guest_target_dir()
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", package.replace('-', "_")))
}

/// Where `scripts/setup` installed the componentizers: as plinth finds them outside the
/// tests, whose PLINTH_HOME is their own.
pub fn tools_dir() -> PathBuf {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("PLINTH_TOOLS")
        .or_else(|| var("PLINTH_HOME").map(|home| home.join("tools")))
        .or_else(|| var("HOME").map(|home| home.join(".plinth/tools")))
        .expect("HOME is set")
}

/// The `Plinth.yaml` of a scenario project whose `testkit` plugin entry ends with `plugin_yaml`.
fn scenario_yaml(plugin_yaml: &str) -> String {
    format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    path: {}\n{plugin_yaml}",
        guest("plinth-scenario").display(),
        guest("plinth-testkit").display()
    )
}

/// The passphrase of every stack's secrets in the tests.
pub const PASSPHRASE: &str = "e2e passphrase";

/// The variables a CI sets that `plinth` reads into a run's metadata: `Env` clears them, and a
/// test sets its own.
pub const CI_VARS: [&str; 10] = [
    "CI",
    "GITHUB_ACTIONS",
    "GITHUB_SHA",
    "GITHUB_REF",
    "GITHUB_REF_NAME",
    "GITHUB_HEAD_REF",
    "GITLAB_CI",
    "CI_COMMIT_SHA",
    "CI_COMMIT_REF_NAME",
    "CI_MERGE_REQUEST_IID",
];

/// What a run of plinth printed: its stdout, then its stderr.
pub fn printed(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A project directory, a state directory and the stack to run plinth against.
pub struct Env {
    pub project: PathBuf,
    pub state: tempfile::TempDir,
    /// Keeps a temporary project directory alive.
    _project_dir: Option<tempfile::TempDir>,
    pub stack: String,
    /// The `plinth serve` service the commands store stacks in, instead of `state`.
    pub service: Option<ServiceLogin>,
}

/// A service's URL and the access token commands use on it (as `PLINTH_BACKEND_URL` and
/// `PLINTH_ACCESS_TOKEN`).
#[derive(Debug, Clone)]
pub struct ServiceLogin {
    pub url: String,
    pub token: String,
}

impl Env {
    /// Peak resident memory of a `plinth` run, sampled from /proc while it runs; with its
    /// stderr.
    pub fn peak_rss(&self, args: &[&str]) -> (u64, String) {
        let mut child = self
            .command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = format!("/proc/{}/status", child.id());
        let mut peak_kib = 0;
        while child.try_wait().unwrap().is_none() {
            // VmHWM is the high-water mark: the last reading before exit is the peak.
            let hwm = std::fs::read_to_string(&status).ok().and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            });
            peak_kib = peak_kib.max(hwm.unwrap_or(0));
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let output = child.wait_with_output().unwrap();
        (peak_kib << 10, String::from_utf8(output.stderr).unwrap())
    }

    /// A fresh project running the `scenario` program on the `testkit` provider.
    pub fn scenario() -> Env {
        Env::scenario_with("")
    }

    /// [`scenario`](Self::scenario), with the testkit plugin granted the project's `world`
    /// directory read-write at `/world`, where `testkit:Record` resources live.
    pub fn scenario_with_world() -> Env {
        Env::scenario_with_world_on(None)
    }

    /// [`scenario_with_world`](Self::scenario_with_world), its stacks on `service` if given.
    pub fn scenario_with_world_on(service: Option<ServiceLogin>) -> Env {
        let env = Env::project_on(
            &scenario_yaml(
                "    grants:\n      dirs:\n        - { host: ./world, guest: /world, access: read-write }\n",
            ),
            service,
        );
        std::fs::create_dir(env.world()).unwrap();
        env
    }

    /// The host side of the `world` directory of [`scenario_with_world`](Self::scenario_with_world).
    pub fn world(&self) -> PathBuf {
        self.project.join("world")
    }

    /// The journal an update in progress (or an interrupted one) keeps.
    pub fn journal(&self) -> PathBuf {
        self.stack_file("journal")
    }

    /// The lock an update holds while it runs.
    pub fn lock_file(&self) -> PathBuf {
        self.stack_file("lock")
    }

    /// The stack's checkpoint file.
    pub fn checkpoint_file(&self) -> PathBuf {
        self.stack_file("json")
    }

    /// `<state>/stacks/<project>/<stack>.<ext>`; the scenario projects are named `scenario`.
    fn stack_file(&self, ext: &str) -> PathBuf {
        self.state
            .path()
            .join("stacks/scenario")
            .join(format!("{}.{ext}", self.stack))
    }

    /// A scenario project whose `testkit` plugin entry ends with `plugin_yaml`, which may also
    /// add other plugins (entries indented by two spaces).
    pub fn scenario_with(plugin_yaml: &str) -> Env {
        Env::project(&scenario_yaml(plugin_yaml))
    }

    /// A fresh project whose `Plinth.yaml` is `yaml` (its name must be `scenario`), with the
    /// stack `dev` initialized.
    pub fn project(yaml: &str) -> Env {
        Env::project_on(yaml, None)
    }

    /// [`scenario`](Self::scenario), its stacks on the service `service` names.
    pub fn scenario_on(service: ServiceLogin) -> Env {
        Env::project_on(&scenario_yaml(""), Some(service))
    }

    /// [`project`](Self::project), its stacks on `service` if given.
    pub fn project_on(yaml: &str, service: Option<ServiceLogin>) -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Plinth.yaml"), yaml).unwrap();
        let env = Env {
            project: dir.path().to_owned(),
            state: tempfile::tempdir().unwrap(),
            _project_dir: Some(dir),
            stack: "dev".into(),
            service,
        };
        env.ok(&["stack", "init", "dev"]);
        env
    }

    /// An existing project directory, with a stack name of its own so that tests sharing the
    /// directory do not share config files.
    pub fn in_dir(project: PathBuf, stack: &str) -> Env {
        let env = Env {
            project,
            state: tempfile::tempdir().unwrap(),
            _project_dir: None,
            stack: stack.into(),
            service: None,
        };
        env.ok(&["stack", "init", stack]);
        env
    }

    /// An empty project directory and a state directory, no stack made (for `plinth new`).
    pub fn empty() -> Env {
        let dir = tempfile::tempdir().unwrap();
        Env {
            project: dir.path().to_owned(),
            state: tempfile::tempdir().unwrap(),
            _project_dir: Some(dir),
            stack: "dev".into(),
            service: None,
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_plinth"));
        let backend = match &self.service {
            Some(service) => {
                cmd.env("PLINTH_ACCESS_TOKEN", &service.token);
                service.url.clone()
            }
            None => {
                cmd.env_remove("PLINTH_ACCESS_TOKEN");
                format!("file://{}", self.state.path().display())
            }
        };
        cmd.args(args)
            .current_dir(&self.project)
            .env("PLINTH_BACKEND_URL", backend)
            .env("PLINTH_HOME", shared_home())
            .env("PLINTH_TOOLS", tools_dir())
            .env("PLINTH_STACK", &self.stack)
            .env("PLINTH_CONFIG_PASSPHRASE", PASSPHRASE)
            .env("CARGO_TARGET_DIR", guest_target_dir())
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        // The suite runs inside CI too; the run metadata it records must not depend on that.
        for var in CI_VARS {
            cmd.env_remove(var);
        }
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("running plinth")
    }

    /// Runs plinth and expects success; returns what it wrote on stderr (where builds are
    /// announced).
    pub fn built(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "plinth {args:?} failed:\n{stderr}");
        stderr
    }

    /// Runs plinth and expects success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "plinth {args:?} failed\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs plinth and expects failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "plinth {args:?} should have failed\nstdout:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).unwrap()
    }

    pub fn config(&self, key: &str, value: &str) {
        self.ok(&["config", "set", key, value]);
    }

    /// The stack's checkpoint, as `stack export` prints it.
    pub fn export(&self) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["stack", "export"])).expect("export is JSON")
    }

    /// (name, id) of every resource in the state, sorted: independent steps complete, and so
    /// are recorded, in any order. Provider resources are left out: they are configuration;
    /// so is the stack's root.
    pub fn resources(&self) -> Vec<(String, String)> {
        let mut resources: Vec<(String, String)> = self.export()["snapshot"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| {
                let ty = r["type"].as_str().unwrap();
                !ty.starts_with("plinth:providers:") && ty != "plinth:plinth:Stack"
            })
            .map(|r| {
                let urn = r["urn"].as_str().unwrap();
                let name = urn.rsplit("::").next().unwrap().to_owned();
                (name, r["id"].as_str().unwrap_or_default().to_owned())
            })
            .collect();
        resources.sort();
        resources
    }

    /// The id of the resource `name`.
    pub fn id_of(&self, name: &str) -> String {
        (self.resources().into_iter())
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no {name} in {:?}", self.resources()))
            .1
    }

    /// The (kind, result) of each update in the stack's history, newest first.
    pub fn history(&self) -> Vec<(String, String)> {
        let history: serde_json::Value =
            serde_json::from_str(&self.ok(&["stack", "history", "--json"])).unwrap();
        (history.as_array().unwrap().iter())
            .map(|e| {
                let field = |k: &str| e[k].as_str().unwrap().to_owned();
                (field("kind"), field("result"))
            })
            .collect()
    }

    pub fn state_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut dirs = vec![self.state.path().to_owned()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let bytes = std::fs::read(&path).unwrap();
                    files.push((path, bytes));
                }
            }
        }
        files.sort();
        files
    }
}

/// Runs plinth with `args`, debug logs on, expecting success; returns what it printed, stdout
/// and stderr together.
pub fn printed_with_logs(env: &Env, args: &[&str]) -> String {
    let mut command = env.command(args);
    command.env("RUST_LOG", "debug");
    let out = command.output().expect("running plinth");
    let all = printed(&out);
    assert!(out.status.success(), "plinth {args:?}: {all}");
    all
}

/// Fails if `secret` is in a state file (checkpoint, journal, history, logs) or in `shown`.
pub fn assert_not_written(env: &Env, secret: &str, shown: &str) {
    for (path, bytes) in env.state_files() {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(secret), "{} holds it", path.display());
    }
    assert!(!shown.contains(secret), "{shown}");
}

/// Fails if `secret`, given to the write-only input `input`, is in a state file, in `shown` or
/// in the stack's export, or if the state records `input` at all (it records `{input}_version`).
pub fn assert_write_only(env: &Env, input: &str, secret: &str, shown: &str) {
    assert_not_written(env, secret, shown);
    let exported = env.ok(&["stack", "export"]);
    assert!(!exported.contains(secret), "{exported}");
    assert!(!exported.contains(&format!("\"{input}\"")), "{exported}");
    assert!(
        exported.contains(&format!("\"{input}_version\"")),
        "{exported}"
    );
}

/// Each `testkit:Echo`'s `value` input, by resource name.
pub fn echo_values(env: &Env) -> std::collections::BTreeMap<String, String> {
    let state = env.export();
    (state["snapshot"]["resources"].as_array().unwrap().iter())
        .filter(|r| r["type"] == "testkit:Echo")
        .map(|r| {
            let urn = r["urn"].as_str().unwrap();
            let name = urn.rsplit("::").next().unwrap().to_owned();
            (name, r["inputs"]["value"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// Removes the per-stack config file a test wrote into a shared project directory.
pub struct ConfigCleanup(pub PathBuf);

impl Drop for ConfigCleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `command` on a terminal (`script` gives it one), `input` typed into it; stdout holds
/// what the terminal showed.
pub fn on_terminal(command: &Command, input: &[u8]) -> Output {
    let line = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| format!("'{}'", a.to_str().unwrap().replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = command.get_current_dir() {
        cmd.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let mut child = cmd.spawn().expect("running script");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), input).unwrap();
    child.wait_with_output().unwrap()
}

/// Interrupts `child` as Ctrl-C does.
pub fn interrupt(child: &std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}
