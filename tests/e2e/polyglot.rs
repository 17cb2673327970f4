//! TypeScript and Python guests, built from source by plinth itself during the test run: a
//! TypeScript provider driven by a Python program and a Python provider driven by a TypeScript
//! program through their whole lifecycle (the WIT contract is their only coupling), secrets
//! through both languages, misbehaving guests contained, and program exceptions located.
//! Built components are cached by content under the tests' PLINTH_HOME, so each guest is
//! componentized once per source change, not once per test.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::count_line;
use crate::support::{Env, guest, repo_root};

/// Held by a test while its first command builds its guests: tests sharing a guest then build
/// it once (the next finds it in the cache) instead of side by side.
static BUILDING: Mutex<()> = Mutex::new(());

fn building<T>(first_command: impl FnOnce() -> T) -> T {
    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    first_command()
}

/// A copy of `examples/<name>` in a temporary directory, with `Plinth.yaml` rewritten by `edit`
/// (plugin paths made absolute first, as are the paths to the generated SDKs it uses).
fn example(name: &str, edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("examples").join(name), dir.path());
    for manifest in ["package.json", "pyproject.toml"] {
        let path = dir.path().join(manifest);
        if let Ok(text) = std::fs::read_to_string(&path) {
            let sdks = repo_root().join("sdks");
            std::fs::write(
                &path,
                text.replace("../../sdks", &sdks.display().to_string()),
            )
            .unwrap();
        }
    }
    let yaml = std::fs::read_to_string(dir.path().join("Plinth.yaml")).unwrap();
    let plugins = repo_root().join("plugins");
    let yaml = yaml.replace("../../plugins", &plugins.display().to_string());
    std::fs::write(dir.path().join("Plinth.yaml"), edit(yaml)).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("Plinth.") && name != "Plinth.yaml" {
            continue; // stack configs and locks of someone's local runs
        }
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).unwrap();
        }
    }
}

/// A REST API keeping JSON documents in memory: PUT stores, GET returns, DELETE removes.
struct Api {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    documents: Arc<Mutex<BTreeMap<String, String>>>,
    authority: String,
}

impl Api {
    fn start() -> Api {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let authority = server.server_addr().to_ip().unwrap().to_string();
        let documents = Arc::new(Mutex::new(BTreeMap::new()));
        let (serving, store) = (server.clone(), documents.clone());
        let thread = std::thread::spawn(move || {
            for mut request in serving.incoming_requests() {
                let url = request.url().to_owned();
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                let mut store = store.lock().unwrap();
                let (status, text) = match request.method() {
                    tiny_http::Method::Put => {
                        store.insert(url, body);
                        (200, "{}".to_owned())
                    }
                    tiny_http::Method::Get => match store.get(&url) {
                        Some(doc) => (200, doc.clone()),
                        None => (404, "{}".to_owned()),
                    },
                    tiny_http::Method::Delete => match store.remove(&url) {
                        Some(_) => (200, "{}".to_owned()),
                        None => (404, "{}".to_owned()),
                    },
                    _ => (405, "{}".to_owned()),
                };
                drop(store);
                let _ = request
                    .respond(tiny_http::Response::from_string(text).with_status_code(status));
            }
        });
        Api {
            server,
            thread: Some(thread),
            documents,
            authority,
        }
    }

    fn document(&self, path: &str) -> Option<serde_json::Value> {
        let docs = self.documents.lock().unwrap();
        docs.get(path).map(|d| serde_json::from_str(d).unwrap())
    }

    fn paths(&self) -> Vec<String> {
        self.documents.lock().unwrap().keys().cloned().collect()
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// No state file holds `plaintext`.
fn assert_sealed(env: &Env, plaintext: &str) {
    for (path, bytes) in env.state_files() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(plaintext),
            "{} holds the secret in plaintext",
            path.display()
        );
    }
}

