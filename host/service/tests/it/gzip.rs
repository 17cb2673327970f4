//! gzip on the wire, against a real `plinth-serve` on a real PostgreSQL: gzipped request bodies
//! are accepted, within the body limit as decompressed (a gzip bomb gets 413); answers are
//! compressed for a client that accepts it (zstd if it prefers that, as the CLI does); the
//! client gzips what is worth it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use crate::common::*;
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use plinth_backend::secrets::PassphraseCrypter;
use plinth_backend::service::ServicePersister;
use plinth_engine::journal::Persister;
use plinth_engine::value::Value as PValue;
use serde_json::{Value, json};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// A POST with a body sent exactly as given, with `Content-Encoding: encoding`.
fn post_encoded(service: &Service, token: &str, path: &str, encoding: &str, body: Vec<u8>) -> u16 {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let request = ureq::http::Request::builder()
        .method("POST")
        .uri(format!("{}/api/v1/{path}", service.url))
        .header("Authorization", format!("token {token}"))
        .header("Content-Type", "application/json")
        .header("Content-Encoding", encoding)
        .body(body)
        .unwrap();
    agent.run(request).unwrap().status().as_u16()
}

/// A begin request whose JSON is padded with `padding` bytes of white space.
fn padded_begin(padding: usize) -> Vec<u8> {
    format!("{{\"kind\": \"update\"{}}}", " ".repeat(padding)).into_bytes()
}

#[test]
fn gzipped_bodies_are_accepted_within_the_limit_and_a_gzip_bomb_gets_413() {
    let (_server, db) = database();
    let limit = 64 * 1024;
    let service = serve(&db, &["--body-limit", &limit.to_string()]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let path = "stacks/p/dev/updates";

    // Ten megabytes of white space, a few kilobytes gzipped: small on the wire, not once read.
    let bomb = gzip(&padded_begin(10 << 20));
    assert!(bomb.len() < limit, "{} bytes on the wire", bomb.len());
    assert_eq!(post_encoded(&service, &alice, path, "gzip", bomb), 413);
    assert_eq!(
        post_encoded(&service, &alice, path, "gzip", b"not gzip".to_vec()),
        400
    );
    assert_eq!(
        post_encoded(&service, &alice, path, "zstd", padded_begin(0)),
        415,
        "an encoding the service does not speak"
    );
    // The same request within the limit begins the update.
    let fits = gzip(&padded_begin(limit / 2));
    assert_eq!(post_encoded(&service, &alice, path, "gzip", fits), 200);
}

/// A GET over HTTP/1.0 (so the answer ends with the connection, unchunked), with
/// `Accept-Encoding: accept` if given: the answer's head and body as they came.
fn get_raw(service: &Service, token: &str, path: &str, accept: Option<&str>) -> (String, Vec<u8>) {
    let address = service.url.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(address).unwrap();
    let accept = accept.map_or_else(String::new, |a| format!("Accept-Encoding: {a}\r\n"));
    write!(
        stream,
        "GET /api/v1/{path} HTTP/1.0\r\nHost: {address}\r\nAuthorization: token {token}\r\n{accept}\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(answer[..split].to_vec()).unwrap();
    (head.to_ascii_lowercase(), answer[split + 4..].to_vec())
}

#[test]
fn answers_are_gzipped_for_a_client_that_accepts_it() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let (head, body) = get_raw(&service, &alice, "stacks/p/dev/export", Some("gzip"));
    assert!(head.contains("content-encoding: gzip"), "{head}");
    let mut json = String::new();
    GzDecoder::new(&body[..]).read_to_string(&mut json).unwrap();
    let checkpoint: Value = serde_json::from_str(&json).unwrap();
    assert!(checkpoint["snapshot"].is_object(), "{checkpoint}");

    let (head, body) = get_raw(&service, &alice, "stacks/p/dev/export", None);
    assert!(!head.contains("content-encoding"), "{head}");
    assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), checkpoint);

    // What the CLI asks for: zstd, else gzip.
    let prefers = Some("zstd, gzip;q=0.5");
    let (head, body) = get_raw(&service, &alice, "stacks/p/dev/export", prefers);
    assert!(head.contains("content-encoding: zstd"), "{head}");
    let json = zstd::decode_all(&body[..]).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&json).unwrap(), checkpoint);
}

#[test]
fn the_client_sends_a_journal_batch_of_100_entries_gzipped() {
    let Updating {
        server: _server,
        db: _,
        service: _service,
        alice: _,
        transport,
        update,
        lease,
    } = updating();
    let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
    let mut persister =
        ServicePersister::new(transport.clone(), &update, &lease, Arc::new(crypter));
    // Fifty resources, created: a begin and an end each, with inputs as providers see them.
    let mut entries = Vec::new();
    for i in 0..50u64 {
        let inputs = [
            ("name".to_owned(), PValue::String(format!("web-server-{i}"))),
            ("region".to_owned(), PValue::String("eu-west-1".into())),
            ("size".to_owned(), PValue::String("t3.micro".into())),
            ("port".to_owned(), PValue::Integer(8000 + i as i64)),
        ];
        entries.extend(creating(
            i + 1,
            &resource(&format!("web-{i}"), inputs.into()),
            false,
        ));
    }
    assert_eq!(entries.len(), 100);
    for entry in &entries {
        persister
            .append(&serde_json::from_value(entry.clone()).unwrap())
            .unwrap();
    }
    let before = transport.traffic();
    persister.sync().unwrap();
    let after = transport.traffic();
    let plain = serde_json::to_vec(&json!({ "seq": 1, "entries": entries }))
        .unwrap()
        .len() as u64;
    let sent = after.body_bytes - before.body_bytes;
    assert_eq!(after.requests - before.requests, 1);
    println!("a journal batch of 100 entries: {plain} bytes of JSON, {sent} bytes sent gzipped");
    assert!(
        sent * 4 < plain,
        "{sent} bytes sent for {plain} bytes of JSON"
    );

    let stored = transport
        .call("GET", &format!("updates/{update}/journal"), None, None)
        .unwrap();
    assert_eq!(stored["entries"].as_array().unwrap().len(), 100);
}
