//! Self-service tokens and the audit log through the real CLI on a real `plinth serve` and
//! PostgreSQL: a user makes, lists and revokes their own tokens with `plinth token`, never one
//! granting more than their own, never revoking another user's (an administrator can); a
//! `read-no-secrets` token reads a stack but opens none of its secrets; every change through the
//! API or an admin command is in `plinth serve audit` and `GET /api/v1/audit`, with who, which
//! token, when and from where, its stored strings shown escaped.

use std::io::{Read, Write};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::service::{ServiceDatabase, ServiceProcess, serve_binary};
use crate::support::{Env, ServiceLogin};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `plinth ARGS` in `env`'s project, acting with `token`.
fn plinth_as(env: &Env, token: &str, args: &[&str]) -> Output {
    let mut cmd = env.command(args);
    cmd.env("PLINTH_ACCESS_TOKEN", token);
    cmd.output().expect("running plinth")
}

fn ok_as(env: &Env, token: &str, args: &[&str]) -> (String, String) {
    let out = plinth_as(env, token, args);
    assert!(
        out.status.success(),
        "plinth {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    (text(&out.stdout), text(&out.stderr))
}

fn fails_as(env: &Env, token: &str, args: &[&str]) -> String {
    let out = plinth_as(env, token, args);
    assert!(
        !out.status.success(),
        "plinth {args:?} should have failed\nstdout:\n{}",
        text(&out.stdout)
    );
    text(&out.stderr)
}

/// `plinth serve ARGS` on `database`, as its operator runs the admin commands.
fn admin(database: &ServiceDatabase, args: &[&str]) -> Output {
    Command::new(serve_binary())
        .args(args)
        .env("PLINTH_DATABASE_URL", &database.url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("running plinth-serve")
}

fn admin_ok(database: &ServiceDatabase, args: &[&str]) -> String {
    let out = admin(database, args);
    assert!(
        out.status.success(),
        "plinth serve {args:?} failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The audit log as `plinth serve audit --json ARGS` prints it, oldest first.
fn audit(database: &ServiceDatabase, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["audit", "--json"];
    all.extend_from_slice(args);
    let mut rows: Vec<Value> = admin_ok(database, &all)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object a line"))
        .collect();
    rows.reverse();
    rows
}

fn actions(rows: &[Value]) -> Vec<&str> {
    rows.iter().map(|r| r["action"].as_str().unwrap()).collect()
}

/// The id `plinth token ls` shows for the token named `name`.
fn id_named(listing: &str, name: &str) -> String {
    let line = (listing.lines())
        .find(|line| line.trim_end().ends_with(name))
        .unwrap_or_else(|| panic!("no token named {name} in:\n{listing}"));
    line.split_whitespace()
        .find(|w| w.len() == 12 && w.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap()
        .to_owned()
}

/// One raw HTTP/1.1 request to `service`; its status and body.
fn request(service: &ServiceProcess, head: &str) -> (u16, Value) {
    let address = service.url.strip_prefix("http://").unwrap();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    let request = format!("{head}Host: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    // Short answers come whole, long ones chunked: the JSON starts at the first brace.
    let json = body.find('{').map_or("null", |at| &body[at..]);
    let json = &json[..=json.rfind('}').unwrap_or(0)];
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

#[test]
fn users_make_list_and_revoke_their_own_tokens_never_beyond_their_grants() {
    let database = ServiceDatabase::new();
    let service = database.serve(&[]);
    let alice = database.token_granting("alice", &["--level", "write", "--expires", "30d"]);
    let bob = database.token_granting("bob", &["--level", "write"]);
    let boss = database.token("boss");
    let env = Env::scenario_on(ServiceLogin {
        url: service.url.clone(),
        token: alice.clone(),
    });

    // Made through the service, with no database credentials: shown once, on stdout alone.
    let (laptop, said) = ok_as(&env, &alice, &["token", "create", "--name", "laptop"]);
    let laptop = laptop.trim().to_owned();
    assert_eq!(laptop.len(), 64, "{laptop}");
    // Her own grants and no longer than her own token lasts.
    assert!(
        said.contains("for alice, granting write on every stack, for 29days")
            || said.contains("for alice, granting write on every stack, for 30days"),
        "{said}"
    );
    let (whoami, _) = ok_as(&env, &laptop, &["whoami"]);
    assert!(whoami.contains("User: alice"), "{whoami}");
    let (listing, _) = ok_as(&env, &alice, &["token", "ls"]);
    assert!(
        listing.contains("laptop") && !listing.contains(&laptop),
        "{listing}"
    );
    // Bob's tokens are not in Alice's list.
    let (bobs, _) = ok_as(&env, &bob, &["token", "ls"]);
    assert!(
        !bobs.contains("laptop") && bobs.lines().count() == 2,
        "{bobs}"
    );

    // Never above her level, her scope or her token's life.
    let err = fails_as(&env, &alice, &["token", "create", "--level", "admin"]);
    assert!(
        err.contains("grants write on every stack") && err.contains("granting admin"),
        "{err}"
    );
    let read_one = ok_as(
        &env,
        &alice,
        &[
            "token",
            "create",
            "--level",
            "read",
            "--scope",
            "scenario/dev",
        ],
    )
    .0;
    let err = fails_as(
        &env,
        read_one.trim(),
        &["token", "create", "--scope", "other"],
    );
    assert!(err.contains("read on stack scenario/dev"), "{err}");
    let err = fails_as(&env, &alice, &["token", "create", "--expires", "400d"]);
    assert!(err.contains("cannot outlive it"), "{err}");

    // Another user's token: refused to Bob, revoked by an administrator.
    let laptop_id = id_named(&listing, "laptop");
    let err = fails_as(&env, &bob, &["token", "revoke", &laptop_id]);
    assert!(err.contains("is not one of bob's"), "{err}");
    ok_as(&env, &laptop, &["whoami"]);
    let (bob_listing, _) = ok_as(&env, &bob, &["token", "ls"]);
    let bob_id = (bob_listing.lines())
        .find(|l| l.starts_with('*'))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .to_owned();
    ok_as(&env, &boss, &["token", "revoke", &bob_id]);
    let err = fails_as(&env, &bob, &["whoami"]);
    assert!(err.contains("not valid"), "{err}");

    // Her own, revoked: refused from then on, and listed as revoked.
    let (out, _) = ok_as(&env, &alice, &["token", "revoke", &laptop_id]);
    assert!(out.contains(&format!("Revoked token {laptop_id}")), "{out}");
    let err = fails_as(&env, &laptop, &["whoami"]);
    assert!(err.contains("not valid"), "{err}");
    let (listing, _) = ok_as(&env, &alice, &["token", "ls"]);
    let line = listing.lines().find(|l| l.contains(&laptop_id)).unwrap();
    assert!(line.contains("revoked"), "{listing}");

    // Expired: its expiry put in the past on the database, no waiting.
    let short = ok_as(
        &env,
        &alice,
        &["token", "create", "--name", "short", "--expires", "1h"],
    )
    .0;
    database
        .server
        .psql(
            &database.name,
            "UPDATE tokens SET expires = now() - interval '1 minute' WHERE description = 'short'",
        )
        .unwrap();
    let err = fails_as(&env, short.trim(), &["token", "ls"]);
    assert!(err.contains("expired at"), "{err}");

    // read-no-secrets: reads the stack and exports it sealed, opens none of its secrets.
    ok_as(
        &env,
        &alice,
        &["config", "set", "token_a", "s3cr3t-4a1f", "--secret"],
    );
    ok_as(&env, &alice, &["up", "--yes"]);
    let dashboard = ok_as(
        &env,
        &alice,
        &[
            "token",
            "create",
            "--level",
            "read-no-secrets",
            "--name",
            "dashboard",
        ],
    )
    .0;
    let dashboard = dashboard.trim();
    let (exported, _) = ok_as(&env, dashboard, &["stack", "export"]);
    assert!(
        exported.contains("\"resources\"") && !exported.contains("s3cr3t-4a1f"),
        "{exported}"
    );
    let (history, _) = ok_as(&env, dashboard, &["stack", "history"]);
    assert!(history.contains("succeeded"), "{history}");
    ok_as(&env, dashboard, &["logs"]);
    for args in [
        &["config", "get", "token_a", "--show-secrets"][..],
        &["preview"][..],
    ] {
        let err = fails_as(&env, dashboard, args);
        assert!(
            err.contains("grants read-no-secrets on every stack, which opens no secret"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("s3cr3t-4a1f"), "{err}");
    }
    // Nor can it make a token that would.
    let err = fails_as(&env, dashboard, &["token", "create", "--level", "read"]);
    assert!(err.contains("granting read on every stack"), "{err}");

    // All of it in the audit log: who, with which token, from where.
    let rows = audit(&database, &["--user", "alice"]);
    let created: Vec<&Value> = (rows.iter())
        .filter(|r| r["action"] == "token.created")
        .collect();
    assert_eq!(created.len(), 4, "{rows:#?}");
    assert!(
        created
            .iter()
            .all(|r| r["source"] == "127.0.0.1"
                && r["token"].as_str().is_some_and(|t| t.len() == 12))
    );
    let revoked: Vec<&Value> = (rows.iter())
        .filter(|r| r["action"] == "token.revoked")
        .collect();
    assert_eq!(revoked.len(), 1, "{rows:#?}");
    assert!(revoked[0]["detail"].as_str().unwrap().contains(&laptop_id));
    let by_boss = audit(&database, &["--user", "boss"]);
    assert_eq!(actions(&by_boss), ["token.revoked"], "{by_boss:#?}");
    assert!(by_boss[0]["detail"].as_str().unwrap().contains("of bob"));
    // No row holds a token.
    let everything = admin_ok(&database, &["audit", "--json"]);
    for token in [&alice, &laptop, &bob, &boss] {
        assert!(!everything.contains(token.as_str()));
    }
}

#[test]
fn every_change_is_audited_in_its_own_transaction_with_who_when_and_where() {
    let database = ServiceDatabase::new();
    let service = database.serve(&[]);
    let behind_proxy = database.serve(&["--trust-forwarded-for"]);
    let ops = database.token("ops");
    let writer = database.token_granting("wendy", &["--level", "write"]);
    let env = Env::scenario_on(ServiceLogin {
        url: service.url.clone(),
        token: ops.clone(),
    });

    env.ok(&["up", "--yes"]);
    let exported = env.ok(&["stack", "export"]);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &exported).unwrap();
    env.ok(&["stack", "import", "--file", file.path().to_str().unwrap()]);
    let (name, _) = env.resources()[0].clone();
    env.ok(&["state", "protect", &name]);
    env.ok(&["state", "unprotect", &name]);

    // An update whose client is gone, cancelled; another whose lease expired, taken over.
    let auth = format!("Authorization: token {ops}\r\nContent-Type: application/json\r\n");
    let begin = format!(
        "POST /api/v1/stacks/scenario/dev/updates HTTP/1.1\r\n{auth}Content-Length: 17\r\n"
    );
    let begin_body = |head: &str| format!("{head}\r\n{{\"kind\":\"update\"}}");
    let raw = |service: &ServiceProcess, whole: &str| {
        let address = service.url.strip_prefix("http://").unwrap();
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        let (head, body) = whole.split_once("\r\n\r\n").unwrap();
        let request = format!("{head}\r\nHost: {address}\r\nConnection: close\r\n\r\n{body}");
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer[9..12].parse::<u16>().unwrap()
    };
    assert_eq!(raw(&service, &begin_body(&begin)), 200);
    env.ok(&["cancel", "--yes"]);
    assert_eq!(raw(&service, &begin_body(&begin)), 200);
    database
        .server
        .psql(
            &database.name,
            "UPDATE updates SET lease_expires = now() - interval '1 second' \
             WHERE status = 'running'",
        )
        .unwrap();
    env.ok(&["refresh", "--yes"]);

    // Refused changes record nothing: each row is written with its change or not at all.
    let before = audit(&database, &[]).len();
    let err = env.fails(&["stack", "rm", "dev"]);
    assert!(err.contains("still has"), "{err}");
    assert_eq!(audit(&database, &[]).len(), before);

    // The admin commands, as the database role that ran them, from `cli`.
    let new_key = tempfile::tempdir().unwrap();
    let new_key = new_key.path().join("new.key");
    admin_ok(&database, &["key", "create", new_key.to_str().unwrap()]);
    admin_ok(
        &database,
        &[
            "key",
            "rotate",
            "--from",
            database.master_key.to_str().unwrap(),
            "--to",
            new_key.to_str().unwrap(),
        ],
    );
    admin_ok(&database, &["stack", "repair", "scenario/dev"]);
    admin_ok(&database, &["token", "create", "--user", "carol"]);

    // A stack created and removed through the proxy's replica, which names the client.
    let created = format!(
        "POST /api/v1/stacks/scenario/edge HTTP/1.1\r\n{auth}X-Forwarded-For: 198.51.100.1, \
         203.0.113.9\r\nContent-Length: 0\r\n\r\n"
    );
    assert_eq!(raw(&behind_proxy, &created), 201);
    // The same header, to a replica that does not trust it, is ignored.
    let removed = format!(
        "DELETE /api/v1/stacks/scenario/edge HTTP/1.1\r\n{auth}X-Forwarded-For: 203.0.113.9\r\n\
         Content-Length: 0\r\n\r\n"
    );
    assert_eq!(raw(&service, &removed), 200);

    // The first two: the tests' own tokens, made with `plinth serve token create`.
    let rows = audit(&database, &[]);
    assert_eq!(actions(&rows[..2]), ["token.created", "token.created"]);
    let rows = &rows[2..];
    assert_eq!(
        actions(rows),
        [
            "stack.created",
            "update.begun",
            "update.completed",
            "update.begun",
            "stack.imported",
            "update.completed",
            "update.begun",
            "state.edited",
            "update.completed",
            "update.begun",
            "state.edited",
            "update.completed",
            "update.begun",
            "update.cancelled",
            "update.begun",
            "update.taken-over",
            "update.begun",
            "update.completed",
            "key.rotated",
            "stack.repaired",
            "token.created",
            "stack.created",
            "stack.removed",
        ],
        "{rows:#?}"
    );
    let ops_id = &rows[0]["token"];
    for row in rows {
        let action = row["action"].as_str().unwrap();
        if ["key.rotated", "stack.repaired", "token.created"].contains(&action) {
            assert_eq!(row["source"], "cli", "{row}");
            assert!(row["token"].is_null(), "{row}");
            assert!(!row["user"].as_str().unwrap().is_empty(), "{row}");
        } else {
            assert_eq!(row["user"], "ops", "{row}");
            assert_eq!(&row["token"], ops_id, "{row}");
        }
        assert!(row["at"].as_str().unwrap().ends_with('Z'), "{row}");
    }
    assert_eq!(rows[0]["project"], "scenario");
    assert_eq!(rows[0]["stack"], "dev");
    assert_eq!(rows[1]["source"], "127.0.0.1");
    assert_eq!(rows[21]["source"], "203.0.113.9 via 127.0.0.1");
    assert_eq!(rows[22]["source"], "127.0.0.1");
    assert!(rows[13]["detail"].as_str().unwrap().contains("of ops"));
    assert!(
        rows[15]["detail"]
            .as_str()
            .unwrap()
            .contains("its lease expired")
    );

    // Filters.
    let edge = audit(&database, &["--stack", "scenario/edge"]);
    assert_eq!(actions(&edge), ["stack.created", "stack.removed"]);
    assert_eq!(audit(&database, &["--since", "1h"]).len(), rows.len() + 2);
    assert!(audit(&database, &["--since", "2999-01-01T00:00:00Z"]).is_empty());
    let out = admin(&database, &["audit", "--since", "yesterday-ish"]);
    assert!(
        !out.status.success() && text(&out.stderr).contains("neither a duration"),
        "{}",
        text(&out.stderr)
    );

    // The API: an administrator's, a page at a time; a writer is refused.
    let get = |token: &str, query: &str| {
        request(
            &service,
            &format!("GET /api/v1/audit{query} HTTP/1.1\r\nAuthorization: token {token}\r\n"),
        )
    };
    let (status, page) = get(&ops, "?per_page=5");
    assert_eq!(status, 200, "{page}");
    let entries = page["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 5);
    assert_eq!(entries[0]["action"], "stack.removed");
    let next = page["next"].as_i64().unwrap();
    let (_, second) = get(&ops, &format!("?per_page=5&before={next}"));
    assert_eq!(second["entries"][0]["id"].as_i64().unwrap(), next - 1);
    let (status, refused) = get(&writer, "");
    assert_eq!(status, 403, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("read the audit log"),
        "{refused}"
    );

    // A stored string is shown escaped, whoever wrote it (here, a hand on the database).
    database
        .server
        .psql(
            &database.name,
            "INSERT INTO audit (action, user_name, source, detail) \
             VALUES ('stack.created', E'mallory\\x1b]0;pwned\\x07', '127.0.0.1', \
                     E'line\\nforged row\\u202e')",
        )
        .unwrap();
    let table = admin_ok(
        &database,
        &["audit", "--user", "mallory\u{1b}]0;pwned\u{7}"],
    );
    assert!(
        table.contains("mallory\\u{1b}]0;pwned\\u{7}")
            && table.contains("line\\nforged row\\u{202e}"),
        "{table}"
    );
    assert!(
        !table.contains('\u{1b}') && table.lines().count() == 2,
        "{table}"
    );
}
