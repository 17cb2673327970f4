//! Edits of the state by hand: `plinth state delete`, `protect` and `unprotect`, and the
//! warnings about operations an interrupted update left pending.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::Env;

/// The URN the scenario program gives resource `name` of type `ty` on stack `dev`.
fn urn(ty: &str, name: &str) -> String {
    format!("urn:plinth:dev::scenario::{ty}::{name}")
}

/// The record files (`<id>.json`) in the world directory, sorted.
fn records(world: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(world)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    files
}

/// The state's resource with this URN.
fn resource(state: &Value, urn: &str) -> Value {
    state["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"] == urn)
        .unwrap_or_else(|| panic!("no {urn} in {state}"))
        .clone()
}

/// The newest entry of the stack's history.
fn last_history(env: &Env) -> Value {
    let history: Value = serde_json::from_str(&env.ok(&["stack", "history", "--json"])).unwrap();
    history[0].clone()
}

fn succeeded(args: &[&str], out: &Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "plinth {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

#[test]
fn deleting_a_leaf_forgets_it_leaving_the_real_thing_and_up_creates_it_anew() {
    let env = Env::scenario_with_world();
    env.config("kind", "record");
    env.config("chain", "true");
    env.ok(&["up", "--yes"]);
    let files = records(&env.world());
    assert_eq!(files.len(), 2, "{files:?}");
    let b = urn("testkit:Record", "b");
    let old_b = resource(&env.export(), &b);
    let backups = std::fs::read_dir(env.state.path().join("stacks/scenario/.backups/dev"))
        .unwrap()
        .count();

    let out = env.ok(&["state", "delete", "b", "--yes"]);
    assert!(out.contains(&b) && out.contains("left as it is"), "{out}");
    assert_eq!(
        records(&env.world()),
        files,
        "the real resource was touched"
    );
    let names: Vec<_> = env.resources().into_iter().map(|r| r.0).collect();
    assert_eq!(names, ["a"]);
    let entry = last_history(&env);
    assert_eq!(entry["kind"], "state-edit");
    assert_eq!(entry["result"], "succeeded");
    assert_eq!(entry["note"], format!("state delete {b}"));
    let backups_after = std::fs::read_dir(env.state.path().join("stacks/scenario/.backups/dev"))
        .unwrap()
        .count();
    assert_eq!(backups_after, backups + 1);

    // The program still declares `b`: the next `up` creates a new one next to the forgotten one.
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("1 created"), "{out}");
    assert_eq!(records(&env.world()).len(), 3);
    let new_b = resource(&env.export(), &b);
    assert_ne!(new_b["id"], old_b["id"]);
    env.ok(&["preview", "--expect-no-changes"]);
}

#[test]
fn a_resource_others_depend_on_is_deleted_only_with_force() {
    let env = Env::scenario();
    env.config("resources", "a,b,c");
    env.config("chain", "true");
    env.ok(&["up", "--yes"]);
    let (a, b) = (urn("testkit:Echo", "a"), urn("testkit:Echo", "b"));
    let before = env.export();

    let stderr = env.fails(&["state", "delete", "a", "--yes"]);
    assert!(
        stderr.contains("is a dependency of") && stderr.contains(&b) && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(env.export(), before);

    let out = env.ok(&["state", "delete", "testkit:Echo::a", "--force", "--yes"]);
    assert!(out.contains(&format!("dependencies of {b}")), "{out}");
    let state = env.export();
    assert!(
        resource(&state, &b).get("dependencies").is_none(),
        "{state}"
    );
    // The state is valid: everything loads, and `up` brings `a` back.
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("1 created"), "{out}");
    assert_eq!(resource(&env.export(), &b)["dependencies"][0], a);
}

#[test]
fn a_protected_resource_needs_unprotect_before_delete_or_destroy() {
    let env = Env::scenario();
    env.config("protect", "a");
    env.ok(&["up", "--yes"]);
    let a = urn("testkit:Echo", "a");
    assert_eq!(resource(&env.export(), &a)["protect"], true);

    let stderr = env.fails(&["state", "delete", &a, "--yes"]);
    assert!(
        stderr.contains("protected") && stderr.contains(&format!("plinth state unprotect {a}")),
        "{stderr}"
    );
    let stderr = env.fails(&["destroy", "--yes"]);
    assert!(
        stderr.contains("protected") && stderr.contains(&a),
        "{stderr}"
    );
    assert!(env.resources().iter().any(|r| r.0 == "a"));

    // Unprotecting lasts until the program, which still asks for `protect`, runs again.
    let out = env.ok(&["state", "unprotect", "a"]);
    assert!(
        out.contains("Unprotected") && out.contains("next `plinth up`"),
        "{out}"
    );
    assert!(resource(&env.export(), &a).get("protect").is_none());
    assert_eq!(last_history(&env)["note"], format!("state unprotect {a}"));
    assert!(
        env.ok(&["state", "unprotect", "a"])
            .contains("not protected")
    );
    env.ok(&["up", "--yes"]);
    assert_eq!(resource(&env.export(), &a)["protect"], true);

    env.ok(&["state", "unprotect", "a"]);
    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
}