#[test]
fn a_typescript_provider_driven_by_a_python_program() {
    let api = Api::start();
    let project = example("rest", |yaml| {
        yaml.replace("127.0.0.1:8080", &api.authority)
    });
    let env = Env::in_dir(project.path().to_owned(), "dev");
    env.config("rest:url", &format!("http://{}/v1", api.authority));
    env.ok(&["config", "set", "password", "hunter2-poly", "--secret"]);

    // Preview: nothing is written anywhere.
    let out = building(|| env.ok(&["preview"]));
    assert!(count_line(&out).contains("1 to create"), "{out}");
    assert!(api.paths().is_empty());

    // Up: the document exists with the program's data; the password is sealed in state and
    // hidden in the outputs, though it went through Python and TypeScript.
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 created"), "{out}");
    assert!(!out.contains("hunter2-poly"), "{out}");
    let doc = api.document("/v1/apps/demo").expect("the document was PUT");
    assert_eq!(doc["replicas"], 1, "an integer stays an integer: {doc}");
    assert_eq!(doc["password"], "hunter2-poly");
    assert_sealed(&env, "hunter2-poly");
    let outputs = env.ok(&["stack", "output"]);
    assert!(
        outputs.contains("[secret]") && !outputs.contains("hunter2-poly"),
        "{outputs}"
    );
    let id = env.resources();

    // An in-place update keeps the id.
    env.config("replicas", "3");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 updated"), "{out}");
    assert_eq!(api.document("/v1/apps/demo").unwrap()["replicas"], 3);
    assert_eq!(env.resources(), id);

    // A new path replaces the document: the new one is written, the old one deleted.
    env.config("name", "other");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 replaced"), "{out}");
    assert_eq!(api.paths(), ["/v1/apps/other"]);

    // Drift: the document is changed out of band; refresh finds and records it.
    api.documents.lock().unwrap().insert(
        "/v1/apps/other".into(),
        r#"{"name":"other","replicas":7,"password":"hunter2-poly"}"#.into(),
    );
    let stderr = env.fails(&["refresh", "--expect-no-changes"]);
    assert!(stderr.contains("--expect-no-changes"), "{stderr}");
    let out = env.ok(&["refresh", "--yes"]);
    assert!(count_line(&out).contains("1 drifted"), "{out}");
    env.ok(&["refresh", "--expect-no-changes"]);
    // The next up puts back what the program says.
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 updated"), "{out}");
    assert_eq!(api.document("/v1/apps/other").unwrap()["replicas"], 3);
    assert_sealed(&env, "hunter2-poly");

    env.ok(&["destroy", "--yes"]);
    assert!(api.paths().is_empty(), "{:?}", api.paths());
    assert!(env.resources().is_empty());
}

#[test]
fn a_python_provider_driven_by_a_typescript_program() {
    let project = example("envfile", |yaml| yaml);
    let env = Env::in_dir(project.path().to_owned(), "dev");
    env.ok(&["config", "set", "db_password", "hunter2-env", "--secret"]);
    let file = project.path().join("env/dev/app.env");

    let out = building(|| env.ok(&["preview"]));
    assert!(count_line(&out).contains("1 to create"), "{out}");
    assert!(!file.exists());

    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 created"), "{out}");
    assert!(!out.contains("hunter2-env"), "{out}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        "APP_NAME=\"demo\"\nDB_PASSWORD=\"hunter2-env\"\nREPLICAS=\"1\"\n"
    );
    assert_sealed(&env, "hunter2-env");
    assert_eq!(env.ok(&["stack", "output", "lines"]).trim(), "3");
    let id = env.resources();

    env.config("replicas", "3");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 updated"), "{out}");
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("REPLICAS=\"3\"")
    );
    assert_eq!(env.resources(), id);

    // Drift: a line edited by hand shows on refresh, and is recorded.
    let edited = std::fs::read_to_string(&file)
        .unwrap()
        .replace("\"3\"", "\"9\"");
    std::fs::write(&file, edited).unwrap();
    env.fails(&["refresh", "--expect-no-changes"]);
    let out = env.ok(&["refresh", "--yes"]);
    assert!(count_line(&out).contains("1 drifted"), "{out}");
    assert!(out.contains("REPLICAS: \"9\""), "the drift is shown: {out}");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 updated"), "{out}");
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("REPLICAS=\"3\"")
    );

    // A new stack name moves the file: a replacement (the path is replace-on-change).
    let yaml = std::fs::read_to_string(project.path().join("index.ts")).unwrap();
    std::fs::write(
        project.path().join("index.ts"),
        yaml.replace("`${ctx.stack}/app.env`", "`${ctx.stack}/moved.env`"),
    )
    .unwrap();
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 replaced"), "{out}");
    assert!(!file.exists());
    assert!(project.path().join("env/dev/moved.env").is_file());
    assert_sealed(&env, "hunter2-env");

    env.ok(&["destroy", "--yes"]);
    assert!(!project.path().join("env/dev/moved.env").exists());
    assert!(env.resources().is_empty());
}

