//! `plinth stack rename` and `plinth stack tag`, one function for every backend: a stack with
//! resources, a secret and two updates is tagged, then renamed; its state (every URN), history,
//! logs, tags and configuration follow it, the program previews with no change under the new
//! name, an old version rolls back, and the old name is free again. The file backend runs it
//! here; the service runs the same function in `service.rs`.

use crate::support::{Env, ServiceLogin};

/// The plaintext of the stack's one secret; it must reach no export.
const SECRET: &str = "tok-3a9c-renamed-secret";

fn history_len(env: &Env) -> usize {
    let history: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "history", "--json"])).unwrap();
    history.as_array().unwrap().len()
}

/// Every URN the stack's state holds, whatever field holds it.
fn urns(env: &Env) -> Vec<String> {
    fn walk(value: &serde_json::Value, found: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) if s.starts_with("urn:plinth:") => found.push(s.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            serde_json::Value::Object(map) => map.values().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&env.export()["snapshot"], &mut found);
    found
}

/// Runs the rename and tag scenario on the service `service` names (the file backend if none).
pub fn rename_and_tags(service: Option<ServiceLogin>) {
    let mut env = Env::scenario_with_world_on(service);
    env.config("kind", "record");
    env.config("chain", "true");
    env.ok(&["config", "set", "--secret", "token_a", SECRET]);
    env.ok(&["up", "--yes"]);
    env.config("value_b", "w");
    env.ok(&["up", "--yes"]);
    let resources = env.resources();
    assert_eq!(resources.len(), 2, "{resources:?}");

    // Tags: checked, listed, shown by `stack ls`, escaped.
    env.ok(&["stack", "tag", "set", "owner", "Ana María"]);
    env.ok(&["stack", "tag", "set", "env", "staging"]);
    env.ok(&["stack", "tag", "set", "env", "qa"]);
    let err = env.fails(&["stack", "tag", "set", "bad name", "x"]);
    assert!(err.contains("invalid tag name `bad name`"), "{err}");
    let err = env.fails(&["stack", "tag", "set", "note", "a\u{1b}[2Jb"]);
    assert!(err.contains("value of tag `note` is invalid"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err}");
    let tags: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "tag", "ls", "--json"])).unwrap();
    assert_eq!(tags, serde_json::json!({"env": "qa", "owner": "Ana María"}));
    let listed = env.ok(&["stack", "ls"]);
    let row = listed.lines().find(|l| l.starts_with("dev*")).unwrap();
    assert!(row.contains("env=qa, owner=Ana María"), "{listed}");
    env.ok(&["stack", "tag", "set", "gone", "soon"]);
    env.ok(&["stack", "tag", "rm", "gone"]);
    let err = env.fails(&["stack", "tag", "rm", "gone"]);
    assert!(err.contains("has no tag `gone`"), "{err}");

    // A configuration file of the new name is another stack's: the rename is refused.
    let taken = env.project.join("Plinth.prod.yaml");
    std::fs::write(&taken, "config: {}\n").unwrap();
    let err = env.fails(&["stack", "rename", "prod"]);
    assert!(
        err.contains("exists already") && err.contains("not renamed"),
        "{err}"
    );
    std::fs::remove_file(&taken).unwrap();
    let err = env.fails(&["stack", "rename", "no/such"]);
    assert!(err.contains("invalid"), "{err}");

    let config_before = std::fs::read_to_string(env.project.join("Plinth.dev.yaml")).unwrap();
    let out = env.ok(&["stack", "rename", "prod"]);
    assert!(out.contains("Renamed stack `dev` to `prod`"), "{out}");
    assert!(!env.project.join("Plinth.dev.yaml").exists());
    let config_after = std::fs::read_to_string(env.project.join("Plinth.prod.yaml")).unwrap();
    assert_eq!(config_before, config_after);

    // The old name is gone; the new one is selected, with everything the stack had.
    let listed = env.ok(&["stack", "ls"]);
    assert!(!listed.lines().any(|l| l.starts_with("dev")), "{listed}");
    env.stack = "prod".into();
    let row = listed.lines().find(|l| l.starts_with("prod*")).unwrap();
    assert!(row.contains("env=qa, owner=Ana María"), "{listed}");
    assert_eq!(env.resources(), resources);
    let found = urns(&env);
    assert!(found.len() >= 4, "{found:?}");
    for urn in &found {
        assert!(urn.starts_with("urn:plinth:prod::scenario::"), "{urn}");
    }
    assert!(
        found.contains(&"urn:plinth:prod::scenario::plinth:plinth:Stack::scenario-prod".to_owned())
    );
    let exported = env.ok(&["stack", "export"]);
    assert!(!exported.contains(SECRET), "an export holds the plaintext");
    assert_eq!(history_len(&env), 2);
    let log = env.ok(&["logs", "--update", "1"]);
    assert!(log.contains("created"), "{log}");
    // The program's resources are the state's under the new name; its secret opens.
    env.ok(&["preview", "--expect-no-changes"]);
    assert_eq!(
        env.ok(&["config", "get", "token_a", "--show-secrets"])
            .trim(),
        SECRET
    );

    // Version 1 was written as `dev`'s: it rolls back as `prod`'s.
    let out = env.ok(&["stack", "rollback", "1", "--yes"]);
    assert!(
        out.contains("Rolled back stack `prod` to version 1"),
        "{out}"
    );
    for urn in urns(&env) {
        assert!(urn.starts_with("urn:plinth:prod::"), "{urn}");
    }
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("1 updated"), "{out}");
    env.ok(&["preview", "--expect-no-changes"]);

    // The old name is free: a new, empty, untagged stack takes it; the new one is not free.
    env.stack = "dev".into();
    env.ok(&["stack", "init", "dev"]);
    assert!(env.resources().is_empty());
    assert_eq!(history_len(&env), 0);
    assert!(env.ok(&["stack", "tag", "ls"]).contains("no tags"));
    env.stack = "prod".into();
    let err = env.fails(&["stack", "rename", "dev"]);
    assert!(err.contains("exists"), "{err}");
    env.ok(&["destroy", "--yes"]);
}

#[test]
fn a_stack_is_renamed_and_tagged_on_the_file_backend() {
    rename_and_tags(None);
}
