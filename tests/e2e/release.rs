//! Shipping plinth: one version everywhere and the script that moves it, what `--version` and
//! the service say of themselves (and the warning when they are too far apart), the signed
//! release archive `scripts/release` makes and `install.sh` installs from a clean home, and the
//! SDKs as packages their ecosystems install.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, OnceLock};

use crate::count_line;
use crate::support::service::{TestService, serve_binary};
use crate::support::{Env, PASSPHRASE, ServiceLogin, guest, guest_target_dir, printed, repo_root};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn run(command: &mut Command) -> Output {
    command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"))
}

fn succeeds(command: &mut Command) -> String {
    let out = run(command);
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}",
        printed(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

// ---- one version ----

/// Every place the one version is written in `root`, with what it says there.
fn versions(root: &Path) -> Vec<(String, String)> {
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let toml_at = |path: &str, table: &str| {
        let doc: toml::Table = toml::from_str(&read(path)).unwrap();
        let version = doc[table]
            .get("package")
            .unwrap_or(&doc[table])
            .get("version")
            .and_then(|v| v.as_str())
            .unwrap_or_else(|| panic!("{path}: no version"))
            .to_owned();
        (path.to_owned(), version)
    };
    let json_at = |path: &str| {
        let doc: serde_json::Value = serde_json::from_str(&read(path)).unwrap();
        (path.to_owned(), doc["version"].as_str().unwrap().to_owned())
    };
    // A version a source file declares, on a line of its own: `<prefix>"X",`.
    let line_at = |path: &str, prefix: &str| {
        let text = read(path);
        let found = (text.lines())
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.strip_prefix('"')?.strip_suffix("\","))
            .unwrap_or_else(|| panic!("{path}: no line starting {prefix:?}"));
        (path.to_owned(), found.to_owned())
    };
    let mut found = vec![
        toml_at("Cargo.toml", "workspace"),
        json_at("sdk-guest/js/package.json"),
        toml_at("sdk-guest/python/pyproject.toml", "project"),
        json_at("plugins/rest/package.json"),
        line_at("plugins/rest/index.ts", "  version: "),
        toml_at("plugins/envfile/pyproject.toml", "project"),
        line_at("plugins/envfile/envfile.py", "    version="),
    ];
    // The SDK version the generated Python SDKs require.
    for sdk in ["random", "file", "kv", "rest", "envfile"] {
        let path = format!("sdks/{sdk}/python/pyproject.toml");
        let doc: toml::Table = toml::from_str(&read(&path)).unwrap();
        let dependency = doc["project"]["dependencies"][0].as_str().unwrap();
        let version = dependency.strip_prefix("plinth-sdk ~= ").unwrap();
        found.push((path, version.to_owned()));
    }
    found
}

#[test]
fn one_version_for_the_cli_the_service_the_sdks_and_the_plugins() {
    for (file, version) in versions(&repo_root()) {
        assert_eq!(
            version, VERSION,
            "{file} says {version}, plinth is {VERSION}"
        );
    }
    // Every crate of the workspace inherits it, and the license, but the generated SDKs, which
    // carry their provider's version as `plinth gen-sdk` writes it.
    let root = repo_root();
    let workspace: toml::Table =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
    let members = workspace["workspace"]["members"].as_array().unwrap();
    for dir in members.iter().map(|m| m.as_str().unwrap()) {
        if dir.starts_with("sdks/") || dir.starts_with("tests/sdks/") {
            continue;
        }
        let manifest = root.join(dir).join("Cargo.toml");
        let doc: toml::Table =
            toml::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        for field in ["version", "license"] {
            let inherited = doc["package"][field]
                .get("workspace")
                .and_then(|w| w.as_bool());
            assert_eq!(
                inherited,
                Some(true),
                "{}: a workspace crate inherits the workspace's {field}",
                manifest.display()
            );
        }
    }
}

/// The files `scripts/bump-version` edits, copied into `dir` with the script.
fn copy_versioned_files(dir: &Path) {
    let root = repo_root();
    let mut files: Vec<String> = versions(&root).into_iter().map(|(f, _)| f).collect();
    files.push("scripts/bump-version".into());
    files.push("tests/sdks/shapes/python/pyproject.toml".into());
    for file in files {
        let to = dir.join(&file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root.join(&file), to).unwrap();
    }
}

