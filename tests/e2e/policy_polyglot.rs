//! Policy packs written in TypeScript and Python, built from source by plinth during the test
//! run (componentize-js, componentize-py) and cached by content under the tests' PLINTH_HOME:
//! the example packs (examples/policy-pack, examples/policy-pack-python) judging the scenario
//! program's password, and hostile packs (tests/policies/hostile-ts, hostile-py) that try to
//! reach a file, the network or a secret's plaintext and get nowhere, or that loop, throw or
//! hoard memory and fail the run naming the pack, the stack left as it was.

use std::sync::Mutex;

use crate::policy::{
    a_pack_cannot_connect, fails, hostile_project, hostile_runs_fail, pack_config, succeeds,
};
use crate::support::{Env, guest, repo_root};

/// Held by a test while its first command builds (and compiles) its pack: tests sharing a
/// pack then build it once, the next finding it in the cache, instead of side by side.
static BUILDING: Mutex<()> = Mutex::new(());

fn building<T>(first_command: impl FnOnce() -> T) -> T {
    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    first_command()
}

/// A scenario project with the random plugin; `extra` is appended to its Plinth.yaml.
fn project(extra: &str) -> Env {
    Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    path: {}\n  random:\n    path: {}\n{extra}",
        guest("plinth-scenario").display(),
        guest("plinth-testkit").display(),
        guest("plinth-random").display(),
    ))
}

/// A pack directory of the repository, as `--policy-pack` takes it.
fn pack(path: &str) -> String {
    repo_root().join(path).display().to_string()
}

fn names(env: &Env) -> Vec<String> {
    env.resources().into_iter().map(|(name, _)| name).collect()
}