/// A project running a faults provider (`faults-ts` or `faults-py`) under tight limits. Python's
/// interpreter needs more memory to start than a JS engine, hence the limit per guest.
fn faults_project(provider: &str, memory: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let guests = repo_root().join("tests/guests");
    std::fs::write(
        dir.path().join("Plinth.yaml"),
        format!(
            "name: misbehaving\nprogram: {}\nplugins:\n  faults:\n    path: {}\n    limits:\n      \
             memory: {memory}\n      call-timeout: 3s\n",
            guests.join("faults-program-ts").display(),
            guests.join(provider).display()
        ),
    )
    .unwrap();
    dir
}

/// Each fault of the provider in `project` fails its step, naming the resource and the plugin,
/// and leaves a valid, empty state.
fn assert_faults_are_contained(project: tempfile::TempDir) {
    let env = Env::in_dir(project.path().to_owned(), "dev");
    for (fault, expect) in [
        ("Throw", "thrown on purpose by the faults provider"),
        ("Loop", "faults"),
        ("Alloc", "faults"),
    ] {
        env.config("fault", fault);
        let stderr = building(|| env.fails(&["up", "--yes"]));
        for needle in [
            format!("faults:{fault}::faulty"),
            "plugin `faults`".into(),
            expect.into(),
        ] {
            assert!(
                stderr.contains(&needle),
                "{fault}: missing {needle:?} in:\n{stderr}"
            );
        }
        // The state stays valid and usable.
        assert!(env.export()["snapshot"]["resources"].is_array());
        assert!(env.resources().is_empty(), "{fault}");
    }
}

#[test]
fn a_typescript_provider_that_throws_loops_or_allocates_is_contained() {
    assert_faults_are_contained(faults_project("faults-ts", "64MiB"));
}

#[test]
fn a_python_provider_that_throws_loops_or_allocates_is_contained() {
    assert_faults_are_contained(faults_project("faults-py", "128MiB"));
}

/// `examples/<name>` with `line` (1-based) of `file` replaced by `code`.
fn with_line(name: &str, file: &str, line: usize, code: &str) -> tempfile::TempDir {
    let random = guest("plinth-random");
    let dir = example(name, |yaml| {
        yaml.replace(
            &format!("{}/random", repo_root().join("plugins").display()),
            &random.display().to_string(),
        )
    });
    let path = dir.path().join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[line - 1] = code;
    std::fs::write(&path, lines.join("\n")).unwrap();
    dir
}

