//! Plugins from a registry by version range (`source: oci://…`, `version: "^0.1"`): resolved
//! against the real registry's tags, pinned in Plinth.lock with their capabilities, run offline
//! from the store, held to the pin when a tag moves, upgraded with `plugin lock --upgrade`, and a
//! wider release refused until `--accept-capabilities`.
//!
//! Releases of the adversary plugin are made by rewriting the release marker in its built
//! component (tests/plugins/adversary/src/release.rs): other versions asking for other access.

use std::path::{Path, PathBuf};

use plinth_test_registry::Registry;

use crate::registry::{Client, sha256, testkit, testkit_version};
use crate::support::{Env, guest};

const MARKER: &[u8] = b"PLINTH-ADVERSARY-RELEASE[";
const PAYLOAD: usize = 70;

/// The adversary component rewritten to be the release `spec` (`VERSION[;KIND=VALUE…]`).
fn adversary_release(spec: &[u8]) -> Vec<u8> {
    let mut bytes = std::fs::read(guest("plinth-adversary")).unwrap();
    let at = bytes
        .windows(MARKER.len())
        .position(|w| w == MARKER)
        .expect("the adversary's release marker")
        + MARKER.len();
    let payload = &mut bytes[at..at + PAYLOAD];
    payload.fill(b' ');
    payload[..spec.len()].copy_from_slice(spec);
    bytes
}

/// Publishes the adversary release `spec` as `version` to `registry`.
fn publish_adversary(client: &Client, env: &Env, registry: &Registry, spec: &[u8], version: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("adversary.wasm");
    std::fs::write(&file, adversary_release(spec)).unwrap();
    let reference = format!("oci://{}/plinth/adversary:{version}", registry.authority());
    client.ok(
        env,
        &["plugin", "publish", file.to_str().unwrap(), &reference],
    );
}

fn publish_testkit(client: &Client, env: &Env, registry: &Registry, version: &str) {
    let (path, _) = testkit();
    let reference = format!("oci://{}/plinth/testkit:{version}", registry.authority());
    client.ok(
        env,
        &["plugin", "publish", path.to_str().unwrap(), &reference],
    );
}

/// The scenario project, its `testkit` and `adversary` plugins from `registry` at `range`s.
fn project_yaml(registry: &Registry, testkit: &str, adversary: &str) -> String {
    format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    source: oci://{r}/plinth/testkit\n    \
         version: \"{testkit}\"\n  adversary:\n    source: oci://{r}/plinth/adversary\n    \
         version: \"{adversary}\"\n",
        guest("plinth-scenario").display(),
        r = registry.authority()
    )
}

fn lock_text(env: &Env) -> String {
    std::fs::read_to_string(env.project.join("Plinth.lock")).unwrap_or_default()
}

/// The adversary's pin in Plinth.lock.
fn adversary_pin(env: &Env) -> serde_yaml_ng::Value {
    let lock: serde_yaml_ng::Value = serde_yaml_ng::from_str(&lock_text(env)).unwrap();
    lock["plugins"]["adversary"].clone()
}

/// Every file of the stack's state, with its contents.
fn state_files(env: &Env) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, into: &mut Vec<(PathBuf, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, into);
            } else {
                into.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut files = Vec::new();
    walk(env.state.path(), &mut files);
    files.sort();
    files
}

fn rewrite(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(path, text.replace(from, to)).unwrap();
}

#[test]
fn a_range_is_pinned_then_runs_offline_and_ignores_a_moved_tag() {
    let mut registry = Registry::start().unwrap();
    let user = Client::new();
    let bare = Env::project("name: scenario\n");
    let version = testkit_version(&user, &bare);
    publish_testkit(&user, &bare, &registry, &version);
    for release in ["0.1.0", "0.1.5", "0.2.0"] {
        publish_adversary(&user, &bare, &registry, release.as_bytes(), release);
    }
    let env = Env::project(&project_yaml(&registry, &version, "^0.1"));

    // The first preview resolves each range to the newest matching tag and pins it.
    let out = user.ok(&env, &["preview"]);
    assert!(out.contains("Wrote Plinth.lock"), "{out}");
    let pin = adversary_pin(&env);
    assert_eq!(
        pin["version"].as_str(),
        Some("0.1.5"),
        "{}",
        lock_text(&env)
    );
    let pinned = sha256(&adversary_release(b"0.1.5"));
    assert_eq!(pin["sha256"].as_str(), Some(pinned.as_str()));
    assert!(pin["manifest"].as_str().unwrap().starts_with("sha256:"));
    assert!(
        lock_text(&env).starts_with("# Written by plinth")
            && lock_text(&env).contains("version: 2")
    );
    let locked = lock_text(&env);

    // Offline: the registry is gone, and `up` runs from the store by the pinned digests.
    registry.stop();
    let out = user.ok(&env, &["up", "--yes"]);
    assert!(out.contains("created"), "{out}");
    assert_eq!(lock_text(&env), locked);

    // The tag 0.1.5 is moved to other bytes; a fresh store fetches the pinned build by its
    // manifest's digest, not by the tag, and nothing changes.
    registry.restart().unwrap();
    publish_adversary(&user, &bare, &registry, b"0.1.5;env=MOVED", "0.1.5");
    let fresh = Client::new();
    let out = fresh.ok(&env, &["preview"]);
    assert!(!out.contains("Plinth.lock"), "{out}");
    assert_eq!(lock_text(&env), locked);
    assert!(
        fresh.stored().contains(
            &fresh
                .home
                .path()
                .join(format!("plugins/sha256/{pinned}.wasm"))
        ),
        "{:?}",
        fresh.stored()
    );

    // Bytes that are not the pinned ones are refused before anything compiles them, naming
    // the plugin, the digest and what was expected; the lock and the state are untouched.
    let blob = fresh
        .home
        .path()
        .join(format!("plugins/sha256/{pinned}.wasm"));
    std::fs::write(&blob, adversary_release(b"0.1.5;tcp=evil.example:443")).unwrap();
    let state = state_files(&env);
    let stderr = fresh.fails(&env, &["up", "--yes"]);
    assert!(
        stderr.contains("plugin `adversary`")
            && stderr.contains(&format!("Plinth.lock pins sha256 {pinned}"))
            && stderr.contains("nothing was compiled"),
        "{stderr}"
    );
    assert_eq!(lock_text(&env), locked);
    assert_eq!(state_files(&env), state);
}

