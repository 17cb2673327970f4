//! Declared capabilities: a plugin that asks for a directory the project does not grant is
//! refused before it runs, with the lines to add to `Plinth.yaml`; with exactly those lines
//! added, it loads and works.

use crate::support::{Env, guest};

/// The lines the refusal says to add under `plugins: <name>: grants:`: the indented block after
/// the line that announces them.
fn lines_to_add(stderr: &str) -> String {
    let mut lines = stderr
        .lines()
        .skip_while(|line| !line.starts_with("To grant it, add these lines"))
        .skip(1)
        .take_while(|line| line.starts_with("      "))
        .peekable();
    assert!(lines.peek().is_some(), "no lines to add in:\n{stderr}");
    lines.map(|line| format!("{line}\n")).collect()
}

#[test]
fn a_plugin_asking_for_an_ungranted_directory_is_refused_until_granted() {
    let env = Env::scenario_with(&format!(
        "  notes:\n    path: {}\n",
        guest("plinth-notes").display()
    ));
    env.config("resources", "a");
    env.config("type_a", "notes:Note");
    env.config("inputs_a", "text=remember the milk");

    let stderr = env.fails(&["up", "--yes"]);
    for needle in [
        "plugin `notes` asks for capabilities it is not granted",
        "read-write access to the directory /notes (each note is a file there)",
        "To grant it, add these lines under `plugins: notes: grants:` in Plinth.yaml:",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    assert!(env.resources().is_empty());

    // Exactly the lines printed, under a `grants:` of the plugin, and the directory they name.
    let lines = lines_to_add(&stderr);
    assert!(lines.contains("host: ./notes"), "{lines}");
    let project_file = env.project.join("Plinth.yaml");
    let mut yaml = std::fs::read_to_string(&project_file).unwrap();
    yaml.push_str("    grants:\n");
    yaml.push_str(&lines);
    std::fs::write(&project_file, yaml).unwrap();
    std::fs::create_dir(env.project.join("notes")).unwrap();

    env.ok(&["up", "--yes"]);
    let note = env.project.join("notes/a.txt");
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "remember the milk");
    env.ok(&["destroy", "--yes"]);
    assert!(!note.exists());
}

#[test]
fn a_read_only_grant_of_a_directory_the_plugin_writes_is_refused() {
    let env = Env::scenario_with(&format!(
        "  notes:\n    path: {}\n    grants:\n      dirs:\n        - {{ host: ., guest: /notes }}\n",
        guest("plinth-notes").display()
    ));
    env.config("resources", "a");
    env.config("type_a", "notes:Note");
    env.config("inputs_a", "text=x");
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("write access to the directory /notes, granted read-only")
            && stderr.contains("Set `access: read-write`"),
        "{stderr}"
    );
}
