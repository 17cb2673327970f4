//! Plugins in OCI registries: `plinth plugin publish` and `pull` against a real registry (CNCF
//! distribution, started per test on a free loopback port), plain and with TLS and basic auth;
//! interop with skopeo both ways; hostile registries refused before anything is stored.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use plinth_test_registry::{Registry, USER};
use sha2::{Digest, Sha256};

use crate::support::{Env, guest, own_home};

const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
const LAYER_MEDIA_TYPE: &str = "application/wasm";
const ARTIFACT_TYPE: &str = "application/vnd.wasm.component.v1+wasm";

/// A plinth home (the plugin store) and a docker config directory of the test's own; the
/// precompiled artifacts are the suite's, unless [`Client::with_own_cache`] made it.
pub(crate) struct Client {
    pub(crate) home: tempfile::TempDir,
    pub(crate) docker: tempfile::TempDir,
    /// `SSL_CERT_FILE`, for a registry whose CA the test made.
    pub(crate) ca: Option<PathBuf>,
}

impl Client {
    pub(crate) fn new() -> Client {
        Client::with_home(own_home())
    }

    /// A client whose precompiled artifacts are its own too, for a test about what was compiled.
    pub(crate) fn with_own_cache() -> Client {
        Client::with_home(tempfile::tempdir().unwrap())
    }

    fn with_home(home: tempfile::TempDir) -> Client {
        Client {
            home,
            docker: tempfile::tempdir().unwrap(),
            ca: None,
        }
    }

    /// Writes `auths` credentials for `registry` into the docker config, as `docker login`
    /// would.
    fn login(&self, registry: &Registry) {
        use base64::Engine;
        let auth = base64::engine::general_purpose::STANDARD
            .encode(format!("{USER}:{}", registry.password().unwrap()));
        let config = serde_json::json!({ "auths": { registry.authority(): { "auth": auth } } });
        std::fs::write(self.docker.path().join("config.json"), config.to_string()).unwrap();
    }

    pub(crate) fn command(&self, env: &Env, args: &[&str]) -> Command {
        let mut cmd = env.command(args);
        cmd.env("PLINTH_HOME", self.home.path())
            .env("DOCKER_CONFIG", self.docker.path())
            .env_remove("SSL_CERT_DIR");
        match &self.ca {
            Some(ca) => cmd.env("SSL_CERT_FILE", ca),
            None => cmd.env_remove("SSL_CERT_FILE"),
        };
        cmd
    }

    pub(crate) fn run(&self, env: &Env, args: &[&str]) -> Output {
        self.command(env, args).output().expect("running plinth")
    }

