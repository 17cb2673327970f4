//! A saved plan records the preview's `--exclude` (and `--target`) so that `up --plan` applies
//! exactly them; and saving a plan with a `read` service token on a stack with secrets.

use std::collections::BTreeMap;

use crate::support::service::TestService;
use crate::support::{Env, ServiceLogin, echo_values};

#[test]
fn a_plan_applies_exactly_the_exclusions_of_its_preview() {
    let env = Env::scenario();
    env.config("resources", "a,b,c");
    env.ok(&["up", "--yes"]);
    // The program changes `a` and `b`, and drops `c`: the preview excludes `b` and `c`.
    env.config("resources", "a,b");
    env.config("value_a", "v2");
    env.config("value_b", "v2");
    let plan = env.project.join("plan.json");
    let plan = plan.to_str().unwrap();
    env.ok(&[
        "preview",
        "--exclude",
        "b",
        "--exclude",
        "c",
        "--save-plan",
        plan,
    ]);
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(plan).unwrap()).unwrap();
    assert_eq!(saved["options"]["exclude"], serde_json::json!(["b", "c"]));

    // `up --plan` takes no --exclude of its own: the plan's apply.
    let err = env.fails(&["up", "--yes", "--plan", plan, "--exclude", "a"]);
    assert!(err.contains("cannot be used with"), "{err}");
    env.ok(&["up", "--yes", "--plan", plan]);
    let expected: BTreeMap<String, String> = [("a", "v2"), ("b", "v"), ("c", "v")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(echo_values(&env), expected);
}

#[test]
fn a_read_token_previews_a_stack_with_secrets_but_cannot_save_its_plan() {
    let service = TestService::start();
    let env = Env::scenario_on(ServiceLogin {
        url: service.url().to_owned(),
        token: service.token.clone(),
    });
    env.config("resources", "a");
    env.ok(&["config", "set", "token_a", "s3cret-plan-token", "--secret"]);
    env.ok(&["up", "--yes"]);
    let read = service
        .database
        .token_granting("reviewer", &["--level", "read"]);
    let plan = env.project.join("plan.json");
    let run = |args: &[&str]| {
        let mut cmd = env.command(args);
        cmd.env("PLINTH_ACCESS_TOKEN", &read);
        cmd.output().unwrap()
    };
    assert!(run(&["preview"]).status.success());
    let out = run(&["preview", "--save-plan", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("sealing the plan's secrets") && stderr.contains("needs write"),
        "{stderr}"
    );
    assert!(!plan.exists(), "a plan was written");
}
