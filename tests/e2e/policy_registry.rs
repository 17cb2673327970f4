//! Policy packs from an OCI registry (the real distribution server): `plugin publish
//! --policy-pack`, then `--policy-pack oci://…` and `oci://` entries of `policy-packs:`, pulled
//! like plugins, verified under the project's `trust:`, pinned in Plinth.lock and run offline
//! from the store; a pack signed by an untrusted key or with tampered bytes is refused before
//! anything compiles it, the state untouched.

use plinth_test_registry::Registry;

use crate::policy::TOO_SHORT;
use crate::registry::{Client, sha256, skopeo};
use crate::signing::{files, make_key};
use crate::support::{Env, guest, printed};

const ARTIFACT_TYPE: &str = "application/vnd.wasm.component.v1+wasm";

fn pack_file() -> String {
    guest("plinth-policy-testpack").display().to_string()
}

/// The version the test pack calls itself, as `publish` refuses another tag, naming it.
fn pack_version(client: &Client, env: &Env, registry: &Registry) -> String {
    let stderr = client.fails(
        env,
        &[
            "plugin",
            "publish",
            "--policy-pack",
            &pack_file(),
            &format!("oci://{}/probe/testpack:0.0.0-wrong", registry.authority()),
        ],
    );
    let (_, rest) = stderr
        .split_once("testpack calls itself version ")
        .unwrap_or_else(|| panic!("{stderr}"));
    rest.split(',').next().unwrap().trim().to_owned()
}

/// Publishes the test pack to `repo` (host/repository) at `version`, signed with `key`;
/// returns the manifest's digest.
pub(crate) fn publish_pack(
    client: &Client,
    env: &Env,
    repo: &str,
    version: &str,
    key: Option<&str>,
) -> String {
    let reference = format!("oci://{repo}:{version}");
    let pack = pack_file();
    let mut args = vec!["plugin", "publish", "--policy-pack", &pack, &reference];
    if let Some(key) = key {
        args.extend(["--key", key]);
    }
    let out = client.ok(env, &args);
    assert!(
        out.contains(&format!("Published the policy pack testpack {version}")),
        "{out}"
    );
    out.lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .expect(&out)
        .to_owned()
}

/// The scenario with its plugins from paths, a password of `length`, and `extra` appended to
/// its Plinth.yaml.
fn scenario(extra: &str, length: &str) -> Env {
    let env = Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    path: {}\n  random:\n    path: {}\n{extra}",
        guest("plinth-scenario").display(),
        guest("plinth-testkit").display(),
        guest("plinth-random").display(),
    ));
    env.config("resources", "a");
    env.config("value_a", "long enough");
    env.config("password_length", length);
    env
}

fn lock(env: &Env) -> String {
    std::fs::read_to_string(env.project.join("Plinth.lock")).unwrap_or_default()
}

/// What `client`'s plinth printed for `args`, and whether it succeeded.
fn run(client: &Client, env: &Env, args: &[&str]) -> (bool, String) {
    let out = client.run(env, args);
    (out.status.success(), printed(&out))
}

/// Whether the artifact cache of `client` holds anything compiled from the component `sha`.
fn compiled(client: &Client, sha: &str) -> bool {
    files(&client.home.path().join("cache"))
        .iter()
        .any(|(path, _)| path.file_name().unwrap().to_string_lossy().starts_with(sha))
}

#[test]
fn a_pack_from_a_registry_is_pinned_then_runs_offline() {
    let mut registry = Registry::start().unwrap();
    let publisher = Client::with_own_cache();
    let bare = Env::project("name: scenario\n");
    let public = make_key(&publisher, &bare, "release");
    let version = pack_version(&publisher, &bare, &registry);
    let repo = format!("{}/policies/testpack", registry.authority());
    let digest = publish_pack(&publisher, &bare, &repo, &version, Some("release"));
    let pack_bytes = std::fs::read(pack_file()).unwrap();

    // Any OCI tool reads it as a Wasm component in the standard layout.
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
        manifest["layers"][0]["digest"],
        format!("sha256:{}", sha256(&pack_bytes))
    );

    // By reference on the command line: pulled, verified, pinned; its mandatory policy fails
    // the preview.
    let env = scenario(&format!("trust:\n  keys: [\"{public}\"]\n"), "8");
    let user = Client::with_own_cache();
    let reference = format!("oci://{repo}:{version}");
    let (ok, out) = run(&user, &env, &["preview", "--policy-pack", &reference]);
    assert!(!ok && out.contains(TOO_SHORT), "{out}");
    let locked = lock(&env);
    let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(&locked).unwrap();
    let pin = &parsed["policy-packs"][reference.as_str()];
    assert_eq!(parsed["version"].as_u64(), Some(3), "{locked}");
    assert_eq!(pin["sha256"].as_str(), Some(sha256(&pack_bytes).as_str()));
    assert_eq!(pin["manifest"].as_str(), Some(digest.as_str()));
    assert_eq!(pin["version"].as_str(), Some(version.as_str()));
    assert!(
        pin["signer"].is_string() && pin["signature"].is_string(),
        "{locked}"
    );

    // The store lists it: a policy pack fetched for the lock, its signer, where it came from.
    let listed: serde_json::Value =
        serde_json::from_str(&user.ok(&env, &["plugin", "ls", "--json"])).unwrap();
    let entry = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "testpack")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(entry["kind"], "policy-pack", "{entry}");
    assert_eq!(entry["pinned"], true, "{entry}");
    assert_eq!(entry["signer"], pin["signer"].as_str().unwrap(), "{entry}");
    assert_eq!(entry["source"], format!("{reference}@{digest}"), "{entry}");

    // Offline: the registry is gone; the pinned build runs from the store, still judging.
    registry.stop();
    let (ok, out) = run(&user, &env, &["preview", "--policy-pack", &reference]);
    assert!(!ok && out.contains(TOO_SHORT), "{out}");
    env.config("password_length", "16");
    let (ok, out) = run(&user, &env, &["up", "--yes", "--policy-pack", &reference]);
    assert!(ok, "{out}");
    assert_eq!(lock(&env), locked);
    let names: Vec<String> = env.resources().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["a", "password"]);
}