    pub(crate) fn ok(&self, env: &Env, args: &[&str]) -> String {
        let out = self.run(env, args);
        assert!(
            out.status.success(),
            "plinth {args:?} failed\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub(crate) fn fails(&self, env: &Env, args: &[&str]) -> String {
        let out = self.run(env, args);
        assert!(
            !out.status.success(),
            "plinth {args:?} should have failed\nstdout:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).unwrap()
    }

    /// The components in the store's blob directory.
    pub(crate) fn stored(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.home.path().join("plugins/sha256")) {
            Ok(dir) => dir.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// A scenario project whose `testkit` plugin comes from the store at `version`.
pub(crate) fn project_on_store(version: &str) -> Env {
    Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    version: {version}\n",
        guest("plinth-scenario").display()
    ))
}

/// A project running the scenario program, where the plugin commands run.
pub(crate) fn scenario_project() -> Env {
    Env::project(&format!(
        "name: scenario\nprogram: {}\n",
        guest("plinth-scenario").display()
    ))
}

pub(crate) fn testkit() -> (PathBuf, Vec<u8>) {
    let path = guest("plinth-testkit");
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

pub(crate) fn skopeo(args: &[&str]) -> String {
    let out = Command::new("skopeo")
        .args(args)
        .output()
        .expect("running skopeo");
    assert!(
        out.status.success(),
        "skopeo {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The version the testkit plugin calls itself.
pub(crate) fn testkit_version(client: &Client, env: &Env) -> String {
    let (path, _) = testkit();
    let shown: serde_json::Value = serde_json::from_str(&client.ok(
        env,
        &["plugin", "inspect", path.to_str().unwrap(), "--json"],
    ))
    .unwrap();
    shown["version"].as_str().unwrap().to_owned()
}

#[test]
fn publish_then_pull_and_run_over_plain_http_on_loopback() {
    let registry = Registry::start().unwrap();
    let publisher = Client::new();
    let env = scenario_project();
    let version = testkit_version(&publisher, &env);
    let (path, bytes) = testkit();
    let repo = format!("{}/plinth/testkit", registry.authority());

    // The tag must be the plugin's own version.
    let stderr = publisher.fails(
        &env,
        &[
            "plugin",
            "publish",
            path.to_str().unwrap(),
            &format!("oci://{repo}:9.9.9"),
        ],
    );
    assert!(
        stderr.contains(&format!("calls itself version {version}, not 9.9.9")),
        "{stderr}"
    );

    let out = publisher.ok(
        &env,
        &[
            "plugin",
            "publish",
            path.to_str().unwrap(),
            &format!("oci://{repo}:{version}"),
        ],
    );
    assert!(out.contains("Published testkit"), "{out}");
    let digest = out
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .expect(&out)
        .to_owned();

    // Another OCI tool reads what plinth pushed as a Wasm component in the standard layout.
    let raw = skopeo(&[
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{repo}:{version}"),
    ]);
    assert_eq!(format!("sha256:{}", sha256(raw.as_bytes())), digest);
    let manifest: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(manifest["artifactType"], ARTIFACT_TYPE, "{manifest}");
    assert_eq!(
        manifest["config"]["mediaType"], CONFIG_MEDIA_TYPE,
        "{manifest}"
    );
    assert_eq!(
        manifest["layers"][0]["mediaType"], LAYER_MEDIA_TYPE,
        "{manifest}"
    );
    assert_eq!(
        manifest["layers"][0]["digest"],
        format!("sha256:{}", sha256(&bytes))
    );

    // Pulled into another store by tag, then run from it.
    let user = Client::new();
    let project = project_on_store(&version);
    let out = user.ok(
        &project,
        &["plugin", "pull", &format!("oci://{repo}:{version}")],
    );
    assert!(out.contains("Installed testkit"), "{out}");
    let listed: serde_json::Value =
        serde_json::from_str(&user.ok(&project, &["plugin", "ls", "--json"])).unwrap();
    assert_eq!(listed[0]["sha256"], sha256(&bytes));
    assert_eq!(
        listed[0]["source"],
        format!("oci://{repo}:{version}@{digest}")
    );
    let out = user.ok(&project, &["up", "--yes"]);
    assert!(out.contains("created"), "{out}");

    // By digest too: the same build, already there.
    let out = user.ok(
        &project,
        &["plugin", "pull", &format!("oci://{repo}@{digest}")],
    );
    assert!(out.contains("already installed"), "{out}");
    let stderr = user.fails(&project, &["plugin", "pull", &format!("oci://{repo}")]);
    assert!(stderr.contains("name a tag or a digest"), "{stderr}");
    let stderr = user.fails(
        &project,
        &["plugin", "pull", &format!("oci://{repo}:0.0.0-none")],
    );
    assert!(stderr.contains("HTTP 404"), "{stderr}");
}

/// An OCI image-layout directory holding `component` in the standard Wasm layout, tagged `tag`,
/// written the way another tool would (no plinth code involved).
fn write_oci_layout(dir: &Path, component: &[u8], tag: &str) {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let hex = sha256(bytes);
        std::fs::write(blobs.join(&hex), bytes).unwrap();
        (format!("sha256:{hex}"), bytes.len())
    };
    let (layer, layer_size) = put(component);
    let config = serde_json::json!({ "architecture": "wasm", "os": "wasip2",
        "layerDigests": [layer] })
    .to_string();
    let (config, config_size) = put(config.as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": { "mediaType": CONFIG_MEDIA_TYPE, "digest": config, "size": config_size },
        "layers": [{ "mediaType": LAYER_MEDIA_TYPE, "digest": layer, "size": layer_size }],
    })
    .to_string();
    let (manifest, manifest_size) = put(manifest.as_bytes());
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest, "size": manifest_size,
            "annotations": { "org.opencontainers.image.ref.name": tag },
        }],
    });
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
}

