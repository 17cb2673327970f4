//! Recovery on the team service through the real CLI (issue 27, operations feature 5): a removed
//! stack is kept, invisible, restorable by the administrator until it is purged; its name may be
//! taken meanwhile, and a restore does not take it back from a live stack.

use std::process::{Command, Output};

use crate::support::service::{ServiceDatabase, TestService, serve_binary};
use crate::support::{Env, ServiceLogin};

/// `plinth serve ARGS` (the binary `plinth serve` execs) on `database`, which must succeed;
/// its stdout.
fn admin(database: &ServiceDatabase, args: &[&str]) -> String {
    let out = admin_run(database, args);
    assert!(
        out.status.success(),
        "plinth serve {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn admin_run(database: &ServiceDatabase, args: &[&str]) -> Output {
    Command::new(serve_binary())
        .args(args)
        .env("PLINTH_DATABASE_URL", &database.url)
        .output()
        .expect("running plinth-serve")
}

/// The ids of the rows of a `plinth serve stack ls` table naming `project/stack`.
fn ids(table: &str, project: &str, stack: &str) -> Vec<String> {
    (table.lines().skip(1))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|row| row.get(1) == Some(&project) && row.get(2) == Some(&stack))
        .map(|row| row[0].to_owned())
        .collect()
}