fn line_of(name: &str, file: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(repo_root().join("examples").join(name).join(file)).unwrap();
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn an_exception_in_a_program_names_its_file_and_line() {
    // Python: the line that reads the suffix length raises instead.
    let line = line_of("hello-py", "main.py", "suffix_length = ");
    let project = with_line(
        "hello-py",
        "main.py",
        line,
        "    raise ValueError(\"no suffix today\")",
    );
    let env = Env::in_dir(project.path().to_owned(), "dev");
    let stderr = building(|| env.fails(&["preview"]));
    assert!(stderr.contains("ValueError: no suffix today"), "{stderr}");
    assert!(
        stderr.contains(&format!("main.py:{line}")),
        "line {line}:\n{stderr}"
    );

    // TypeScript: the same, mapped back from the bundle to index.ts.
    let line = line_of("hello-ts", "index.ts", "const suffixLength = ");
    let project = with_line(
        "hello-ts",
        "index.ts",
        line,
        "  throw new RangeError(\"no suffix today\");",
    );
    let env = Env::in_dir(project.path().to_owned(), "dev");
    // The edit leaves `suffixLength` undeclared: a type error, unless the check is skipped.
    let stderr = building(|| env.fails(&["preview", "--skip-typecheck"]));
    assert!(stderr.contains("RangeError: no suffix today"), "{stderr}");
    assert!(!stderr.contains("initializer.js"), "{stderr}");
    // Named by its directory, never by its build's cache key.
    let dir = project.path().file_name().unwrap().to_string_lossy();
    assert!(
        stderr.contains(&format!("program `{}`", dir.trim_start_matches('.'))),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("index.ts:{line}:")),
        "line {line}:\n{stderr}"
    );
}

/// examples/hello-ts and examples/hello-py, on the TypeScript and Python SDKs generated from
/// the `random` provider's schema (sdks/random), go up against the real provider: typed
/// classes register the resources with the provider's own input names, typed outputs flow into
/// inputs and stack outputs, and the password stays a secret.
#[test]
fn hello_ts_and_hello_py_go_up_on_generated_sdks() {
    let random = guest("plinth-random");
    for name in ["hello-ts", "hello-py"] {
        let project = example(name, |yaml| {
            yaml.replace(
                &format!("{}/random", repo_root().join("plugins").display()),
                &random.display().to_string(),
            )
        });
        let env = Env::in_dir(project.path().to_owned(), "dev");
        let out = building(|| env.ok(&["up", "--yes"]));
        assert!(count_line(&out).contains("4 created"), "{name}: {out}");
        let outputs: serde_json::Value =
            serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap();
        let port = outputs["port"]
            .as_i64()
            .unwrap_or_else(|| panic!("{name}: {outputs}"));
        assert!((8000..=8999).contains(&port), "{name}: {outputs}");
        assert_eq!(outputs["password"], "[secret]", "{name}");
        let greeting = outputs["greeting"].as_str().unwrap();
        let pet = greeting
            .strip_prefix("Hello, ")
            .and_then(|g| g.strip_suffix('!'));
        let pet = pet.unwrap_or_else(|| panic!("{name}: {outputs}"));
        let hostname = outputs["hostname"].as_str().unwrap();
        let suffix = hostname.strip_prefix(&format!("{pet}-"));
        assert_eq!(suffix.map(str::len), Some(6), "{name}: {outputs}");
        // The SDK's camelCase and keyword arguments reach the provider by its own names.
        let state = env.export();
        let password = (state["snapshot"]["resources"].as_array().unwrap().iter())
            .find(|r| r["urn"].as_str().unwrap().ends_with("::password"))
            .unwrap();
        assert_eq!(password["inputs"]["min_special"], 2, "{name}: {password}");
        assert_eq!(password["inputs"]["length"], 20, "{name}: {password}");
        // Unchanged, a second run changes nothing.
        let out = env.ok(&["up", "--yes"]);
        assert!(count_line(&out).contains("no changes"), "{name}: {out}");
    }
}

