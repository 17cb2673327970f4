//! `--json` on preview, up, refresh and destroy: every line of stdout is one event, valid
//! against docs/events.schema.json, on a failing run too; what a guest supplied is data, and no
//! secret appears.

use std::process::Output;

use serde_json::Value;

use crate::support::{Env, repo_root};

/// A secret input of `a` (and so a secret output: the echo returns its inputs).
const SECRET: &str = "tok-json-5e3c-never-shown";
/// A value a hostile program supplies: quotes, a newline, a terminal escape, a fake event.
const HOSTILE: &str = "v\"\n\u{1b}[31m{\"type\":\"summary\"}";

/// The schema, compiled.
fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo_root().join("docs/events.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

/// Every line of `out`'s stdout, each checked against the schema; the secret is on none.
pub(crate) fn json_lines(out: &Output) -> Vec<Value> {
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(!stdout.contains(SECRET), "a secret on stdout:\n{stdout}");
    let validator = validator();
    let events: Vec<Value> = (stdout.lines())
        .map(|line| {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}\nstdout:\n{stdout}"));
            let errors: Vec<String> = validator
                .iter_errors(&event)
                .map(|e| e.to_string())
                .collect();
            assert!(
                errors.is_empty(),
                "{line}\ndoes not fit the schema: {errors:?}"
            );
            event
        })
        .collect();
    assert!(
        !events.is_empty(),
        "no events; stderr:\n{}",
        printed_err(out)
    );
    let numbers: Vec<u64> = events
        .iter()
        .map(|e| e["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (1..=events.len() as u64).collect::<Vec<_>>());
    events
}

fn printed_err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

fn succeeded(env: &Env, args: &[&str]) -> Vec<Value> {
    let out = env.run(args);
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}",
        printed_err(&out)
    );
    let events = json_lines(&out);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "summary", "{last}");
    assert_eq!(last["failed"], false, "{last}");
    events
}

/// A scenario whose `a` has a secret input and a hostile value, and whose program prints `b`'s
/// value on its own stdout (which must not reach the stream).
fn hostile_env() -> Env {
    let env = Env::scenario();
    env.ok(&["config", "set", "token_a", SECRET, "--secret"]);
    env.config("value_a", HOSTILE);
    env.config("print_b", "value");
    env
}

#[test]
fn every_command_writes_events_the_schema_describes_and_no_secret() {
    let env = hostile_env();
    let preview = succeeded(&env, &["preview", "--json"]);
    let phase = of_type(&preview, "phase-started");
    assert_eq!(phase.len(), 1);
    assert_eq!(
        (phase[0]["kind"].as_str(), phase[0]["preview"].as_bool()),
        (Some("update"), Some(true))
    );
    let planned = of_type(&preview, "step-ended");
    assert!(
        planned.iter().all(|e| e["duration_seconds"].is_null()),
        "{planned:?}"
    );

    let up = succeeded(&env, &["up", "--json", "--yes"]);
    // The preview, then the update.
    let phases: Vec<bool> = (of_type(&up, "phase-started").iter())
        .map(|e| e["preview"].as_bool().unwrap())
        .collect();
    assert_eq!(phases, [true, false]);
    let created = (of_type(&up, "step-ended").into_iter())
        .filter(|e| e["name"] == "a" && e["op"] == "create")
        .find(|e| e["duration_seconds"].is_number())
        .expect("a's create ended");
    assert_eq!(created["resource_type"], "testkit:Echo");
    // What the program supplied is data, as it was; the secret is masked, input and output.
    assert_eq!(created["outputs"]["value"], HOSTILE);
    assert_eq!(created["outputs"]["token"], "[secret]");
    let token = (created["diff"].as_array().unwrap().iter())
        .find(|c| c["path"] == "token")
        .expect("the token in the diff");
    assert_eq!(
        (&token["kind"], &token["new"]),
        (&Value::from("add"), &Value::from("[secret]"))
    );
    // The stack's outputs come just before the summary.
    let outputs = &up[up.len() - 2];
    assert_eq!(outputs["type"], "outputs", "{outputs}");
    assert_eq!(outputs["new"]["count"], 2);

    // A change: the diff has old and new; the secret is still masked.
    env.ok(&[
        "config",
        "set",
        "token_a",
        "tok-json-second-5e3c",
        "--secret",
    ]);
    env.config("value_a", "w");
    let up = succeeded(&env, &["up", "--json", "--yes", "--skip-preview"]);
    let updated = (of_type(&up, "step-ended").into_iter())
        .find(|e| e["name"] == "a" && e["op"] == "update")
        .expect("a's update");
    let diff = updated["diff"].as_array().unwrap();
    let value = diff.iter().find(|c| c["path"] == "value").unwrap();
    assert_eq!(
        (&value["old"], &value["new"]),
        (&Value::from(HOSTILE), &Value::from("w"))
    );
    let token = diff.iter().find(|c| c["path"] == "token").unwrap();
    assert_eq!(
        (&token["old"], &token["new"]),
        (&Value::from("[secret]"), &Value::from("[secret]"))
    );
    let stdout = String::from_utf8(env.run(&["preview", "--json"]).stdout).unwrap();
    assert!(!stdout.contains("second-5e3c"), "{stdout}");

    let refresh = succeeded(&env, &["refresh", "--json", "--yes"]);
    let kinds: Vec<&str> = (of_type(&refresh, "phase-started").iter())
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["refresh", "refresh"]);

    let destroy = succeeded(&env, &["destroy", "--json", "--yes"]);
    let deleted: Vec<&Value> = (of_type(&destroy, "step-ended").into_iter())
        .filter(|e| e["op"] == "delete" && e["duration_seconds"].is_number())
        .filter(|e| e["resource_type"] == "testkit:Echo")
        .collect();
    assert_eq!(deleted.len(), 2, "{deleted:?}");
    assert!(env.resources().is_empty());
}

