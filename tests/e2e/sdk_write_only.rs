//! Write-only inputs declared by TypeScript and Python providers (`writeOnly:` /
//! `write_only=`, exported as `plinth:inputs/write-only` by their SDKs): the keeper test
//! providers write the value they are sent to a granted directory, so the test sees what each
//! received and when, while nothing plinth writes or prints holds it.

use serde_json::json;

use crate::support::{Env, guest, repo_root};

const FIRST: &str = "wo-first-Qm27vXc9Tb";
const SECOND: &str = "wo-second-Hs84kLp3Wd";

/// A project with the JSON-driven test program and the keeper provider of `language` (built
/// from its source), granted its directory `/keep` as the project's `keep`.
fn project(language: &str) -> Env {
    let env = Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  keeper:\n    path: {}\n    grants:\n      \
         dirs:\n        - {{ host: ./keep, guest: /keep, access: read-write }}\n",
        guest("plinth-pg-program").display(),
        repo_root()
            .join(format!("tests/plugins/keeper-{language}"))
            .display(),
    ));
    std::fs::create_dir(env.project.join("keep")).unwrap();
    env
}

/// A login whose secret is given in the clear in the program: plinth must keep it out of
/// everything by itself.
fn declare(env: &Env, secret: &str, version: i64) {
    let login = json!([{"type": "keeper:Login", "name": "login", "inputs": {
        "name": "app", "secret_wo": secret, "secret_wo_version": version}}]);
    env.config("resources", &login.to_string());
}

/// What the provider was last sent.
fn kept(env: &Env) -> String {
    std::fs::read_to_string(env.project.join("keep/app")).unwrap()
}

/// Runs plinth with `args` (debug logs on), expecting success; stdout and stderr together.
fn output(env: &Env, args: &[&str]) -> String {
    let mut command = env.command(args);
    command.env("RUST_LOG", "debug");
    let run = command.output().unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "plinth {args:?}: {all}");
    all
}

/// Fails if `secret` is in a state file (checkpoint, journal, history, logs), in `shown`, or in
/// the stack's export, or if the state records the input `secret_wo` at all (the provider
/// returns it as an output too: the host drops it).
fn assert_nowhere(env: &Env, secret: &str, shown: &str) {
    assert_not_written(env, secret, shown);
    let exported = env.ok(&["stack", "export"]);
    assert!(!exported.contains(secret), "{exported}");
    assert!(!exported.contains("\"secret_wo\""), "{exported}");
    assert!(exported.contains("\"secret_wo_version\""), "{exported}");
}

/// Fails if `secret` is in a state file (checkpoint, journal, history, logs) or in `shown`.
fn assert_not_written(env: &Env, secret: &str, shown: &str) {
    for (path, bytes) in env.state_files() {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(secret), "{} holds it", path.display());
    }
    assert!(!shown.contains(secret), "{shown}");
}

fn lifecycle(language: &str) {
    let env = project(language);
    declare(&env, FIRST, 1);
    let preview = env.ok(&["preview", "--diff"]);
    assert!(
        preview.contains("secret_wo: (write-only: sent, not recorded)"),
        "{preview}"
    );
    let all = output(&env, &["up", "--yes", "--json"]);
    assert_eq!(kept(&env), FIRST, "create is sent the value");
    assert_nowhere(&env, FIRST, &all);

    // A new value alone changes nothing: the recorded state has nothing to compare it with.
    declare(&env, SECOND, 1);
    let all = output(&env, &["up", "--yes"]);
    assert!(!crate::count_line(&all).contains("updated"), "{all}");
    assert_eq!(kept(&env), FIRST);

    // A new version sends it, once.
    declare(&env, SECOND, 2);
    let all = output(&env, &["up", "--yes", "-v", "--diff"]);
    assert!(crate::count_line(&all).contains("updated"), "{all}");
    assert_eq!(kept(&env), SECOND, "update is sent the new value");
    assert_nowhere(&env, SECOND, &all);
    assert_nowhere(&env, FIRST, &all);

    env.ok(&["refresh", "--expect-no-changes"]);
    let all = output(&env, &["destroy", "--yes"]);
    assert_not_written(&env, SECOND, &all);
    assert_not_written(&env, FIRST, &all);
    assert!(!env.project.join("keep/app").exists());
}

#[test]
fn a_typescript_provider_declares_write_only_inputs() {
    lifecycle("ts");
}

#[test]
fn a_python_provider_declares_write_only_inputs() {
    lifecycle("py");
}