#[test]
fn packs_named_in_plinth_yaml_are_locked_and_refused_when_untrusted_or_altered() {
    let registry = Registry::start().unwrap();
    let publisher = Client::with_own_cache();
    let bare = Env::project("name: scenario\n");
    let trusted = make_key(&publisher, &bare, "release");
    make_key(&publisher, &bare, "other");
    let version = pack_version(&publisher, &bare, &registry);
    let signed = format!("{}/policies/testpack", registry.authority());
    let by_other = format!("{}/other/testpack", registry.authority());
    publish_pack(&publisher, &bare, &signed, &version, Some("release"));
    publish_pack(&publisher, &bare, &by_other, &version, Some("other"));
    let unsigned = format!("{}/unsigned/testpack", registry.authority());
    publish_pack(&publisher, &bare, &unsigned, &version, None);
    let pack_sha = sha256(&std::fs::read(pack_file()).unwrap());
    let trust = format!("trust:\n  keys: [\"{trusted}\"]\n");

    // Signed by a key the project does not trust: refused before it is stored or compiled,
    // the stack untouched.
    let env = scenario(
        &format!("{trust}policy-packs:\n  - oci://{by_other}:{version}\n"),
        "16",
    );
    let user = Client::with_own_cache();
    // (A first run may create the stack, empty; what follows must leave it as it is.)
    let (ok, first) = run(&user, &env, &["preview"]);
    assert!(!ok && first.contains("none of the keys"), "{first}");
    let state = env.state_files();
    let (ok, out) = run(&user, &env, &["up", "--yes"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!(
            "policy pack oci://{by_other}:{version} (sha256:{pack_sha})"
        )) && out.contains("none of the keys")
            && out.contains("nothing was compiled or stored"),
        "{out}"
    );
    assert!(
        !user
            .stored()
            .iter()
            .any(|p| p.to_string_lossy().contains(&pack_sha))
    );
    assert!(!compiled(&user, &pack_sha));
    assert_eq!(env.state_files(), state);
    assert!(!lock(&env).contains("policy-packs"), "{}", lock(&env));

    // Not signed at all, where the trust policy names keys: refused the same way.
    let env = scenario(&trust, "16");
    let state = env.state_files();
    let reference = format!("oci://{unsigned}:{version}");
    let (ok, out) = run(&user, &env, &["preview", "--policy-pack", &reference]);
    assert!(
        !ok && out.contains(&format!(
            "policy pack {reference} (sha256:{pack_sha}) is not signed"
        )) && out.contains("nothing was compiled or stored"),
        "{out}"
    );
    assert!(!compiled(&user, &pack_sha));
    assert_eq!(env.state_files(), state);

    // The trusted one, without a tag: `plugin lock` pins its newest version.
    let env = scenario(
        &format!(
            "{trust}policy-packs:\n  - source: oci://{signed}\n    limits: {{ memory: 64MiB }}\n"
        ),
        "8",
    );
    let out = user.ok(&env, &["plugin", "lock"]);
    assert!(
        out.contains(&format!("pinned the policy pack oci://{signed}"))
            && out.contains(&format!("version {version}")),
        "{out}"
    );
    let locked = lock(&env);
    assert!(
        locked.contains("policy-packs:") && locked.contains("signer:"),
        "{locked}"
    );
    let (ok, out) = run(&user, &env, &["preview"]);
    assert!(!ok && out.contains(TOO_SHORT), "{out}");
    assert_eq!(lock(&env), locked);

    // The store's copy altered: refused against the pin before it is compiled again.
    let blob = user
        .home
        .path()
        .join(format!("plugins/sha256/{pack_sha}.wasm"));
    let mut altered = std::fs::read(&blob).unwrap();
    *altered.last_mut().unwrap() ^= 1;
    std::fs::write(&blob, &altered).unwrap();
    let state = env.state_files();
    let (ok, out) = run(&user, &env, &["up", "--yes"]);
    assert!(
        !ok && out.contains(&format!("Plinth.lock pins sha256 {pack_sha}"))
            && out.contains("nothing was compiled"),
        "{out}"
    );
    assert!(!compiled(&user, &sha256(&altered)));
    assert_eq!(env.state_files(), state);

    // On a fresh machine, the registry's copy altered on its disk: refused before it is
    // stored or compiled.
    let data = registry
        .storage()
        .join("docker/registry/v2/blobs/sha256")
        .join(&pack_sha[..2])
        .join(&pack_sha)
        .join("data");
    std::fs::write(&data, &altered).unwrap();
    let fresh = Client::with_own_cache();
    let (ok, out) = run(&fresh, &env, &["preview"]);
    assert!(
        !ok && out.contains("refused, nothing was stored")
            && out.contains("cannot fetch its pinned build"),
        "{out}"
    );
    assert!(
        !fresh
            .stored()
            .iter()
            .any(|p| p.to_string_lossy().contains(&pack_sha))
    );
    assert!(!compiled(&fresh, &sha256(&altered)));
    assert_eq!(env.state_files(), state);
    assert_eq!(lock(&env), locked);
}