fn kinds(env: &Env) -> Vec<String> {
    let history: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "history", "--json"])).unwrap();
    (history.as_array().unwrap().iter())
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_removed_stack_is_kept_restorable_until_purged_and_its_name_is_free_meanwhile() {
    let service = TestService::start();
    let login = ServiceLogin {
        url: service.url().to_owned(),
        token: service.token.clone(),
    };
    let db = &service.database;
    let env = Env::scenario_with_world_on(Some(login));
    env.config("kind", "record");
    env.ok(&["config", "set", "--secret", "token_a", "kept-secret-3f1"]);
    env.ok(&["up", "--yes"]);
    let before = env.resources();
    assert_eq!(before.len(), 2, "{before:?}");

    // `--force` removes a stack with resources, and even then it is only removed, not purged.
    let out = env.ok(&["stack", "rm", "dev", "--force"]);
    assert!(
        out.contains("keeps it for 30days")
            && out.contains("plinth serve stack restore scenario/dev"),
        "{out}"
    );
    assert!(!env.ok(&["stack", "ls"]).contains("dev"));
    let err = env.fails(&["preview"]);
    assert!(err.contains("stack `dev` does not exist"), "{err}");
    let removed = admin(db, &["stack", "ls", "--removed"]);
    let first = ids(&removed, "scenario", "dev");
    assert_eq!(first.len(), 1, "{removed}");
    assert!(removed.contains("alice"), "who removed it: {removed}");
    assert!(ids(&admin(db, &["stack", "ls"]), "scenario", "dev").is_empty());

    // Its name is free: a new stack takes it, and a restore does not take it back.
    env.ok(&["stack", "init", "dev"]);
    assert!(env.resources().is_empty());
    let out = admin_run(db, &["stack", "restore", "scenario/dev"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("a stack scenario/dev exists") && err.contains("remove it first"),
        "{err}"
    );

    // Two removed stacks of one name: the restore asks which.
    env.ok(&["stack", "rm", "dev"]);
    let removed = admin(db, &["stack", "ls", "--removed"]);
    let both = ids(&removed, "scenario", "dev");
    assert_eq!(both.len(), 2, "{removed}");
    let out = admin_run(db, &["stack", "restore", "scenario/dev"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--id") && err.contains(&first[0]), "{err}");
    let out = admin(db, &["stack", "restore", "scenario/dev", "--id", &first[0]]);
    assert!(out.contains("with its 1 versions"), "{out}");

    // Back with its state, history and secrets (its data key was kept): nothing to do.
    assert_eq!(env.resources(), before);
    assert_eq!(kinds(&env), ["update"]);
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["logs"]);

    // The purge deletes what was removed longer ago than the retention, for good.
    let out = admin(db, &["stack", "purge", "--removed-stack-retention", "30d"]);
    assert!(out.contains("Purged 0 stacks"), "{out}");
    let out = admin(db, &["stack", "purge", "--removed-stack-retention", "0s"]);
    assert!(out.contains("Purged 1 stacks"), "{out}");
    let out = admin_run(db, &["stack", "restore", "scenario/dev", "--id", &both[1]]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no removed stack"));

    // A service purges at start what is past its retention.
    env.ok(&["destroy", "--yes"]);
    env.ok(&["stack", "rm", "dev"]);
    assert_eq!(
        ids(&admin(db, &["stack", "ls", "--removed"]), "scenario", "dev").len(),
        1
    );
    let _replica = db.serve(&["--removed-stack-retention", "0s"]);
    let removed = admin(db, &["stack", "ls", "--removed"]);
    assert!(ids(&removed, "scenario", "dev").is_empty(), "{removed}");
    assert_eq!(
        admin(db, &["stack", "purge", "--removed-stack-retention", "0s"]).trim(),
        "Purged 0 stacks removed more than 0s ago."
    );
}

/// The plaintext of the stack's secret in the rollback tests; it must reach no state.
const SECRET: &str = "rollback-secret-9c2e";

/// Two versions of a stack of records: `a` (holding a secret) and `b`, then `b` changed, `a`
/// gone and `c` new.
fn two_versions(service: Option<ServiceLogin>) -> (Env, Vec<(String, String)>) {
    let env = Env::scenario_with_world_on(service);
    env.config("kind", "record");
    env.ok(&["config", "set", "--secret", "token_a", SECRET]);
    env.config("resources", "a,b");
    env.ok(&["up", "--yes"]);
    let first = env.resources();
    env.config("value_b", "w");
    env.config("resources", "b,c");
    env.ok(&["up", "--yes"]);
    (env, first)
}

/// A rollback on either backend: refused for a version there is not, without a confirmation,
/// and while an update runs; else it shows what it changes in the state, writes the old state
/// (its secrets still sealed) as a new version and records it in the history.
fn rollback_life(service: Option<ServiceLogin>) {
    let (env, first) = two_versions(service);
    let err = env.fails(&["stack", "rollback", "3"]);
    assert!(
        err.contains("no version 3") && err.contains("1 to 2"),
        "{err}"
    );
    let err = env.fails(&["stack", "rollback", "2"]);
    assert!(err.contains("current state"), "{err}");
    let err = env.fails(&["stack", "rollback", "1"]);
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(kinds(&env), ["update", "update"]);

    // An update running holds the stack: the rollback is refused and writes nothing.
    env.config("resources", "b,c,slow");
    env.config("inputs_slow", "wait_for=/world/go");
    let held = crate::service::up_held(&env, std::process::Stdio::null);
    let err = env.fails(&["stack", "rollback", "1", "--yes"]);
    assert!(
        err.contains("locked") || err.contains("being updated"),
        "{err}"
    );
    crate::service::release(&env);
    assert!(held.wait_with_output().unwrap().status.success());
    assert_eq!(kinds(&env), ["update", "update", "update"]);

    let out = env.ok(&["stack", "rollback", "1", "--yes"]);
    for line in [
        "+ testkit:Record::a  (comes back into the state)",
        "- testkit:Record::c  (leaves the state)",
        "- testkit:Record::slow  (leaves the state)",
        "State: 1 back, 1 changed, 2 leaving",
        "Only the state changes",
        "its state is now version 4",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
    let changed = (out.lines())
        .find(|l| l.contains("~ testkit:Record::b"))
        .unwrap_or_else(|| panic!("b is not shown changed:\n{out}"));
    assert!(changed.contains("inputs.value"), "{changed}");
    assert!(!out.contains(SECRET));

    assert_eq!(env.resources(), first);
    let exported = env.ok(&["stack", "export"]);
    assert!(!exported.contains(SECRET), "a state holds the plaintext");
    assert!(exported.contains("ciphertext"), "{exported}");
    let history: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "history", "--json"])).unwrap();
    assert_eq!(history[0]["kind"], "rollback", "{history}");
    assert_eq!(history[0]["note"], "rollback to version 1", "{history}");
    assert_eq!(kinds(&env).len(), 4);
    // Its secret opens with the stack's key: a preview plans from it.
    env.ok(&["preview"]);
}

#[test]
fn a_rollback_writes_an_old_state_as_a_new_version_on_the_file_backend() {
    rollback_life(None);
}

#[test]
fn a_rollback_writes_an_old_state_as_a_new_version_on_the_service() {
    let service = TestService::start();
    rollback_life(Some(ServiceLogin {
        url: service.url().to_owned(),
        token: service.token.clone(),
    }));
}

/// The backups the file backend keeps of the stack's checkpoint, by the version they hold.
fn backup_of(env: &Env, version: u32) -> std::path::PathBuf {
    let dir = env.state.path().join("stacks/scenario/.backups/dev");
    (std::fs::read_dir(&dir).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(&format!(".v{version}.json")))
        .unwrap_or_else(|| panic!("no backup of version {version} in {}", dir.display()))
}

#[test]
fn a_rollback_on_files_takes_the_version_from_its_backup_checked_or_says_none_is_kept() {
    let (env, _) = two_versions(None);
    let state = env.state_files();

    // A backup that fails the integrity checks is refused, and nothing is written.
    let backup = backup_of(&env, 1);
    let mut checkpoint: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&backup).unwrap()).unwrap();
    let resources = checkpoint["snapshot"]["resources"].as_array_mut().unwrap();
    let b = (resources.iter_mut())
        .find(|r| r["urn"].as_str().unwrap().ends_with("::b"))
        .unwrap();
    b["dependencies"] = serde_json::json!(["urn:plinth:dev::scenario::testkit:Record::ghost"]);
    std::fs::write(&backup, serde_json::to_vec(&checkpoint).unwrap()).unwrap();
    let err = env.fails(&["stack", "rollback", "1", "--yes"]);
    assert!(
        err.contains("version 1 cannot be rolled back to") && err.contains("ghost"),
        "{err}"
    );
    let mut after = env.state_files();
    after.retain(|(p, _)| *p != backup);
    let mut before = state.clone();
    before.retain(|(p, _)| *p != backup);
    assert_eq!(after, before, "a refused rollback wrote something");

    // Without a backup of the version, it says so.
    std::fs::remove_file(&backup).unwrap();
    let err = env.fails(&["stack", "rollback", "1", "--yes"]);
    assert!(
        err.contains("no version 1 to roll back to") && err.contains("no backup of it is kept"),
        "{err}"
    );
    assert_eq!(kinds(&env), ["update", "update"]);
}
