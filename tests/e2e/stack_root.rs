//! The stack's root resource through the real CLI: a stack written before roots existed (a
//! fixture from that plinth) loads, previews no changes and is upgraded by the next `up`;
//! export, import and a no-op `up` round-trip; the display shows the tree; destroy removes all.

use std::path::Path;

use crate::support::{Env, guest, repo_root};

fn fixture(schema: &str, name: &str) -> std::path::PathBuf {
    repo_root()
        .join("tests/e2e/fixtures")
        .join(schema)
        .join(name)
}

/// A scenario project with the `random` plugin, whose stack `legacy` holds the fixture of
/// `schema` (and its configuration, sealed with the e2e passphrase).
fn legacy_env(schema: &str) -> Env {
    let random = format!(
        "  random:\n    path: {}\n",
        guest("plinth-random").display()
    );
    let mut env = Env::scenario_with(&random);
    env.stack = "legacy".into();
    let stacks = env.state.path().join("stacks/scenario");
    std::fs::copy(fixture(schema, "legacy.json"), stacks.join("legacy.json")).unwrap();
    std::fs::copy(
        fixture(schema, "Plinth.legacy.yaml"),
        env.project.join("Plinth.legacy.yaml"),
    )
    .unwrap();
    env
}

fn checkpoint(env: &Env) -> serde_json::Value {
    let path = env.state.path().join("stacks/scenario/legacy.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn urns(checkpoint: &serde_json::Value) -> Vec<String> {
    (checkpoint["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter())
    .map(|r| r["urn"].as_str().unwrap().to_owned())
    .collect()
}

/// `value` with every sealed secret's ciphertext (fresh for each write) blanked.
fn unsealed(mut value: serde_json::Value) -> serde_json::Value {
    match &mut value {
        serde_json::Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                *v = if key == "ciphertext" {
                    serde_json::Value::Null
                } else {
                    unsealed(v.take())
                };
            }
        }
        serde_json::Value::Array(items) => {
            for v in items.iter_mut() {
                *v = unsealed(v.take());
            }
        }
        _ => {}
    }
    value
}

#[test]
fn a_schema_1_stack_previews_no_changes_and_the_next_up_upgrades_it() {
    let env = legacy_env("schema-1");
    let before = checkpoint(&env);
    assert_eq!(before["version"], 1);

    let preview = env.ok(&["preview", "--expect-no-changes"]);
    assert!(preview.contains("Resources: no changes"), "{preview}");
    let outputs = env.ok(&["stack", "output"]);
    for line in ["count", "names", "password  [secret]"] {
        assert!(outputs.contains(line), "{outputs}");
    }
    // Reading and previewing leave the file as it was.
    assert_eq!(checkpoint(&env), before);

    let up = env.ok(&["up", "--yes"]);
    assert!(up.contains("Resources: no changes"), "{up}");
    let after = checkpoint(&env);
    assert_eq!(after["version"], 3);
    let resources = after["snapshot"]["resources"].as_array().unwrap();
    assert_eq!(resources[0]["type"], "plinth:plinth:Stack");
    assert_eq!(
        resources[0]["urn"],
        "urn:plinth:legacy::scenario::plinth:plinth:Stack::scenario-legacy"
    );
    assert!(after["snapshot"].get("outputs").is_none(), "{after}");
    let password = &resources[0]["outputs"]["password"];
    assert_eq!(password["plinth:sig"], "secret", "{password}");
    // Every resource keeps its URN.
    let mut old = urns(&before);
    let mut new = urns(&after)[1..].to_vec();
    old.sort();
    new.sort();
    assert_eq!(new, old);
    // A parent that is the root is implied (left out); no parent is `null`.
    for r in &resources[1..] {
        let ty = r["type"].as_str().unwrap();
        match ty {
            t if t.starts_with("plinth:providers:") => assert!(r["parent"].is_null(), "{r}"),
            "testkit:Echo" => assert!(r["parent"].as_str().unwrap().ends_with("::grp"), "{r}"),
            _ => assert!(r.get("parent").is_none(), "{r}"),
        }
    }
    let shown = env.ok(&["stack", "output", "password", "--show-secrets"]);
    assert!(
        !shown.contains("[secret]") && shown.trim().len() > 2,
        "{shown}"
    );
    assert_eq!(env.ok(&["stack", "ls"]).matches("legacy").count(), 1);

    // Export, import and a no-op `up` round-trip.
    let exported = env.state.path().join("exported.json");
    env.ok(&["stack", "export", "--file", exported.to_str().unwrap()]);
    env.ok(&["stack", "import", "--file", exported.to_str().unwrap()]);
    let up = env.ok(&["up", "--yes"]);
    assert!(up.contains("Resources: no changes"), "{up}");
    assert_eq!(
        unsealed(checkpoint(&env)["snapshot"].clone()),
        unsealed(after["snapshot"].clone())
    );

    // Destroy takes the root too, last; nothing is left, outputs included.
    let destroyed = env.ok(&["destroy", "--yes"]);
    let deleted: Vec<&str> = destroyed
        .lines()
        .filter(|l| l.contains(" deleted ("))
        .collect();
    assert!(
        deleted.last().unwrap().contains("plinth:plinth:Stack"),
        "{destroyed}"
    );
    assert!(destroyed.contains("Resources: 4 deleted"), "{destroyed}");
    assert!(
        checkpoint(&env)["snapshot"]["resources"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(env.ok(&["stack", "output"]).contains("no outputs"));
}

#[test]
fn a_schema_2_stack_previews_no_changes_and_the_next_up_writes_it_in_schema_3() {
    let env = legacy_env("schema-2");
    let before = checkpoint(&env);
    assert_eq!(before["version"], 2);
    let preview = env.ok(&["preview", "--expect-no-changes"]);
    assert!(preview.contains("Resources: no changes"), "{preview}");
    assert_eq!(checkpoint(&env), before);

    let up = env.ok(&["up", "--yes"]);
    assert!(up.contains("Resources: no changes"), "{up}");
    let after = checkpoint(&env);
    assert_eq!(after["version"], 3);
    assert_eq!(urns(&after), urns(&before));
    // Every parent means what it meant: left out for the root, `null` for none.
    let root = "urn:plinth:legacy::scenario::plinth:plinth:Stack::scenario-legacy";
    let resources = |c: &serde_json::Value| c["snapshot"]["resources"].as_array().unwrap().clone();
    for (new, old) in resources(&after).iter().zip(&resources(&before)).skip(1) {
        let parent = match new.get("parent") {
            None => Some(root),
            Some(parent) => parent.as_str(),
        };
        assert_eq!(parent, old["parent"].as_str(), "{new}");
    }
    assert!(
        env.ok(&["stack", "output"]).contains("password  [secret]"),
        "the root's outputs are kept"
    );
}

#[test]
fn a_new_stack_shows_its_tree_and_output_changes() {
    let env = Env::scenario();
    env.config("component", "grp");
    env.config("resources", "a,b");
    // Without a terminal the layout is flat, unless asked.
    let flat = env.ok(&["preview"]);
    assert!(!flat.contains("├─") && !flat.contains("└─"), "{flat}");
    assert!(flat.contains("Resources: 3 to create"), "{flat}");
    let tree = env.ok(&["preview", "--tree"]);
    let lines: Vec<&str> = tree.lines().collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in:\n{tree}"))
    };
    let root = at("plinth:plinth:Stack");
    let group = at("─ scenario:Group");
    let a = at("─ testkit:Echo");
    assert!(root < group && group < a, "{tree}");
    assert!(lines[root].contains("scenario-dev"), "{tree}");
    assert!(
        lines[a].contains("│  ├─ testkit:Echo") || lines[a].contains("   ├─ testkit:Echo"),
        "{tree}"
    );
    // The component's outputs show under it; the stack's as added.
    assert!(tree.contains("+ count"), "{tree}");
    assert!(tree.contains("Outputs:"), "{tree}");
    assert!(Path::new(&env.project).exists());

    env.ok(&["up", "--yes"]);
    env.config("resources", "a,b,c");
    let changed = env.ok(&["preview", "--tree"]);
    assert!(changed.contains("~ count"), "{changed}");
    assert!(changed.contains("~ names"), "{changed}");
    env.config("resources", "a");
    env.config("component", "other");
    let moved = env.ok(&["up", "--yes", "--flat"]);
    assert!(moved.contains("Resources:"), "{moved}");
    let state = env.export();
    let root = (state["snapshot"]["resources"].as_array().unwrap().iter())
        .find(|r| r["type"] == "plinth:plinth:Stack")
        .expect("the stack's root resource");
    assert_eq!(root["outputs"]["names"], "v");
}
