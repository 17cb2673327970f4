//! OIDC token exchange on a real `plinth-serve` and PostgreSQL, against an issuer the test
//! serves on loopback with keys of its own: a good ID token gets a token granting what the first
//! matching rule says (an update begins with a write rule's, is refused with a read rule's);
//! every kind of bad token is refused with its own message, never echoing the token, storing
//! nothing; tokens naming unknown keys do not make the service fetch the issuer's keys again;
//! the tokens issued are listed, escaped, and revoked like any other.

use crate::common::{begin, call, create_stack, serve, token, token_admin};
use plinth_test_oidc::{EC_KID, Issuer, RSA_KID};
use serde_json::{Value, json};

const AUDIENCE: &str = "https://plinth.test";

/// An issuer URL nothing answers at: a loopback port just closed.
fn dead_issuer() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}

fn config(issuer: &Issuer, dead: &str) -> String {
    format!(
        "issuers:
  - issuer: {dead}
    audiences: [{AUDIENCE}]
    rules:
      - claims: {{ repository: octo/shop }}
        level: read
  - issuer: {}
    audiences: [{AUDIENCE}, another]
    max_token_lifetime: 2h
    keys_refetch_interval: 1h
    rules:
      - claims: {{ repository: octo/shop, ref: refs/heads/main }}
        level: write
        project: p
        stack: dev
        token_lifetime: 20m
      - claims: {{ repository: octo/shop, ref: 'refs/heads/*' }}
        level: read
        project: p
",
        issuer.url
    )
}

