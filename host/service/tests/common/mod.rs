//! What the service tests share: a database of their own on a real PostgreSQL, real
//! `plinth-serve` processes, tokens and requests.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plinth_engine::resource::ResourceState;
use plinth_test_postgres::Postgres;
use serde_json::{Value, json};

/// A database of its own on the shared test server.
pub fn database() -> (Arc<Postgres>, String) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let server = Postgres::shared().expect("starting PostgreSQL");
    let name = format!(
        "service_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    );
    server.create_database(&name).unwrap();
    let url = server.url(&name);
    (server, url)
}

/// A running service; killed when dropped.
pub struct Service {
    pub child: Child,
    pub url: String,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `plinth-serve` the tests run: this build's, or `PLINTH_TEST_SERVE` (another build's, to
/// see a regression test fail without its fix).
pub fn serve_binary() -> String {
    std::env::var("PLINTH_TEST_SERVE").unwrap_or_else(|_| env!("CARGO_BIN_EXE_plinth-serve").into())
}

/// The audit log's rows of `action`, as `plinth serve audit --json` prints them.
pub fn audited(db: &str, action: &str) -> Vec<Value> {
    let out = Command::new(serve_binary())
        .args(["audit", "--json"])
        .env("PLINTH_DATABASE_URL", db)
        .output()
        .unwrap();
    assert!(out.status.success());
    (String::from_utf8(out.stdout).unwrap().lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|row| row["action"] == action)
        .collect()
}

pub fn serve(database: &str, extra: &[&str]) -> Service {
    let mut child = Command::new(serve_binary())
        // As the README says to: the password off the command line.
        .env("PLINTH_DATABASE_URL", database)
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        // Warnings only: a line per request would drown the tests' output.
        .env("RUST_LOG", "warn")
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

/// A new token for `user` that may do anything.
pub fn token(database: &str, user: &str) -> String {
    scoped_token(database, user, &["--level", "admin"])
}

/// A new token for `user`, made with the `token create` options `scope` (`--level read`, …).
pub fn scoped_token(database: &str, user: &str, scope: &[&str]) -> String {
    let out = token_admin(database, &[&["create", "--user", user], scope].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Runs `plinth-serve token …` with `args` against `database`.
pub fn token_admin(database: &str, args: &[&str]) -> std::process::Output {
    Command::new(serve_binary())
        .arg("token")
        .args(args)
        .env("PLINTH_DATABASE_URL", database)
        .output()
        .unwrap()
}

/// Cancels the update running on stack `p/dev`, as `token`'s user (`plinth cancel`).
pub fn cancel(service: &Service, token: &str) -> (u16, Value) {
    call(
        service,
        "POST",
        "stacks/p/dev/cancel",
        Some(token),
        None,
        None,
    )
}

/// One request: its status and JSON body.
pub fn call(
    service: &Service,
    method: &str,
    path: &str,
    token: Option<&str>,
    lease: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body.map_or_else(Vec::new, |b| serde_json::to_vec(&b).unwrap());
    send(service, method, path, token, lease, body)
}

/// [`call`] with a body sent as it is written, not as `serde_json` would write it.
pub fn send(
    service: &Service,
    method: &str,
    path: &str,
    token: Option<&str>,
    lease: Option<&str>,
    body: Vec<u8>,
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

/// One request written byte for byte (a path or header no HTTP client would send): its status,
/// headers (lower-cased names) and body. The service closes the connection after it.
pub fn raw(service: &Service, request: &[u8]) -> (u16, String, Value) {
    use std::io::{Read, Write};
    let address = service.url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = (head.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    let body = dechunk(head, body);
    let json = serde_json::from_str(&body).unwrap_or(Value::String(body));
    (status, head.to_ascii_lowercase(), json)
}

/// A chunked body's data.
fn dechunk(head: &str, body: &str) -> String {
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return body.to_owned();
    }
    let mut data = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        data.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    data
}

pub fn begin(service: &Service, token: &str, stack: &str) -> (u16, Value) {
    call(
        service,
        "POST",
        &format!("stacks/p/{stack}/updates"),
        Some(token),
        None,
        Some(json!({ "kind": "update" })),
    )
}

pub fn lease_of(begun: &Value) -> (String, String) {
    (
        begun["update_id"].as_str().unwrap().to_owned(),
        begun["lease_token"].as_str().unwrap().to_owned(),
    )
}

/// Begins an update of stack `dev` through the client's transport: its id and lease token.
pub fn begin_through(transport: &plinth_backend::service::Transport) -> (String, String) {
    let begun = transport
        .call(
            "POST",
            "stacks/p/dev/updates",
            None,
            Some(&json!({ "kind": "update" })),
        )
        .unwrap();
    lease_of(&begun)
}

/// A new service with stack `dev` created by alice, and an update of it begun through her
/// client's transport. Dropping `server` or `service` stops it: bind every field.
pub struct Updating {
    pub server: Arc<Postgres>,
    pub db: String,
    pub service: Service,
    pub alice: String,
    pub transport: plinth_backend::service::Transport,
    pub update: String,
    pub lease: String,
}

pub fn updating() -> Updating {
    let (server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let transport = plinth_backend::service::Transport::new(&service.url, &alice);
    let (update, lease) = begin_through(&transport);
    Updating {
        server,
        db,
        service,
        alice,
        transport,
        update,
        lease,
    }
}

/// A history entry of `kind` (`update`, `import`…), as a client records a phase with.
pub fn history_entry(kind: &str) -> Value {
    use plinth_backend::{HistoryEntry, UpdateKind, UpdateResult};
    let kind: UpdateKind = serde_json::from_value(json!(kind)).unwrap();
    let entry = HistoryEntry::ended_now(
        kind,
        std::time::SystemTime::now(),
        UpdateResult::Succeeded,
        Default::default(),
    );
    serde_json::to_value(entry).unwrap()
}

pub fn on_update(
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

pub fn create_stack(service: &Service, token: &str, stack: &str) {
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

/// Polls `condition` until it holds, failing after a bound far above what it should take.
pub fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[allow(unused_imports)] // each test binary uses its own part
pub use plinth_deploytest::fixtures::resource;

/// The journal entries of creating `resource` as operation `seq` (begun, and done unless
/// `interrupted`), as JSON.
pub fn creating(seq: u64, resource: &ResourceState, interrupted: bool) -> Vec<Value> {
    (plinth_deploytest::fixtures::creating(seq, resource, interrupted).iter())
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}
