//! One update per stack at a time: a second `up` while one runs is refused, naming the holder,
//! and changes nothing.

use std::process::Stdio;

use crate::service::{gated, records, release, up_held};
use crate::support::Env;

#[test]
fn a_second_up_is_refused_while_one_runs() {
    let env = gated(None);
    // Once the create of `slow` waits at its gate, its begin is durable and nothing changes
    // until the test releases it.
    let first = up_held(&env, Stdio::piped);
    let state = env.state_files();
    let world = world_files(&env);

    let second = env.run(&["up", "--yes", "--skip-preview"]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "the second up ran:\n{stderr}");
    assert!(
        stderr.contains("locked")
            && stderr.contains("`up`")
            && stderr.contains(&format!("pid {}", first.id())),
        "the refusal does not name the holder:\n{stderr}"
    );
    assert_eq!(env.state_files(), state, "the refused up changed the state");
    assert_eq!(world_files(&env), world, "the refused up changed the world");

    release(&env);
    let first = first.wait_with_output().unwrap();
    assert!(
        first.status.success(),
        "the first up failed:\n{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let names: Vec<_> = env.resources().into_iter().map(|r| r.0).collect();
    assert_eq!(names, ["slow"]);
    assert_eq!(records(&env).len(), 1);
    assert!(!env.lock_file().exists());
}

fn world_files(env: &Env) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(env.world())
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}
