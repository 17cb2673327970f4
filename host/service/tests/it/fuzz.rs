//! The protocol fuzzed: thousands of generated requests against every route of a real
//! `plinth-serve` on a real PostgreSQL. Structure-aware (each route's valid body with hostile
//! values put in its fields, keys added or dropped, subtrees replaced), plus random bytes and
//! hostile path segments and query values; the OIDC exchange gets valid, forged, stranger-signed,
//! unsigned and wrong-audience ID tokens of a live test issuer. No answer may be a 5xx, every answer that is not a
//! success is `{"message"}` JSON, and afterwards every stack still begins, cancels and is
//! removed.
//!
//! Deterministic: a seeded generator (`PLINTH_FUZZ_SEED`, default fixed) and a count of
//! requests (`PLINTH_FUZZ_CASES`, default 2,000) reproduce a run; a failure prints both.

use std::process::Command;

use crate::common::*;
use plinth_test_oidc::{Issuer, RSA_KID};
use serde_json::{Value, json};

const AUDIENCE: &str = "https://plinth.test";

/// SplitMix64: small, fast, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let length = self.below(max + 1);
        (0..length).map(|_| self.next() as u8).collect()
    }
}

/// Strings a hostile client sends.
fn hostile_string(rng: &mut Rng) -> String {
    match rng.below(12) {
        0 => String::new(),
        1 => "\u{0}".to_owned(),
        2 => "a\u{0}b".to_owned(),
        3 => "x".repeat(rng.below(200_000)),
        4 => "\u{1b}[31mred\u{1b}[0m\r\n".to_owned(),
        5 => "..".to_owned(),
        6 => "../../etc/passwd".to_owned(),
        7 => "'; DROP TABLE stacks; --".to_owned(),
        8 => "\u{feff}\u{202e}ü日本\u{10ffff}".to_owned(),
        9 => "update".to_owned(),
        10 => "created-as-begun".to_owned(),
        _ => String::from_utf8_lossy(&rng.bytes(40)).into_owned(),
    }
}

/// Values a hostile client puts where another was expected.
fn hostile_value(rng: &mut Rng) -> Value {
    match rng.below(14) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(i64::MIN),
        3 => json!(i64::MAX),
        4 => json!(u64::MAX),
        5 => json!(-1),
        6 => json!(0),
        7 => json!(1.5e308),
        8 => json!([]),
        9 => json!({}),
        10 => json!([hostile_string(rng), 1, null]),
        11 => json!({ "entry": "created-as-begun", "seq": rng.below(5) }),
        _ => Value::String(hostile_string(rng)),
    }
}

/// `value` with a few of its parts made hostile: a leaf replaced, a key added or dropped.
fn mutated(rng: &mut Rng, mut value: Value) -> Value {
    for _ in 0..=rng.below(3) {
        mutate_one(rng, &mut value);
    }
    value
}

fn mutate_one(rng: &mut Rng, value: &mut Value) {
    match value {
        Value::Object(fields) if !fields.is_empty() && rng.chance(70) => {
            let keys: Vec<String> = fields.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            match rng.below(5) {
                0 => {
                    fields.remove(&key);
                }
                1 => {
                    fields.insert(hostile_string(rng), hostile_value(rng));
                }
                _ => mutate_one(rng, fields.get_mut(&key).expect("a key of it")),
            }
        }
        Value::Array(items) if !items.is_empty() && rng.chance(70) => {
            let index = rng.below(items.len());
            match rng.below(5) {
                0 => {
                    items.remove(index);
                }
                1 => items.push(hostile_value(rng)),
                _ => mutate_one(rng, &mut items[index]),
            }
        }
        other => *other = hostile_value(rng),
    }
}

