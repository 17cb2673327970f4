//! Signed plugins: `plinth plugin key create`, `publish --key` (the signature beside the
//! artifact under cosign's `sha256-<hex>.sig` tag, checked with the real `minisign -V`), and a
//! project's `trust:` policy, applied on pull and on every run (offline, from Plinth.lock)
//! before anything is compiled.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use plinth_test_registry::Registry;

use crate::registry::{Client, scenario_project, sha256, skopeo, testkit, testkit_version};
use crate::support::{Env, guest};

const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.plinth.plugin.signature.v1+minisign";

/// Makes the key `name` in `client`'s home, unencrypted; returns its public key.
pub(crate) fn make_key(client: &Client, env: &Env, name: &str) -> String {
    let out = client.ok(env, &["plugin", "key", "create", name, "--unencrypted"]);
    out.lines().last().unwrap().trim().to_owned()
}

/// Publishes the testkit plugin to `repo` (host/repository), signed with `key` if given;
/// returns the manifest's digest.
fn publish(client: &Client, env: &Env, repo: &str, key: Option<&str>) -> String {
    let version = testkit_version(client, env);
    let (path, _) = testkit();
    let reference = format!("oci://{repo}:{version}");
    let mut args = vec!["plugin", "publish", path.to_str().unwrap(), &reference];
    if let Some(key) = key {
        args.extend(["--key", key]);
    }
    let out = client.ok(env, &args);
    out.lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .expect(&out)
        .to_owned()
}

/// A scenario project whose testkit plugin comes from the store, trusting `keys`.
fn trusting(version: &str, trust: &str) -> Env {
    Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    version: {version}\n{trust}",
        guest("plinth-scenario").display()
    ))
}

/// Every file under `dir`, with its contents: to see that a refusal wrote nothing.
pub(crate) fn files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                found.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn keys_are_private_and_named_safely() {
    let client = Client::new();
    let env = scenario_project();
    let public = make_key(&client, &env, "release");
    assert!(public.starts_with("RW") && public.len() == 56, "{public}");
    let keys = client.home.path().join("keys");
    assert_eq!(
        std::fs::metadata(keys.join("release.key")).unwrap().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::metadata(&keys).unwrap().mode() & 0o777, 0o700);

    // Encrypted with the password from PLINTH_KEY_PASSWORD; no terminal and no password: a
    // clear error, nothing made.
    let out = client
        .command(&env, &["plugin", "key", "create", "ci"])
        .env("PLINTH_KEY_PASSWORD", "correct horse")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = client.fails(&env, &["plugin", "key", "create", "nopass"]);
    assert!(
        stderr.contains("PLINTH_KEY_PASSWORD") && stderr.contains("--unencrypted"),
        "{stderr}"
    );
    assert!(!keys.join("nopass.key").exists());

    let listed: serde_json::Value =
        serde_json::from_str(&client.ok(&env, &["plugin", "key", "ls", "--json"])).unwrap();
    let names: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap(),
                k["encrypted"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("ci", true), ("release", false)]);
    assert_eq!(listed[1]["public_key"], public);

    for bad in ["../escape", "a/b", ".hidden", "x\u{1b}]0;title\u{7}"] {
        let stderr = client.fails(&env, &["plugin", "key", "create", bad, "--unencrypted"]);
        assert!(stderr.contains("is not a key name"), "{stderr}");
        assert!(!stderr.contains('\u{1b}'), "{stderr}");
    }
    assert!(!client.home.path().join("escape.key").exists());
    let stderr = client.fails(
        &env,
        &["plugin", "key", "create", "release", "--unencrypted"],
    );
    assert!(stderr.contains("exists already"), "{stderr}");
}

