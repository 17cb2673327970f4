//! `plinth logs`: each update's events are kept beside the stack's history.

use crate::support::Env;

#[test]
fn logs_show_each_updates_events_and_keep_no_values() {
    let env = Env::scenario();
    env.ok(&["config", "set", "--secret", "token_a", "hunter2"]);
    let out = env.ok(&["logs"]);
    assert!(out.contains("has no updates yet"), "{out}");

    env.ok(&["up", "--yes"]);
    env.config("fault", "panic");
    env.fails(&["up", "--yes"]);

    // The latest by default: the failed update, with the failed step and the summary.
    let out = env.ok(&["logs"]);
    assert!(
        out.starts_with("Update 2 of stack `dev`: update failed"),
        "{out}"
    );
    assert!(
        out.contains("create urn:plinth:dev::scenario::testkit:Panic::faulty failed:"),
        "{out}"
    );
    assert!(out.contains("failed after"), "{out}");

    // An earlier one by number, as history counts them.
    let out = env.ok(&["logs", "--update", "1"]);
    assert!(
        out.starts_with("Update 1 of stack `dev`: update succeeded"),
        "{out}"
    );
    assert!(out.contains("create urn:plinth:dev::scenario::"), "{out}");
    assert!(out.contains("done after"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&env.ok(&["logs", "--json"])).unwrap();
    assert_eq!(json["number"], 2);
    let seqs: Vec<u64> = (json["events"].as_array().unwrap().iter())
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());

    // Values never reach a log.
    for (path, bytes) in env.state_files() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains("hunter2"),
            "{} holds the secret's plaintext",
            path.display()
        );
    }
    let err = env.fails(&["logs", "--update", "3"]);
    assert!(err.contains("has no update 3"), "{err}");

    // Removing the stack removes its logs.
    env.ok(&["stack", "rm", "dev", "--force"]);
    assert!(
        env.state_files()
            .iter()
            .all(|(p, _)| !p.to_string_lossy().contains(".logs"))
    );
}
