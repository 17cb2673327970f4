//! Real `plinth-serve` processes on a real PostgreSQL: leases, the one running update per
//! stack, tokens. Nothing waits on timing: a lease expiry is awaited as a condition, under a
//! generous bound.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plinth_test_postgres::Postgres;
use serde_json::{Value, json};

/// A database of its own on the shared test server.
fn database() -> (Arc<Postgres>, String) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let server = Postgres::shared().expect("starting PostgreSQL");
    let name = format!(
        "leases_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    );
    server.create_database(&name).unwrap();
    let url = server.url(&name);
    (server, url)
}

/// A running service; killed when dropped.
struct Service {
    child: Child,
    url: String,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(database: &str, extra: &[&str]) -> Service {
    let mut child = Command::new(env!("CARGO_BIN_EXE_plinth-serve"))
        .args(["--database", database, "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the service did not start: {line:?}"))
        .to_owned();
    Service { child, url }
}

fn token(database: &str, user: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_plinth-serve"))
        .args(["token", "create", "--database", database, "--user", user])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// One request: its status and JSON body.
fn call(
    service: &Service,
    method: &str,
    path: &str,
    token: Option<&str>,
    lease: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let url = format!("{}/api/v1/{path}", service.url);
    let mut request = ureq::http::Request::builder().method(method).uri(url);
    if let Some(token) = token {
        request = request.header("Authorization", format!("token {token}"));
    }
    if let Some(lease) = lease {
        request = request.header("X-Plinth-Lease", lease);
    }
    let body = body.map_or_else(Vec::new, |b| serde_json::to_vec(&b).unwrap());
    let request = request
        .header("Content-Type", "application/json")
        .body(body)
        .unwrap();
    let mut response = agent.run(request).unwrap();
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn begin(service: &Service, token: &str, stack: &str) -> (u16, Value) {
    call(
        service,
        "POST",
        &format!("stacks/p/{stack}/updates"),
        Some(token),
        None,
        Some(json!({ "kind": "update" })),
    )
}

fn lease_of(begun: &Value) -> (String, String) {
    (
        begun["update_id"].as_str().unwrap().to_owned(),
        begun["lease_token"].as_str().unwrap().to_owned(),
    )
}

fn on_update(
    service: &Service,
    token: &str,
    (id, lease): &(String, String),
    action: &str,
    body: Option<Value>,
) -> (u16, Value) {
    call(
        service,
        "POST",
        &format!("updates/{id}/{action}"),
        Some(token),
        Some(lease),
        body.or(Some(json!({}))),
    )
}

fn create_stack(service: &Service, token: &str, stack: &str) {
    let (status, body) = call(
        service,
        "POST",
        &format!("stacks/p/{stack}"),
        Some(token),
        None,
        None,
    );
    assert_eq!(status, 201, "{body}");
}

#[test]
fn a_second_update_gets_409_naming_the_holder_until_the_first_completes() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let (alice, bob) = (token(&db, "alice"), token(&db, "bob"));
    create_stack(&service, &alice, "dev");
    let (status, first) = begin(&service, &alice, "dev");
    assert_eq!(status, 200, "{first}");
    let first = lease_of(&first);

    let (status, refused) = begin(&service, &bob, "dev");
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["holder"]["user"], "alice");
    assert_eq!(refused["holder"]["kind"], "update");
    assert!(
        refused["message"].as_str().unwrap().contains("alice"),
        "{refused}"
    );

    let done = Some(json!({ "result": "succeeded" }));
    let (status, body) = on_update(&service, &alice, &first, "complete", done.clone());
    assert_eq!(status, 200, "{body}");
    // A retried completion is accepted; a different one is not.
    assert_eq!(on_update(&service, &alice, &first, "complete", done).0, 200);
    let failed = Some(json!({ "result": "failed" }));
    assert_eq!(
        on_update(&service, &alice, &first, "complete", failed).0,
        403
    );
    assert_eq!(begin(&service, &bob, "dev").0, 200);
}

#[test]
fn missing_or_wrong_tokens_get_401_and_one_updates_lease_acts_on_no_other() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    let (status, body) = call(&service, "GET", "user", None, None, None);
    assert_eq!(status, 401);
    assert!(
        body["message"].as_str().unwrap().contains("plinth login"),
        "{body}"
    );
    let (status, body) = call(&service, "GET", "user", Some("not-a-token"), None, None);
    assert_eq!(status, 401, "{body}");
    let (status, body) = call(&service, "GET", "user", Some(&alice), None, None);
    assert_eq!((status, body["name"].as_str()), (200, Some("alice")));

    create_stack(&service, &alice, "one");
    create_stack(&service, &alice, "two");
    let one = lease_of(&begin(&service, &alice, "one").1);
    let two = lease_of(&begin(&service, &alice, "two").1);
    let crossed = (one.0.clone(), two.1.clone());
    let (status, body) = on_update(&service, &alice, &crossed, "renew", None);
    assert_eq!(status, 401, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("acts on no other"),
        "{body}"
    );
    let (status, _) = call(
        &service,
        "POST",
        &format!("updates/{}/renew", one.0),
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 401, "a request on an update without its lease");
    assert_eq!(on_update(&service, &alice, &one, "renew", None).0, 200);
}

