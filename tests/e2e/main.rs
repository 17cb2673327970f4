//! End-to-end tests: the real `plinth` binary, real Wasm components built from source, real
//! state files.

mod adversarial;
mod book;
mod capabilities;
mod cli_commands;
mod component_files;
mod crash;
mod distribution;
mod docs;
mod exclude;
mod failed_runs;
mod file;
mod gen_sdk;
mod grants;
mod hostile_ids;
mod hostile_program;
mod hostile_secrets;
mod hostile_service;
mod hostile_state;
mod house;
mod import;
mod json_events;
mod legacy;
mod lifecycle;
mod locking;
mod login;
mod logs;
mod messages;
mod mirror_layout;
mod names;
mod nested_grants;
mod new;
mod numbers;
mod oidc;
mod plan_selection;
mod plans;
mod plugin_lock;
mod policy;
mod policy_events;
mod policy_polyglot;
mod policy_registry;
mod policy_service;
mod polyglot;
mod postgres;
mod postgres_parity;
mod postgres_races;
mod postgres_tls;
mod postgres_write_only;
mod py_edit;
mod py_modules;
mod pypi;
mod rabbitmq;
mod rabbitmq_user;
mod reach;
mod recovery;
mod registry;
mod release;
mod run_metadata;
mod sdk_write_only;
mod secrets;
mod service;
mod service_access;
mod service_login;
mod signing;
mod stack_life;
mod stack_rename;
mod stack_root;
mod state;
mod state_edit;
mod support;
mod ts_edit;
mod ts_fetch;
mod ts_files;
mod ts_types;

use support::{ConfigCleanup, Env, repo_root};

fn count_line(stdout: &str) -> &str {
    stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("Resources:"))
        .unwrap_or_else(|| panic!("no summary in:\n{stdout}"))
}

#[test]
fn hello_example_lifecycle() {
    let dir = repo_root().join("examples/hello");
    let stack = "e2e-hello";
    let _cleanup = ConfigCleanup(dir.join(format!("Plinth.{stack}.yaml")));
    let env = Env::in_dir(dir, stack);

    // Preview: random results are not known before creation, so outputs derived from them
    // are unknown.
    let out = env.ok(&["preview"]);
    assert!(out.contains("greeting: [unknown]"), "{out}");
    assert!(env.resources().is_empty());

    // `up` builds the program and the random plugin from source, then creates everything.
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("created"), "{out}");
    assert!(!count_line(&out).contains("updated"), "{out}");
    let first = env.resources();
    assert!(first.len() >= 4, "{first:?}");
    let outputs = env.ok(&["stack", "output", "--json"]);
    let outputs: serde_json::Value = serde_json::from_str(&outputs).unwrap();
    assert!(
        outputs["greeting"].as_str().unwrap().starts_with("Hello, "),
        "{outputs}"
    );

    // A second `up` changes nothing; `preview --expect-no-changes` agrees.
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("no changes"), "{out}");
    env.ok(&["preview", "--expect-no-changes"]);
    assert_eq!(env.resources(), first);

    // Changing the suffix length replaces the suffix string and nothing else.
    env.config("suffix_length", "12");
    let stderr = env.fails(&["preview", "--expect-no-changes"]);
    assert!(stderr.contains("--expect-no-changes"), "{stderr}");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 replaced"), "{out}");
    let after = env.resources();
    let changed: Vec<_> = after.iter().filter(|r| !first.contains(r)).collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(changed[0].0, "suffix");

    // `destroy` leaves nothing.
    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
    // The root went too, and with it the outputs.
    let state = env.export();
    assert_eq!(state["snapshot"]["resources"], serde_json::json!([]));
    assert!(env.ok(&["stack", "output"]).contains("no outputs"));
}