/// The example pack at `path`, named `name`, judges the scenario's password: too short fails
/// `preview` naming the policy and the resource, and `up` creates nothing; long enough, the run
/// succeeds with the advisory `password-rotation` shown and recorded; `{"password-length":
/// {"minimum": 32}}` changes the verdict; a misspelt setting is refused before anything runs.
fn example_pack_judges_passwords(path: &str, name: &str) {
    let env = project("");
    env.config("password_length", "8");
    let pack = pack(path);
    let too_short = format!(
        "[mandatory] policy `{name}/password-length`: the password is 8 characters long; make \
         it at least 16 (property `length`)"
    );

    let preview = building(|| fails(&env, &["preview", "--policy-pack", &pack]));
    assert!(preview.contains(&too_short), "{preview}");
    assert!(
        preview.contains("random:RandomPassword::password: violates 1 mandatory policy"),
        "{preview}"
    );
    let up = fails(&env, &["up", "--yes", "--policy-pack", &pack]);
    assert!(up.contains(&too_short), "{up}");
    assert!(env.resources().is_empty(), "{:?}", env.resources());

    // A pack judges what is about to change: the verdicts on a password not created yet.
    env.config("password_length", "20");
    let stricter = pack_config(&env, r#"{"password-length": {"minimum": 32}}"#);
    let preview = fails(
        &env,
        &[
            "preview",
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &stricter,
        ],
    );
    assert!(
        preview.contains("the password is 20 characters long; make it at least 32"),
        "{preview}"
    );

    let misspelt = pack_config(&env, r#"{"password-length": {"minimun": 32}}"#);
    let out = fails(
        &env,
        &[
            "preview",
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &misspelt,
        ],
    );
    // Refused by the host, against the schema the pack declares, before the pack sees it.
    assert!(
        out.contains(&format!(
            "the configuration of policy `{name}/password-length` does not match the schema the \
             pack declares: at its top level: Additional properties are not allowed ('minimun' \
             was unexpected)"
        )),
        "{out}"
    );
    // Named by its directory, not by its file in the build cache.
    assert!(
        out.contains(&format!("cannot load the policy pack {pack}:")),
        "{out}"
    );

    let up = succeeds(&env, &["up", "--yes", "--policy-pack", &pack]);
    let rotation = format!("[advisory] policy `{name}/password-rotation`: ");
    assert!(up.contains(&rotation), "{up}");
    assert!(up.contains("never rotated"), "{up}");
    assert_eq!(names(&env), ["a", "b", "password"]);
    let logs = succeeds(&env, &["logs"]);
    assert!(logs.contains(&rotation), "{logs}");
}

#[test]
fn the_typescript_example_pack_judges_passwords() {
    example_pack_judges_passwords("examples/policy-pack", "password-rules");
}

#[test]
fn the_python_example_pack_judges_passwords() {
    example_pack_judges_passwords("examples/policy-pack-python", "password-rules-py");
}

/// Sets `token_a`, a secret input of the scenario's resource `a`; the hostile pack in the
/// project then reports the secrets it was given, and shows nothing but `[secret]`.
fn a_leaked_secret_is_masked(env: &Env, extra: &[&str]) {
    let token = "tok-polypack-5e1a-secret";
    succeeds(env, &["config", "set", "token_a", token, "--secret"]);
    let config = pack_config(env, r#"{"hostile": {"mode": "leak"}}"#);
    let mut args = vec!["up", "--yes", "--policy-pack-config", &config];
    args.extend(extra);
    let out = succeeds(env, &args);
    assert!(out.contains("the secrets are: [secret]"), "{out}");
    assert!(!out.contains(token), "{out}");
    let logs = succeeds(env, &["logs"]);
    assert!(logs.contains("the secrets are: [secret]"), "{logs}");
    assert!(!logs.contains(token), "{logs}");
}

#[test]
fn a_typescript_pack_cannot_fetch_or_show_a_secret() {
    let env = project("");
    env.config("resources", "a");
    env.config("value_a", "v");
    let pack = pack("tests/policies/hostile-ts");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let config = pack_config(
        &env,
        &format!(r#"{{"hostile": {{"mode": "fetch", "url": "{url}"}}}}"#),
    );
    let out = building(|| {
        succeeds(
            &env,
            &[
                "preview",
                "--policy-pack",
                &pack,
                "--policy-pack-config",
                &config,
            ],
        )
    });
    assert!(out.contains("could not fetch"), "{out}");
    assert!(!out.contains("fetched"), "{out}");
    // The run is over: a connection it made would be waiting.
    listener.set_nonblocking(true).unwrap();
    assert_eq!(
        listener.accept().unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );

    a_leaked_secret_is_masked(&env, &["--policy-pack", &pack]);
}

#[test]
fn a_typescript_pack_that_loops_throws_or_hoards_memory_fails_naming_it() {
    let pack = pack("tests/policies/hostile-ts");
    let env = building(|| hostile_project(&pack, "128MiB", "5s"));
    hostile_runs_fail(
        &env,
        "hostile-ts",
        &[
            ("loop", "`analyze-resource` timed out after 5s"),
            ("trap", "policy `hostile` threw Error: hostile-ts gives up"),
            ("allocate", "`analyze-resource` ran out of memory"),
        ],
    );
}

#[test]
fn a_python_pack_that_loops_raises_or_hoards_memory_fails_naming_it() {
    let pack = pack("tests/policies/hostile-py");
    let env = building(|| hostile_project(&pack, "128MiB", "5s"));
    hostile_runs_fail(
        &env,
        "hostile-py",
        &[
            ("loop", "`analyze-resource` timed out after 5s"),
            ("trap", "policy `hostile` raised hostile-py gives up"),
            ("allocate", "`analyze-resource` ran out of memory"),
        ],
    );
}

#[test]
fn a_typescript_pack_cannot_read_a_file() {
    let env = project("");
    env.config("resources", "a");
    env.config("value_a", "v");
    let pack = pack("tests/policies/hostile-ts");
    let secret_file = env.project.join("secret.txt");
    std::fs::write(&secret_file, "policy-file-content-ts-81c4").unwrap();
    let config = pack_config(
        &env,
        &format!(
            r#"{{"hostile": {{"mode": "open-file", "path": "{}"}}}}"#,
            secret_file.display()
        ),
    );
    let out = building(|| {
        succeeds(
            &env,
            &[
                "preview",
                "--policy-pack",
                &pack,
                "--policy-pack-config",
                &config,
            ],
        )
    });
    assert!(out.contains("could not read the file"), "{out}");
    assert!(
        out.contains("EACCES") && out.contains("policy packs are granted no directory"),
        "{out}"
    );
    assert!(!out.contains("policy-file-content-ts-81c4"), "{out}");
}

#[test]
fn a_python_pack_cannot_open_a_file_reach_a_socket_or_show_a_secret() {
    let env = project(&format!(
        "policy-packs:\n  - {}\n",
        pack("tests/policies/hostile-py")
    ));
    env.config("resources", "a");
    env.config("value_a", "v");

    let secret_file = env.project.join("secret.txt");
    std::fs::write(&secret_file, "policy-file-content-py-3b7d").unwrap();
    let config = pack_config(
        &env,
        &format!(
            r#"{{"hostile": {{"mode": "open-file", "path": "{}"}}}}"#,
            secret_file.display()
        ),
    );
    let out = building(|| succeeds(&env, &["preview", "--policy-pack-config", &config]));
    assert!(out.contains("could not read the file"), "{out}");
    assert!(!out.contains("policy-file-content-py-3b7d"), "{out}");

    a_pack_cannot_connect(&env);

    a_leaked_secret_is_masked(&env, &[]);
}
