//! Write-only inputs declared by TypeScript and Python providers (`writeOnly:` /
//! `write_only=`, exported as `plinth:inputs/write-only` by their SDKs): the keeper test
//! providers write the value they are sent to a granted directory, so the test sees what each
//! received and when, while nothing plinth writes or prints holds it.

use serde_json::json;

use crate::support::{
    Env, assert_not_written, assert_write_only, guest, printed_with_logs, repo_root,
};

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

fn lifecycle(language: &str) {
    let env = project(language);
    declare(&env, FIRST, 1);
    let preview = env.ok(&["preview", "--diff"]);
    assert!(
        preview.contains("secret_wo: (write-only: sent, not recorded)"),
        "{preview}"
    );
    let all = printed_with_logs(&env, &["up", "--yes", "--json"]);
    assert_eq!(kept(&env), FIRST, "create is sent the value");
    assert_write_only(&env, "secret_wo", FIRST, &all);

    // A new value alone changes nothing: the recorded state has nothing to compare it with.
    declare(&env, SECOND, 1);
    let all = printed_with_logs(&env, &["up", "--yes"]);
    assert!(!crate::count_line(&all).contains("updated"), "{all}");
    assert_eq!(kept(&env), FIRST);

    // A new version sends it, once.
    declare(&env, SECOND, 2);
    let all = printed_with_logs(&env, &["up", "--yes", "-v", "--diff"]);
    assert!(crate::count_line(&all).contains("updated"), "{all}");
    assert_eq!(kept(&env), SECOND, "update is sent the new value");
    assert_write_only(&env, "secret_wo", SECOND, &all);
    assert_write_only(&env, "secret_wo", FIRST, &all);

    env.ok(&["refresh", "--expect-no-changes"]);
    let all = printed_with_logs(&env, &["destroy", "--yes"]);
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
