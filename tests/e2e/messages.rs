//! What plinth says to a person, through the real binary: a failed run's summary and errors,
//! hints for missing grants and configuration, stack outputs and history, a create's planned
//! inputs, and inspecting a plugin from its crate.

use crate::support::{Env, repo_root};

/// stdout and stderr of a run that must fail.
fn failed_run(env: &Env, args: &[&str]) -> (String, String) {
    let out = env.run(args);
    assert!(!out.status.success(), "plinth {args:?} should have failed");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn an_ungranted_path_fails_once_with_a_grant_hint_and_an_honest_summary() {
    // `testkit:Record` writes under /world, which this project does not grant.
    let env = Env::scenario();
    env.config("kind", "record");
    env.config("resources", "a");
    let (stdout, stderr) = failed_run(&env, &["up", "--yes", "--skip-preview"]);
    let both = format!("{stdout}{stderr}");
    assert!(
        both.contains("plugin `testkit` is granted no directories")
            && both.contains("under `plugins.testkit.grants` in Plinth.yaml"),
        "{both}"
    );
    // The step's error is shown once, by the display; the final error counts it.
    assert_eq!(
        both.matches("No such file or directory").count(),
        1,
        "{both}"
    );
    assert!(
        stderr.contains("1 resource failed (shown above)"),
        "{stderr}"
    );
    assert!(!stdout.contains("0 unchanged"), "{stdout}");
    assert!(stdout.contains("before the failure"), "{stdout}");
    assert!(env.resources().is_empty());
}

#[test]
fn a_missing_config_value_says_how_to_set_it() {
    let env = Env::scenario();
    env.config("require", "region");
    let (_, stderr) = failed_run(&env, &["preview"]);
    assert!(
        stderr.contains("missing required configuration value `region`")
            && stderr.contains("plinth config set region VALUE"),
        "{stderr}"
    );
}

#[test]
fn outputs_history_and_planned_inputs_read_as_a_person_expects() {
    let env = Env::scenario();
    env.config("resources", "a");
    env.config("value_a", "hello");
    let out = env.ok(&["stack", "output"]);
    assert!(out.contains("has no outputs"), "{out}");

    // A planned create shows the inputs it will apply.
    let preview = env.ok(&["preview"]);
    assert!(preview.contains("+ value: \"hello\""), "{preview}");

    env.ok(&["up", "--yes"]);
    let ls = env.ok(&["stack", "ls"]);
    let row = ls.lines().find(|l| l.starts_with("dev")).unwrap();
    // One Echo; the default provider resource is not counted, as in the summary.
    assert_eq!(row.split_whitespace().nth(1), Some("1"), "{ls}");

    env.ok(&["up", "--yes"]);
    let history = env.ok(&["stack", "history"]);
    // Rows are numbered from the oldest, as `stack rollback` and `logs --update` take them.
    let versions: Vec<&str> = (history.lines().skip(1))
        .map(|row| row.split_whitespace().next().unwrap())
        .collect();
    let count = versions.len();
    let expected: Vec<String> = (1..=count).rev().map(|n| n.to_string()).collect();
    assert!(count == 2 && versions == expected, "{history}");
    let row = history.lines().nth(1).unwrap();
    let date = row.split_whitespace().nth(1).unwrap();
    assert!(
        date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-',
        "{history}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "history", "--json"])).unwrap();
    assert!(json[0]["started"].is_u64(), "{json}");
}

#[test]
fn plugin_inspect_builds_a_crate_directory() {
    let env = Env::scenario();
    let crate_dir = repo_root().join("tests/plugins/testkit");
    let out = env.ok(&["plugin", "inspect", crate_dir.to_str().unwrap()]);
    assert!(out.contains("testkit"), "{out}");
}
