//! Engine semantics through the real binary and real components: replacement in both orders,
//! protect, aliases, components, refresh, targeting and recovery of an interrupted create.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Env, interrupt};

/// The `op name` pairs the testkit's Record resources logged, in order.
fn ops(env: &Env) -> Vec<String> {
    let log = std::fs::read_to_string(env.world().join("ops.log")).unwrap();
    log.lines()
        .map(|l| l.splitn(3, ' ').take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

/// Starts an empty operation log, which the Records append to from now on.
fn clear_ops(env: &Env) {
    std::fs::write(env.world().join("ops.log"), "").unwrap();
}

/// A project whose resources `a,b` are testkit Records (files under `world/`), replaced when
/// their `value` changes.
fn record_project() -> Env {
    let env = Env::scenario_with_world();
    env.config("kind", "record");
    env.config("replace_on", "value");
    env
}

fn world_file(env: &Env, id: &str) -> std::path::PathBuf {
    env.world().join(format!("{id}.json"))
}

#[test]
fn replacement_creates_first_by_default_and_deletes_first_when_asked() {
    let env = record_project();
    env.ok(&["up", "--yes"]);
    let old = env.id_of("a");
    clear_ops(&env);

    env.config("value_a", "v2");
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("replaced"), "{out}");
    assert_eq!(ops(&env), ["create a", "delete a"], "create before delete");
    assert!(!world_file(&env, &old).exists());
    assert!(world_file(&env, &env.id_of("a")).exists());

    clear_ops(&env);
    env.config("dbr", "a");
    env.config("value_a", "v3");
    env.ok(&["up", "--yes"]);
    assert_eq!(ops(&env), ["delete a", "create a"], "delete before replace");
    env.ok(&["preview", "--expect-no-changes"]);
}

#[test]
fn a_protected_resource_is_neither_replaced_nor_destroyed_until_unprotected() {
    let env = record_project();
    env.config("protect", "a");
    env.ok(&["up", "--yes"]);
    env.config("value_a", "v2");
    let err = env.fails(&["up", "--yes"]);
    assert!(err.contains("cannot replace protected resource"), "{err}");
    assert!(err.contains("plinth state unprotect"), "{err}");
    let err = env.fails(&["destroy", "--yes"]);
    assert!(err.contains("protected"), "{err}");
    assert!(world_file(&env, &env.id_of("a")).exists());

    env.ok(&["config", "rm", "protect"]);
    env.ok(&["config", "rm", "value_a"]);
    let id = env.id_of("a");
    let urn = "urn:plinth:dev::scenario::testkit:Record::a";
    env.ok(&["state", "unprotect", urn]);
    env.ok(&["destroy", "--yes"]);
    assert!(!world_file(&env, &id).exists());
    assert!(env.resources().is_empty());
}

#[test]
fn an_alias_renames_a_resource_without_replacing_it() {
    let env = record_project();
    env.ok(&["up", "--yes"]);
    let id = env.id_of("b");
    clear_ops(&env);
    env.config("resources", "a,c");
    env.config("alias_c", "b");
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("no changes"), "{out}");
    assert!(ops(&env).is_empty(), "{:?}", ops(&env));
    assert_eq!(env.id_of("c"), id);
    env.ok(&["preview", "--expect-no-changes"]);
}

#[test]
fn component_children_carry_the_parent_type_and_outputs_are_recorded() {
    let env = Env::scenario();
    env.config("component", "group");
    env.ok(&["up", "--yes"]);
    let state = env.export();
    let resources = state["snapshot"]["resources"].as_array().unwrap();
    let group = resources
        .iter()
        .find(|r| r["type"] == "scenario:Group")
        .expect("the component is recorded");
    assert_eq!(group["outputs"]["count"], 2.0);
    assert_eq!(group["custom"], false);
    let child = resources
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::a"))
        .unwrap();
    assert_eq!(
        child["urn"],
        "urn:plinth:dev::scenario::scenario:Group$testkit:Echo::a"
    );
    assert_eq!(child["parent"], group["urn"]);
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
}

#[test]
fn refresh_finds_a_resource_deleted_out_of_band_and_up_puts_it_back() {
    let env = record_project();
    env.ok(&["up", "--yes"]);
    std::fs::remove_file(world_file(&env, &env.id_of("a"))).unwrap();

    let err = env.fails(&["refresh", "--expect-no-changes"]);
    assert!(err.contains("--expect-no-changes"), "{err}");
    assert_eq!(
        env.resources().len(),
        2,
        "expect-no-changes records nothing"
    );
    let out = env.ok(&["refresh", "--yes"]);
    assert!(out.contains("gone"), "{out}");
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["b"]);
    let history = env.ok(&["stack", "history"]);
    assert!(history.contains("refresh"), "{history}");

    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("1 created"), "{out}");
    assert!(world_file(&env, &env.id_of("a")).exists());

    // `up --refresh` does both in one go.
    std::fs::remove_file(world_file(&env, &env.id_of("b"))).unwrap();
    env.ok(&["up", "--refresh", "--yes"]);
    assert!(world_file(&env, &env.id_of("b")).exists());
    env.ok(&["refresh", "--expect-no-changes"]);
}

