//! State commands: export and import, history, lock breaking.

use crate::support::Env;

#[test]
fn export_import_and_a_no_op_up_round_trip() {
    let env = Env::scenario();
    env.config("chain", "true");
    env.ok(&["up", "--yes"]);
    let before = env.resources();
    let exported = env.state.path().join("exported.json");
    env.ok(&["stack", "export", "--file", exported.to_str().unwrap()]);

    // Importing the same state changes nothing; the next `up` has nothing to do.
    let out = env.ok(&["stack", "import", "--file", exported.to_str().unwrap()]);
    // Two resources and the default provider resource of their package.
    assert!(out.contains("Imported 3 resources"), "{out}");
    assert_eq!(env.resources(), before);
    env.ok(&["preview", "--expect-no-changes"]);
    // An `up` with nothing to do leaves the checkpoint as it is: the same file, not a copy.
    let checkpoint = || {
        use std::os::unix::fs::MetadataExt;
        let file = env.checkpoint_file();
        (
            std::fs::metadata(&file).unwrap().ino(),
            std::fs::read(&file).unwrap(),
        )
    };
    let written = checkpoint();
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("no changes"), "{out}");
    assert_eq!(env.resources(), before);
    assert!(
        checkpoint() == written,
        "a no-op up wrote the checkpoint again"
    );
    assert!(!env.checkpoint_file().with_extension("journal").exists());
    // One that changes something writes it.
    env.config("chain", "false");
    env.ok(&["up", "--yes"]);
    assert!(
        checkpoint().0 != written.0,
        "the checkpoint was not written"
    );
}

#[test]
fn import_refuses_invalid_state_unless_forced_and_clears_pending_operations() {
    let env = Env::scenario();
    env.config("chain", "true");
    env.ok(&["up", "--yes"]);
    let mut state = env.export();
    // Put the dependent before its dependency: an invalid order.
    state["snapshot"]["resources"]
        .as_array_mut()
        .unwrap()
        .reverse();
    let pending = serde_json::json!([{
        "kind": "creating",
        "resource": state["snapshot"]["resources"][0].clone(),
    }]);
    state["snapshot"]["pending_operations"] = pending;
    let file = env.state.path().join("bad.json");
    std::fs::write(&file, serde_json::to_vec(&state).unwrap()).unwrap();

    let stderr = env.fails(&["stack", "import", "--file", file.to_str().unwrap()]);
    assert!(stderr.contains("--force"), "{stderr}");
    let reversed = state["snapshot"]["resources"].as_array().unwrap();
    assert_eq!(
        env.export()["snapshot"]["resources"][0]["urn"],
        reversed.last().unwrap()["urn"],
        "the state is unchanged"
    );

    let out = env.ok(&[
        "stack",
        "import",
        "--force",
        "--file",
        file.to_str().unwrap(),
    ]);
    assert!(out.contains("Cleared 1 pending operations"), "{out}");
    assert!(env.export()["snapshot"].get("pending_operations").is_none());
}

#[test]
fn import_refuses_another_stacks_state() {
    let env = Env::scenario();
    env.ok(&["up", "--yes"]);
    let file = env.state.path().join("dev.json");
    env.ok(&["stack", "export", "--file", file.to_str().unwrap()]);
    env.ok(&["stack", "init", "prod"]);
    let stderr = env.fails(&[
        "--stack",
        "prod",
        "stack",
        "import",
        "--file",
        file.to_str().unwrap(),
    ]);
    assert!(stderr.contains("state of stack `dev`"), "{stderr}");
}

#[test]
fn history_lists_operations_newest_first() {
    let env = Env::scenario();
    assert!(env.ok(&["stack", "history"]).contains("no history"));
    env.ok(&["up", "--yes"]);
    env.config("fault", "fail");
    env.fails(&["up", "--yes"]);
    env.ok(&["destroy", "--yes"]);
    let history: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "history", "--json"])).unwrap();
    let rows: Vec<(&str, &str)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["result"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            ("destroy", "succeeded"),
            ("update", "failed"),
            ("update", "succeeded")
        ]
    );
    assert_eq!(history[2]["changes"]["create"], 2);
    assert_eq!(history[2]["plinth"], env!("CARGO_PKG_VERSION"));
    let table = env.ok(&["stack", "history"]);
    // VERSION (numbered from the oldest) comes first, then STARTED (a local date and time),
    // then KIND.
    let newest: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(newest[0], "3", "{table}");
    assert_eq!(newest[3], "destroy", "{table}");
}

/// A lock file as an update that ran as `pid` on this host would leave it.
fn lock_left_by(env: &Env, pid: u32) -> std::path::PathBuf {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let info = serde_json::json!({
        "pid": pid, "host": host.trim(), "user": "someone", "command": "up", "started": 0
    });
    std::fs::write(env.lock_file(), info.to_string()).unwrap();
    env.lock_file()
}

#[test]
fn a_lock_file_nobody_holds_is_taken_over_whatever_it_says() {
    let env = Env::scenario();
    assert!(env.ok(&["cancel", "--yes"]).contains("not locked"));
    // It names a process that runs (this test), or nothing readable: neither holds the file
    // lock, so neither is an update in progress.
    lock_left_by(&env, std::process::id());
    env.ok(&["up", "--yes"]);
    assert!(!env.lock_file().exists());
    std::fs::write(env.lock_file(), "not json").unwrap();
    env.ok(&["up", "--yes"]);
    // `cancel` removes such a file without asking.
    lock_left_by(&env, std::process::id());
    let out = env.ok(&["cancel"]);
    assert!(out.contains("which no longer runs"), "{out}");
    assert!(!env.lock_file().exists());
}

#[test]
fn a_lock_file_held_by_a_running_process_is_respected_whatever_it_says() {
    let env = Env::scenario();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    // It names a process that has exited, but this test holds its file lock.
    let path = lock_left_by(&env, gone.id());
    let held = std::fs::File::open(&path).unwrap();
    held.try_lock().unwrap();
    let state = env.state_files();
    let stderr = env.fails(&["up", "--yes"]);
    assert!(
        stderr.contains("still running") && stderr.contains(&format!("pid {}", gone.id())),
        "{stderr}"
    );
    assert_eq!(env.state_files(), state);
    // Breaking a running update's lock takes a confirmation.
    let stderr = env.fails(&["cancel"]);
    assert!(stderr.contains("--yes"), "{stderr}");
    let out = env.ok(&["cancel", "--yes"]);
    assert!(
        out.contains("still running") && out.contains("Broke the lock"),
        "{out}"
    );
    env.ok(&["up", "--yes"]);
    drop(held);
}
