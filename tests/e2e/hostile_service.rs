//! A hostile service: every string a backend service answers (the token's user, stack names,
//! who ran an update, error messages) reaches the terminal escaped, never on a line of its own.
//! The service is a stand-in in the test that answers each route with such strings.

use std::io::{Read, Write};
use std::net::TcpListener;

use plinth_backend::{HistoryEntry, UpdateKind, UpdateResult};
use plinth_engine::events::ChangeSummary;
use serde_json::json;

use crate::support::{Env, ServiceLogin};

/// What would erase the line above and print a fake one of plinth's.
const FAKE: &str = "x\u{1b}[1A\u{1b}[2K\n[fake] created\r";
/// [`FAKE`] as escaped text.
const SHOWN: &str = r"x\u{1b}[1A\u{1b}[2K\n[fake] created\r";

/// The answer of the hostile service to `request` (its first line): a status and JSON.
fn answer(request: &str) -> (u16, serde_json::Value) {
    let path = request.split(' ').nth(1).unwrap_or("");
    if path == "/api/v1/user" {
        (200, json!({ "name": FAKE }))
    } else if path == "/api/v1/stacks/scenario" {
        let stacks = [("dev", 1), (FAKE, 2)].map(
            |(name, resources)| json!({ "name": name, "resources": resources, "locked": false }),
        );
        (200, json!({ "stacks": stacks }))
    } else if path.starts_with("/api/v1/stacks/scenario/dev/history") {
        let entry = HistoryEntry::ended_now(
            UpdateKind::Update,
            std::time::SystemTime::now(),
            UpdateResult::Succeeded,
            ChangeSummary::default(),
        );
        (
            200,
            json!({ "versions": [{ "entry": entry, "user": FAKE }], "total": 1 }),
        )
    } else if path.starts_with("/api/v1/stacks/scenario/gone") {
        (400, json!({ "message": FAKE }))
    } else {
        (200, json!({}))
    }
}

/// Serves [`answer`] on a local port until the test ends; returns its URL.
fn hostile_service() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // The head, and the body its Content-Length announces, if any.
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = (text.lines())
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let text = String::from_utf8_lossy(&request);
            let (status, body) = answer(text.lines().next().unwrap_or(""));
            let body = body.to_string();
            let head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    url
}

/// Fails unless `text` has no raw control character but newlines, and no line of its own
/// starting with the fake one.
fn assert_inert(text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "raw control characters in:\n{text}"
    );
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("[fake]")),
        "a fake line in:\n{text}"
    );
}

#[test]
fn what_a_hostile_service_answers_is_shown_escaped() {
    let env = Env::scenario_on(ServiceLogin {
        url: hostile_service(),
        token: "token".into(),
    });
    let printed = |args: &[&str]| {
        let out = env.command(args).output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap()
        );
        assert_inert(&text);
        (out.status.success(), text)
    };

    let (ok, text) = printed(&["whoami"]);
    assert!(ok && text.contains(&format!("User: {SHOWN}")), "{text}");

    // A stack name no plinth accepts is refused, shown escaped.
    let (ok, text) = printed(&["stack", "ls"]);
    assert!(!ok && text.contains(&format!("stack `{SHOWN}`")), "{text}");

    let (ok, text) = printed(&["stack", "history"]);
    assert!(ok && text.contains(SHOWN), "{text}");

    // The service's error message stays on its line.
    let (ok, text) = printed(&["stack", "select", "gone"]);
    assert!(!ok && text.contains(SHOWN), "{text}");
}
