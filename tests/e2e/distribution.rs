//! Plugin distribution: `plinth plugin install/ls/inspect/rm` on a store of its own per test,
//! installs from a file and from a URL a local server serves, `version:` plugins in Plinth.yaml,
//! Plinth.lock, and the plugins recorded in the checkpoint and the history.

use std::path::PathBuf;
use std::process::Output;
use std::sync::Arc;
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

use crate::support::{Env, guest, own_home, repo_root};

/// A project whose plinth home (the plugin store) is its own.
struct Dist {
    env: Env,
    home: tempfile::TempDir,
    _project: tempfile::TempDir,
}

impl Dist {
    /// A project running `examples/hello`, whose `random` plugin entry is `random_yaml`.
    fn hello(random_yaml: &str) -> Dist {
        let project = tempfile::tempdir().unwrap();
        let yaml = format!(
            "name: dist\nprogram: {}\nplugins:\n  random:\n{random_yaml}",
            repo_root().join("examples/hello").display()
        );
        std::fs::write(project.path().join("Plinth.yaml"), yaml).unwrap();
        Dist::in_project(project)
    }

    /// The scenario project, with its `testkit` plugin copied into the project as a file.
    fn scenario_with_local_testkit() -> Dist {
        let project = tempfile::tempdir().unwrap();
        std::fs::copy(guest("plinth-testkit"), project.path().join("testkit.wasm")).unwrap();
        let yaml = format!(
            "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    path: testkit.wasm\n",
            guest("plinth-scenario").display()
        );
        std::fs::write(project.path().join("Plinth.yaml"), yaml).unwrap();
        Dist::in_project(project)
    }

    fn in_project(project: tempfile::TempDir) -> Dist {
        let env = Env::in_dir(project.path().to_owned(), "dev");
        Dist {
            env,
            home: own_home(),
            _project: project,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.env
            .command(args)
            .env("PLINTH_HOME", self.home.path())
            .output()
            .expect("running plinth")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "plinth {args:?} failed\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "plinth {args:?} should have failed\nstdout:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).unwrap()
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).expect("JSON output")
    }

    fn blob(&self, sha256: &str) -> PathBuf {
        self.home
            .path()
            .join("plugins/sha256")
            .join(format!("{sha256}.wasm"))
    }

    fn lock_file(&self) -> PathBuf {
        self.env.project.join("Plinth.lock")
    }

    /// Writes `bytes` as a file in the project and returns its path.
    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.env.project.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }
}

