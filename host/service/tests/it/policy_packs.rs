//! Policy packs the service enforces, through the protocol: a stack's packs are listed with
//! the path of their component, which is served in base64; a begun update is told them; an
//! update whose history entry does not say it ran them (a client that lies, or a modified one)
//! is recorded in the audit log, as the service can only compare what a client says.

use std::process::Command;

use crate::common::*;
use serde_json::json;

#[test]
fn an_update_is_told_its_packs_and_one_that_does_not_claim_them_is_audited() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("rules.wasm");
    std::fs::write(&pack, b"\0asm\x0d\x00\x01\x00").unwrap();
    let out = Command::new(serve_binary())
        .args(["policy", "add", "--stacks", "p/*"])
        .arg(&pack)
        .env("PLINTH_DATABASE_URL", &db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (status, listed) = call(
        &service,
        "GET",
        "stacks/p/dev/policy-packs",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 200, "{listed}");
    let digest = listed["packs"][0]["digest"].as_str().unwrap().to_owned();
    assert_eq!(listed["packs"][0]["name"], "rules");
    let path = listed["packs"][0]["path"].as_str().unwrap().to_owned();
    assert_eq!(path, format!("policy-packs/{digest}"));
    let (status, component) = call(&service, "GET", &path, Some(&alice), None, None);
    assert_eq!(status, 200, "{component}");
    assert_eq!(component["wasm_base64"], "AGFzbQ0AAQA=");
    let (status, answer) = call(
        &service,
        "GET",
        "policy-packs/..%2Fx",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 400, "{answer}");

    // An update told to run the pack, whose entry says nothing of it.
    let (status, begun) = begin(&service, &alice, "dev");
    assert_eq!(status, 200, "{begun}");
    assert_eq!(begun["policy_packs"][0]["digest"], digest.as_str());
    let lease = lease_of(&begun);
    let entry = history_entry("update");
    let (status, answer) = on_update(
        &service,
        &alice,
        &lease,
        "phases",
        Some(json!({ "phase": 1, "entry": entry })),
    );
    assert_eq!(status, 200, "{answer}");
    on_update(
        &service,
        &alice,
        &lease,
        "complete",
        Some(json!({ "result": "succeeded" })),
    );
    let rows = audited(&db, "policy-pack.unclaimed");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0]["detail"].as_str().unwrap().contains(&digest),
        "{rows:?}"
    );

    // One that says it ran it is not.
    let (_, begun) = begin(&service, &alice, "dev");
    let lease = lease_of(&begun);
    let mut entry = history_entry("update");
    entry["policy_packs"] = json!([{ "name": "rules", "version": "", "digest": digest,
                                     "advisory": 0, "mandatory": 0 }]);
    let (status, answer) = on_update(
        &service,
        &alice,
        &lease,
        "phases",
        Some(json!({ "phase": 1, "entry": entry })),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(audited(&db, "policy-pack.unclaimed").len(), 1);
}

/// Stores a (tiny) pack as `name` for the stacks `stacks`; its digest.
fn add_pack(db: &str, name: &str, stacks: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join(format!("{name}.wasm"));
    std::fs::write(&pack, format!("\0asm\x0d\x00\x01\x00{name}")).unwrap();
    let out = Command::new(serve_binary())
        .args(["policy", "add", "--stacks", stacks])
        .arg(&pack)
        .env("PLINTH_DATABASE_URL", db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(std::fs::read(&pack).unwrap()))
}

#[test]
fn a_packs_component_is_read_only_by_tokens_covering_a_stack_it_applies_to_or_admins() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    create_stack(&service, &alice, "prod");
    let prod_rules = add_pack(&db, "prod-rules", "p/prod");
    let other_rules = add_pack(&db, "other-rules", "shop/*");
    let dev_reader = scoped_token(
        &db,
        "bob",
        &["--level", "read", "--project", "p", "--stack", "dev"],
    );
    let prod_reader = scoped_token(
        &db,
        "carol",
        &["--level", "read", "--project", "p", "--stack", "prod"],
    );
    let project_writer = scoped_token(&db, "dave", &["--level", "write", "--project", "p"]);
    let get = |token: &str, digest: &str| {
        call(
            &service,
            "GET",
            &format!("policy-packs/{digest}"),
            Some(token),
            None,
            None,
        )
    };
    // The run of a stack a pack applies to reads it, as does an administrator of everything.
    for (who, token) in [
        ("carol", &prod_reader),
        ("dave", &project_writer),
        ("alice", &alice),
    ] {
        let (status, answer) = get(token, &prod_rules);
        assert_eq!(status, 200, "{who}: {answer}");
    }
    // A token for another stack, or for a project no stack of which the pack applies to, not.
    let (status, answer) = get(&dev_reader, &prod_rules);
    assert_eq!(status, 403, "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("applies to no stack it covers")
            && message.contains("read on stack p/dev"),
        "{answer}"
    );
    let (status, answer) = get(&project_writer, &other_rules);
    assert_eq!(status, 403, "{answer}");
    assert!(get(&alice, &other_rules).0 == 200);
}
