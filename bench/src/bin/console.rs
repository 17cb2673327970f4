//! `plinth-bench-console`: the web console measured on a big stack. It starts a PostgreSQL
//! cluster of its own and a release-like `plinth serve` (the `bench-fast` profile), loads a
//! stack of N resources (100 components of N/100 - 1 children each) as two versions, the second
//! changing every tenth resource, adding and removing some, then prints the time of the stack,
//! resource and diff pages (median and p95 of sequential requests, as a loopback round trip:
//! the server's time and a few tens of microseconds), and the pages per second that U signed-in
//! users get at once.
//!
//! ```text
//! cargo build --profile bench-fast -p plinth-service --bin plinth-serve
//! cargo run -p plinth-bench --bin plinth-bench-console -- \
//!     --plinth-serve target/bench-fast/plinth-serve
//! ```

#[path = "../service.rs"]
mod service;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::resource::ResourceState;
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value as PValue};
use plinth_state::secrets::{Crypter, SecretsError};
use plinth_state::{Checkpoint, HistoryEntry, UpdateKind, UpdateResult};
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    /// The `plinth-serve` binary (build it with `--profile bench-fast`).
    #[arg(long)]
    plinth_serve: PathBuf,
    /// Resources in the stack (a multiple of 100).
    #[arg(long, default_value_t = 10_000)]
    resources: usize,
    /// Sequential requests per page figure.
    #[arg(long, default_value_t = 50)]
    requests: usize,
    /// Signed-in users requesting pages at once.
    #[arg(long, default_value_t = 20)]
    users: usize,
    /// Pages each user requests.
    #[arg(long, default_value_t = 40)]
    pages: usize,
}

const PROJECT: &str = "bench";
const STACK: &str = "big";

/// The bench's state holds no secret: nothing to seal.
struct NoSecrets;