#[test]
fn a_wider_release_is_refused_until_accepted_and_a_narrower_one_taken() {
    let registry = Registry::start().unwrap();
    let user = Client::new();
    let bare = Env::project("name: scenario\n");
    let version = testkit_version(&user, &bare);
    publish_testkit(&user, &bare, &registry, &version);
    publish_adversary(
        &user,
        &bare,
        &registry,
        b"0.1.0;http=api.example.com",
        "0.1.0",
    );
    let env = Env::project(&project_yaml(&registry, &version, "^0.1"));
    let out = user.ok(&env, &["plugin", "lock"]);
    assert!(out.contains("pinned `adversary`"), "{out}");
    assert_eq!(
        adversary_pin(&env)["capabilities"]["http"][0].as_str(),
        Some("api.example.com")
    );

    // A release asking for more, its strings hostile.
    publish_adversary(
        &user,
        &bare,
        &registry,
        b"0.1.1;tcp=db.internal:5432;env=\x1b[31mX\x07;http=api.example.com",
        "0.1.1",
    );

    // `plugin inspect` shows it from the registry without installing it anywhere.
    let reference = format!("oci://{}/plinth/adversary", registry.authority());
    let listed = user.ok(&env, &["plugin", "ls", "--json"]);
    let out = user.ok(&env, &["plugin", "inspect", &reference]);
    assert!(
        out.contains("version:      0.1.1")
            && out.contains("tcp   db.internal:5432")
            && out.contains("manifest:     sha256:")
            && !out.contains('\u{1b}'),
        "{out}"
    );
    assert_eq!(user.ok(&env, &["plugin", "ls", "--json"]), listed);

    // Pinned: `plugin lock` keeps the pin; `--upgrade` refuses the widening, printing it.
    let locked = lock_text(&env);
    let out = user.ok(&env, &["plugin", "lock"]);
    assert!(out.contains("up to date"), "{out}");
    let stderr = user.fails(&env, &["plugin", "lock", "--upgrade"]);
    assert!(
        stderr.contains("plugin `adversary` version 0.1.1")
            && stderr.contains("+ tcp: db.internal:5432")
            && stderr.contains("+ env: ")
            && !stderr.contains("+ http")
            && stderr.contains("--accept-capabilities"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "{stderr:?}"
    );
    assert_eq!(lock_text(&env), locked);

    // A range that leaves the pin behind moves `preview` and `up` too: refused the same way,
    // nothing created.
    rewrite(&env.project.join("Plinth.yaml"), "\"^0.1\"", "\"0.1.1\"");
    // (The first run creates the stack, empty; what follows must leave it as it is.)
    let stderr = user.fails(&env, &["preview"]);
    assert!(stderr.contains("+ tcp: db.internal:5432"), "{stderr}");
    let state = state_files(&env);
    for args in [&["preview"][..], &["up", "--yes"]] {
        let stderr = user.fails(&env, args);
        assert!(stderr.contains("+ tcp: db.internal:5432"), "{stderr}");
        assert_eq!(lock_text(&env), locked);
        assert_eq!(state_files(&env), state);
    }

    // Accepted, it is pinned with what it asks for.
    let out = user.ok(&env, &["preview", "--accept-capabilities"]);
    assert!(out.contains("Plinth.lock"), "{out}");
    let pin = adversary_pin(&env);
    assert_eq!(pin["version"].as_str(), Some("0.1.1"));
    assert_eq!(
        pin["capabilities"]["tcp"][0].as_str(),
        Some("db.internal:5432")
    );

    // A narrower release is taken silently by `--upgrade NAME`, printing old -> new.
    rewrite(&env.project.join("Plinth.yaml"), "\"0.1.1\"", "\"^0.1\"");
    publish_adversary(
        &user,
        &bare,
        &registry,
        b"0.1.2;tcp=db.internal:5432",
        "0.1.2",
    );
    let out = user.ok(&env, &["plugin", "lock", "--upgrade", "adversary"]);
    let narrower = sha256(&adversary_release(b"0.1.2;tcp=db.internal:5432"));
    assert!(
        out.contains("updated `adversary`")
            && out.contains("version 0.1.1")
            && out.contains(&format!("-> {narrower} (version 0.1.2")),
        "{out}"
    );
    let pin = adversary_pin(&env);
    assert_eq!(pin["capabilities"]["env"], serde_yaml_ng::Value::Null);
    let stderr = user.fails(&env, &["plugin", "lock", "--upgrade", "testkit-nope"]);
    assert!(stderr.contains("no plugin `testkit-nope`"), "{stderr}");
}
