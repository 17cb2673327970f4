//! Operating the service (issue 27): the database URL kept off the command line, metrics and
//! request logs.

use std::io::{BufRead, BufReader, Read};
use std::process::{ChildStderr, Command, Output, Stdio};
use std::sync::Arc;

use crate::common::*;
use plinth_backend::secrets::PassphraseCrypter;
use plinth_backend::service::{ServicePersister, Transport};
use plinth_engine::journal::Persister;
use plinth_state::protocol::JOURNAL_IN_FLIGHT;
use serde_json::{Value, json};

/// `plinth-serve ARGS` with the environment `env` (and no inherited database variables).
fn admin(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(serve_binary())
        .args(args)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_DATABASE_FILE")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// A service started with `args` and `env`, its standard error and its metrics' URL if it
/// serves them.
fn start(args: &[&str], env: &[(&str, &str)]) -> (Service, ChildStderr, Option<String>) {
    let mut child = Command::new(serve_binary())
        .args(args)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_DATABASE_FILE")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut metrics = None;
    loop {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        if let Some(url) = line.trim().strip_prefix("metrics on ") {
            metrics = Some(url.to_owned());
            continue;
        }
        let url = (line.trim().strip_prefix("listening on "))
            .unwrap_or_else(|| panic!("the service did not start: {line:?}"))
            .to_owned();
        return (Service { child, url }, stderr, metrics);
    }
}

/// Stops `service` and returns all it wrote on `stderr`.
fn stopped(service: Service, mut stderr: ChildStderr) -> String {
    drop(service);
    let mut text = String::new();
    stderr.read_to_string(&mut text).unwrap();
    text
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const WARNING: &str = "password is on the command line";

#[test]
fn the_database_url_comes_from_the_environment_or_a_file_and_one_on_the_command_line_is_warned_of()
{
    let (_server, database) = database();
    let dir = tempfile::tempdir().unwrap();

    // The URL in a file: a token made with it, nothing warned.
    let file = dir.path().join("database-url");
    std::fs::write(&file, format!("{database}\n")).unwrap();
    let readable = |mode| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    // Readable by others: warned of.
    readable(0o644);
    let file_name = file.to_str().unwrap();
    let warned = admin(&["token", "list", "--database-file", file_name], &[]);
    assert!(warned.status.success(), "{}", text(&warned.stderr));
    assert!(
        text(&warned.stderr).contains("other users may read it: chmod 600"),
        "{}",
        text(&warned.stderr)
    );
    readable(0o600);
    let file = file_name;
    let created = admin(
        &[
            "token",
            "create",
            "--user",
            "alice",
            "--database-file",
            file,
        ],
        &[],
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    assert!(
        !text(&created.stderr).contains(WARNING),
        "{}",
        text(&created.stderr)
    );
    let token = text(&created.stdout).trim().to_owned();

    // The service started with the URL in the environment only answers that token, and does
    // not warn; started with it on the command line, it warns.
    let (service, stderr, _) = start(
        &["--listen", "127.0.0.1:0"],
        &[("PLINTH_DATABASE_URL", &database)],
    );
    let (status, user) = call(&service, "GET", "user", Some(&token), None, None);
    assert_eq!(
        (status, user["name"].as_str()),
        (200, Some("alice")),
        "{user}"
    );
    let stderr = stopped(service, stderr);
    assert!(!stderr.contains(WARNING), "{stderr}");
    // Its request log, in the default text format, for people; no colour codes in a file.
    assert!(
        !stderr.contains('\u{1b}'),
        "escape codes in a log file: {stderr:?}"
    );
    let line = (stderr.lines())
        .find(|line| line.contains("plinth_service::request"))
        .unwrap_or_else(|| panic!("no request logged: {stderr}"));
    for field in [
        "method=\"GET\"",
        "route=\"/api/v1/user\"",
        "status=200",
        "user=\"alice\"",
    ] {
        assert!(line.contains(field), "{field} not in {line}");
    }
    let (service, stderr, _) = start(&["--listen", "127.0.0.1:0", "--database", &database], &[]);
    let stderr = stopped(service, stderr);
    assert!(stderr.contains(WARNING), "no warning: {stderr}");

    // The same URL on the command line works, and is warned of, without the password.
    let listed = admin(&["token", "list", "--database", &database], &[]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let stderr = text(&listed.stderr);
    assert!(stderr.contains(WARNING), "no warning: {stderr}");
    assert!(stderr.contains("PLINTH_DATABASE_URL") && stderr.contains("--database-file"));
    let password = database
        .split(':')
        .nth(2)
        .unwrap()
        .split('@')
        .next()
        .unwrap();
    assert!(!stderr.contains(password), "{stderr}");

    // The environment's URL is never shown by --help.
    let help = admin(
        &["token", "list", "--help"],
        &[("PLINTH_DATABASE_URL", &database)],
    );
    assert!(help.status.success());
    assert!(
        !text(&help.stdout).contains(password),
        "{}",
        text(&help.stdout)
    );

    // Mistakes say what to do.
    let none = admin(&["token", "list"], &[]);
    assert!(!none.status.success());
    assert!(
        text(&none.stderr).contains("no database: set PLINTH_DATABASE_URL"),
        "{}",
        text(&none.stderr)
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let out = admin(
        &["token", "list", "--database-file", empty.to_str().unwrap()],
        &[],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("does not hold a database URL"),
        "{}",
        text(&out.stderr)
    );
    let out = admin(
        &["token", "list", "--database-file", "/nonexistent/url"],
        &[],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot read the database URL from /nonexistent/url"),
        "{}",
        text(&out.stderr)
    );
    let both = admin(
        &[
            "token",
            "list",
            "--database",
            &database,
            "--database-file",
            file,
        ],
        &[],
    );
    assert!(!both.status.success());
    assert!(
        text(&both.stderr).contains("cannot be used with"),
        "{}",
        text(&both.stderr)
    );
}

/// The value of the sample `name` (with its labels, as written) in `metrics`.
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

fn scrape(url: &str) -> String {
    let mut answer = ureq::get(url).call().unwrap();
    let kind = answer.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    answer.body_mut().read_to_string().unwrap()
}

const BEGIN: &str = r#"plinth_http_requests_total{method="POST",route="/api/v1/stacks/{project}/{stack}/updates",status="200"}"#;
const JOURNAL: &str = r#"plinth_http_requests_total{method="POST",route="/api/v1/updates/{id}/journal",status="200"}"#;

#[test]
fn metrics_count_a_real_update_and_each_request_is_logged_once_as_json_without_paths_or_bodies() {
    let (server, db) = database();
    let alice = token(&db, "alice");
    let (service, stderr, metrics) = start(
        &[
            "--database",
            &db,
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ],
        &[],
    );
    let metrics = metrics.expect("no metrics line");
    // Only on the metrics address: the API's, which the load balancer exposes, has none.
    let (status, _, _) = raw(
        &service,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 404);
    // Nothing counted before the first request; the pool and the database are.
    let before = scrape(&metrics);
    assert_eq!(sample(&before, BEGIN), None, "{before}");
    assert_eq!(
        sample(&before, "plinth_updates_running"),
        Some(0.0),
        "{before}"
    );
    assert_eq!(sample(&before, "plinth_database_up"), Some(1.0), "{before}");
    assert_eq!(
        sample(&before, "plinth_database_connections_max"),
        Some(16.0)
    );

    // An update through the client: two journal batches, whose entries name a marker that
    // must never reach the log.
    create_stack(&service, &alice, "dev");
    let transport = Transport::new(&service.url, &alice);
    let (update, lease) = begin_through(&transport);
    let running = scrape(&metrics);
    assert_eq!(
        sample(&running, "plinth_updates_running"),
        Some(1.0),
        "{running}"
    );
    let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
    let mut persister =
        ServicePersister::new(transport.clone(), &update, &lease, Arc::new(crypter));
    for (seq, batch) in [(1, 0), (2, 0), (3, 1)] {
        let r = resource(&format!("body-marker-{seq}"), Default::default());
        for entry in creating(seq, &r, false) {
            persister
                .append(&serde_json::from_value(entry).unwrap())
                .unwrap();
        }
        if batch == 0 && seq == 2 || batch == 1 {
            persister.sync().unwrap();
        }
    }
    let phase = json!({ "phase": 1, "entry": history_entry("update") });
    transport
        .call(
            "POST",
            &format!("updates/{update}/phases"),
            Some(&lease),
            Some(&phase),
        )
        .unwrap();
    let done = json!({ "result": "succeeded" });
    transport
        .call(
            "POST",
            &format!("updates/{update}/complete"),
            Some(&lease),
            Some(&done),
        )
        .unwrap();
    let ended = scrape(&metrics);
    assert_eq!(
        sample(&ended, "plinth_updates_running"),
        Some(0.0),
        "{ended}"
    );

    // A lease found expired by the next update is counted once.
    let name = db.rsplit('/').next().unwrap();
    let (second, _) = begin_through(&transport);
    server
        .psql(name, "UPDATE updates SET lease_expires = now() - interval '1 minute' WHERE status = 'running'")
        .unwrap();
    let (third, _) = begin_through(&transport);
    assert_ne!(second, third);

    let after = scrape(&metrics);
    assert_eq!(sample(&after, BEGIN), Some(3.0), "{after}");
    assert_eq!(sample(&after, JOURNAL), Some(2.0), "{after}");
    assert_eq!(
        sample(&after, "plinth_journal_batches_received_total"),
        Some(2.0),
        "{after}"
    );
    assert!(
        sample(&after, "plinth_journal_received_bytes_total").unwrap() > 0.0,
        "{after}"
    );
    assert_eq!(
        sample(&after, "plinth_leases_expired_total"),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "plinth_updates_running"),
        Some(1.0),
        "{after}"
    );
    let begins = r#"plinth_http_request_duration_seconds_count{method="POST",route="/api/v1/stacks/{project}/{stack}/updates"}"#;
    assert_eq!(sample(&after, begins), Some(3.0), "{after}");
    assert!(
        !after.contains("/stacks/p/dev"),
        "a path in the metrics: {after}"
    );
    let requests: f64 = (after.lines())
        .filter(|line| line.starts_with("plinth_http_requests_total{"))
        .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();

    // One JSON line per request, with its fields; neither a path nor a body.
    let log = stopped(service, stderr);
    let lines: Vec<Value> = (log.lines())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .filter(|line: &Value| line["target"] == "plinth_service::request")
        .collect();
    assert_eq!(lines.len() as f64, requests, "{log}");
    let created = (lines.iter())
        .find(|line| {
            line["method"] == "POST" && line["route"] == "/api/v1/stacks/{project}/{stack}"
        })
        .unwrap_or_else(|| panic!("no line of the stack's creation: {log}"));
    assert_eq!(created["status"], 201, "{created}");
    assert_eq!(created["user"], "alice", "{created}");
    assert_eq!(created["level"], "INFO", "{created}");
    assert!(created["duration_ms"].as_f64().unwrap() >= 0.0, "{created}");
    assert!(created["token"].as_str().unwrap().len() == 12, "{created}");
    let journal = (lines.iter())
        .find(|line| line["route"] == "/api/v1/updates/{id}/journal")
        .unwrap_or_else(|| panic!("no line of a journal batch: {log}"));
    assert_eq!(
        journal["token"], created["token"],
        "the batch's token, by id"
    );
    assert!(!log.contains("body-marker"), "a body in the log: {log}");
    assert!(
        !log.contains("/stacks/p/dev") && !log.contains(&update),
        "a path in the log: {log}"
    );
    assert!(
        !log.contains(&alice) && !log.contains(&lease),
        "a token in the log: {log}"
    );
}

/// The one line `token list` prints for the token of id `id`.
fn listed(db: &str, id: &str) -> String {
    let out = token_admin(db, &["list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = text(&out.stdout);
    (list.lines().find(|line| line.starts_with(id)))
        .unwrap_or_else(|| panic!("{id} is not listed: {list}"))
        .to_owned()
}

/// Creates a token with `args`: the token and its id.
fn created(db: &str, args: &[&str]) -> (String, String) {
    let out = token_admin(db, &[&["create"], args].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let told = text(&out.stderr);
    let id = (told.strip_prefix("Created token "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{told}"))
        .to_owned();
    (text(&out.stdout).trim().to_owned(), id)
}

#[test]
fn tokens_expire_with_a_clear_refusal_their_use_is_noted_once_a_minute_and_revoked_ones_stay_listed()
 {
    let (server, db) = database();
    let name = db.rsplit('/').next().unwrap().to_owned();
    let sql = |statement: &str| server.psql(&name, statement).unwrap().trim().to_owned();
    let service = serve(&db, &[]);

    // A new token writes, not more, unless asked; it lasts as long as --expires says.
    let (alice, id) = created(&db, &["--user", "alice", "--expires", "90d"]);
    let line = listed(&db, &id);
    assert!(line.contains("write on every stack"), "{line}");
    assert!(line.contains("until ") && line.contains("never"), "{line}");
    let (status, _) = call(&service, "DELETE", "stacks/p/dev", Some(&alice), None, None);
    assert_eq!(status, 403, "a write token removes no stack");

    // Its use is noted, then not again within the minute: no write per request.
    create_stack(&service, &alice, "dev");
    let used = |id: &str| {
        sql(&format!(
            "SELECT last_used FROM tokens WHERE encode(digest, 'hex') LIKE '{id}%'"
        ))
    };
    assert_ne!(used(&id), "", "a use is noted");
    sql("UPDATE tokens SET last_used = now() - interval '30 seconds'");
    let before = used(&id);
    assert_eq!(
        call(&service, "GET", "user", Some(&alice), None, None).0,
        200
    );
    assert_eq!(used(&id), before, "noted again within the minute");
    sql("UPDATE tokens SET last_used = now() - interval '2 minutes'");
    let before = used(&id);
    assert_eq!(
        call(&service, "GET", "user", Some(&alice), None, None).0,
        200
    );
    assert_ne!(used(&id), before, "not noted after a minute");
    assert!(!listed(&db, &id).contains("never"));

    // An update is running under it when it expires: every request carrying it is refused,
    // saying it expired and what to do.
    let update = lease_of(&begin(&service, &alice, "dev").1);
    let batch = |seq: u64| {
        let r = resource(&format!("r{seq}"), Default::default());
        Some(json!({ "seq": seq, "entries": creating(seq, &r, false) }))
    };
    assert_eq!(
        on_update(&service, &alice, &update, "journal", batch(1)).0,
        200
    );
    sql("UPDATE tokens SET expires = now() - interval '1 second'");
    let (status, body) = call(&service, "GET", "user", Some(&alice), None, None);
    assert_eq!(status, 401, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("expired at") && message.contains("plinth serve token create"),
        "{message}"
    );
    let (status, body) = on_update(&service, &alice, &update, "journal", batch(2));
    assert_eq!(status, 401, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("expired"),
        "{body}"
    );
    assert!(
        listed(&db, &id).contains("expired "),
        "{}",
        listed(&db, &id)
    );

    // A revoked token stays listed, as revoked; revoking it again says so.
    let (bob, bobs) = created(&db, &["--user", "bob", "--level", "read"]);
    assert_eq!(call(&service, "GET", "user", Some(&bob), None, None).0, 200);
    let revoked = token_admin(&db, &["revoke", &bobs]);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    assert_eq!(call(&service, "GET", "user", Some(&bob), None, None).0, 401);
    let line = listed(&db, &bobs);
    assert!(
        line.contains("revoked ") && line.contains("read on every stack"),
        "{line}"
    );
    let again = token_admin(&db, &["revoke", &bobs]);
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("no token not yet revoked"),
        "{}",
        text(&again.stderr)
    );

    // Lifetimes that make no sense are refused, saying what would.
    for lifetime in ["0s", "90 parsecs", "20y"] {
        let out = token_admin(&db, &["create", "--user", "eve", "--expires", lifetime]);
        assert!(!out.status.success(), "{lifetime}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("--expires") && stderr.contains(lifetime),
            "{stderr}"
        );
    }
}

#[test]
fn a_journal_batch_sent_before_the_one_ahead_of_it_waits_for_it_and_both_are_stored_in_order() {
    let (_server, db) = database();
    let alice = token(&db, "alice");
    let (service, _stderr, metrics) = start(
        &[
            "--database",
            &db,
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    let metrics = metrics.expect("no metrics line");
    create_stack(&service, &alice, "dev");
    let running = lease_of(&begin(&service, &alice, "dev").1);
    // Batch 1 begins creating `a`; batch 2 ends it in short, which only a journal holding
    // batch 1 makes valid: it is checked once batch 1 is stored, not when it arrives.
    let a = resource("a", Default::default());
    let first = json!({ "seq": 1, "entries": creating(1, &a, true) });
    let second = json!({ "seq": 2, "entries": [
        { "entry": "created-as-begun", "seq": 1, "id": "a-1" },
    ] });
    let early = std::thread::scope(|scope| {
        let early = scope.spawn(|| on_update(&service, &alice, &running, "journal", Some(second)));
        eventually("batch 2 waiting for batch 1", || {
            sample(&scrape(&metrics), "plinth_journal_batches_waiting") == Some(1.0)
        });
        let (status, body) = on_update(&service, &alice, &running, "journal", Some(first));
        assert_eq!((status, &body["retry"]), (200, &json!(false)), "{body}");
        early.join().unwrap()
    });
    assert_eq!(
        (early.0, &early.1["retry"]),
        (200, &json!(false)),
        "{}",
        early.1
    );
    assert_eq!(
        sample(&scrape(&metrics), "plinth_journal_batches_waiting"),
        Some(0.0)
    );
    let path = format!("updates/{}/journal", running.0);
    let (status, body) = call(&service, "GET", &path, Some(&alice), None, None);
    assert_eq!(status, 200, "{body}");
    let kinds: Vec<&str> = (body["entries"].as_array().unwrap().iter())
        .map(|e| e["entry"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["begin", "created-as-begun"],
        "in their numbers' order"
    );

    // Beyond the batches a client may have in flight, a batch is refused at once.
    let far = json!({ "seq": 3 + JOURNAL_IN_FLIGHT as u64, "entries": creating(9, &a, true) });
    let (status, body) = on_update(&service, &alice, &running, "journal", Some(far));
    assert_eq!(status, 409, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("came before batch 3"),
        "{body}"
    );
}