#[test]
fn bump_version_moves_every_version_and_refuses_what_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    copy_versioned_files(dir.path());
    let before = std::fs::read_to_string(dir.path().join("Cargo.toml")).unwrap();
    let bump = |version: &str| {
        run(Command::new(dir.path().join("scripts/bump-version"))
            .args(["--files-only", version])
            .current_dir(dir.path()))
    };

    for bad in ["1.2", "01.2.3", "1.2.3.4", "v1.2.3", "1.2.3; rm -rf /"] {
        let out = bump(bad);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", printed(&out));
        assert!(
            printed(&out).contains("is not a version"),
            "{}",
            printed(&out)
        );
    }
    // Nothing moved.
    for (file, version) in versions(dir.path()) {
        assert_eq!(version, VERSION, "{file}");
    }

    let out = bump("7.8.9-rc.1");
    assert!(out.status.success(), "{}", printed(&out));
    for (file, version) in versions(dir.path()) {
        assert_eq!(version, "7.8.9-rc.1", "{file}");
    }
    // Only the version lines changed.
    let after = std::fs::read_to_string(dir.path().join("Cargo.toml")).unwrap();
    let changed: Vec<_> = (before.lines().zip(after.lines()))
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        changed,
        [(
            format!("version = \"{VERSION}\"").as_str(),
            "version = \"7.8.9-rc.1\""
        )]
    );
    assert_eq!(before.lines().count(), after.lines().count());

    // A file that no longer says its version where the script looks is an error, not a skip.
    std::fs::write(
        dir.path().join("sdk-guest/js/package.json"),
        "{ \"name\": \"@plinth/sdk\", \"version\": \"7.8.9-rc.1\" }\n",
    )
    .unwrap();
    let out = bump("7.9.0");
    assert!(!out.status.success(), "{}", printed(&out));
    assert!(
        printed(&out).contains("sdk-guest/js/package.json does not name version 7.8.9-rc.1"),
        "{}",
        printed(&out)
    );
}

// ---- what plinth and its service say they are ----

/// The commit the binaries were built from: HEAD of this checkout, or `unknown` outside git.
fn expected_commit() -> String {
    let out = run(Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo_root()));
    if out.status.success() {
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    } else {
        "unknown".to_owned()
    }
}

/// Every `package NAME@VERSION;` the WIT files under wit/ declare (not the standard WASI
/// packages vendored in `deps/`).
fn wit_packages() -> BTreeSet<String> {
    let mut packages = BTreeSet::new();
    let mut dirs = vec![repo_root().join("wit")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.ends_with("deps") {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "wit") {
                let text = std::fs::read_to_string(&path).unwrap();
                let package = (text.lines())
                    .find_map(|l| l.strip_prefix("package "))
                    .and_then(|p| p.strip_suffix(';'))
                    .unwrap();
                packages.insert(package.to_owned());
            }
        }
    }
    packages
}

#[test]
fn version_names_the_commit_and_every_wit_package_plinth_speaks() {
    let env = Env::empty();
    let short = env.ok(&["-V"]);
    assert_eq!(short, format!("plinth {VERSION}\n"));

    let long = env.ok(&["--version"]);
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(lines[0], format!("plinth {VERSION}"), "{long}");
    assert_eq!(lines[1], format!("commit: {}", expected_commit()), "{long}");
    // `wit: plinth:plugin@0.3.0, 0.2.0, 0.1.0; plinth:policy@0.1.0; ...`: each package's
    // versions, and exactly those the WIT files of this checkout declare.
    let wit = lines[2].strip_prefix("wit: ").expect(&long);
    let mut spoken = BTreeSet::new();
    for package in wit.split("; ") {
        let (name, versions) = package.split_once('@').unwrap();
        for version in versions.split(", ") {
            spoken.insert(format!("{name}@{version}"));
        }
    }
    assert_eq!(spoken, wit_packages(), "{long}");

    let about: serde_json::Value = serde_json::from_str(&env.ok(&["about", "--json"])).unwrap();
    assert_eq!(about["commit"], expected_commit().as_str());
}

/// The header the service names its version in.
const VERSION_HEADER: &str = "plinth-version";

fn get(url: &str) -> (u16, Option<String>, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut answer = agent.get(url).call().unwrap();
    let header = (answer.headers().get(VERSION_HEADER)).map(|v| v.to_str().unwrap().to_owned());
    let status = answer.status().as_u16();
    (status, header, answer.body_mut().read_to_string().unwrap())
}