/// Every byte but the unreserved ones percent-encoded.
fn encoded(text: &[u8]) -> String {
    text.iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A path segment: mostly one that exists, sometimes a hostile one.
fn segment(rng: &mut Rng, usual: &[&str]) -> String {
    if rng.chance(75) {
        return rng.pick(usual).to_string();
    }
    match rng.below(4) {
        0 => encoded(&rng.bytes(12)),
        1 => encoded("x".repeat(rng.below(300)).as_bytes()),
        2 => rng
            .pick(&["..", ".x", "%00", "%FF%FE", "a%2Fb", "%2E%2E"])
            .to_string(),
        _ => encoded(
            hostile_string(rng)
                .as_bytes()
                .get(..300)
                .unwrap_or_default(),
        ),
    }
}

struct Target {
    update: String,
    lease: String,
    /// ID tokens of the test issuer: valid, forged, of a stranger's key, unsigned.
    id_tokens: Vec<String>,
}

/// A request the fuzz sends: method, path under `/api/v1/` (or outside it), lease, body.
struct Request {
    method: &'static str,
    path: String,
    lease: Option<String>,
    body: Option<Vec<u8>>,
    json_type: bool,
}

const STACKS: &[&str] = &["f1", "f2", "f3"];

fn generate(rng: &mut Rng, target: &Target) -> Request {
    let (p, s) = (segment(rng, &["fz"]), segment(rng, STACKS));
    let update = segment(
        rng,
        &[&target.update, "00000000-0000-0000-0000-000000000000"],
    );
    let seq = rng.below(6) as u64 + 1;
    let resource = resource(&format!("r{}", rng.below(4)), Default::default());
    let query = |rng: &mut Rng, names: &[&str]| -> String {
        let name = rng.pick(names);
        let value = match rng.below(3) {
            0 => rng.below(5).to_string(),
            1 => encoded(
                hostile_string(rng)
                    .as_bytes()
                    .get(..100)
                    .unwrap_or_default(),
            ),
            _ => i64::MIN.to_string(),
        };
        format!("?{name}={value}")
    };
    let event = json!({ "seq": seq, "at_ms": 1, "event": "diagnostic", "severity": "info",
                        "message": "m" });
    let token_id = segment(rng, &["0123456789ab"]);
    let (method, path, body): (&'static str, String, Option<Value>) = match rng.below(24) {
        0 => ("GET", "user".into(), None),
        1 => ("GET", format!("stacks/{p}"), None),
        2 => ("GET", format!("stacks/{p}/{s}"), None),
        3 => ("POST", format!("stacks/{p}/{s}"), None),
        4 => (
            "DELETE",
            format!("stacks/{p}/{s}{}", query(rng, &["force"])),
            None,
        ),
        5 => (
            "POST",
            format!("stacks/{p}/{s}/updates"),
            Some(json!({ "kind": "update", "request_id": "6f9619ff-8b86-d011-b42d-00cf4fc964ff" })),
        ),
        6 => ("POST", format!("stacks/{p}/{s}/cancel"), None),
        7 => (
            "GET",
            format!(
                "stacks/{p}/{s}/history{}",
                query(rng, &["page", "per_page"])
            ),
            None,
        ),
        8 => (
            "GET",
            format!("stacks/{p}/{s}/export{}", query(rng, &["version"])),
            None,
        ),
        9 => (
            "GET",
            format!("stacks/{p}/{s}/logs{}", query(rng, &["update", "after"])),
            None,
        ),
        10 => (
            "POST",
            format!("stacks/{p}/{s}/secrets/seal"),
            Some(json!({ "plaintexts": ["a", "b"] })),
        ),
        11 => (
            "POST",
            format!("stacks/{p}/{s}/secrets/open"),
            Some(json!({ "ciphertexts": ["v1:AAAA"] })),
        ),
        12 => (
            "POST",
            format!("updates/{update}/journal"),
            Some(json!({ "seq": seq, "entries": creating(seq, &resource, rng.chance(50)) })),
        ),
        13 => ("GET", format!("updates/{update}/journal"), None),
        14 => (
            "POST",
            format!("updates/{update}/events"),
            Some(json!({ "seq": seq, "events": [event] })),
        ),
        15 => (
            "POST",
            format!("updates/{update}/phases"),
            Some(json!({ "phase": seq, "entry": history_entry("update") })),
        ),
        16 => ("POST", format!("updates/{update}/renew"), Some(json!({}))),
        17 => (
            "POST",
            format!("updates/{update}/complete"),
            Some(json!({ "result": "failed", "entry": history_entry("update") })),
        ),
        18 => (
            "GET",
            format!(
                "audit{}",
                query(rng, &["stack", "user", "since", "before", "per_page"])
            ),
            None,
        ),
        19 => (
            "POST",
            "tokens".into(),
            Some(json!({ "name": "n", "level": "read", "project": p, "expires_in": 60 })),
        ),
        20 => ("GET", format!("tokens{}", query(rng, &["user"])), None),
        21 => ("DELETE", format!("tokens/{token_id}"), None),
        22 => (
            "POST",
            "oidc/exchange".into(),
            Some(json!({ "token": rng.pick(&target.id_tokens) })),
        ),
        _ => (
            *rng.pick(&["GET", "PUT", "PATCH", "POST", "DELETE"]),
            format!(
                "{}/{}",
                segment(rng, &["nothing", "stacks"]),
                segment(rng, &["x"])
            ),
            None,
        ),
    };
    let body = match (body, rng.below(10)) {
        (_, 0) => Some(rng.bytes(300)),
        (Some(body), 1..=5) => Some(serde_json::to_vec(&mutated(rng, body)).unwrap()),
        (Some(body), _) => Some(serde_json::to_vec(&body).unwrap()),
        (None, 1) => Some(serde_json::to_vec(&hostile_value(rng)).unwrap()),
        (None, _) => None,
    };
    let lease = match rng.below(10) {
        0 => None,
        // Within what a client's header buffer takes.
        1 => Some(
            (hostile_string(rng).chars())
                .filter(|c| c.is_ascii_graphic())
                .take(1000)
                .collect(),
        ),
        _ => Some(target.lease.clone()),
    };
    // A body only where HTTP has one (the client refuses some others).
    let body = body.filter(|_| method == "POST" || method == "PUT" || method == "PATCH");
    Request {
        method,
        path,
        lease,
        body,
        json_type: rng.chance(95),
    }
}

fn send_request(
    agent: &ureq::Agent,
    service: &Service,
    token: &str,
    r: &Request,
) -> (u16, String, String) {
    let url = format!("{}/api/v1/{}", service.url, r.path);
    let mut request = ureq::http::Request::builder()
        .method(r.method)
        .uri(&url)
        .header("Authorization", format!("token {token}"));
    if let Some(lease) = &r.lease {
        request = request.header("X-Plinth-Lease", lease);
    }
    if r.json_type {
        request = request.header("Content-Type", "application/json");
    }
    let request = request.body(r.body.clone().unwrap_or_default()).unwrap();
    let mut response = agent.run(request).unwrap_or_else(|e| {
        panic!(
            "{} {url} {:?} {:?}: {e}",
            r.method,
            r.lease.as_ref().map(String::len),
            r.body.as_ref().map(Vec::len)
        )
    });
    let kind = (response.headers().get("Content-Type"))
        .map(|v| v.to_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    (response.status().as_u16(), kind, text)
}

#[test]
fn thousands_of_hostile_requests_get_no_5xx_and_every_refusal_is_a_json_message() {
    let seed: u64 = std::env::var("PLINTH_FUZZ_SEED").map_or(27, |s| s.parse().unwrap());
    let cases: usize = std::env::var("PLINTH_FUZZ_CASES").map_or(2000, |s| s.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("master.key");
    let out = Command::new(serve_binary())
        .args(["key", "create"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // A live issuer, so that exchanges are refused or granted, never left unanswered.
    let issuer = Issuer::start();
    let oidc = dir.path().join("oidc.yaml");
    let oidc_config = format!(
        "issuers:\n  - issuer: {}\n    audiences: [{AUDIENCE}]\n    rules:\n      \
         - claims: {{ repository: octo/shop }}\n        level: read\n        project: fz\n",
        issuer.url
    );
    std::fs::write(&oidc, oidc_config).unwrap();
    let good = issuer.claims(AUDIENCE, json!({}));
    let valid = issuer.rs256(&good);
    let mut forged = valid.clone().into_bytes();
    let last = forged.len() - 2;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let id_tokens = vec![
        valid,
        String::from_utf8(forged).unwrap(),
        issuer.by_a_stranger("stranger", &good),
        Issuer::unsigned(&json!({ "alg": "none", "kid": RSA_KID }), &good),
        issuer.es256(&issuer.claims("another audience", json!({}))),
    ];
    let (_server, db) = database();
    let service = serve(
        &db,
        &[
            "--master-key",
            key.to_str().unwrap(),
            "--oidc-config",
            oidc.to_str().unwrap(),
        ],
    );
    let alice = token(&db, "alice");
    for stack in STACKS {
        call(
            &service,
            "POST",
            &format!("stacks/fz/{stack}"),
            Some(&alice),
            None,
            None,
        );
    }
    let (status, begun) = call(
        &service,
        "POST",
        "stacks/fz/f1/updates",
        Some(&alice),
        None,
        Some(json!({ "kind": "update" })),
    );
    assert_eq!(status, 200, "{begun}");
    let (update, lease) = lease_of(&begun);
    let target = Target {
        update,
        lease,
        id_tokens,
    };
    // A connection of its own per case: a refusal answered before its body was read ends
    // the connection (hyper does not drain a body nobody reads), and a pooled connection
    // reused in that moment fails on the client's side, by scheduling luck, not by any answer.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections_per_host(0)
        .build()
        .into();
    let mut rng = Rng(seed);
    let mut statuses = std::collections::BTreeMap::new();
    for case in 0..cases {
        let request = generate(&mut rng, &target);
        let (status, kind, text) = send_request(&agent, &service, &alice, &request);
        *statuses.entry(status).or_insert(0) += 1;
        let shown = || {
            let body = request
                .body
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            format!(
                "case {case} of seed {seed} (PLINTH_FUZZ_SEED={seed} PLINTH_FUZZ_CASES={}): {} \
                 /api/v1/{} {:.300}\n-> {status} {kind}: {text:.500}",
                case + 1,
                request.method,
                request.path,
                body
            )
        };
        assert!(status < 500, "{}", shown());
        if !(200..300).contains(&status) {
            let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            assert!(kind.starts_with("application/json"), "{}", shown());
            assert!(
                answer["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{}",
                shown()
            );
        }
    }
    eprintln!("{cases} requests of seed {seed}, by status: {statuses:?}");
    assert!(
        statuses.keys().any(|s| (200..300).contains(s)),
        "some requests succeed"
    );
    assert!(statuses.contains_key(&400), "some are refused");
    assert!(statuses.contains_key(&401), "some ID tokens are refused");

    // Whatever it left, every stack begins, cancels and is removed.
    for stack in STACKS {
        let path = format!("stacks/fz/{stack}");
        let (status, body) = call(&service, "POST", &path, Some(&alice), None, None);
        assert!(status == 201 || status == 409, "{stack}: {body}");
        let (status, body) = call(
            &service,
            "POST",
            &format!("{path}/cancel"),
            Some(&alice),
            None,
            None,
        );
        assert_eq!(status, 200, "{stack}: {body}");
        let (status, body) = call(
            &service,
            "POST",
            &format!("{path}/updates"),
            Some(&alice),
            None,
            Some(json!({ "kind": "destroy" })),
        );
        assert_eq!(status, 200, "{stack}: {body}");
        let (status, body) = call(
            &service,
            "POST",
            &format!("{path}/cancel"),
            Some(&alice),
            None,
            None,
        );
        assert_eq!(status, 200, "{stack}: {body}");
        let (status, body) = call(
            &service,
            "DELETE",
            &format!("{path}?force=true"),
            Some(&alice),
            None,
            None,
        );
        assert_eq!(status, 200, "{stack}: {body}");
    }
}
