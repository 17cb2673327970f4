//! Policy packs the service enforces (`plinth serve policy add|ls|rm`), on a real `plinth
//! serve` and PostgreSQL: a pack stored for `scenario/*` runs for a project that names none,
//! fails its preview and its `up` on a mandatory violation whatever the client configures,
//! and is recorded in the update's history; a stack outside the pattern is not judged; a
//! component that does not match its digest is not run; adding and removing are audited; a
//! rename cannot take a stack out of a pack's pattern.

use std::process::Command;

use crate::support::service::{TestService, serve_binary};
use crate::support::{Env, ServiceLogin, guest, printed};

const TOO_SHORT: &str = "the password is 8 characters long; make it at least 16";

/// `plinth serve policy ARGS` on the service's database; what it printed, having succeeded.
fn policy(service: &TestService, args: &[&str]) -> String {
    let out = Command::new(serve_binary())
        .arg("policy")
        .args(args)
        .env("PLINTH_DATABASE_URL", &service.database.url)
        .output()
        .unwrap();
    assert!(out.status.success(), "policy {args:?}: {}", printed(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Stores the test pack for `stacks`; its digest.
fn add_pack(service: &TestService, stacks: &str) -> String {
    let pack = guest("plinth-policy-testpack");
    let out = policy(
        service,
        &[
            "add",
            pack.to_str().unwrap(),
            "--stacks",
            stacks,
            "--name",
            "house-rules",
        ],
    );
    let digest = out.split("sha256 ").nth(1).unwrap()[..64].to_owned();
    assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()), "{out}");
    digest
}

/// A scenario project on `service` (project `scenario`, stack `dev`) naming no policy pack.
fn project(service: &TestService) -> Env {
    let env = Env::project_on(
        &format!(
            "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    path: {}\n  random:\n    \
             path: {}\n",
            guest("plinth-scenario").display(),
            guest("plinth-testkit").display(),
            guest("plinth-random").display(),
        ),
        Some(ServiceLogin {
            url: service.url().to_owned(),
            token: service.token.clone(),
        }),
    );
    env.config("resources", "a");
    env.config("value_a", "long enough");
    env.config("password_length", "8");
    env
}

#[test]
fn a_pack_the_service_enforces_runs_for_a_project_that_names_none() {
    let service = TestService::start();
    let digest = add_pack(&service, "scenario/*");
    let env = project(&service);

    let out = env.run(&["preview"]);
    assert!(!out.status.success(), "{}", printed(&out));
    assert!(printed(&out).contains(TOO_SHORT), "{}", printed(&out));

    // The client's configuration does not apply to the service's pack: it cannot disable it.
    let config = env.project.join("policy.json");
    std::fs::write(&config, r#"{"password-length": "disabled"}"#).unwrap();
    let config = config.to_str().unwrap();
    let out = env.run(&["up", "--yes", "--policy-pack-config", config]);
    assert!(!out.status.success(), "{}", printed(&out));
    assert!(printed(&out).contains(TOO_SHORT), "{}", printed(&out));
    let out = env.run(&[
        "up",
        "--yes",
        "--skip-preview",
        "--policy-pack-config",
        config,
    ]);
    assert!(!out.status.success(), "{}", printed(&out));
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert!(!names.contains(&"password".to_owned()), "{names:?}");

    // A compliant run passes, and its history records the pack by its digest.
    env.config("password_length", "16");
    env.ok(&["up", "--yes"]);
    let history: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "history", "--json"])).unwrap();
    let packs = &history[0]["policy_packs"];
    assert_eq!(packs[0]["name"], "testpack", "{history:#}");
    assert_eq!(packs[0]["digest"], digest.as_str(), "{history:#}");
    assert_eq!(packs[0]["mandatory"], 0, "{history:#}");
    let shown = env.ok(&["stack", "history"]);
    assert!(
        shown.contains(&format!("policy packs: testpack@0.1.0 ({})", &digest[..12])),
        "{shown}"
    );
    let json = env.run(&["preview", "--json"]);
    let stdout = String::from_utf8_lossy(&json.stdout);
    assert!(
        stdout.contains(r#""type":"policy-summary""#) && stdout.contains(&digest),
        "{stdout}"
    );
}

#[test]
fn a_stack_outside_the_pattern_is_not_judged_and_removing_the_pack_is_audited() {
    let service = TestService::start();
    add_pack(&service, "other/*");
    let env = project(&service);
    env.ok(&["preview"]);

    // The pack for this project's stacks, then removed: listed, audited, no longer run.
    add_pack(&service, "scenario/d?v");
    let listed = policy(&service, &["ls"]);
    assert!(
        listed.contains("house-rules") && listed.contains("scenario/d?v"),
        "{listed}"
    );
    assert!(!env.run(&["preview"]).status.success());
    policy(&service, &["rm", "house-rules", "--stacks", "scenario/d?v"]);
    env.ok(&["preview"]);
    let actions = service.database.server.psql(
        &service.database.name,
        "SELECT action FROM audit WHERE action LIKE 'policy-pack.%' ORDER BY id",
    );
    assert_eq!(
        actions.unwrap().lines().collect::<Vec<_>>(),
        [
            "policy-pack.added",
            "policy-pack.added",
            "policy-pack.removed"
        ]
    );
}