impl Crypter for NoSecrets {
    fn seal(&self, _: &str) -> Result<String, SecretsError> {
        Err(SecretsError::MalformedState(
            "the bench state has no secrets".into(),
        ))
    }
    fn open(&self, _: &str) -> Result<String, SecretsError> {
        Err(SecretsError::MalformedState(
            "the bench state has no secrets".into(),
        ))
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.resources < 100 || !args.resources.is_multiple_of(100) {
        bail!("--resources must be a multiple of 100");
    }
    let serve = std::fs::canonicalize(&args.plinth_serve)
        .with_context(|| format!("the plinth-serve binary {}", args.plinth_serve.display()))?;
    let work = tempfile::tempdir()?;
    let log = work.path().join("serve.log");
    let service = service::Service::start(&serve, &log, false)?;
    let client = Client::new(&service.url);

    let started = Instant::now();
    load(&client, &service.token, args.resources)?;
    println!(
        "Loaded {PROJECT}/{STACK} on the {}: {} resources, 2 versions, in {:.1} s",
        service.name,
        args.resources,
        started.elapsed().as_secs_f64()
    );

    let session = client.sign_in(&service.token)?;
    let middle = urn_of(args.resources / 200, args.resources / 200);
    let encoded: String = url_encoded(&middle.to_string());
    let pages = [
        ("stacks list", "/".to_owned()),
        (
            "stack page (first 200 rows)",
            format!("/stacks/{PROJECT}/{STACK}"),
        ),
        (
            "resource page",
            format!("/stacks/{PROJECT}/{STACK}/resource?urn={encoded}"),
        ),
        ("history", format!("/stacks/{PROJECT}/{STACK}/history")),
        (
            "history diff 1 → 2",
            format!("/stacks/{PROJECT}/{STACK}/diff?from=1&to=2"),
        ),
    ];
    println!(
        "\n{:<30} {:>10} {:>10} {:>10}",
        "page", "median ms", "p95 ms", "KiB"
    );
    for (name, path) in &pages {
        // One request first, not counted: connections and caches warm.
        client.get(path, &session)?;
        let mut times = Vec::with_capacity(args.requests);
        let mut size = 0;
        for _ in 0..args.requests {
            let start = Instant::now();
            size = client.get(path, &session)?;
            times.push(start.elapsed());
        }
        times.sort();
        println!(
            "{name:<30} {:>10.1} {:>10.1} {:>10.0}",
            ms(times[times.len() / 2]),
            ms(times[(times.len() * 95 / 100).min(times.len() - 1)]),
            size as f64 / 1024.0
        );
    }

    // Users at once, each signed in with a session of its own, going round the pages.
    let sessions = (0..args.users)
        .map(|_| client.sign_in(&service.token))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let pages = Arc::new(pages.map(|(_, path)| path));
    let start = Instant::now();
    let users: Vec<_> = (sessions.into_iter().enumerate())
        .map(|(user, session)| {
            let client = client.clone();
            let pages = pages.clone();
            let count = args.pages;
            std::thread::spawn(move || -> anyhow::Result<()> {
                for i in 0..count {
                    client.get(&pages[(user + i) % pages.len()], &session)?;
                }
                Ok(())
            })
        })
        .collect();
    for user in users {
        user.join().expect("a user's thread")?;
    }
    let took = start.elapsed().as_secs_f64();
    let total = args.users * args.pages;
    println!(
        "\n{} users at once, {} pages each (the five above in turn): {:.1} pages/s ({total} in \
         {took:.1} s)",
        args.users,
        args.pages,
        total as f64 / took
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn url_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The URN of child `child` of group `group` (child 0 is the group itself).
fn urn_of(group: usize, child: usize) -> Urn {
    match child {
        0 => Urn::new(
            STACK,
            PROJECT,
            None,
            "bench:index:Group",
            &format!("group-{group}"),
        ),
        _ => Urn::new(
            STACK,
            PROJECT,
            Some("bench:index:Group"),
            "bench:index:Item",
            &format!("item-{group}-{child}"),
        ),
    }
}

/// The stack's state at `version` (1 or 2): groups of a component and its items; version 2
/// changes every tenth item's size, adds one item per group and removes another.
fn snapshot(resources: usize, version: i64) -> Snapshot {
    let per_group = resources / 100;
    let mut snapshot = Snapshot::default();
    for group in 0..100 {
        let parent = urn_of(group, 0);
        snapshot.resources.push(ResourceState {
            urn: parent.clone(),
            ty: "bench:index:Group".into(),
            custom: false,
            id: String::new(),
            inputs: PropertyMap::new(),
            outputs: PropertyMap::new(),
            parent: None,
            dependencies: vec![],
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        });
        let mut previous: Option<Urn> = None;
        for child in 1..per_group {
            // Version 2: the last item of each group replaced by a new one.
            let child = match (version, child) {
                (2, c) if c == per_group - 1 => per_group + 1000,
                (_, c) => c,
            };
            let size = match (version, child % 10) {
                (2, 0) => child as i64 + 1,
                _ => child as i64,
            };
            let inputs: PropertyMap = [
                (
                    "name".to_owned(),
                    PValue::String(format!("item {group}-{child}")),
                ),
                ("size".to_owned(), PValue::Integer(size)),
                (
                    "tags".to_owned(),
                    PValue::Object(
                        [
                            ("team".to_owned(), PValue::String("platform".into())),
                            ("group".to_owned(), PValue::Integer(group as i64)),
                        ]
                        .into_iter()
                        .collect(),
                    ),
                ),
            ]
            .into_iter()
            .collect();
            let mut outputs = inputs.clone();
            outputs.insert(
                "arn".to_owned(),
                PValue::String(format!("arn:bench:{group}:{child}")),
            );
            let urn = urn_of(group, child);
            snapshot.resources.push(ResourceState {
                urn: urn.clone(),
                ty: "bench:index:Item".into(),
                custom: true,
                id: format!("id-{group}-{child}"),
                inputs,
                outputs,
                parent: Some(parent.clone()),
                dependencies: previous.replace(urn.clone()).into_iter().collect(),
                protect: child == 1,
                retain_on_delete: false,
                delete: false,
                provider: None,
                custom_timeouts: None,
            });
        }
    }
    let outputs: PropertyMap = [(
        "endpoint".to_owned(),
        PValue::String("https://bench.example".into()),
    )]
    .into_iter()
    .collect();
    snapshot.adopt_root(PROJECT, STACK, outputs);
    snapshot
}

/// Creates the stack and records its two versions, as `plinth stack import` would.
fn load(client: &Client, token: &str, resources: usize) -> anyhow::Result<()> {
    client.api(
        "POST",
        &format!("stacks/{PROJECT}/{STACK}"),
        token,
        None,
        None,
    )?;
    for version in [1, 2] {
        let checkpoint = Checkpoint::new(
            &ProjectName::new(PROJECT)?,
            &StackName::new(STACK)?,
            snapshot(resources, version),
        )
        .to_json(&NoSecrets)?;
        let begun = client.api(
            "POST",
            &format!("stacks/{PROJECT}/{STACK}/updates"),
            token,
            None,
            Some(json!({ "kind": "import" })),
        )?;
        let id = begun["update_id"].as_str().context("no update id")?;
        let lease = begun["lease_token"].as_str().context("no lease")?;
        let entry = serde_json::to_value(HistoryEntry::ended_now(
            UpdateKind::Import,
            std::time::SystemTime::now(),
            UpdateResult::Succeeded,
            Default::default(),
        ))?;
        let phase = json!({
            "phase": 1, "entry": entry, "checkpoint": String::from_utf8(checkpoint)?,
        });
        let path = format!("updates/{id}/phases");
        client.api("POST", &path, token, Some(lease), Some(phase))?;
        let path = format!("updates/{id}/complete");
        let done = json!({ "result": "succeeded" });
        client.api("POST", &path, token, Some(lease), Some(done))?;
    }
    Ok(())
}

/// An HTTP client of the service that follows no redirect and keeps no cookie.
#[derive(Clone)]
struct Client {
    url: String,
    agent: ureq::Agent,
}

impl Client {
    fn new(url: &str) -> Client {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .save_redirect_history(false)
            .max_idle_connections_per_host(64)
            .build()
            .into();
        Client {
            url: url.to_owned(),
            agent,
        }
    }

    fn api(
        &self,
        method: &str,
        path: &str,
        token: &str,
        lease: Option<&str>,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}/api/v1/{path}", self.url))
            .header("Authorization", format!("token {token}"))
            .header("Content-Type", "application/json");
        if let Some(lease) = lease {
            request = request.header("X-Plinth-Lease", lease);
        }
        let body = body.map_or_else(Vec::new, |b| b.to_string().into_bytes());
        let mut response = self.agent.run(request.body(body)?)?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()?;
        if !status.is_success() {
            bail!("{method} {path}: {status}: {text}");
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// A page, as a signed-in user: its size.
    fn get(&self, path: &str, session: &str) -> anyhow::Result<usize> {
        let request = ureq::http::Request::builder()
            .uri(format!("{}{path}", self.url))
            .header("Cookie", session)
            .body(())?;
        let mut response = self.agent.run(request)?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()?;
        if status != 200 {
            bail!("GET {path}: {status}: {text}");
        }
        Ok(text.len())
    }

    /// Signs in with `token`: the session's `Cookie` header.
    fn sign_in(&self, token: &str) -> anyhow::Result<String> {
        let request = ureq::http::Request::builder()
            .uri(format!("{}/signin", self.url))
            .body(())?;
        let mut form = self.agent.run(request)?;
        let signin = cookie(form.headers(), "plinth_signin")?;
        let page = form.body_mut().read_to_string()?;
        let at = page
            .find("name=\"csrf\" value=\"")
            .context("no CSRF field")?
            + 19;
        let csrf = &page[at..at + 64];
        let request = ureq::http::Request::builder()
            .method("POST")
            .uri(format!("{}/signin", self.url))
            .header("Cookie", signin)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("csrf={csrf}&token={}", url_encoded(token)))?;
        let signed = self.agent.run(request)?;
        if signed.status() != 303 {
            bail!("signing in: {}", signed.status());
        }
        cookie(signed.headers(), "plinth_session")
    }
}

/// The `name=value` of the `Set-Cookie` of cookie `name`.
fn cookie(headers: &ureq::http::HeaderMap, name: &str) -> anyhow::Result<String> {
    (headers.get_all("set-cookie").iter())
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with(&format!("{name}=")))
        .and_then(|c| c.split(';').next())
        .map(str::to_owned)
        .with_context(|| format!("no cookie {name}"))
}
