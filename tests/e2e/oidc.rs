//! CI logs in without a long-lived secret: `plinth login URL --oidc-token FILE|env:VAR` hands
//! the ID token its CI system issued to the service, which verifies it against an issuer its
//! `--oidc-config` trusts (here one the test serves on loopback, with keys of its own) and
//! answers a short-lived token granting what the first matching rule says. Every kind of bad
//! token is refused saying what is wrong with it, and nothing is stored.

use std::process::Command;

use serde_json::json;

use crate::support::service::{TestService, serve_binary};
use crate::support::{Env, ServiceLogin, own_home};
use plinth_test_oidc::{Issuer, RSA_KID};

const AUDIENCE: &str = "https://plinth.test";

fn config(issuer: &Issuer) -> String {
    format!(
        "issuers:
  - issuer: {}
    audiences: [{AUDIENCE}]
    max_token_lifetime: 2h
    # Deterministic: an unknown key id never fetches the keys again within the test.
    keys_refetch_interval: 1h
    rules:
      - claims: {{ repository: octo/shop, ref: refs/heads/main }}
        level: write
        project: scenario
        stack: dev
        token_lifetime: 20m
      - claims: {{ repository: octo/shop, ref: 'refs/heads/*' }}
        level: read
        project: scenario
",
        issuer.url
    )
}