#[test]
fn a_failing_run_ends_with_an_error_event_and_a_failed_exit() {
    let env = hostile_env();
    env.config("fault", "fail");
    let out = env.run(&["up", "--json", "--yes", "--skip-preview"]);
    assert!(!out.status.success());
    let events = json_lines(&out);
    let failed = of_type(&events, "step-failed");
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_eq!(failed[0]["name"], "faulty");
    let summary = of_type(&events, "summary");
    assert_eq!(summary[0]["failed"], true);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error", "{last}");
    assert!(
        last["message"].as_str().unwrap().contains("failed"),
        "{last}"
    );

    // An error before any phase (an unknown --exclude) is an event too.
    let out = env.run(&["preview", "--json", "--exclude", "nosuch"]);
    assert!(!out.status.success());
    let events = json_lines(&out);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "error");
    assert!(
        events[0]["message"].as_str().unwrap().contains("nosuch"),
        "{events:?}"
    );

    // So is one before the project is found.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = (env.command(&["destroy", "--json", "--yes"]))
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let events = json_lines(&out);
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(
        events[0]["message"]
            .as_str()
            .unwrap()
            .contains("Plinth.yaml"),
        "{events:?}"
    );
}

#[test]
fn diff_shows_each_changed_property_old_and_new_with_secrets_masked() {
    let env = hostile_env();
    env.ok(&["up", "--yes"]);
    env.ok(&[
        "config",
        "set",
        "token_a",
        "tok-json-second-5e3c",
        "--secret",
    ]);
    env.config("value_a", "w");
    let out = env.ok(&["preview", "--diff", "--flat"]);
    assert!(
        out.contains(r#"~ value: "v\"\n\u{1b}[31m{\"type\":\"summary\"}" => "w""#),
        "{out}"
    );
    assert!(out.contains("~ token: [secret] => [secret]"), "{out}");
    assert!(
        !out.contains(SECRET) && !out.contains("second-5e3c"),
        "{out}"
    );
    assert!(!out.contains('\u{1b}'), "{out}");
    // A destroy lists what each delete removes.
    let out = env.ok(&["destroy", "--diff", "--flat", "--yes"]);
    assert!(out.contains("- replace_key: \"r\""), "{out}");
    assert!(out.contains("- token: [secret]"), "{out}");
}
