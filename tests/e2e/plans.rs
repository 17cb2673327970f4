//! Saved plans: `plinth preview --save-plan FILE` writes what the preview found and everything it
//! was made from; `plinth up --plan FILE` applies exactly that or nothing. Every refusal names the
//! first difference and leaves the stack as it was.

use std::path::{Path, PathBuf};

use crate::support::service::TestService;
use crate::support::{Env, ServiceLogin, guest};

/// What a stack is: its state and its history's length. A refused plan changes neither.
fn stack_now(env: &Env) -> (serde_json::Value, usize) {
    let history = env.ok(&["stack", "history", "--json"]);
    let history: serde_json::Value = serde_json::from_str(&history).unwrap();
    (
        env.export()["snapshot"].clone(),
        history.as_array().unwrap().len(),
    )
}

/// `preview --save-plan` into the project directory; the plan file's path and its JSON.
fn save_plan(env: &Env) -> (PathBuf, serde_json::Value) {
    let path = env.project.join("plan.json");
    let out = env.ok(&["preview", "--save-plan", path.to_str().unwrap()]);
    assert!(out.contains("Saved the plan to"), "{out}");
    let plan = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    (path, plan)
}

/// `up --plan` fails, saying `reason` and that nothing changed, and nothing did.
fn refused(env: &Env, plan: &Path, reason: &str) {
    let before = stack_now(env);
    let stderr = env.fails(&["up", "--yes", "--plan", plan.to_str().unwrap()]);
    assert!(stderr.contains(reason), "expected `{reason}` in:\n{stderr}");
    assert_eq!(stack_now(env), before, "a refused plan changed the stack");
}

/// The (URN, operation) of each step, sorted: steps run in parallel, in any order.
fn planned_steps(plan: &serde_json::Value) -> Vec<(String, String)> {
    let mut steps: Vec<(String, String)> = (plan["steps"].as_array().unwrap().iter())
        .map(|s| {
            let urn = s["urn"].as_str().unwrap().to_owned();
            (urn, s["op"].as_str().unwrap().to_owned())
        })
        .collect();
    steps.sort();
    steps
}

