//! Directory grants from `Plinth.yaml`: `testkit:Record` resources live as files in the
//! directory granted to the plugin, and a granted directory that does not exist is a clear
//! error.

use crate::support::Env;

#[test]
fn records_live_in_the_granted_directory() {
    let env = Env::scenario_with_world();
    env.config("kind", "record");
    env.config("resources", "a,b");
    env.ok(&["up", "--yes"]);
    let mut files: Vec<String> = std::fs::read_dir(env.world())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut expected: Vec<String> = env
        .resources()
        .into_iter()
        .map(|(_, id)| format!("{id}.json"))
        .collect();
    expected.sort();
    assert_eq!(files, expected);
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(env.world().join(&files[0])).unwrap()).unwrap();
    assert_eq!(record["inputs"]["value"], "v", "{record}");

    env.ok(&["destroy", "--yes"]);
    assert_eq!(std::fs::read_dir(env.world()).unwrap().count(), 0);
}

#[test]
fn a_missing_granted_directory_is_a_clear_error() {
    let env = Env::scenario_with_world();
    env.config("kind", "record");
    std::fs::remove_dir(env.world()).unwrap();
    let stderr = env.fails(&["up", "--yes"]);
    assert!(
        stderr.contains("plugin `testkit`") && stderr.contains(&env.world().display().to_string()),
        "{stderr}"
    );
    assert!(env.resources().is_empty());
}