#[test]
fn the_service_answers_its_version_and_names_it_on_every_answer() {
    let service = TestService::start();
    let (status, header, body) = get(&format!("{}/api/v1/version", service.url()));
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["version"], VERSION);
    assert_eq!(answer["commit"], expected_commit().as_str());
    assert_eq!(answer["api"], "v1");
    assert_eq!(header.as_deref(), Some(VERSION));
    // Refusals too: a request without a token, a route that does not exist.
    for path in ["api/v1/user", "api/v1/nothing-here"] {
        let (status, header, _) = get(&format!("{}/{path}", service.url()));
        assert!(status >= 400, "{path}: {status}");
        assert_eq!(header.as_deref(), Some(VERSION), "{path}");
    }
}

/// An HTTP proxy in front of a real service that says the service is at `version`: a service
/// of another release, as a client meets one.
struct VersionProxy {
    url: String,
    server: Arc<tiny_http::Server>,
}

impl VersionProxy {
    fn new(upstream: &str, version: &'static str) -> VersionProxy {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let upstream = upstream.to_owned();
        let serving = server.clone();
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            // Each request on a thread of its own, as a real proxy serves them: the client
            // keeps two journal batches in flight, and the service holds one that came early
            // until the one before it arrives, which a proxy forwarding one request at a time
            // would keep queued behind it.
            for mut request in serving.incoming_requests() {
                let (agent, upstream) = (agent.clone(), upstream.clone());
                std::thread::spawn(move || {
                    let mut body = Vec::new();
                    std::io::Read::read_to_end(request.as_reader(), &mut body).unwrap();
                    let mut forwarded = ureq::http::Request::builder()
                        .method(request.method().as_str())
                        .uri(format!("{upstream}{}", request.url()));
                    for header in request.headers() {
                        let name = header.field.as_str().as_str();
                        // Answers come back plain: the proxy copies bytes it does not decode.
                        if !["host", "content-length", "accept-encoding", "connection"]
                            .contains(&name.to_ascii_lowercase().as_str())
                        {
                            forwarded = forwarded.header(name, header.value.as_str());
                        }
                    }
                    let Ok(mut answer) = agent.run(forwarded.body(body).unwrap()) else {
                        return;
                    };
                    let status = answer.status().as_u16();
                    let mut response =
                        tiny_http::Response::from_data(answer.body_mut().read_to_vec().unwrap())
                            .with_status_code(status);
                    for (name, value) in answer.headers() {
                        let lower = name.as_str();
                        if ![
                            "content-length",
                            "transfer-encoding",
                            "connection",
                            VERSION_HEADER,
                        ]
                        .contains(&lower)
                        {
                            response.add_header(
                                tiny_http::Header::from_bytes(lower, value.as_bytes()).unwrap(),
                            );
                        }
                    }
                    response.add_header(
                        tiny_http::Header::from_bytes(VERSION_HEADER, version).unwrap(),
                    );
                    let _ = request.respond(response);
                });
            }
        });
        VersionProxy { url, server }
    }
}

impl Drop for VersionProxy {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

#[test]
fn a_client_warns_once_of_a_service_too_far_from_its_version() {
    let service = TestService::start();
    let warned = |out: &Output| {
        String::from_utf8_lossy(&out.stderr)
            .matches("warning: this plinth is")
            .count()
    };

    // The real service: same version, no warning.
    let env = Env::scenario_on(ServiceLogin {
        url: service.url().to_owned(),
        token: service.token.clone(),
    });
    let out = env.run(&["up", "--yes"]);
    assert!(out.status.success(), "{}", printed(&out));
    assert_eq!(warned(&out), 0, "{}", printed(&out));

    // A service of the same series (another patch version): no warning either.
    let near = VersionProxy::new(service.url(), "0.1.99");
    let mut near_env = Env::empty();
    near_env.service = Some(ServiceLogin {
        url: near.url.clone(),
        token: service.token.clone(),
    });
    let out = near_env.run(&["whoami"]);
    assert!(out.status.success(), "{}", printed(&out));
    assert_eq!(warned(&out), 0, "{}", printed(&out));

    // Another series: said once per command, however many requests it makes, and the command
    // goes on. (A project of another name: the first one's stack `dev` is on this service.)
    let far_version = if VERSION.starts_with("0.") {
        "9.0.0"
    } else {
        "0.1.0"
    };
    let far = VersionProxy::new(service.url(), far_version);
    let mut far_env = Env::empty();
    let yaml = std::fs::read_to_string(env.project.join("Plinth.yaml")).unwrap();
    std::fs::write(
        far_env.project.join("Plinth.yaml"),
        yaml.replacen("name: scenario", "name: faraway", 1),
    )
    .unwrap();
    far_env.service = Some(ServiceLogin {
        url: far.url.clone(),
        token: service.token.clone(),
    });
    far_env.ok(&["stack", "init", "dev"]);
    let out = far_env.run(&["up", "--yes"]);
    assert!(out.status.success(), "{}", printed(&out));
    assert_eq!(warned(&out), 1, "{}", printed(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: this plinth is {VERSION} but the service at {} is {far_version}",
            far.url
        )),
        "{stderr}"
    );
    assert!(count_line(&String::from_utf8_lossy(&out.stdout)).contains("created"));
}