/// The (URN, operation) of each step the latest update ran, from its recorded events.
fn applied_steps(env: &Env) -> Vec<(String, String)> {
    let logs: serde_json::Value = serde_json::from_str(&env.ok(&["logs", "--json"])).unwrap();
    let mut steps: Vec<(String, String)> = (logs["events"].as_array().unwrap().iter())
        .filter(|e| e["event"] == "step-done")
        .map(|e| {
            (
                e["urn"].as_str().unwrap().to_owned(),
                e["op"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    steps.sort();
    steps
}

/// A plan saved then applied does what the preview showed, step for step; values unknown in the
/// plan (the output `b` takes from `a`) become known; its secret stays sealed in the file.
fn saved_then_applied(env: &Env) {
    let token = "tok-plan-4c1d-sealed";
    env.ok(&["config", "set", "token_a", token, "--secret"]);
    env.config("chain", "true");
    let (path, plan) = save_plan(env);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains(token),
        "the plan holds the secret's plaintext"
    );
    assert!(text.contains("\"ciphertext\""), "{text}");
    assert_eq!(plan["stack"], "dev");
    assert_eq!(plan["state"]["version"], 0);
    let steps = planned_steps(&plan);
    assert!(
        steps
            .iter()
            .filter(|(_, op)| op == "create")
            .any(|(urn, _)| urn.ends_with("::b")),
        "{steps:?}"
    );

    let out = env.ok(&["up", "--yes", "--plan", path.to_str().unwrap()]);
    assert!(out.contains("matches the preview"), "{out}");
    assert_eq!(applied_steps(env), steps);
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b"]);

    // Applied once, the plan is spent: the state it was made against is gone.
    refused(
        env,
        &path,
        "the stack's state moved since the plan was made",
    );
    // A new plan from there is the no-op it should be, and applies.
    let (path, plan) = save_plan(env);
    assert_eq!(plan["state"]["version"], 1);
    assert!(planned_steps(&plan).iter().all(|(_, op)| op == "same"));
    env.ok(&["up", "--yes", "--plan", path.to_str().unwrap()]);
}

#[test]
fn a_saved_plan_applies_step_for_step_on_files() {
    saved_then_applied(&Env::scenario());
}

#[test]
fn a_saved_plan_applies_step_for_step_on_the_service() {
    let service = TestService::start();
    let env = Env::scenario_on(ServiceLogin {
        url: service.url().to_owned(),
        token: service.token.clone(),
    });
    saved_then_applied(&env);
    // On the service, too, a plan made against one version is refused once another is made.
    let (path, _) = save_plan(&env);
    env.ok(&["refresh", "--yes"]);
    refused(
        &env,
        &path,
        "it is now at version 3, the plan was made against version 2",
    );
}

#[test]
fn a_plan_is_refused_once_the_state_moved() {
    let env = Env::scenario();
    env.ok(&["up", "--yes"]);
    let (path, _) = save_plan(&env);
    env.ok(&["refresh", "--yes"]);
    refused(
        &env,
        &path,
        "the stack's state moved since the plan was made",
    );
}

#[test]
fn a_plan_is_refused_once_a_config_value_changed() {
    let env = Env::scenario();
    let (path, _) = save_plan(&env);
    env.config("value_a", "other");
    refused(
        &env,
        &path,
        "the configuration value `scenario:value_a` was set since the plan",
    );
    env.config("value_a", "v");
    refused(
        &env,
        &path,
        "the configuration value `scenario:value_a` was set since the plan",
    );
    env.ok(&["config", "rm", "value_a"]);
    env.ok(&["up", "--yes", "--plan", path.to_str().unwrap()]);
}

#[test]
fn a_plan_is_refused_for_another_stack() {
    let env = Env::scenario();
    let (path, _) = save_plan(&env);
    env.ok(&["stack", "init", "other"]);
    let before = env.ok(&["stack", "export", "--stack", "other"]);
    let stderr = env.fails(&[
        "up",
        "--yes",
        "--stack",
        "other",
        "--plan",
        path.to_str().unwrap(),
    ]);
    assert!(
        stderr.contains("it was made for stack `dev` of project `scenario`, not stack `other`"),
        "{stderr}"
    );
    assert_eq!(env.ok(&["stack", "export", "--stack", "other"]), before);
}

/// A copy of the guest component `package` in `dir`, to change after a plan is made.
fn copied(package: &str, dir: &Path) -> PathBuf {
    let copy = dir.join(format!("{package}.wasm"));
    std::fs::copy(guest(package), &copy).unwrap();
    copy
}

/// Appends a custom section to a component: the same code, another digest.
fn touch_component(path: &Path) {
    let name = b"plinth-plan-test";
    let payload = b"changed";
    let mut section = vec![name.len() as u8];
    section.extend_from_slice(name);
    section.extend_from_slice(payload);
    let mut bytes = std::fs::read(path).unwrap();
    bytes.push(0);
    bytes.push(section.len() as u8);
    bytes.extend_from_slice(&section);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_plan_is_refused_once_the_program_or_a_plugin_changed() {
    let dir = tempfile::tempdir().unwrap();
    let program = copied("plinth-scenario", dir.path());
    let plugin = copied("plinth-testkit", dir.path());
    let env = Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    path: {}\n",
        program.display(),
        plugin.display()
    ));
    let (path, _) = save_plan(&env);
    // Another plugin, pinned anew in Plinth.lock (as a commit that upgrades it would).
    touch_component(&plugin);
    let lock = env.project.join("Plinth.lock");
    std::fs::remove_file(&lock).unwrap();
    refused(
        &env,
        &path,
        "the plugin `testkit` changed since the plan was made",
    );
    std::fs::copy(guest("plinth-testkit"), &plugin).unwrap();
    std::fs::remove_file(&lock).unwrap();
    touch_component(&program);
    refused(&env, &path, "the program changed since the plan was made");
    std::fs::copy(guest("plinth-scenario"), &program).unwrap();
    env.ok(&["up", "--yes", "--plan", path.to_str().unwrap()]);
}

/// The hostile program of tests/programs/hostile in `mode`.
fn hostile(mode: &str) -> Env {
    let env = Env::project(&format!(
        "name: scenario\nprogram: {}\n",
        guest("plinth-hostile-program").display()
    ));
    env.config("mode", mode);
    env
}

#[test]
fn a_plan_is_refused_when_the_program_now_registers_other_inputs() {
    let env = hostile("nonce");
    let (path, _) = save_plan(&env);
    refused(
        &env,
        &path,
        "the input `nonce` of a create of `urn:plinth:dev::scenario::hostile:Thing::ok` \
         differs from the plan's",
    );
}

#[test]
fn a_corrupt_or_tampered_plan_is_refused_cleanly() {
    let env = Env::scenario();
    let (path, plan) = save_plan(&env);
    let text = std::fs::read_to_string(&path).unwrap();
    let bad = env.project.join("bad.json");
    let refused_as = |contents: &str, reason: &str| {
        std::fs::write(&bad, contents).unwrap();
        refused(&env, &bad, reason);
    };
    refused_as(
        &text[..text.len() / 2],
        "is not a plinth plan (it is not whole JSON",
    );
    refused_as(
        "{}",
        "is not a plinth plan (it has no `plinth-plan` format version)",
    );
    refused_as(
        &text.replace("\"plinth-plan\": 1", "\"plinth-plan\": 2"),
        "is a plan of format version 2, but this plinth reads version 1",
    );
    // Larger than any plan (sparse: it takes no disk), refused after reading only the cap.
    let huge = env.project.join("huge.json");
    std::fs::File::create(&huge)
        .and_then(|file| file.set_len(257 << 20))
        .unwrap();
    refused(
        &env,
        &huge,
        "is larger than 256 MiB, the most a plan may be",
    );
    let mut other = plan.clone();
    other["steps"] = serde_json::json!("\u{1b}[2J");
    refused_as(&other.to_string(), "is not a valid plan: invalid type");
    let mut tampered = plan.clone();
    let step = (tampered["steps"].as_array_mut().unwrap().iter_mut())
        .find(|s| s["urn"].as_str().unwrap().ends_with("::a"))
        .unwrap();
    step["inputs"]["value"] = "tampered".into();
    refused_as(
        &tampered.to_string(),
        "the input `value` of a create of `urn:plinth:dev::scenario::testkit:Echo::a` differs",
    );
    let mut dropped = plan.clone();
    (dropped["steps"].as_array_mut().unwrap())
        .retain(|s| !s["urn"].as_str().unwrap().ends_with("::a"));
    refused_as(
        &dropped.to_string(),
        "the program now asks for a create of `urn:plinth:dev::scenario::testkit:Echo::a`, \
         which the plan does not have",
    );
    let mut moved = plan.clone();
    moved["state"]["digest"] = "0".repeat(64).into();
    refused_as(
        &moved.to_string(),
        "the stack's state changed since the plan was made",
    );
    // The plan's own options cannot be mixed with others.
    let stderr = env.fails(&["up", "--plan", path.to_str().unwrap(), "--target", "a"]);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
    env.ok(&["up", "--yes", "--plan", path.to_str().unwrap()]);
}

/// A program that registers the plan's steps when previewed and others when applied passes the
/// preview's comparison, but each step of the update is checked again before it runs: the one
/// the plan does not have fails before anything is made of it.
#[test]
fn a_two_faced_program_cannot_apply_what_the_plan_does_not_have() {
    let env = hostile("two-faced");
    let (path, plan) = save_plan(&env);
    assert!(plan.to_string().contains("\"face\":\"preview\""), "{plan}");
    let out = env.run(&["up", "--yes", "--plan", path.to_str().unwrap()]);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{printed}");
    assert!(
        printed.contains(
            "refused before it ran, as the plan does not have it: the input `face` of a create \
             of `urn:plinth:dev::scenario::hostile:Thing::ok` differs from the plan's"
        ),
        "{printed}"
    );
    assert!(env.resources().is_empty(), "{:?}", env.resources());
}
