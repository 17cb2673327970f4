//! What a token may do: a level (read < write < admin) on every stack, a project's stacks or
//! one stack, checked on every request about a stack, against a real `plinth-serve`.

use crate::common::*;
use plinth_backend::service::{ServiceError, Transport};
use serde_json::{Value, json};

/// `method` on `path` with `token`: the status, and the message of a refusal.
fn ask(service: &Service, token: &str, method: &str, path: &str, body: Option<Value>) -> u16 {
    call(service, method, path, Some(token), None, body).0
}

fn refusal(
    service: &Service,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> String {
    let (status, answer) = call(service, method, path, Some(token), None, body);
    assert_eq!(status, 403, "{method} {path}: {answer}");
    assert_eq!(answer["forbidden"], true, "{answer}");
    answer["message"].as_str().unwrap().to_owned()
}

#[test]
fn a_token_does_what_its_level_grants_on_the_stacks_it_names_and_nothing_else() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let admin = token(&db, "alice");
    for stack in ["dev", "prod"] {
        create_stack(&service, &admin, stack);
    }
    let reader = scoped_token(
        &db,
        "ci",
        &["--level", "read", "--project", "p", "--stack", "dev"],
    );
    let writer = scoped_token(&db, "bob", &["--level", "write", "--project", "p"]);

    // Read on p/dev: it sees dev, and only dev, and changes nothing.
    let (_, me) = call(&service, "GET", "user", Some(&reader), None, None);
    assert_eq!(me, json!({ "name": "ci", "grants": "read on stack p/dev" }));
    assert_eq!(ask(&service, &reader, "GET", "stacks/p/dev", None), 200);
    assert_eq!(
        ask(&service, &reader, "GET", "stacks/p/dev/history", None),
        200
    );
    assert_eq!(
        ask(&service, &reader, "GET", "stacks/p/dev/export", None),
        200
    );
    let (status, listed) = call(&service, "GET", "stacks/p", Some(&reader), None, None);
    assert_eq!(status, 200);
    assert_eq!(listed["stacks"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["stacks"][0]["name"], "dev");
    let message = refusal(
        &service,
        &reader,
        "POST",
        "stacks/p/dev/updates",
        Some(json!({ "kind": "update" })),
    );
    assert!(
        message.contains("grants read on stack p/dev")
            && message.contains("needs write on stack p/dev")
            && message.contains("plinth serve token create --level write"),
        "{message}"
    );
    refusal(&service, &reader, "POST", "stacks/p/qa", None);
    refusal(&service, &reader, "POST", "stacks/p/dev/cancel", None);
    refusal(
        &service,
        &reader,
        "POST",
        "stacks/p/dev/secrets/seal",
        Some(json!({ "plaintexts": [] })),
    );
    refusal(&service, &reader, "GET", "stacks/p/prod", None);
    refusal(&service, &reader, "GET", "stacks/q", None);
    // Opening secrets is reading (a preview needs it): past the token, this service has no
    // master key (501).
    let open = Some(json!({ "ciphertexts": [] }));
    assert_eq!(
        ask(&service, &reader, "POST", "stacks/p/dev/secrets/open", open),
        501
    );

    // Write on project p: stacks and updates of p, but neither removal nor another project.
    assert_eq!(ask(&service, &writer, "POST", "stacks/p/qa", None), 201);
    let (status, begun) = begin(&service, &writer, "qa");
    assert_eq!(status, 200, "{begun}");
    let (update, _) = lease_of(&begun);
    assert_eq!(
        ask(
            &service,
            &writer,
            "GET",
            &format!("updates/{update}/journal"),
            None
        ),
        200
    );
    refusal(
        &service,
        &reader,
        "GET",
        &format!("updates/{update}/journal"),
        None,
    );
    assert_eq!(
        ask(&service, &writer, "POST", "stacks/p/qa/cancel", None),
        200
    );
    let message = refusal(&service, &writer, "DELETE", "stacks/p/qa", None);
    assert!(message.contains("needs admin on stack p/qa"), "{message}");
    refusal(&service, &writer, "POST", "stacks/q/dev", None);
    refusal(&service, &writer, "GET", "stacks/q", None);

    // Admin everywhere (a token made without options).
    assert_eq!(ask(&service, &admin, "DELETE", "stacks/p/qa", None), 200);

    // The client tells a refused token from a lost lease.
    let transport = Transport::new(&service.url, &reader);
    let begin = json!({ "kind": "update" });
    let error = (transport.call("POST", "stacks/p/dev/updates", None, Some(&begin))).unwrap_err();
    assert!(
        matches!(&error, ServiceError::Forbidden(m) if m.contains("needs write")),
        "{error:?}"
    );

    // What each token grants is listed, and a stack without its project is refused.
    let listed = String::from_utf8(token_admin(&db, &["list"]).stdout).unwrap();
    for (user, grants) in [
        ("alice", "admin on every stack"),
        ("ci", "read on stack p/dev"),
        ("bob", "write on project p"),
    ] {
        let line = listed.lines().find(|l| l.contains(user)).unwrap();
        assert!(line.contains(grants), "{listed}");
    }
    let refused = token_admin(&db, &["create", "--user", "eve", "--stack", "dev"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--project"));
    let refused = token_admin(&db, &["create", "--user", "eve", "--level", "owner"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("read, write or admin"));
}