#[test]
fn ci_logs_in_with_its_id_token_and_every_bad_token_is_refused_saying_why() {
    let issuer = Issuer::start();
    let dir = tempfile::tempdir().unwrap();
    let config_file = dir.path().join("oidc.yaml");
    std::fs::write(&config_file, config(&issuer)).unwrap();
    let service = TestService::start_with(&["--oidc-config", config_file.to_str().unwrap()]);
    let url = service.process.url.clone();
    let env = Env::scenario_on(ServiceLogin {
        url: url.clone(),
        token: service.token.clone(),
    });
    let home = own_home();
    // As a CI job runs plinth: no token but the one the login stores.
    let plinth = |args: &[&str], id_token: &str| {
        let out = (env.command(args))
            .env("PLINTH_HOME", home.path())
            .env_remove("PLINTH_BACKEND_URL")
            .env_remove("PLINTH_ACCESS_TOKEN")
            .env("CI_ID_TOKEN", id_token)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    let login = |id_token: &str| {
        plinth(
            &["login", &url, "--oidc-token", "env:CI_ID_TOKEN"],
            id_token,
        )
    };

    // The main branch's job: write on scenario/dev, for the rule's 20 minutes, from a file.
    let token_file = dir.path().join("id-token");
    std::fs::write(
        &token_file,
        issuer.rs256(&issuer.claims(AUDIENCE, json!({}))),
    )
    .unwrap();
    let (ok, out, err) = plinth(
        &["login", &url, "--oidc-token", token_file.to_str().unwrap()],
        "",
    );
    assert!(ok, "{out}{err}");
    let user = "repo:octo/shop:ref:refs/heads/main@127.0.0.1";
    assert!(
        out.contains("granting write on stack scenario/dev, for 20m")
            && out.contains(&format!("as {user}.")),
        "{out}"
    );
    let (ok, out, err) = plinth(&["up", "--yes"], "");
    assert!(ok, "an update with the exchanged token: {out}{err}");
    assert!(!env.resources().is_empty());

    // A feature branch's job, signed ES256: read on the project; an update is refused.
    let feature = json!({ "ref": "refs/heads/feature/x",
                          "sub": "repo:octo/shop:ref:refs/heads/feature/\u{1b}[31mx" });
    let (ok, out, err) = login(&issuer.es256(&issuer.claims(AUDIENCE, feature)));
    assert!(
        ok && out.contains("granting read on project scenario, for 1h"),
        "{out}{err}"
    );
    let (ok, out, err) = plinth(&["preview", "--expect-no-changes"], "");
    assert!(ok, "{out}{err}");
    let (ok, _, err) = plinth(&["up", "--yes"], "");
    assert!(
        !ok && err.contains("grants read on project scenario") && err.contains("needs write"),
        "{err}"
    );

    // Each bad token is refused saying why, and leaves the stored login as it was.
    let credentials = home.path().join("credentials.json");
    let stored = std::fs::read(&credentials).unwrap();
    let good = |extra| issuer.claims(AUDIENCE, extra);
    let now = good(json!({}))["iat"].as_u64().unwrap() + 60;
    let hs256 = Issuer::unsigned(
        &json!({ "alg": "HS256", "kid": "hmac-1" }),
        &good(json!({})),
    );
    let refused: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            issuer.rs256(&good(
                json!({ "iat": now - 1200, "nbf": now - 1200, "exp": now - 600 }),
            )),
            "the ID token expired at",
        ),
        (
            "not yet valid",
            issuer.rs256(&good(json!({ "nbf": now + 600, "exp": now + 1200 }))),
            "the ID token is not valid before",
        ),
        (
            "for another audience",
            issuer.rs256(&good(json!({ "aud": "https://other.example" }))),
            "audience (`aud`) the service does not accept",
        ),
        (
            "of another issuer",
            issuer.rs256(&good(json!({ "iss": "https://evil.example" }))),
            "is issued by `https://evil.example`, which this service does not trust",
        ),
        (
            "signed by another key under the issuer's key id",
            issuer.by_a_stranger(RSA_KID, &good(json!({}))),
            "has a signature the key `rsa-1`",
        ),
        (
            "naming a key the issuer does not have",
            issuer.by_a_stranger("rsa-9", &good(json!({}))),
            "publishes no key `rsa-9`",
        ),
        (
            "unsigned (alg none)",
            Issuer::unsigned(&json!({ "alg": "none", "kid": RSA_KID }), &good(json!({}))),
            "is signed with `none`: the service accepts RS256 and ES256 only",
        ),
        ("HMAC-signed", hs256, "is signed with `HS256`"),
        (
            "ES256 said, RSA key named",
            Issuer::unsigned(&json!({ "alg": "ES256", "kid": RSA_KID }), &good(json!({}))),
            "is a RS256 key",
        ),
        (
            "of a repository no rule names",
            issuer.rs256(&good(json!({ "repository": "octo/other" }))),
            "no rule of the service's OIDC configuration",
        ),
        ("not a JWT", "not-a-jwt".to_owned(), "is not a JWT"),
    ];
    for (what, token, says) in &refused {
        let (ok, out, err) = login(token);
        assert!(!ok, "a token {what} was exchanged: {out}");
        assert!(err.contains(says), "a token {what}: {err}");
        assert!(
            !err.contains(token.as_str()),
            "a token {what}: the token is echoed: {err}"
        );
        assert_eq!(
            std::fs::read(&credentials).unwrap(),
            stored,
            "{what}: nothing stored"
        );
    }
    // The keys were fetched once: the unknown key id did not make the service fetch them again.
    assert_eq!(issuer.fetches(), 1);

    // The exchanged tokens are listed, named after subject and issuer, escaped, with their
    // expiry; revoked, the one stored no longer works.
    let admin = |args: &[&str]| {
        let out = Command::new(serve_binary())
            .arg("token")
            .args(args)
            .env("PLINTH_DATABASE_URL", &service.database.url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let listed = admin(&["list"]);
    assert!(!listed.contains('\u{1b}'), "{listed}");
    let row = |needle: &str| {
        (listed.lines())
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no token of {needle}: {listed}"))
            .to_owned()
    };
    let feature_row = row("feature/\\u{1b}[31mx@127.0.0.1");
    assert!(
        feature_row.contains("read on project scenario") && feature_row.contains("until "),
        "{feature_row}"
    );
    let main_row = row(user);
    assert!(
        main_row.contains("write on stack scenario/dev"),
        "{main_row}"
    );
    let id = feature_row.split_whitespace().next().unwrap();
    admin(&["revoke", id]);
    let (ok, _, err) = plinth(&["preview"], "");
    assert!(!ok && err.contains("not valid"), "{err}");
}

#[test]
fn a_bad_oidc_configuration_stops_the_service_at_start_saying_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oidc.yaml");
    let cases = [
        (
            "issuers:\n  - issuer: http://ci.example.com\n    audiences: [a]\n    rules:\n      - claims: { sub: x }\n        level: write\n",
            "issuer 1 (`http://ci.example.com`): an issuer is reached over https",
        ),
        (
            "issuers:\n  - issuer: https://ci.example.com\n    audiences: [a]\n    rules:\n      - claims: {}\n        level: write\n",
            "rule 1: it names no claim",
        ),
        ("issuers: [", "is not valid"),
    ];
    for (text, says) in cases {
        std::fs::write(&file, text).unwrap();
        let out = Command::new(serve_binary())
            .args(["--listen", "127.0.0.1:0", "--oidc-config"])
            .arg(&file)
            // Never reached: the configuration is checked first.
            .env("PLINTH_DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(
            err.contains("the OIDC configuration") && err.contains(says),
            "{text}: {err}"
        );
    }
}