#[test]
fn protect_makes_destroy_refuse_until_unprotected() {
    let env = Env::scenario();
    env.config("resources", "a");
    env.ok(&["up", "--yes"]);
    let a = urn("testkit:Echo", "a");
    assert!(env.ok(&["state", "protect", "a"]).contains("Protected"));
    assert_eq!(resource(&env.export(), &a)["protect"], true);
    assert!(
        env.ok(&["state", "protect", "a"])
            .contains("already protected")
    );
    let stderr = env.fails(&["destroy", "--yes"]);
    assert!(stderr.contains("protected"), "{stderr}");
    env.ok(&["state", "unprotect", &a]);
    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
}

#[test]
fn unknown_or_unconfirmed_deletes_change_nothing() {
    let env = Env::scenario();
    env.ok(&["up", "--yes"]);
    let before = env.state_files();

    let elsewhere = "urn:plinth:prod::scenario::testkit:Echo::a";
    let stderr = env.fails(&["state", "delete", elsewhere, "--yes"]);
    assert!(
        stderr.contains(&format!("no resource `{elsewhere}`"))
            && stderr.contains(&urn("testkit:Echo", "a")),
        "{stderr}"
    );
    let stderr = env.fails(&["state", "unprotect", "nope"]);
    assert!(
        stderr.contains("no resource `nope`") && stderr.contains("plinth stack export"),
        "{stderr}"
    );
    // Without a terminal to confirm on, --yes is required.
    let stderr = env.fails(&["state", "delete", "b"]);
    assert!(stderr.contains("--yes"), "{stderr}");
    assert_eq!(env.state_files(), before);
}

#[test]
fn pending_operations_are_warned_about_and_kept_unless_their_resource_is_deleted() {
    let env = Env::scenario();
    env.config("resources", "a,b");
    env.ok(&["up", "--yes"]);
    let (a, b) = (urn("testkit:Echo", "a"), urn("testkit:Echo", "b"));
    // As a crash mid-update leaves it: a create of `c` and an update of `b` in flight.
    let mut state = env.export();
    let mut c = resource(&state, &b);
    c["urn"] = urn("testkit:Echo", "c").into();
    state["snapshot"]["pending_operations"] = serde_json::json!([
        {"kind": "creating", "resource": c},
        {"kind": "updating", "resource": resource(&state, &b)},
    ]);
    let checkpoint = env.state.path().join("stacks/scenario/dev.json");
    std::fs::write(&checkpoint, serde_json::to_vec_pretty(&state).unwrap()).unwrap();

    let args = ["state", "protect", "a"];
    let (_, stderr) = succeeded(&args, &env.run(&args));
    let c = urn("testkit:Echo", "c");
    assert!(
        stderr.contains(&format!("a create of {c} was interrupted"))
            && stderr.contains(&format!("--import-pending-create {c}=ID"))
            && stderr.contains(&format!("an update of {b} was interrupted")),
        "{stderr}"
    );
    assert_eq!(resource(&env.export(), &a)["protect"], true);
    assert_eq!(
        env.export()["snapshot"]["pending_operations"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Forgetting `b` clears the update of it; the create of `c` stays for `refresh`.
    let args = ["state", "delete", "b", "--yes"];
    let (stdout, _) = succeeded(&args, &env.run(&args));
    assert!(stdout.contains("interrupted update"), "{stdout}");
    let pending = env.export()["snapshot"]["pending_operations"].clone();
    assert_eq!(pending.as_array().unwrap().len(), 1, "{pending}");
    assert_eq!(pending[0]["kind"], "creating");
}

#[test]
fn edits_need_no_passphrase_and_leave_secrets_sealed() {
    let env = Env::scenario();
    env.ok(&["config", "set", "--secret", "token_a", "s3cr3t"]);
    env.ok(&["up", "--yes"]);
    let sealed = |env: &Env| {
        env.state_files()
            .iter()
            .all(|(_, bytes)| !String::from_utf8_lossy(bytes).contains("s3cr3t"))
    };
    assert!(sealed(&env));

    let out = env
        .command(&["state", "delete", "b", "--yes"])
        .env_remove("PLINTH_CONFIG_PASSPHRASE")
        .output()
        .unwrap();
    succeeded(&["state", "delete", "b"], &out);
    assert!(sealed(&env));
    // With the passphrase, `a`'s secret input still opens to what the program gives it.
    let out = env.ok(&["preview"]);
    let summary = out.lines().rev().find(|l| l.starts_with("Resources:"));
    assert_eq!(
        summary,
        Some("Resources: 1 to create, 1 unchanged"),
        "{out}"
    );
}