/// Polls `condition` until it holds, failing after a bound far above what it should take.
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_expired_lease_lets_the_next_update_take_over_and_the_old_one_is_told_it_lost() {
    let (_server, db) = database();
    let service = serve(&db, &["--lease", "1s"]);
    let (alice, bob) = (token(&db, "alice"), token(&db, "bob"));
    create_stack(&service, &alice, "dev");
    // Alice's client "crashes": it never renews.
    let crashed = lease_of(&begin(&service, &alice, "dev").1);
    let mut taken = None;
    eventually("the lease expiring", || {
        let (status, body) = begin(&service, &bob, "dev");
        assert!(matches!(status, 200 | 409), "{status} {body}");
        taken = (status == 200).then_some(body);
        taken.is_some()
    });
    let (status, body) = on_update(&service, &alice, &crashed, "renew", None);
    assert_eq!(status, 403, "{body}");
    let done = Some(json!({ "result": "succeeded" }));
    assert_eq!(
        on_update(&service, &alice, &crashed, "complete", done).0,
        403
    );
    let bobs = lease_of(&taken.unwrap());
    assert_eq!(on_update(&service, &bob, &bobs, "renew", None).0, 200);
}

#[test]
fn cancel_ends_the_running_update_at_once() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let running = lease_of(&begin(&service, &alice, "dev").1);
    let (status, body) = call(
        &service,
        "POST",
        "stacks/p/dev/cancel",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(
        (status, body["cancelled"].as_str()),
        (200, Some(running.0.as_str()))
    );
    assert_eq!(on_update(&service, &alice, &running, "renew", None).0, 403);
    assert_eq!(begin(&service, &alice, "dev").0, 200);
}

#[test]
fn two_replicas_on_one_database_behave_as_one() {
    let (_server, db) = database();
    let first = serve(&db, &[]);
    let second = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&first, &alice, "dev");
    let (status, body) = call(&second, "GET", "stacks/p/dev", Some(&alice), None, None);
    assert_eq!(status, 200, "{body}");

    // Begun at once through both: the database lets exactly one through.
    let begins: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = [&first, &second, &first, &second]
            .into_iter()
            .map(|replica| scope.spawn(|| begin(replica, &alice, "dev")))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let winners: Vec<&Value> = (begins.iter())
        .filter(|(s, _)| *s == 200)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(winners.len(), 1, "{begins:?}");
    assert!(
        begins.iter().all(|(s, _)| matches!(s, 200 | 409)),
        "{begins:?}"
    );

    // The replica it began through dies; the update completes through the other.
    let running = lease_of(winners[0]);
    drop(first);
    let done = Some(json!({ "result": "succeeded" }));
    assert_eq!(
        on_update(&second, &alice, &running, "complete", done).0,
        200
    );
    assert_eq!(begin(&second, &alice, "dev").0, 200);
}

#[test]
fn a_body_over_the_limit_gets_413_and_bad_names_400() {
    let (_server, db) = database();
    let service = serve(&db, &["--body-limit", "1024"]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let big = json!({ "kind": "x".repeat(4096) });
    let (status, _) = call(
        &service,
        "POST",
        "stacks/p/dev/updates",
        Some(&alice),
        None,
        Some(big),
    );
    assert_eq!(status, 413);
    let (status, body) = call(
        &service,
        "POST",
        "stacks/p/.hidden",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 400, "{body}");
}

#[test]
fn a_duplicated_journal_batch_is_stored_once_and_a_conflicting_one_refused() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let running = lease_of(&begin(&service, &alice, "dev").1);
    let batch = |seq: u64, names: &[&str]| {
        let entries: Vec<Value> = (names.iter())
            .map(|n| json!({ "entry": "begin", "seq": seq, "urn": n }))
            .collect();
        Some(json!({ "seq": seq, "entries": entries }))
    };
    let (status, body) = on_update(&service, &alice, &running, "journal", batch(1, &["a", "b"]));
    assert_eq!((status, &body["retry"]), (200, &json!(false)), "{body}");
    // The answer was lost and the client sends the batch again.
    let (status, body) = on_update(&service, &alice, &running, "journal", batch(1, &["a", "b"]));
    assert_eq!((status, &body["retry"]), (200, &json!(true)), "{body}");
    let (status, body) = on_update(&service, &alice, &running, "journal", batch(1, &["a", "c"]));
    assert_eq!(status, 409, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("never rewritten"),
        "{body}"
    );
    let (status, body) = on_update(&service, &alice, &running, "journal", batch(3, &["d"]));
    assert_eq!(status, 409, "{body}");
    let (status, _) = on_update(&service, &alice, &running, "journal", batch(2, &["c"]));
    assert_eq!(status, 200);
    let too_many: Vec<Value> = (0..101).map(|i| json!({ "seq": i })).collect();
    let (status, _) = on_update(
        &service,
        &alice,
        &running,
        "journal",
        Some(json!({ "seq": 3, "entries": too_many })),
    );
    assert_eq!(status, 400);

    let path = format!("updates/{}/journal", running.0);
    let (status, body) = call(&service, "GET", &path, Some(&alice), None, None);
    assert_eq!(status, 200, "{body}");
    let urns: Vec<&str> = (body["entries"].as_array().unwrap().iter())
        .map(|e| e["urn"].as_str().unwrap())
        .collect();
    assert_eq!(urns, ["a", "b", "c"], "each batch once, in order");

    // Once the update no longer holds the stack, nothing more is appended.
    call(
        &service,
        "POST",
        "stacks/p/dev/cancel",
        Some(&alice),
        None,
        None,
    );
    let (status, _) = on_update(&service, &alice, &running, "journal", batch(3, &["d"]));
    assert_eq!(status, 403);
}