#[test]
fn id_tokens_are_exchanged_for_what_their_rule_grants_and_bad_ones_refused_saying_why() {
    let issuer = Issuer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oidc.yaml");
    let dead = dead_issuer();
    std::fs::write(&file, config(&issuer, &dead)).unwrap();
    let (_server, database) = crate::common::database();
    let service = serve(&database, &["--oidc-config", file.to_str().unwrap()]);
    let alice = token(&database, "alice");
    create_stack(&service, &alice, "dev");
    let exchange = |id_token: &str| {
        call(
            &service,
            "POST",
            "oidc/exchange",
            None,
            None,
            Some(json!({ "token": id_token })),
        )
    };
    let tokens = || {
        let out = token_admin(&database, &["list"]);
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };

    // The main branch: write on p/dev for 20 minutes; an update begins with it.
    let (status, main) = exchange(&issuer.rs256(&issuer.claims(AUDIENCE, json!({}))));
    assert_eq!(status, 200, "{main}");
    assert_eq!(main["grants"], "write on stack p/dev");
    assert_eq!(main["expires_in"], 1200);
    assert_eq!(main["user"], "repo:octo/shop:ref:refs/heads/main@127.0.0.1");
    let written = main["token"].as_str().unwrap();
    let (status, user) = call(&service, "GET", "user", Some(written), None, None);
    assert_eq!((status, &user["name"]), (200, &main["user"]), "{user}");
    let (status, begun) = begin(&service, written, "dev");
    assert_eq!(status, 200, "{begun}");
    crate::common::cancel(&service, written);

    // A feature branch, ES256, a subject with an escape sequence: read on project p.
    let feature = json!({ "ref": "refs/heads/feature/x", "aud": "another",
                          "sub": "repo:octo/shop:ref:refs/heads/\u{1b}[2Jx" });
    let (status, read) = exchange(&issuer.es256(&issuer.claims(AUDIENCE, feature)));
    assert_eq!(status, 200, "{read}");
    assert_eq!(read["grants"], "read on project p");
    assert_eq!(read["expires_in"], 3600);
    let reader = read["token"].as_str().unwrap();
    assert_eq!(
        call(&service, "GET", "stacks/p/dev", Some(reader), None, None).0,
        200
    );
    let (status, refused) = begin(&service, reader, "dev");
    assert_eq!(status, 403, "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("needs write"),
        "{refused}"
    );

    let before = tokens();
    let good = |extra| issuer.claims(AUDIENCE, extra);
    let now = good(json!({}))["iat"].as_u64().unwrap() + 60;
    let unsigned = |header: Value| Issuer::unsigned(&header, &good(json!({})));
    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "expired",
            issuer.rs256(&good(
                json!({ "iat": now - 1200, "nbf": now - 1200, "exp": now - 600 }),
            )),
            401,
            "the ID token expired at",
        ),
        (
            "not yet valid",
            issuer.rs256(&good(json!({ "nbf": now + 600, "exp": now + 1200 }))),
            401,
            "the ID token is not valid before",
        ),
        (
            "issued in the future",
            issuer.rs256(&good(json!({ "iat": now + 600, "exp": now + 1200 }))),
            401,
            "in the future",
        ),
        (
            "for another audience",
            issuer.rs256(&good(json!({ "aud": "https://other.example" }))),
            401,
            "is for an audience (`aud`) the service does not accept",
        ),
        (
            "of another issuer",
            issuer.rs256(&good(json!({ "iss": "https://evil.example" }))),
            401,
            "is issued by `https://evil.example`, which this service does not trust",
        ),
        (
            "signed by another key",
            issuer.by_a_stranger(RSA_KID, &good(json!({}))),
            401,
            "has a signature the key `rsa-1`",
        ),
        (
            "naming an unknown key",
            issuer.by_a_stranger("rsa-9", &good(json!({}))),
            401,
            "publishes no key `rsa-9`",
        ),
        (
            "alg none",
            unsigned(json!({ "alg": "none", "kid": RSA_KID })),
            401,
            "is signed with `none`: the service accepts RS256 and ES256 only",
        ),
        (
            "HS256 with the key set's symmetric key",
            unsigned(json!({ "alg": "HS256", "kid": "hmac-1" })),
            401,
            "is signed with `HS256`",
        ),
        (
            "ES256 said of an RSA key",
            unsigned(json!({ "alg": "ES256", "kid": RSA_KID })),
            401,
            "is a RS256 key",
        ),
        (
            "RS256 said of the P-256 key",
            unsigned(json!({ "alg": "RS256", "kid": EC_KID })),
            401,
            "is a ES256 key",
        ),
        (
            "without a subject",
            issuer.rs256(&good(json!({ "sub": null }))),
            401,
            "`sub`",
        ),
        (
            "of a repository no rule names",
            issuer.rs256(&good(json!({ "repository": "octo/other" }))),
            403,
            "no rule of the service's OIDC configuration",
        ),
        ("not a JWT", "a.b".to_owned(), 401, "is not a JWT"),
    ];
    for (what, token, expected, says) in &cases {
        let (status, answer) = exchange(token);
        let message = answer["message"].as_str().unwrap_or_default();
        assert_eq!(status, *expected, "a token {what}: {answer}");
        assert!(message.contains(says), "a token {what}: {message}");
        assert!(
            !message.contains(token.as_str()),
            "a token {what} is echoed: {message}"
        );
    }
    // An issuer that cannot be reached: 503, saying so, for a retry to succeed later.
    let (status, answer) = exchange(&issuer.rs256(&good(json!({ "iss": dead }))));
    assert_eq!(status, 503, "{answer}");
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("cannot fetch the signing keys of {dead}")),
        "{message}"
    );
    assert_eq!(tokens(), before, "no refused token stored anything");
    // One fetch of the keys: tokens naming an unknown key did not make it fetch them again.
    assert_eq!(issuer.fetches(), 1);
    let (status, answer) = exchange(&issuer.by_a_stranger("rsa-8", &good(json!({}))));
    assert_eq!(status, 401, "{answer}");
    assert_eq!(issuer.fetches(), 1);

    // Both are listed, escaped, with their expiry; revoked, the reader's is refused.
    let listed = tokens();
    assert!(!listed.contains('\u{1b}'), "{listed}");
    let row = (listed.lines())
        .find(|l| l.contains("refs/heads/\\u{1b}[2Jx@127.0.0.1"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        row.contains("read on project p") && row.contains("until "),
        "{row}"
    );
    assert!(row.contains(&format!("OIDC: {}", issuer.url)), "{row}");
    let id = row.split_whitespace().next().unwrap();
    assert!(token_admin(&database, &["revoke", id]).status.success());
    assert_eq!(
        call(&service, "GET", "user", Some(reader), None, None).0,
        401
    );
    assert_eq!(
        call(&service, "GET", "user", Some(written), None, None).0,
        200
    );
}

#[test]
fn without_a_configuration_no_token_is_exchanged() {
    let (_server, database) = crate::common::database();
    let service = serve(&database, &[]);
    let (status, answer) = call(
        &service,
        "POST",
        "oidc/exchange",
        None,
        None,
        Some(json!({ "token": "a.b.c" })),
    );
    assert_eq!(status, 501, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("--oidc-config"),
        "{answer}"
    );
}