#[test]
fn updates_deletes_and_outputs_through_apply() {
    let env = Env::scenario();
    env.config("resources", "a,b,c");
    env.config("chain", "true");
    env.ok(&["up", "--yes"]);
    let first = env.resources();
    assert_eq!(
        first.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    assert_eq!(env.ok(&["stack", "output", "names"]).trim(), "v,v,v");

    // An in-place change updates that resource and `c`, whose input derives from it, keeping
    // their ids; `a` is untouched.
    env.config("value_b", "changed");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 updated, 1 unchanged"), "{out}");
    assert_eq!(env.resources(), first);
    assert_eq!(env.ok(&["stack", "output", "names"]).trim(), "v,changed,v");

    // A replace_key change replaces it: new id.
    env.config("replace_a", "other");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 replaced"), "{out}");
    let after = env.resources();
    assert_ne!(
        after.iter().find(|r| r.0 == "a"),
        first.iter().find(|r| r.0 == "a")
    );

    // Removing a resource from the program deletes it.
    env.config("chain", "false");
    env.config("resources", "a,c");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 deleted"), "{out}");
    let names: Vec<_> = env.resources().into_iter().map(|r| r.0).collect();
    assert_eq!(names, ["a", "c"]);

    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
}

#[test]
fn preview_writes_nothing() {
    let env = Env::scenario();
    let before = env.state_files();
    let out = env.ok(&["preview"]);
    assert!(count_line(&out).contains("2 to create"), "{out}");
    assert_eq!(
        env.state_files(),
        before,
        "preview changed the state directory"
    );
}

fn assert_contained_crash(fault: &str, expect: &[&str]) {
    let env = Env::scenario();
    env.config("fault", fault);
    let stderr = env.fails(&["up", "--yes"]);
    for needle in expect {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    // The state on disk is valid and loadable: other commands work.
    let state = env.export();
    assert!(state["snapshot"]["resources"].is_array());
    env.ok(&["stack", "output"]);
    env.ok(&["config", "rm", "fault"]);
    env.ok(&["up", "--yes"]);
    let names: Vec<_> = env.resources().into_iter().map(|r| r.0).collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn a_panicking_provider_fails_the_step_not_the_engine() {
    assert_contained_crash(
        "panic",
        &[
            "testkit:Panic::faulty",
            "plugin `testkit`",
            "panic requested",
        ],
    );
}

#[test]
fn a_trapping_provider_fails_the_step_not_the_engine() {
    assert_contained_crash("trap", &["testkit:Trap::faulty", "plugin `testkit`"]);
}

fn one_line_error(env: &Env, args: &[&str]) -> String {
    let stderr = env.fails(args);
    assert_eq!(stderr.trim().lines().count(), 1, "not one line:\n{stderr}");
    stderr
}

#[test]
fn a_missing_plugin_is_a_clear_error() {
    let env = Env::scenario();
    let yaml = std::fs::read_to_string(env.project.join("Plinth.yaml")).unwrap();
    let broken = yaml.replace("plinth_testkit.wasm", "missing.wasm");
    std::fs::write(env.project.join("Plinth.yaml"), broken).unwrap();
    let stderr = one_line_error(&env, &["preview"]);
    assert!(
        stderr.contains("missing.wasm") && stderr.contains("plugin `testkit`"),
        "{stderr}"
    );
}

#[test]
fn a_package_without_a_plugin_is_a_clear_error() {
    let env = Env::scenario();
    let yaml = std::fs::read_to_string(env.project.join("Plinth.yaml")).unwrap();
    let without = yaml.split("plugins:").next().unwrap().to_owned();
    std::fs::write(env.project.join("Plinth.yaml"), without).unwrap();
    let stderr = one_line_error(&env, &["preview"]);
    assert!(stderr.contains("no plugin provides `testkit`"), "{stderr}");
}

#[test]
fn a_malformed_project_file_is_a_clear_error() {
    let env = Env::scenario();
    std::fs::write(env.project.join("Plinth.yaml"), "name: [unclosed\n").unwrap();
    let stderr = one_line_error(&env, &["preview"]);
    assert!(stderr.contains("Plinth.yaml is malformed"), "{stderr}");
}

#[test]
fn an_unknown_stack_is_a_clear_error() {
    let env = Env::scenario();
    let stderr = one_line_error(&env, &["--stack", "nope", "preview"]);
    assert!(stderr.contains("stack `nope` does not exist"), "{stderr}");
}

#[test]
fn up_without_a_terminal_requires_yes() {
    let env = Env::scenario();
    let stderr = env.fails(&["up", "--skip-preview"]);
    assert!(stderr.contains("--yes"), "{stderr}");
    assert!(env.resources().is_empty());
}

#[test]
fn stack_commands() {
    let env = Env::scenario();
    env.ok(&["stack", "init", "prod"]);
    let ls = env.ok(&["stack", "ls"]);
    assert!(ls.contains("dev") && ls.contains("prod*"), "{ls}");
    env.ok(&["stack", "select", "dev"]);
    assert!(env.ok(&["stack", "ls"]).contains("dev*"));
    env.config("resources", "x");
    assert_eq!(env.ok(&["config", "get", "resources"]).trim(), "x");
    env.ok(&["up", "--yes"]);
    let stderr = env.fails(&["stack", "rm", "dev"]);
    assert!(stderr.contains("destroy"), "{stderr}");
    env.ok(&["stack", "rm", "prod"]);
    assert!(!env.ok(&["stack", "ls"]).contains("prod"));
}