// ---- the release archive and the installer ----

/// A release archive built once per test process from the binaries under test, with its
/// public key.
struct Release {
    archive: PathBuf,
    public_key: String,
    _dir: tempfile::TempDir,
}

fn release() -> &'static Release {
    static RELEASE: OnceLock<Release> = OnceLock::new();
    RELEASE.get_or_init(|| {
        // The Rust plugins and the hello program, as the script finds them.
        guest("plinth-random");
        assert!(guest("hello").is_file());
        let dir = tempfile::tempdir().unwrap();
        // The signing key: a plinth plugin key, unencrypted so that nothing asks for a password.
        let home = dir.path().join("signer");
        let created = succeeds(
            Command::new(env!("CARGO_BIN_EXE_plinth"))
                .args(["plugin", "key", "create", "release", "--unencrypted"])
                .env("PLINTH_HOME", &home),
        );
        let public_key = (created.split_whitespace())
            .find(|w| w.starts_with("RW"))
            .unwrap_or_else(|| panic!("no public key in {created}"))
            .to_owned();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_plinth"), bin.join("plinth")).unwrap();
        std::os::unix::fs::symlink(serve_binary(), bin.join("plinth-serve")).unwrap();
        let out = dir.path().join("out");
        let printed = succeeds(
            Command::new(repo_root().join("scripts/release"))
                .args(["--profile", "dev", "--no-build", "--plugins", "random,file"])
                .arg("--bin-dir")
                .arg(&bin)
                .arg("--key")
                .arg(home.join("keys/release.key"))
                .arg("--out")
                .arg(&out)
                .env("CARGO_TARGET_DIR", guest_target_dir()),
        );
        // The sizes, for the report.
        println!("{printed}");
        let archive = PathBuf::from(printed.lines().last().unwrap());
        let target = succeeds(Command::new("rustc").arg("-vV"));
        let target = (target.lines())
            .find_map(|l| l.strip_prefix("host: "))
            .unwrap();
        assert_eq!(
            archive.file_name().unwrap().to_str().unwrap(),
            format!("plinth-{VERSION}-{target}.tar.gz")
        );
        Release {
            archive,
            public_key,
            _dir: dir,
        }
    })
}

/// A shell with nothing of this machine's plinth: a home of its own, no PLINTH_* variables, a
/// working directory away from the repository, the system's PATH.
fn clean_shell(home: &Path, cwd: &Path, program: &str) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .current_dir(cwd);
    command
}

fn install(home: &Path, key: &str, archive: impl AsRef<OsStr>, verifier: &str) -> Output {
    let work = tempfile::tempdir().unwrap();
    run(clean_shell(home, work.path(), "sh")
        .arg(repo_root().join("install.sh"))
        .args(["--key", key])
        .arg(archive)
        .env("PLINTH_VERIFIER", verifier))
}