#[test]
fn a_published_signature_verifies_with_minisign() {
    let registry = Registry::start().unwrap();
    let publisher = Client::new();
    let env = scenario_project();
    let public = make_key(&publisher, &env, "release");
    let repo = format!("{}/plinth/testkit", registry.authority());

    // A wrong password for an encrypted key: refused before anything is pushed.
    publisher
        .command(&env, &["plugin", "key", "create", "locked"])
        .env("PLINTH_KEY_PASSWORD", "right")
        .output()
        .unwrap();
    let (path, bytes) = testkit();
    let version = testkit_version(&publisher, &env);
    let out = publisher
        .command(
            &env,
            &[
                "plugin",
                "publish",
                path.to_str().unwrap(),
                &format!("oci://{repo}:{version}"),
                "--key",
                "locked",
            ],
        )
        .env("PLINTH_KEY_PASSWORD", "wrong")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("wrong password"),
        "{stderr}"
    );
    let inspect = Command::new("skopeo")
        .args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{repo}:{version}"),
        ])
        .output()
        .unwrap();
    assert!(!inspect.status.success(), "nothing was pushed");

    let digest = publish(&publisher, &env, &repo, Some("release"));
    let sig_tag = format!("{}.sig", digest.replace(':', "-"));

    // Another OCI tool reads the signature artifact beside the plugin.
    let raw = skopeo(&[
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{repo}:{sig_tag}"),
    ]);
    let manifest: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(manifest["artifactType"], SIGNATURE_MEDIA_TYPE, "{manifest}");
    assert_eq!(
        manifest["layers"][0]["mediaType"], SIGNATURE_MEDIA_TYPE,
        "{manifest}"
    );
    assert_eq!(manifest["subject"]["digest"], digest, "{manifest}");

    // The signature blob, read from the registry's own storage, checked by minisign itself
    // against the component's bytes.
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    let hex = layer.strip_prefix("sha256:").unwrap();
    let blob = registry
        .storage()
        .join("docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    let scratch = tempfile::tempdir().unwrap();
    let component = scratch.path().join("testkit.wasm");
    let signature = scratch.path().join("testkit.wasm.minisig");
    std::fs::write(&component, &bytes).unwrap();
    std::fs::copy(&blob, &signature).unwrap();
    let verify = |file: &Path| {
        Command::new("minisign")
            .args(["-V", "-P", &public, "-m"])
            .arg(file)
            .arg("-x")
            .arg(&signature)
            .output()
            .unwrap()
    };
    let out = verify(&component);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "minisign -V: {out:?}");
    assert!(
        shown.contains(&format!(
            "plinth plugin testkit {version} sha256:{}",
            sha256(&bytes)
        )),
        "{shown}"
    );
    let mut altered = bytes.clone();
    *altered.last_mut().unwrap() ^= 1;
    std::fs::write(&component, &altered).unwrap();
    assert!(!verify(&component).status.success());
}

