//! Project and stack names never reach a path unvalidated; a malformed state is refused, never
//! a panic.

use crate::support::Env;

const RULE: &str = "letters, digits, `-`, `_` or `.`, not starting with `.`";

fn rename_project(env: &Env, name: &str) {
    let path = env.project.join("Plinth.yaml");
    let yaml = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        yaml.replace("name: scenario", &format!("name: '{name}'")),
    )
    .unwrap();
}

#[test]
fn a_dot_project_name_is_refused_before_anything_is_written() {
    for name in ["..", ".", "a/b"] {
        let env = Env::scenario();
        let before = env.state_files();
        rename_project(&env, name);
        for args in [&["stack", "init", "dev2"][..], &["up", "--yes"]] {
            let stderr = env.fails(args);
            assert!(
                stderr.contains(&format!("invalid project name `{name}`")) && stderr.contains(RULE),
                "{name}: {stderr}"
            );
        }
        assert_eq!(
            env.state_files(),
            before,
            "{name}: the state directory changed"
        );
    }
}

#[test]
fn a_stack_name_that_is_not_a_name_is_refused_saying_the_rule() {
    let env = Env::scenario();
    let before = env.state_files();
    for args in [
        &["stack", "init", ".."][..],
        &["stack", "init", "../x"],
        &["stack", "select", ".hidden"],
        &["--stack", "..", "preview"],
    ] {
        let stderr = env.fails(args);
        assert!(
            stderr.contains("invalid stack name") && stderr.contains(RULE),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(env.state_files(), before);
}

#[test]
fn importing_a_malformed_urn_is_refused_naming_the_field_and_changes_nothing() {
    let env = Env::scenario();
    env.config("chain", "true");
    env.ok(&["up", "--yes"]);
    let before = env.export();
    for (field, bad) in [
        ("urn", "urn:plinth:dev"),
        ("urn", "urn:plinth:..::scenario::testkit:Thing::a"),
        ("type", "testkit"),
        ("parent", "urn:plinth:dev::scenario::x"),
    ] {
        let mut state = before.clone();
        state["snapshot"]["resources"][1][field] = bad.into();
        let file = env.state.path().join("bad.json");
        std::fs::write(&file, serde_json::to_vec(&state).unwrap()).unwrap();
        for force in [false, true] {
            let mut args = vec!["stack", "import", "--file", file.to_str().unwrap()];
            if force {
                args.push("--force");
            }
            let stderr = env.fails(&args);
            assert!(
                stderr.contains(&format!("resources[1].{field}"))
                    || stderr.contains(&format!("`{field}`")),
                "{field} = {bad}: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
        assert_eq!(env.export(), before, "the state is unchanged");
    }
}
