//! Guests built against `plinth:plugin@0.1.0`, before plinth moved to 0.2, keep working: a 0.1
//! provider under the current scenario program, and a 0.1 program with it, through `up` and
//! `destroy`.

use crate::support::{Env, guest};

#[test]
fn a_0_1_provider_works_through_up_and_destroy() {
    let env = Env::scenario_with(&format!(
        "  legacy:\n    path: {}\n",
        guest("plinth-legacy-v01").display()
    ));
    env.config("resources", "a,b");
    env.config("type_b", "legacy:Note");
    env.config("inputs_b", "text=hello");
    env.ok(&["up", "--yes"]);
    let resources = env.resources();
    assert!(
        resources.contains(&("b".to_owned(), "note-b".to_owned())),
        "{resources:?}"
    );
    let state = env.export();
    let note = state["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "note-b")
        .unwrap();
    assert_eq!(note["outputs"]["length"], 5.0, "{note}");

    // A change to `text` replaces the note (the 0.1 provider's diff).
    env.config("inputs_b", "text=goodbye");
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("1 replaced"), "{out}");

    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
}

#[test]
fn a_0_1_program_works_through_up_and_destroy() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Plinth.yaml"),
        format!(
            "name: legacy\nprogram: {}\nplugins:\n  legacy:\n    path: {}\n",
            guest("plinth-legacy-program-v01").display(),
            guest("plinth-legacy-v01").display()
        ),
    )
    .unwrap();
    let env = Env::in_dir(dir.path().to_owned(), "dev");

    env.ok(&["up", "--yes"]);
    let resources = env.resources();
    assert!(
        resources.contains(&("note".to_owned(), "note-note".to_owned())),
        "{resources:?}"
    );
    let outputs: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["length"], 5.0, "{outputs}");
    assert_eq!(outputs["summary"], "5 characters", "{outputs}");

    // The program reads its config through the 0.1 monitor.
    env.config("text", "hello, world");
    env.ok(&["up", "--yes"]);
    assert_eq!(
        env.ok(&["stack", "output", "summary"]).trim(),
        "12 characters"
    );

    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
}