#[test]
fn the_trust_policy_refuses_before_anything_is_stored_or_compiled() {
    let mut registry = Registry::start().unwrap();
    let publisher = Client::new();
    let env = scenario_project();
    let trusted = make_key(&publisher, &env, "release");
    let other = make_key(&publisher, &env, "other");
    let version = testkit_version(&publisher, &env);
    let signed = format!("{}/plinth/testkit", registry.authority());
    let by_other = format!("{}/other/testkit", registry.authority());
    let unsigned = format!("{}/unsigned/testkit", registry.authority());
    publish(&publisher, &env, &signed, Some("release"));
    publish(&publisher, &env, &by_other, Some("other"));
    publish(&publisher, &env, &unsigned, None);
    let (_, bytes) = testkit();
    let strict = format!("trust:\n  keys: [\"{trusted}\"]\n");

    // Pulled into a project that trusts another key, or none of the keys: refused, nothing
    // stored (so nothing described, compiled or cached).
    let user = Client::with_own_cache();
    let project = trusting(&version, &strict);
    for (repo, expected) in [
        (&by_other, "which is none of the keys"),
        (&unsigned, "is not signed"),
    ] {
        let stderr = user.fails(
            &project,
            &["plugin", "pull", &format!("oci://{repo}:{version}")],
        );
        assert!(
            stderr.contains(expected)
                && stderr.contains(&format!("sha256:{}", sha256(&bytes)))
                && stderr.contains("nothing was stored"),
            "{stderr}"
        );
        assert!(files(user.home.path()).is_empty(), "{stderr}");
    }

    // Signed by the trusted key: pulled, run, and the signature kept in Plinth.lock.
    let out = user.ok(
        &project,
        &["plugin", "pull", &format!("oci://{signed}:{version}")],
    );
    assert!(out.contains("Signed by trusted key"), "{out}");
    user.ok(&project, &["up", "--yes"]);
    let lock = std::fs::read_to_string(project.project.join("Plinth.lock")).unwrap();
    assert!(
        lock.contains("signer:") && lock.contains("untrusted comment"),
        "{lock}"
    );

    // Offline: the registry is gone; runs verify from the store and the lock.
    registry.stop();
    user.ok(&project, &["preview"]);

    // The signature in Plinth.lock altered: refused before anything is compiled, the state
    // untouched.
    let state = project.state_files();
    let cache = files(&user.home.path().join("cache"));
    std::fs::remove_file(
        user.home
            .path()
            .join(format!("plugins/sha256/{}.minisig", sha256(&bytes))),
    )
    .unwrap();
    let altered = alter_signature(&lock);
    std::fs::write(project.project.join("Plinth.lock"), &altered).unwrap();
    let stderr = user.fails(&project, &["up", "--yes"]);
    assert!(
        stderr.contains("does not match its bytes") && stderr.contains("nothing was compiled"),
        "{stderr}"
    );
    assert_eq!(project.state_files(), state);
    assert_eq!(files(&user.home.path().join("cache")), cache);

    // The project stops trusting the key: refused, naming the signer and the expected key.
    std::fs::write(project.project.join("Plinth.lock"), &lock).unwrap();
    let yaml = std::fs::read_to_string(project.project.join("Plinth.yaml")).unwrap();
    std::fs::write(
        project.project.join("Plinth.yaml"),
        yaml.replace(&trusted, &other),
    )
    .unwrap();
    let stderr = user.fails(&project, &["up", "--yes"]);
    assert!(
        stderr.contains("plugin `testkit`") && stderr.contains("none of the keys"),
        "{stderr}"
    );
    assert_eq!(project.state_files(), state);

    // `unsigned: warn` lets it run, saying so.
    std::fs::write(
        project.project.join("Plinth.yaml"),
        yaml.replace(&trusted, &other) + "  unsigned: warn\n",
    )
    .unwrap();
    let out = user.run(&project, &["preview"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning:"),
        "{out:?}"
    );
}

/// `lock` with one character of the signature line (the one after the untrusted comment)
/// changed.
fn alter_signature(lock: &str) -> String {
    let lines: Vec<&str> = lock.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("untrusted comment"))
        .expect(lock);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let line = &mut out[at + 1];
    let i = line.len() - 10;
    let c = if &line[i..=i] == "A" { "B" } else { "A" };
    line.replace_range(i..=i, c);
    out.join("\n") + "\n"
}

#[test]
fn a_mirror_serves_the_same_signed_bytes_when_the_origin_is_gone() {
    let mut origin = Registry::start().unwrap();
    let mirror = Registry::start().unwrap();
    let publisher = Client::new();
    let env = scenario_project();
    let trusted = make_key(&publisher, &env, "release");
    let version = testkit_version(&publisher, &env);
    let repo = format!("{}/plinth/testkit", origin.authority());
    publish(&publisher, &env, &repo, Some("release"));
    let (_, bytes) = testkit();

    // Connected: pull, lock, mirror.
    let project = trusting(&version, &format!("trust:\n  keys: [\"{trusted}\"]\n"));
    let connected = Client::new();
    connected.ok(
        &project,
        &["plugin", "pull", &format!("oci://{repo}:{version}")],
    );
    connected.ok(&project, &["plugin", "lock"]);
    let to = format!("oci://{}/copies", mirror.authority());
    let out = connected.ok(&project, &["plugin", "mirror", "--to", &to]);
    assert!(
        out.contains("Copied `testkit`") && out.contains("with its signature"),
        "{out}"
    );
    origin.stop();

    // Air-gapped: a fresh machine reaches only the mirror; the same bytes and signature verify.
    let offline = Client::new();
    let out = offline
        .command(
            &project,
            &["plugin", "pull", &format!("oci://{repo}:{version}")],
        )
        .env("PLINTH_PLUGIN_MIRROR", &to)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("Signed by trusted key") && stdout.contains("copies/plinth/testkit"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read(
            offline
                .home
                .path()
                .join(format!("plugins/sha256/{}.wasm", sha256(&bytes)))
        )
        .unwrap(),
        bytes
    );
    offline.ok(&project, &["up", "--yes"]);
}