#[test]
fn a_component_another_tool_pushed_is_pulled_and_run() {
    let registry = Registry::start().unwrap();
    let user = Client::new();
    let env = scenario_project();
    let version = testkit_version(&user, &env);
    let (_, bytes) = testkit();
    let layout = tempfile::tempdir().unwrap();
    write_oci_layout(layout.path(), &bytes, &version);
    let repo = format!("{}/elsewhere/testkit", registry.authority());
    skopeo(&[
        "copy",
        "--dest-tls-verify=false",
        &format!("oci:{}:{version}", layout.path().display()),
        &format!("docker://{repo}:{version}"),
    ]);

    let project = project_on_store(&version);
    let out = user.ok(
        &project,
        &["plugin", "pull", &format!("oci://{repo}:{version}")],
    );
    assert!(out.contains("Installed testkit"), "{out}");
    assert_eq!(
        user.stored(),
        vec![
            user.home
                .path()
                .join(format!("plugins/sha256/{}.wasm", sha256(&bytes)))
        ]
    );
    let out = user.ok(&project, &["up", "--yes"]);
    assert!(out.contains("created"), "{out}");
}

#[test]
fn a_blob_replaced_in_the_registry_storage_is_refused_before_it_is_stored() {
    let registry = Registry::start().unwrap();
    let user = Client::new();
    let env = scenario_project();
    let version = testkit_version(&user, &env);
    let (path, bytes) = testkit();
    let repo = format!("{}/plinth/testkit", registry.authority());
    user.ok(
        &env,
        &[
            "plugin",
            "publish",
            path.to_str().unwrap(),
            &format!("oci://{repo}:{version}"),
        ],
    );

    // Someone with access to the registry's disk swaps the component for other bytes.
    let hex = sha256(&bytes);
    let data = registry
        .storage()
        .join("docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(&hex)
        .join("data");
    let mut swapped = bytes.clone();
    let last = swapped.len() - 1;
    swapped[last] ^= 0xff;
    std::fs::write(&data, &swapped).unwrap();

    let stderr = user.fails(
        &env,
        &["plugin", "pull", &format!("oci://{repo}:{version}")],
    );
    assert!(
        stderr.contains(&format!("blob sha256:{hex}"))
            && stderr.contains("not the")
            && stderr.contains("refused, nothing was stored"),
        "{stderr}"
    );
    assert!(user.stored().is_empty(), "{:?}", user.stored());
}

#[test]
fn tls_and_basic_auth_from_docker_config() {
    let registry = Registry::start_secure().unwrap();
    let mut user = Client::new();
    let env = scenario_project();
    let version = testkit_version(&user, &env);
    let (path, bytes) = testkit();
    let reference = format!("oci://{}/plinth/testkit:{version}", registry.authority());
    let publish = ["plugin", "publish", path.to_str().unwrap(), &reference];

    // Its certificate is signed by a CA the system does not know: refused, and never retried
    // in clear text although the registry is on loopback.
    let stderr = user.fails(&env, &publish);
    assert!(stderr.contains("certificate"), "{stderr}");
    assert!(!stderr.contains("http://"), "{stderr}");

    // The CA through SSL_CERT_FILE, but no credentials.
    user.ca = Some(registry.ca_file());
    let stderr = user.fails(&env, &publish);
    assert!(
        stderr.contains("asks for credentials") && stderr.contains("docker login"),
        "{stderr}"
    );

    user.login(&registry);
    let out = user.ok(&env, &publish);
    assert!(out.contains("Published testkit"), "{out}");
    let out = user.ok(&env, &["plugin", "pull", &reference]);
    assert!(out.contains("Installed testkit"), "{out}");
    assert_eq!(user.stored().len(), 1);
    assert_eq!(std::fs::read(&user.stored()[0]).unwrap(), bytes);

    // A wrong password is refused, naming where the credentials came from.
    let config = serde_json::json!({ "auths": { registry.authority(): {
        "username": USER, "password": "wrong" } } });
    std::fs::write(user.docker.path().join("config.json"), config.to_string()).unwrap();
    let stderr = user.fails(&env, &["plugin", "pull", &reference]);
    assert!(stderr.contains("refused the credentials"), "{stderr}");
}