/// Packs apply by the stack's name: renaming a stack out of a pack's pattern would take it out
/// of the service's enforcement, so the rename is refused until the pack covers the new name.
#[test]
fn a_rename_cannot_take_a_stack_out_of_a_pack_the_service_enforces() {
    let service = TestService::start();
    add_pack(&service, "scenario/dev");
    let mut env = project(&service);
    assert!(!env.run(&["preview"]).status.success());

    let err = env.fails(&["stack", "rename", "sandbox"]);
    assert!(
        err.contains("would take it out of the policy pack(s) `house-rules`")
            && err.contains("--stacks scenario/sandbox"),
        "{err}"
    );
    // Nothing moved: the stack keeps its name and its pack.
    let listed = env.ok(&["stack", "ls"]);
    assert!(listed.lines().any(|l| l.starts_with("dev")), "{listed}");
    assert!(!env.run(&["preview"]).status.success());

    // Once the pack covers the new name too, the rename goes through and the pack still judges.
    add_pack(&service, "scenario/sandbox");
    env.ok(&["stack", "rename", "sandbox"]);
    env.stack = "sandbox".into();
    let out = env.run(&["preview"]);
    assert!(!out.status.success(), "{}", printed(&out));
    assert!(printed(&out).contains(TOO_SHORT), "{}", printed(&out));
}

#[test]
fn a_component_that_does_not_match_its_digest_is_not_run() {
    let service = TestService::start();
    add_pack(&service, "scenario/*");
    // The stored bytes changed behind the service's back (or by a service that lies).
    service
        .database
        .server
        .psql(
            &service.database.name,
            "UPDATE policy_packs SET bytes = bytes || '\\x00'::bytea",
        )
        .unwrap();
    let env = project(&service);
    env.config("password_length", "16");
    let out = env.run(&["up", "--yes"]);
    assert!(!out.status.success());
    let text = printed(&out);
    assert!(
        text.contains(
            "the policy pack `house-rules` the service enforces: its component's SHA-256"
        ),
        "{text}"
    );
    assert!(env.resources().is_empty(), "{:?}", env.resources());
}

#[test]
fn bad_packs_and_patterns_are_refused_saying_what_is_wrong() {
    let service = TestService::start();
    let not_wasm = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(not_wasm.path(), b"#!/bin/sh\n").unwrap();
    let path = not_wasm.path().to_str().unwrap();
    for (args, expected) in [
        (
            vec!["add", path, "--stacks", "scenario/*"],
            "is not a WebAssembly component",
        ),
        (
            vec!["add", path, "--stacks", "scenario"],
            "is not a stacks pattern",
        ),
        (vec!["rm", "nothing"], "no policy pack is named `nothing`"),
    ] {
        let out = Command::new(serve_binary())
            .arg("policy")
            .args(&args)
            .env("PLINTH_DATABASE_URL", &service.database.url)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(
            printed(&out).contains(expected),
            "{args:?}: {}",
            printed(&out)
        );
    }
}

#[test]
fn a_pack_the_service_enforces_runs_under_the_limits_it_was_stored_with() {
    let service = TestService::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("loop.json");
    std::fs::write(&config, r#"{"hostile": {"mode": "loop"}}"#).unwrap();
    let pack = guest("plinth-policy-testpack");
    let out = policy(
        &service,
        &[
            "add",
            pack.to_str().unwrap(),
            "--stacks",
            "scenario/*",
            "--name",
            "looping",
            "--config",
            config.to_str().unwrap(),
            "--memory",
            "64MiB",
            "--call-timeout",
            "1s",
        ],
    );
    assert!(out.contains("Stored the policy pack looping"), "{out}");
    let listed = policy(&service, &["ls"]);
    assert!(
        listed.contains("(configured, memory 64.0 MiB, call timeout 1s)"),
        "{listed}"
    );
    let env = project(&service);
    env.config("password_length", "16");
    // The loop is cut at the stored second, not the client's default minute.
    let out = env.run(&["preview"]);
    let text = printed(&out);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("policy pack `testpack` failed: `analyze-resource` timed out after 1s"),
        "{text}"
    );

    // Limits out of range are refused, saying what to give.
    for (args, error) in [
        (["--memory", "512KiB"], "a pack needs at least 1 MiB"),
        (["--call-timeout", "2h"], "give 1ms to 1h"),
    ] {
        let out = Command::new(serve_binary())
            .args(["policy", "add", pack.to_str().unwrap(), "--stacks", "x/*"])
            .args(args)
            .env("PLINTH_DATABASE_URL", &service.database.url)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(printed(&out).contains(error), "{args:?}: {}", printed(&out));
    }
}