#[test]
fn a_release_installs_into_a_clean_home_and_runs_hello_with_no_checkout() {
    let release = release();
    let home = tempfile::tempdir().unwrap();
    let out = install(
        home.path(),
        &release.public_key,
        &release.archive,
        "openssl",
    );
    let said = printed(&out);
    assert!(out.status.success(), "{said}");
    let bin = home.path().join(".plinth/bin");
    assert!(
        said.contains(&format!(
            "Installed plinth {VERSION} into {}",
            bin.display()
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!("export PATH=\"{}:$PATH\"", bin.display())),
        "{said}"
    );

    // Again, with minisign, over the first: the same files, nothing refused.
    let out = install(
        home.path(),
        &release.public_key,
        &release.archive,
        "minisign",
    );
    assert!(out.status.success(), "{}", printed(&out));

    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let plinth = |cwd: &Path, args: &[&str]| {
        let mut command = clean_shell(home.path(), cwd, "plinth");
        command
            .args(args)
            .env("PATH", &path)
            .env("PLINTH_CONFIG_PASSPHRASE", PASSPHRASE);
        command
    };
    let version = succeeds(&mut plinth(home.path(), &["--version"]));
    assert!(
        version.starts_with(&format!("plinth {VERSION}\ncommit: ")),
        "{version}"
    );
    let plugins = succeeds(&mut plinth(home.path(), &["plugin", "ls"]));
    for name in ["random", "file"] {
        assert!(
            plugins
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{plugins}"
        );
    }

    // The example, copied out of the installation into an empty directory, runs on the
    // installed plugin: no repository, no cargo, no build.
    let project = tempfile::tempdir().unwrap();
    let hello = project.path().join("hello");
    succeeds(
        Command::new("cp")
            .arg("-R")
            .arg(home.path().join(".plinth/examples/hello"))
            .arg(&hello),
    );
    succeeds(&mut plinth(&hello, &["stack", "init", "dev"]));
    let up = succeeds(&mut plinth(&hello, &["up", "--yes"]));
    assert!(count_line(&up).contains("created"), "{up}");
    let outputs = succeeds(&mut plinth(&hello, &["stack", "output", "--json"]));
    let outputs: serde_json::Value = serde_json::from_str(&outputs).unwrap();
    assert!(
        outputs["greeting"].as_str().unwrap().starts_with("Hello, "),
        "{outputs}"
    );
    succeeds(&mut plinth(&hello, &["destroy", "--yes"]));
}

/// `release`'s archive unpacked into a directory, changed by `change`, packed again.
fn altered(change: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf) {
    let release = release();
    let dir = tempfile::tempdir().unwrap();
    let unpacked = dir.path().join("x");
    std::fs::create_dir(&unpacked).unwrap();
    succeeds(
        Command::new("tar")
            .arg("-xzf")
            .arg(&release.archive)
            .arg("-C")
            .arg(&unpacked),
    );
    let top = std::fs::read_dir(&unpacked)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    change(&top.path());
    let archive = dir.path().join(release.archive.file_name().unwrap());
    succeeds(
        Command::new("tar")
            .args(["-I", "gzip -1", "-cf"])
            .arg(&archive)
            .arg("-C")
            .arg(&unpacked)
            .arg(top.file_name()),
    );
    (dir, archive)
}

fn refused(archive: impl AsRef<OsStr>, key: &str, why: &str) {
    for verifier in ["openssl", "minisign"] {
        let home = tempfile::tempdir().unwrap();
        let out = install(home.path(), key, &archive, verifier);
        let said = printed(&out);
        assert!(!out.status.success(), "{verifier}: {said}");
        assert!(said.contains(why), "{verifier}: expected {why:?} in {said}");
        // Nothing was installed.
        assert!(!home.path().join(".plinth").exists(), "{verifier}: {said}");
    }
}

#[test]
fn the_installer_refuses_an_archive_whose_sums_or_signature_do_not_match() {
    let release = release();
    // A plugin changed after signing: its sum no longer matches.
    let (_a, changed_file) = altered(|top| {
        let wasm = top.join("plugins/random.wasm");
        let mut bytes = std::fs::read(&wasm).unwrap();
        bytes.push(0);
        std::fs::write(&wasm, bytes).unwrap();
    });
    refused(
        &changed_file,
        &release.public_key,
        "does not match SHA256SUMS",
    );

    // ... and its sum changed to match: the signature no longer does.
    let (_b, changed_sums) = altered(|top| {
        let wasm = top.join("plugins/random.wasm");
        let mut bytes = std::fs::read(&wasm).unwrap();
        bytes.push(0);
        std::fs::write(&wasm, &bytes).unwrap();
        let sums = std::fs::read_to_string(top.join("SHA256SUMS")).unwrap();
        let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
        let sums: String = (sums.lines())
            .map(|l| match l.strip_suffix("  plugins/random.wasm") {
                Some(_) => format!("{digest}  plugins/random.wasm\n"),
                None => format!("{l}\n"),
            })
            .collect();
        std::fs::write(top.join("SHA256SUMS"), sums).unwrap();
    });
    refused(
        &changed_sums,
        &release.public_key,
        "signature of SHA256SUMS does not verify",
    );

    // A file the sums do not name.
    let (_c, extra) = altered(|top| {
        std::fs::write(top.join("bin/helper"), "#!/bin/sh\n").unwrap();
    });
    refused(
        &extra,
        &release.public_key,
        "holds files SHA256SUMS does not name",
    );

    // The archive as released, but another key: not that key's owner's release.
    let other = tempfile::tempdir().unwrap();
    let created = succeeds(
        Command::new(env!("CARGO_BIN_EXE_plinth"))
            .args(["plugin", "key", "create", "other", "--unencrypted"])
            .env("PLINTH_HOME", other.path()),
    );
    let other_key = (created.split_whitespace())
        .find(|w| w.starts_with("RW"))
        .unwrap();
    for verifier in ["openssl", "minisign"] {
        let home = tempfile::tempdir().unwrap();
        let out = install(home.path(), other_key, &release.archive, verifier);
        assert!(!out.status.success(), "{}", printed(&out));
        assert!(printed(&out).contains("key"), "{}", printed(&out));
        assert!(!home.path().join(".plinth").exists());
    }

    // A path that climbs out of the archive's directory: refused before anything is unpacked.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evil"), "x").unwrap();
    let evil = dir.path().join("evil.tar.gz");
    succeeds(
        Command::new("tar")
            .args(["-czf"])
            .arg(&evil)
            .arg("-C")
            .arg(dir.path())
            .args(["--transform", "s|^evil|plinth-9.9.9-x/../../evil|", "evil"]),
    );
    refused(&evil, &release.public_key, "with . or .. in it");
}

/// Serves one file at `/NAME` on a loopback port until dropped; any other path is a 404.
struct FileServer {
    url: String,
    server: Arc<tiny_http::Server>,
}

impl FileServer {
    fn new(file: &Path) -> FileServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let path = format!("/{}", file.file_name().unwrap().to_str().unwrap());
        let bytes = std::fs::read(file).unwrap();
        let serving = server.clone();
        std::thread::spawn(move || {
            for request in serving.incoming_requests() {
                let response = if request.url() == path {
                    tiny_http::Response::from_data(bytes.clone())
                } else {
                    tiny_http::Response::from_data(b"not found".to_vec()).with_status_code(404)
                };
                let _ = request.respond(response);
            }
        });
        FileServer { url, server }
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

#[test]
fn the_installer_downloads_an_archive_by_url_and_refuses_urls_it_should_not_fetch() {
    let release = release();
    let served = FileServer::new(&release.archive);
    let name = release.archive.file_name().unwrap().to_str().unwrap();

    // Plain http:// from this machine (a URL the release's own https:// address stands for).
    let home = tempfile::tempdir().unwrap();
    let url = format!("{}/{name}", served.url);
    let out = install(home.path(), &release.public_key, &url, "openssl");
    assert!(out.status.success(), "{}", printed(&out));
    let plinth = home.path().join(".plinth/bin/plinth");
    let version = succeeds(Command::new(&plinth).arg("--version"));
    assert!(
        version.starts_with(&format!("plinth {VERSION}\n")),
        "{version}"
    );

    // A URL that is not there: nothing installed, the URL named.
    let missing = format!("{}/plinth-9.9.9-x.tar.gz", served.url);
    refused(
        &missing,
        &release.public_key,
        &format!("could not download {missing}"),
    );
    // Plain http:// from elsewhere, and other schemes: refused before anything is fetched.
    refused(
        "http://example.invalid/plinth.tar.gz",
        &release.public_key,
        "plain http:// only from this machine",
    );
    refused(
        "ftp://127.0.0.1/plinth.tar.gz",
        &release.public_key,
        "only https:// URLs and local files",
    );
}

// ---- the SDKs as packages ----

/// `cargo package` of the Rust SDK (its verification builds the crate from the package alone),
/// then a program on the packaged crate, built by plinth and run.
#[test]
fn the_rust_sdk_packages_and_a_program_on_the_package_runs() {
    let root = repo_root();
    let listed = succeeds(
        Command::new(env!("CARGO"))
            .args(["package", "--list", "--allow-dirty", "-p", "plinth-sdk"])
            .current_dir(&root),
    );
    for needed in [
        "wit/plugin/worlds.wit",
        "wit/policy/policy.wit",
        "wit/hints/hints.wit",
        "wit/inputs/inputs.wit",
        "wit/tls/tls.wit",
        "wit/tls/deps/io.wit",
        "LICENSE",
        "README.md",
        "src/lib.rs",
    ] {
        assert!(
            listed.lines().any(|l| l == needed),
            "{needed} not in:\n{listed}"
        );
    }
    // The WIT inside the crate is the repository's.
    for package in ["plugin", "policy", "hints", "inputs", "tls", "tls/deps"] {
        for entry in std::fs::read_dir(root.join("wit").join(package)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                continue;
            }
            let copy = root
                .join("sdk-guest/rust/wit")
                .join(package)
                .join(path.file_name().unwrap());
            assert_eq!(
                std::fs::read(&path).unwrap(),
                std::fs::read(&copy).unwrap_or_default(),
                "{} differs from {}: copy wit/ into sdk-guest/rust/wit",
                copy.display(),
                path.display()
            );
        }
    }
    let target = guest_target_dir();
    succeeds(
        Command::new(env!("CARGO"))
            .args([
                "package",
                "--allow-dirty",
                "--offline",
                "--quiet",
                "-p",
                "plinth-sdk",
            ])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(&root),
    );
    let crate_file = target.join(format!("package/plinth-sdk-{VERSION}.crate"));
    let dir = tempfile::tempdir().unwrap();
    succeeds(
        Command::new("tar")
            .arg("-xzf")
            .arg(&crate_file)
            .arg("-C")
            .arg(dir.path()),
    );
    let sdk = dir.path().join(format!("plinth-sdk-{VERSION}"));
    // The packaged manifest names no path dependency.
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(sdk.join("Cargo.toml")).unwrap()).unwrap();
    for table in ["dependencies", "dev-dependencies", "build-dependencies"] {
        for (name, dependency) in manifest
            .get(table)
            .and_then(|t| t.as_table())
            .into_iter()
            .flatten()
        {
            assert!(
                dependency.get("path").is_none(),
                "{table}.{name}: {dependency:?}"
            );
            assert!(
                dependency.is_str() || dependency.get("version").is_some(),
                "{table}.{name}: {dependency:?}"
            );
        }
    }

    let project = dir.path().join("greet");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        format!(
            "[package]\nname = \"greet\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\n\
             plinth-sdk = {{ path = \"{}\", features = [\"program\"] }}\n\n[workspace]\n",
            sdk.display()
        ),
    )
    .unwrap();
    // The versions the workspace builds with, so that nothing is fetched.
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    std::fs::write(
        project.join("src/lib.rs"),
        "use plinth_sdk::{Context, Error};\n\n\
         fn main(ctx: &Context) -> Result<(), Error> {\n    \
             ctx.export(\"greeting\", \"hello from the packaged SDK\");\n    \
             Ok(())\n\
         }\n\n\
         plinth_sdk::export_program!(main);\n",
    )
    .unwrap();
    std::fs::write(project.join("Plinth.yaml"), "name: greet\nprogram: .\n").unwrap();
    let env = Env::in_dir(project.clone(), "dev");
    env.ok(&["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["greeting"], "hello from the packaged SDK");
}

/// `npm pack` of `@plinth/sdk`, installed from the tarball into a fresh project (offline: it
/// depends on nothing); a program there type-checks against the installed package (a misspelt
/// method does not) and runs.
#[test]
fn the_typescript_sdk_packs_installs_and_a_program_on_it_checks_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let packed = succeeds(
        Command::new("npm")
            .args(["pack", "--offline", "--silent", "--pack-destination"])
            .arg(dir.path())
            .arg(repo_root().join("sdk-guest/js")),
    );
    let tarball = dir.path().join(packed.trim());
    assert_eq!(
        tarball.file_name().unwrap().to_str().unwrap(),
        format!("plinth-sdk-{VERSION}.tgz")
    );

    let project = dir.path().join("greet");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("package.json"),
        "{ \"name\": \"greet\", \"private\": true, \"type\": \"module\", \"main\": \"index.ts\" }\n",
    )
    .unwrap();
    succeeds(
        Command::new("npm")
            .args([
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
            ])
            .arg(&tarball)
            .current_dir(&project),
    );
    let installed = project.join("node_modules/@plinth/sdk");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(installed.join("package.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["version"], VERSION);
    assert!(installed.join("LICENSE").is_file());
    assert!(installed.join("src/index.ts").is_file());
    assert!(
        !installed.join("test").exists(),
        "the tests are not shipped"
    );

    std::fs::write(
        project.join("tsconfig.json"),
        // No skipLibCheck: the SDK's ambient declarations of its component imports
        // (src/monitor.d.ts, src/node/wasi-filesystem.d.ts) check as the user's own code does.
        "{ \"compilerOptions\": { \"strict\": true, \"noEmit\": true, \"module\": \"ESNext\", \
         \"moduleResolution\": \"bundler\", \"target\": \"ES2022\", \"lib\": [\"ES2022\"] }, \
         \"include\": [\"index.ts\"] }\n",
    )
    .unwrap();
    let program = |method: &str| {
        format!(
            "import type {{ Context }} from \"@plinth/sdk\";\n\n\
             export default function main(ctx: Context): void {{\n  \
               ctx.{method}(\"greeting\", \"hello from the npm package\");\n\
             }}\n"
        )
    };
    let tsc = crate::support::tools_dir().join("js/node_modules/typescript/bin/tsc");
    assert!(
        tsc.is_file(),
        "{} is missing: run scripts/setup",
        tsc.display()
    );
    let check = || run(Command::new("node").arg(&tsc).arg("-p").arg(&project));
    std::fs::write(project.join("index.ts"), program("exprot")).unwrap();
    let out = check();
    assert!(!out.status.success(), "{}", printed(&out));
    assert!(printed(&out).contains("exprot"), "{}", printed(&out));
    std::fs::write(project.join("index.ts"), program("export")).unwrap();
    let out = check();
    assert!(out.status.success(), "{}", printed(&out));

    std::fs::write(project.join("Plinth.yaml"), "name: greet\nprogram: .\n").unwrap();
    let env = Env::in_dir(project.clone(), "dev");
    env.ok(&["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["greeting"], "hello from the npm package");
}

/// The Python SDK's sdist and wheel (`python -m build`, offline: setuptools from the wheels
/// scripts/setup keeps), each installed by pip into a fresh venv with its `py.typed`; a program
/// type-checks against the installed package (a misspelt method does not) and runs.
#[test]
fn the_python_sdk_builds_an_sdist_and_a_wheel_that_install_typed_and_a_program_runs() {
    let tools = crate::support::tools_dir();
    let python = tools.join("py/bin/python");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("sdk");
    std::fs::create_dir(&source).unwrap();
    succeeds(
        Command::new("cp")
            .arg("-R")
            .args(
                ["plinth", "pyproject.toml", "README.md", "LICENSE"]
                    .map(|f| repo_root().join("sdk-guest/python").join(f)),
            )
            .arg(&source),
    );
    let offline = |command: &mut Command| {
        command
            .env("PIP_NO_INDEX", "1")
            .env("PIP_FIND_LINKS", tools.join("wheels"))
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    };
    let dist = dir.path().join("dist");
    let mut build = Command::new(&python);
    build
        .args(["-m", "build", "--outdir"])
        .arg(&dist)
        .arg(&source);
    offline(&mut build);
    succeeds(&mut build);
    let wheel = dist.join(format!("plinth_sdk-{VERSION}-py3-none-any.whl"));
    let sdist = dist.join(format!("plinth_sdk-{VERSION}.tar.gz"));
    assert!(
        wheel.is_file() && sdist.is_file(),
        "{:?}",
        std::fs::read_dir(&dist).unwrap().collect::<Vec<_>>()
    );

    for package in [&wheel, &sdist] {
        let venv = dir.path().join(format!(
            "venv-{}",
            package.extension().unwrap().to_str().unwrap()
        ));
        succeeds(Command::new(&python).args(["-m", "venv"]).arg(&venv));
        let mut install = Command::new(venv.join("bin/pip"));
        install.args(["install", "--quiet"]).arg(package);
        offline(&mut install);
        succeeds(&mut install);
        // Installed where pip puts packages, with its type information.
        let where_ = succeeds(Command::new(venv.join("bin/python")).args([
            "-c",
            "import importlib.util, pathlib; \
             print(pathlib.Path(importlib.util.find_spec('plinth').origin).parent)",
        ]));
        let installed = PathBuf::from(where_.trim());
        assert!(installed.starts_with(&venv), "{}", installed.display());
        assert!(
            installed.join("py.typed").is_file(),
            "{}",
            package.display()
        );
    }

    let project = dir.path().join("greet");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("pyproject.toml"),
        "[project]\nname = \"greet\"\nversion = \"0.1.0\"\nrequires-python = \">=3.11\"\n\n\
         [tool.plinth]\nmodule = \"main\"\n",
    )
    .unwrap();
    let program = |method: &str| {
        format!(
            "from plinth import Context\n\n\n\
             def main(ctx: Context) -> None:\n    \
                 ctx.{method}(\"greeting\", \"hello from the wheel\")\n"
        )
    };
    let venv_python = dir.path().join("venv-whl/bin/python");
    let check = || {
        run(Command::new(tools.join("py/bin/mypy"))
            .args(["--strict", "--no-incremental", "--python-executable"])
            .arg(&venv_python)
            .arg(project.join("main.py"))
            .current_dir(&project))
    };
    std::fs::write(project.join("main.py"), program("exprot")).unwrap();
    let out = check();
    assert!(!out.status.success(), "{}", printed(&out));
    assert!(printed(&out).contains("\"exprot\""), "{}", printed(&out));
    std::fs::write(project.join("main.py"), program("export")).unwrap();
    let out = check();
    assert!(out.status.success(), "{}", printed(&out));

    std::fs::write(project.join("Plinth.yaml"), "name: greet\nprogram: .\n").unwrap();
    let env = Env::in_dir(project.clone(), "dev");
    env.ok(&["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["greeting"], "hello from the wheel");
}