#[test]
fn target_changes_only_the_targeted_resources() {
    let env = record_project();
    env.config("replace_on", "");
    env.ok(&["up", "--yes"]);
    env.config("value_a", "v2");
    env.config("value_b", "v2");
    env.ok(&["up", "--yes", "--target", "a"]);
    let state = env.export();
    let value = |name: &str| {
        state["snapshot"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
            .unwrap()["inputs"]["value"]
            .clone()
    };
    assert_eq!(value("a"), "v2");
    assert_eq!(value("b"), "v", "untargeted b is left as it was");

    let b = env.id_of("b");
    env.ok(&["destroy", "--yes", "--target", "b"]);
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a"]);
    assert!(!world_file(&env, &b).exists());

    let err = env.fails(&["up", "--yes", "--target", "nonexistent"]);
    assert!(err.contains("nonexistent"), "{err}");
}

#[test]
fn an_interrupted_create_is_reported_then_adopted_by_refresh() {
    let env = record_project();
    env.config("resources", "slow");
    // The file is written after 1.5 s, the create returns 1.5 s later: kill in between.
    env.config("delay_ms", "1500");
    let mut child = env
        .command(&["up", "--yes", "--skip-preview"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let leaked = loop {
        if let Some(id) = leaked_record(&env.world()) {
            break id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no record written"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(env.resources().is_empty(), "the create never finished");

    let out = env.run(&["preview"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a create of"), "{err}");
    assert!(err.contains("--import-pending-create"), "{err}");

    let urn = "urn:plinth:dev::scenario::testkit:Record::slow";
    env.ok(&[
        "refresh",
        "--yes",
        "--import-pending-create",
        &format!("{urn}={leaked}"),
    ]);
    assert_eq!(env.resources(), [("slow".to_owned(), leaked.clone())]);
    assert!(env.export()["snapshot"]["pending_operations"].is_null());
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("no changes"), "{out}");
}

/// The id of a Record file in `world`, if one was written.
fn leaked_record(world: &Path) -> Option<String> {
    std::fs::read_dir(world).ok()?.find_map(|entry| {
        let name = entry.ok()?.file_name().into_string().ok()?;
        name.strip_suffix(".json").map(str::to_owned)
    })
}

/// Starts `up` of three slow Records, one at a time, and waits until the first is being
/// written.
fn slow_up(env: &Env) -> std::process::Child {
    env.config("resources", "a,b,c");
    env.config("delay_ms", "800");
    let child = env
        .command(&["up", "--yes", "--skip-preview", "--parallel", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while leaked_record(&env.world()).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "nothing written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn a_first_interrupt_lets_the_step_in_flight_finish_and_starts_no_more() {
    let env = record_project();
    let child = slow_up(&env);
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cancelled"), "{stderr}");
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["a"],
        "the step in flight was recorded, no other started"
    );
    assert!(env.export()["snapshot"]["pending_operations"].is_null());
    env.ok(&["up", "--yes"]);
    assert_eq!(env.resources().len(), 3);
}

#[test]
fn a_second_interrupt_aborts_leaving_the_operation_in_flight_pending() {
    let env = record_project();
    let mut child = slow_up(&env);
    interrupt(&child);
    // The second interrupt goes once the first was taken (plinth says so): two sent at once may
    // arrive as one.
    // The reader stays open to the end: plinth must not meet a closed pipe.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    assert!(
        (&mut stdout)
            .lines()
            .any(|line| line.is_ok_and(|l| l.contains("Cancelling"))),
        "the first interrupt was not taken"
    );
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    drop(stdout);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(env.resources().is_empty());
    let pending = &env.export()["snapshot"]["pending_operations"];
    assert_eq!(pending[0]["kind"], "creating", "{pending}");
    // `refresh` resolves it (here: clears it; the leaked record stays, unmanaged).
    env.ok(&["refresh", "--yes"]);
    assert!(env.export()["snapshot"]["pending_operations"].is_null());
}

/// The `region` output of every named resource in the state, by name.
fn regions(env: &Env) -> Vec<(String, String)> {
    let state = env.export();
    let mut regions: Vec<(String, String)> = (state["snapshot"]["resources"].as_array().unwrap())
        .iter()
        .filter(|r| r["type"] == "testkit:Echo")
        .map(|r| {
            let name = r["urn"].as_str().unwrap().rsplit("::").next().unwrap();
            let region = r["outputs"]["region"].as_str().unwrap_or("-");
            (name.to_owned(), region.to_owned())
        })
        .collect();
    regions.sort();
    regions
}

fn region_pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, r)| (n.to_string(), r.to_string()))
        .collect()
}

#[test]
fn provider_configuration_that_forces_replacement_replaces_what_the_provider_manages() {
    let env = Env::scenario();
    env.config("testkit:region", "eu");
    env.ok(&["up", "--yes"]);
    let first = env.resources();
    assert_eq!(regions(&env), region_pairs(&[("a", "eu"), ("b", "eu")]));

    // `note` is not replace-on-change: the default provider is updated, nothing is replaced.
    env.config("testkit:note", "hello");
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("no changes"), "{out}");
    assert_eq!(env.resources(), first);

    // `region` is: every resource the default provider manages is replaced.
    env.config("testkit:region", "us");
    let out = env.ok(&["up", "--yes"]);
    assert!(out.contains("2 replaced"), "{out}");
    assert_eq!(regions(&env), region_pairs(&[("a", "us"), ("b", "us")]));
    assert!(env.resources().iter().all(|r| !first.contains(r)));

    // An explicit provider resource with its own configuration.
    env.config("provider_region", "ap");
    env.ok(&["up", "--yes"]);
    assert_eq!(regions(&env), region_pairs(&[("a", "ap"), ("b", "ap")]));
    let state = env.export();
    let managed = (state["snapshot"]["resources"].as_array().unwrap())
        .iter()
        .find(|r| r["type"] == "testkit:Echo")
        .unwrap()
        .clone();
    assert!(
        managed["provider"]["urn"]
            .as_str()
            .unwrap()
            .ends_with("plinth:providers:testkit::explicit"),
        "{managed}"
    );
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["destroy", "--yes"]);
    assert!(
        env.export()["snapshot"]["resources"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}