fn random_wasm() -> Vec<u8> {
    std::fs::read(guest("plinth-random")).unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The same component with a custom section appended: another build of the same plugin (same
/// name, same version), with another hash.
fn rebuilt(wasm: &[u8]) -> Vec<u8> {
    let (name, payload) = (b"rebuilt".as_slice(), b"2".as_slice());
    let mut out = wasm.to_vec();
    out.push(0); // a custom section
    out.push(u8::try_from(1 + name.len() + payload.len()).unwrap());
    out.push(u8::try_from(name.len()).unwrap());
    out.extend_from_slice(name);
    out.extend_from_slice(payload);
    out
}

#[test]
fn install_list_inspect_and_remove_from_a_file() {
    let dist = Dist::hello("    version: 0.1.0\n");
    let wasm = random_wasm();
    let sha = sha256(&wasm);
    let file = guest("plinth-random").display().to_string();

    let out = dist.ok(&["plugin", "install", &file]);
    assert!(out.contains("Installed random 0.1.0"), "{out}");
    assert_eq!(std::fs::read(dist.blob(&sha)).unwrap(), wasm);
    let out = dist.ok(&["plugin", "install", &file, "--sha256", &sha]);
    assert!(out.contains("already installed; nothing to do"), "{out}");

    let ls = dist.ok(&["plugin", "ls"]);
    let row = ls.lines().find(|l| l.starts_with("random ")).expect(&ls);
    assert!(row.contains("0.1.0") && row.contains(&sha[..12]), "{ls}");
    let listed = dist.json(&["plugin", "ls", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["sha256"], sha.as_str());
    assert_eq!(listed[0]["size"], wasm.len());
    assert_eq!(listed[0]["source"], file.as_str());

    let shown = dist.ok(&["plugin", "inspect", "random"]);
    for needle in [
        "random",
        "0.1.0",
        "random:RandomString",
        "random:RandomPet",
        &sha,
    ] {
        assert!(shown.contains(needle), "missing {needle} in:\n{shown}");
    }
    let shown = dist.json(&["plugin", "inspect", "random@0.1.0", "--json"]);
    assert_eq!(shown["name"], "random");
    assert_eq!(shown["sha256"], sha.as_str());
    assert_eq!(shown["size"], wasm.len());
    assert_eq!(shown["installed"]["source"], file.as_str());
    let from_file = dist.json(&["plugin", "inspect", &file, "--json"]);
    assert_eq!(from_file["version"], "0.1.0");
    assert_eq!(from_file["wit_version"], shown["wit_version"]);

    // Another build under the same name and version only replaces it with --force.
    let other = dist.file("random-rebuilt.wasm", &rebuilt(&wasm));
    let stderr = dist.fails(&["plugin", "install", &other]);
    assert!(
        stderr.contains("already installed from another build") && stderr.contains("--force"),
        "{stderr}"
    );
    let out = dist.ok(&["plugin", "install", &other, "--force"]);
    assert!(out.contains("replacing the build"), "{out}");
    assert!(
        !dist.blob(&sha).exists(),
        "the replaced build stays in the store"
    );

    // Not plugins: garbage, and a program.
    let garbage = dist.file("garbage.wasm", b"not wasm at all");
    let stderr = dist.fails(&["plugin", "install", &garbage]);
    assert!(
        stderr.contains(
            "is not a WebAssembly component: it does not start with the WebAssembly magic number"
        ),
        "{stderr}"
    );
    let program = guest("plinth-scenario").display().to_string();
    let stderr = dist.fails(&["plugin", "install", &program]);
    assert!(
        stderr.contains("not a") && stderr.contains("provider"),
        "{stderr}"
    );

    let stderr = dist.fails(&["plugin", "rm", "nope"]);
    assert!(stderr.contains("no plugin `nope` is installed"), "{stderr}");
    let out = dist.ok(&["plugin", "rm", "random"]);
    assert!(out.contains("Removed random 0.1.0"), "{out}");
    assert!(dist.ok(&["plugin", "ls"]).contains("No plugins installed"));
    let stderr = dist.fails(&["plugin", "inspect", "random"]);
    assert!(
        stderr.contains("no plugin `random` is installed"),
        "{stderr}"
    );
}

/// Serves `body` at `/random.wasm`, a redirect to it at `/moved` and 404 elsewhere, on
/// 127.0.0.1, until dropped.
struct Server {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    base: String,
}

impl Server {
    fn start(body: Vec<u8>) -> Server {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let addr = server.server_addr().to_ip().unwrap();
        let serving = server.clone();
        let thread = std::thread::spawn(move || {
            for request in serving.incoming_requests() {
                let response = match request.url() {
                    "/random.wasm" => tiny_http::Response::from_data(body.clone()),
                    "/moved" => {
                        let to = format!("http://{addr}/random.wasm");
                        let location = tiny_http::Header::from_bytes("Location", to).unwrap();
                        tiny_http::Response::from_data(Vec::new())
                            .with_status_code(302)
                            .with_header(location)
                    }
                    _ => {
                        tiny_http::Response::from_data(b"not found".to_vec()).with_status_code(404)
                    }
                };
                let _ = request.respond(response);
            }
        });
        Server {
            server,
            thread: Some(thread),
            base: format!("http://{addr}"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn install_from_a_url_checks_the_sha256() {
    let dist = Dist::hello("    version: 0.1.0\n");
    let wasm = random_wasm();
    let sha = sha256(&wasm);
    let server = Server::start(wasm.clone());
    let url = format!("{}/random.wasm", server.base);

    let wrong = sha256(b"something else");
    let stderr = dist.fails(&["plugin", "install", &url, "--sha256", &wrong]);
    assert!(
        stderr.contains(&sha)
            && stderr.contains(&wrong)
            && stderr.contains("nothing was installed"),
        "{stderr}"
    );
    assert!(
        dist.json(&["plugin", "ls", "--json"])
            .as_array()
            .unwrap()
            .is_empty()
    );

    let out = dist.ok(&["plugin", "install", &url, "--sha256", &sha]);
    assert!(
        out.contains("Installed random 0.1.0") && out.contains(&url),
        "{out}"
    );
    let listed = dist.json(&["plugin", "ls", "--json"]);
    assert_eq!(listed[0]["source"], url.as_str());
    assert_eq!(std::fs::read(dist.blob(&sha)).unwrap(), wasm);

    let stderr = dist.fails(&[
        "plugin",
        "install",
        &format!("{}/missing.wasm", server.base),
    ]);
    assert!(stderr.contains("HTTP 404"), "{stderr}");
    let stderr = dist.fails(&["plugin", "install", &format!("{}/moved", server.base)]);
    assert!(stderr.contains("redirects elsewhere"), "{stderr}");
    let stderr = dist.fails(&["plugin", "install", "http://example.com/random.wasm"]);
    assert!(
        stderr.contains("plain http") && stderr.contains("loopback") && stderr.contains("https://"),
        "{stderr}"
    );
}

#[test]
fn a_lock_written_under_json_is_told_on_stderr_not_in_the_event_stream() {
    let dist = Dist::hello("    version: 0.1.0\n");
    dist.ok(&[
        "plugin",
        "install",
        guest("plinth-random").to_str().unwrap(),
    ]);
    let out = dist.run(&["preview", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every line of stdout is an event, the lock's note among none of them.
    crate::json_events::json_lines(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Wrote Plinth.lock, pinning `random`"),
        "{stderr}"
    );
    assert!(dist.lock_file().exists());
}

fn history_plugins(dist: &Dist) -> Vec<serde_json::Value> {
    let history = dist.json(&["stack", "history", "--json"]);
    history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["plugins"].clone())
        .collect()
}

#[test]
fn a_stored_plugin_runs_is_pinned_and_recorded() {
    let dist = Dist::hello("    version: 0.1.0\n");
    let stderr = dist.fails(&["preview"]);
    assert!(
        stderr.contains("plugin `random` version 0.1.0 is not installed")
            && stderr.contains("plinth plugin install"),
        "{stderr}"
    );
    let wasm = random_wasm();
    let sha = sha256(&wasm);
    dist.ok(&[
        "plugin",
        "install",
        guest("plinth-random").to_str().unwrap(),
    ]);

    // The first run writes the lock.
    let out = dist.ok(&["up", "--yes"]);
    assert!(out.contains("Wrote Plinth.lock, pinning `random`"), "{out}");
    let lock = std::fs::read_to_string(dist.lock_file()).unwrap();
    assert!(
        lock.contains(&sha) && lock.contains("version: 0.1.0"),
        "{lock}"
    );
    assert!(
        dist.env.resources().len() >= 4,
        "{:?}",
        dist.env.resources()
    );

    // The checkpoint and the history name the plugin the update used.
    let used = serde_json::json!([{"name": "random", "version": "0.1.0", "sha256": sha}]);
    assert_eq!(dist.env.export()["plugins"], used);
    assert_eq!(history_plugins(&dist)[0], used);
    let table = dist.ok(&["stack", "history"]);
    assert!(
        table.contains(&format!("random@0.1.0 ({})", &sha[..12])),
        "{table}"
    );

    // Another build under the same version is refused until the lock accepts it.
    let other = rebuilt(&wasm);
    let other_sha = sha256(&other);
    let file = dist.file("random-rebuilt.wasm", &other);
    dist.ok(&["plugin", "install", &file, "--force"]);
    for command in [&["up", "--yes"][..], &["preview"], &["destroy", "--yes"]] {
        let stderr = dist.fails(command);
        for needle in ["plugin `random`", &sha, &other_sha, "plinth plugin lock"] {
            assert!(
                stderr.contains(needle),
                "{command:?}: missing {needle} in:\n{stderr}"
            );
        }
    }
    assert_eq!(
        history_plugins(&dist).len(),
        1,
        "a refused run records nothing"
    );
    let out = dist.ok(&["plugin", "lock"]);
    assert!(
        out.contains("updated `random`") && out.contains(&other_sha),
        "{out}"
    );
    assert!(
        std::fs::read_to_string(dist.lock_file())
            .unwrap()
            .contains(&other_sha)
    );

    let out = dist.ok(&["up", "--yes"]);
    assert!(out.contains("no changes"), "{out}");
    let plugins = history_plugins(&dist);
    assert_eq!(plugins[0][0]["sha256"], other_sha.as_str());
    assert_eq!(plugins[1][0]["sha256"], sha.as_str());
    dist.ok(&["destroy", "--yes"]);
    assert!(dist.env.resources().is_empty());
}

#[test]
fn a_wasm_file_plugin_is_pinned_and_a_changed_one_refused() {
    let dist = Dist::scenario_with_local_testkit();
    let out = dist.ok(&["up", "--yes"]);
    assert!(
        out.contains("Wrote Plinth.lock, pinning `testkit`"),
        "{out}"
    );
    let testkit = dist.env.project.join("testkit.wasm");
    let before = std::fs::read(&testkit).unwrap();
    let lock = std::fs::read_to_string(dist.lock_file()).unwrap();
    assert!(
        lock.contains(&sha256(&before)) && lock.contains("path: testkit.wasm"),
        "{lock}"
    );

    std::fs::write(&testkit, rebuilt(&before)).unwrap();
    let stderr = dist.fails(&["preview"]);
    assert!(
        stderr.contains("plugin `testkit` does not match Plinth.lock")
            && stderr.contains(&sha256(&before))
            && stderr.contains("plinth plugin lock"),
        "{stderr}"
    );
    dist.ok(&["plugin", "lock"]);
    dist.ok(&["preview", "--expect-no-changes"]);

    // A crate directory is a development build: not pinned.
    let yaml = std::fs::read_to_string(dist.env.project.join("Plinth.yaml")).unwrap();
    let crate_dir = repo_root().join("tests/plugins/testkit");
    let yaml = yaml.replace("testkit.wasm", crate_dir.to_str().unwrap());
    std::fs::write(dist.env.project.join("Plinth.yaml"), yaml).unwrap();
    dist.ok(&["plugin", "lock"]);
    assert!(!dist.lock_file().exists(), "nothing left to pin");
}

#[test]
fn path_and_version_are_exclusive() {
    let dist = Dist::hello("    version: 0.1.0\n");
    let yaml = std::fs::read_to_string(dist.env.project.join("Plinth.yaml")).unwrap();
    let both = format!("{yaml}    path: x.wasm\n");
    std::fs::write(dist.env.project.join("Plinth.yaml"), both).unwrap();
    let stderr = dist.fails(&["preview"]);
    assert!(stderr.contains("both `path` and `version`"), "{stderr}");
}