/// A generated SDK a program depends on by path is part of its build: changing the SDK
/// rebuilds the program, an unchanged one is taken from the cache.
#[test]
fn a_changed_generated_sdk_rebuilds_the_program() {
    let random = guest("plinth-random");
    let project = example("hello-ts", |yaml| {
        yaml.replace(
            &format!("{}/random", repo_root().join("plugins").display()),
            &random.display().to_string(),
        )
    });
    // A copy of the SDK outside the project (whose own files are part of the key anyway), so
    // that the test can change it.
    let outside = tempfile::tempdir().unwrap();
    let sdk = outside.path().join("random-ts");
    copy_dir(&repo_root().join("sdks/random/ts"), &sdk);
    let manifest = project.path().join("package.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let dependency = format!("file:{}", sdk.display());
    let text = text.replace(
        &format!("file:{}", repo_root().join("sdks/random/ts").display()),
        &dependency,
    );
    assert!(text.contains(&dependency), "{text}");
    std::fs::write(&manifest, text).unwrap();
    let env = Env::in_dir(project.path().to_owned(), "dev");
    building(|| env.ok(&["preview"]));
    let unchanged = env.command(&["preview"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&unchanged.stderr);
    assert!(!stderr.contains("Building program"), "{stderr}");

    let index = sdk.join("index.ts");
    let code = std::fs::read_to_string(&index).unwrap();
    // A change no earlier run made (the build cache outlives the test's directory), to code
    // the bundle keeps: a comment or an unused export would leave the bundle as it was.
    let change = format!(
        "(globalThis as any).changedIn = {:?};\n",
        project.path().display().to_string()
    );
    std::fs::write(&index, code + &change).unwrap();
    let changed = building(|| env.command(&["preview"]).output().unwrap());
    assert!(changed.status.success());
    let stderr = String::from_utf8_lossy(&changed.stderr);
    assert!(stderr.contains("Building program"), "{stderr}");
}

/// A path dependency that is not there is one clear error naming it and how to make it.
#[test]
fn a_missing_generated_sdk_is_named() {
    for (name, manifest, needle) in [
        ("hello-ts", "package.json", "@plinth/random"),
        ("hello-py", "pyproject.toml", "[tool.plinth] paths"),
    ] {
        let project = example(name, |yaml| yaml);
        let path = project.path().join(manifest);
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text.replace(
            &repo_root().join("sdks/random").display().to_string(),
            "../nowhere",
        );
        std::fs::write(&path, text).unwrap();
        let env = Env::in_dir(project.path().to_owned(), "dev");
        let stderr = env.fails(&["preview"]);
        assert!(
            stderr.contains(needle)
                && stderr.contains("nowhere")
                && stderr.contains("plinth gen-sdk"),
            "{name}: {stderr}"
        );
    }
}

#[test]
fn a_guest_without_its_componentizer_is_one_clear_line() {
    let project = example("hello-py", |yaml| yaml);
    let env = Env::in_dir(project.path().to_owned(), "dev");
    let out = env
        .command(&["preview"])
        .env("PLINTH_TOOLS", project.path().join("no-tools"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("componentize-py") && stderr.contains("scripts/setup"),
        "{stderr}"
    );
}

#[test]
fn a_typescript_provider_gets_no_http_beyond_its_grants() {
    let api = Api::start();
    // The grant names another port: the provider's fetch to the API is refused by the host.
    let project = example("rest", |yaml| yaml.replace("127.0.0.1:8080", "127.0.0.1:9"));
    let env = Env::in_dir(project.path().to_owned(), "dev");
    env.config("rest:url", &format!("http://{}/v1", api.authority));
    env.ok(&["config", "set", "password", "pw", "--secret"]);
    let stderr = building(|| env.fails(&["up", "--yes"]));
    for needle in [
        "rest:Object::settings",
        "plugin `rest`",
        &format!("HTTP request to {}", api.authority),
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    assert!(api.paths().is_empty(), "{:?}", api.paths());
    assert!(env.resources().is_empty());
}