#[test]
fn the_repository_s_own_plugins_are_published_signed_by_its_script() {
    let registry = Registry::start().unwrap();
    let publisher = Client::new();
    let env = scenario_project();
    let trusted = make_key(&publisher, &env, "release");
    // The script runs plinth with the environment a test's plinth runs with.
    let like_plinth = publisher.command(&env, &[]);
    let mut script = Command::new(crate::support::repo_root().join("scripts/publish-plugins"));
    for (name, value) in like_plinth.get_envs() {
        match value {
            Some(value) => script.env(name, value),
            None => script.env_remove(name),
        };
    }
    let out = script
        .args([&registry.authority(), "--key", "release", "random"])
        .env("PLINTH", env!("CARGO_BIN_EXE_plinth"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("Published random") && stdout.contains("signed by key"),
        "{stdout}"
    );

    let shown: serde_json::Value = serde_json::from_str(&publisher.ok(
        &env,
        &[
            "plugin",
            "inspect",
            guest("plinth-random").to_str().unwrap(),
            "--json",
        ],
    ))
    .unwrap();
    let version = shown["version"].as_str().unwrap();
    let project = Env::project(&format!(
        "name: scenario\nprogram: {}\ntrust:\n  keys: [\"{trusted}\"]\n",
        guest("plinth-scenario").display()
    ));
    let user = Client::new();
    let out = user.ok(
        &project,
        &[
            "plugin",
            "pull",
            &format!("oci://{}/plinth/random:{version}", registry.authority()),
        ],
    );
    assert!(out.contains("Signed by trusted key"), "{out}");
}

#[test]
fn a_registry_plugin_runs_from_the_mirror_when_its_registry_is_gone() {
    let mut origin = Registry::start().unwrap();
    let mirror = Registry::start().unwrap();
    let publisher = Client::new();
    let env = scenario_project();
    let trusted = make_key(&publisher, &env, "release");
    let repo = format!("{}/plinth/testkit", origin.authority());
    publish(&publisher, &env, &repo, Some("release"));
    let version = testkit_version(&publisher, &env);

    // `source: oci://…` pinned, signature and signer included, then mirrored.
    let project = Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    source: oci://{repo}\n    \
         version: \"{version}\"\ntrust:\n  keys: [\"{trusted}\"]\n",
        guest("plinth-scenario").display()
    ));
    let connected = Client::new();
    connected.ok(&project, &["plugin", "lock"]);
    let lock = std::fs::read_to_string(project.project.join("Plinth.lock")).unwrap();
    assert!(
        lock.contains("signer:") && lock.contains("signature:"),
        "{lock}"
    );
    let to = format!("oci://{}/copies", mirror.authority());
    let out = connected.ok(&project, &["plugin", "mirror", "--to", &to]);
    assert!(out.contains("with its signature"), "{out}");
    origin.stop();

    // A fresh machine that reaches only the mirror runs the pinned, signed build.
    let offline = Client::new();
    let out = offline
        .command(&project, &["up", "--yes"])
        .env("PLINTH_PLUGIN_MIRROR", &to)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(project.project.join("Plinth.lock")).unwrap(),
        lock
    );
}
