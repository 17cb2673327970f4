//! Files from TypeScript: a TypeScript provider (tests/plugins/notes-ts) reads and writes JSON
//! files in its granted directory through Node's own `node:fs`, `node:fs/promises` and
//! `node:path`, gets the same grant advice as a Rust provider when the directory is not
//! granted, and is refused, with a Node-like `EACCES` naming the grants, any path outside it.

use crate::support::{Env, repo_root};

fn notes_ts(grants: &str) -> Env {
    let env = Env::scenario_with(&format!(
        "  notes:\n    path: {}\n{grants}",
        repo_root().join("tests/plugins/notes-ts").display()
    ));
    env.config("resources", "a");
    env.config("type_a", "notes:Note");
    env
}

const GRANTED: &str =
    "    grants:\n      dirs:\n        - { host: ./notes, guest: /notes, access: read-write }\n";

#[test]
fn a_typescript_provider_keeps_files_in_its_granted_directory() {
    let env = notes_ts(GRANTED);
    std::fs::create_dir(env.project.join("notes")).unwrap();
    env.config("inputs_a", "text=remember the milk");
    env.ok(&["up", "--yes"]);
    let note = env.project.join("notes/a.json");
    let text: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&note).unwrap()).unwrap();
    assert_eq!(text, serde_json::json!({ "text": "remember the milk" }));
    // The outputs came from statSync and readdirSync (the note and the temporary directory).
    let state = env.export();
    let note_state = (state["snapshot"]["resources"].as_array().unwrap().iter())
        .find(|r| r["urn"].as_str().unwrap().ends_with("::a"))
        .unwrap();
    let outputs = &note_state["outputs"];
    assert_eq!(outputs["bytes"], 28, "{state}");
    assert_eq!(outputs["notes"], 2, "{state}");

    // readFileSync: a note edited by hand is drift that refresh records.
    std::fs::write(&note, r#"{"text":"buy bread"}"#).unwrap();
    let out = env.ok(&["refresh", "--yes"]);
    assert!(out.contains("buy bread"), "{out}");

    // rmSync.
    env.ok(&["destroy", "--yes"]);
    assert!(!note.exists());
}

#[test]
fn a_typescript_provider_is_refused_files_outside_its_grant() {
    let env = notes_ts(GRANTED);
    std::fs::create_dir(env.project.join("notes")).unwrap();
    // `/notes/../elsewhere` is `/elsewhere`, in no granted directory.
    env.config("inputs_a", "text=x;dir=/notes/../elsewhere");
    let stderr = env.fails(&["up", "--yes"]);
    for needle in [
        "EACCES: permission denied",
        "mkdir '/elsewhere/.tmp'",
        "granted: /notes",
        "capabilities.dirs",
        "plugin `notes`",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    assert!(env.resources().is_empty());
}

#[test]
fn an_ungranted_directory_gets_the_same_advice_as_for_rust() {
    let env = notes_ts("");
    env.config("inputs_a", "text=x");
    let stderr = env.fails(&["up", "--yes"]);
    for needle in [
        "plugin `notes` asks for capabilities it is not granted",
        "read-write access to the directory /notes (each note is a JSON file there)",
        "To grant it, add these lines under `plugins: notes: grants:` in Plinth.yaml:",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
}
