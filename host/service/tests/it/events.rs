//! Engine events on the service, against real `plinth-serve` processes on a real PostgreSQL:
//! numbered batches stored once, read back in order for `plinth logs`, refused once the lease is
//! gone; the client's event log batching and flushing, and never blocking the update's steps.

use std::process::Command;

use crate::common::*;
use plinth_backend::EventLog;
use plinth_backend::service::{ServiceEventLog, Transport, fetch_log};
use plinth_engine::events::{Event, Severity};
use plinth_engine::names::{ProjectName, StackName};
use plinth_state::protocol::{EVENTS_BATCH, EVENTS_BATCH_MAX};
use plinth_test_postgres::Postgres;
use serde_json::{Value, json};

/// Events numbered `from..to` as the client logs them: diagnostics saying their number.
fn logged(from: u64, to: u64) -> Vec<Value> {
    (from..to)
        .map(|seq| {
            json!({ "seq": seq, "at_ms": seq, "event": "diagnostic", "severity": "info",
                    "message": format!("event {seq}") })
        })
        .collect()
}

fn batch(seq: u64, events: Vec<Value>) -> Option<Value> {
    Some(json!({ "seq": seq, "events": events }))
}

/// The messages of a log page's or a log's events.
fn messages(events: &Value) -> Vec<String> {
    (events.as_array().unwrap().iter())
        .map(|e| e["message"].as_str().unwrap().to_owned())
        .collect()
}

fn numbered(from: u64, to: u64) -> Vec<String> {
    (from..to).map(|seq| format!("event {seq}")).collect()
}

/// The event batches stored in the database at `url`, as `update phase seq size` lines.
fn stored_batches(server: &Postgres, url: &str) -> String {
    let name = url.rsplit('/').next().unwrap();
    server
        .psql(
            name,
            "SELECT phase, seq, json_array_length(events) FROM event_batches
             ORDER BY update_id, phase, seq",
        )
        .unwrap()
}

fn logs(service: &Service, token: &str, query: &str) -> (u16, Value) {
    call(
        service,
        "GET",
        &format!("stacks/p/dev/logs{query}"),
        Some(token),
        None,
        None,
    )
}

#[test]
fn batches_are_stored_once_within_the_in_flight_window_and_read_back_in_order() {
    let (server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let (status, body) = logs(&service, &alice, "");
    assert_eq!(status, 404, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("no updates yet"),
        "{body}"
    );
    let running = lease_of(&begin(&service, &alice, "dev").1);
    let events = |body| on_update(&service, &alice, &running, "events", body);

    let (status, body) = events(batch(1, logged(1, 51)));
    assert_eq!((status, &body["retry"]), (200, &json!(false)), "{body}");
    // Up to three batches are in flight: the third may arrive before the second.
    let (status, body) = events(batch(3, logged(101, 121)));
    assert_eq!(status, 200, "{body}");
    let (status, body) = events(batch(6, logged(200, 201)));
    assert_eq!(
        status, 409,
        "more than three ahead of what is stored: {body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("too early"),
        "{body}"
    );
    let (status, _) = events(batch(2, logged(51, 101)));
    assert_eq!(status, 200);
    // The answer was lost and the client sends the batch again; then one that is not it.
    let (status, body) = events(batch(2, logged(51, 101)));
    assert_eq!((status, &body["retry"]), (200, &json!(true)), "{body}");
    let (status, body) = events(batch(2, logged(52, 102)));
    assert_eq!(status, 409, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("never rewritten"),
        "{body}"
    );
    assert_eq!(stored_batches(&server, &db), "1|1|50\n1|2|50\n1|3|20\n");

    // What is not a batch of logged events is refused as it arrives.
    for (bad, why) in [
        (batch(4, vec![]), "an empty batch"),
        (
            batch(4, logged(121, 122 + EVENTS_BATCH_MAX as u64)),
            "one event more than a batch takes",
        ),
        (
            batch(
                4,
                vec![json!({ "seq": 121, "at_ms": 0, "event": "outputs" })],
            ),
            "no such event",
        ),
        (
            batch(
                4,
                vec![logged(122, 123)[0].clone(), logged(121, 122)[0].clone()],
            ),
            "disordered",
        ),
        (batch(0, logged(121, 122)), "batch 0"),
    ] {
        let (status, body) = events(bad);
        assert_eq!(status, 400, "{why}: {body}");
    }

    // The phase makes version 1, whose log is the events in order.
    let phase = Some(json!({ "phase": 1, "entry": history_entry("update") }));
    assert_eq!(
        on_update(&service, &alice, &running, "phases", phase).0,
        200
    );
    let (status, log) = logs(&service, &alice, "");
    assert_eq!(status, 200, "{log}");
    assert_eq!((&log["number"], &log["next"]), (&json!(1), &Value::Null));
    assert_eq!(log["entry"]["kind"], "update");
    assert_eq!(messages(&log["events"]), numbered(1, 121));

    // The update's next phase keeps a log of its own, numbered from batch 1 again; 25 batches
    // are read back a page (20 batches) at a time.
    for seq in 1..=25 {
        let from = 1000 + (seq - 1) * 50;
        let (status, body) = events(batch(seq, logged(from, from + 50)));
        assert_eq!(status, 200, "batch {seq}: {body}");
    }
    // Batch 28 may come before 26 and 27, but batch 31 only once they are stored: the service
    // looks at the three batches before its window, each of which came after the three before
    // it, and so on.
    let (status, body) = events(batch(28, logged(2250, 2300)));
    assert_eq!(status, 200, "{body}");
    let (status, body) = events(batch(31, logged(2300, 2301)));
    assert_eq!(status, 409, "26 and 27 are missing: {body}");
    let phase = Some(json!({ "phase": 2, "entry": history_entry("update") }));
    assert_eq!(
        on_update(&service, &alice, &running, "phases", phase).0,
        200
    );
    let (status, first) = logs(&service, &alice, "?update=2");
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["next"], 20);
    assert_eq!(messages(&first["events"]), numbered(1000, 2000));
    let (_, rest) = logs(&service, &alice, "?update=2&after=20");
    assert_eq!(rest["next"], Value::Null);
    assert_eq!(messages(&rest["events"]), numbered(2000, 2300));
    let (_, earlier) = logs(&service, &alice, "?update=1");
    assert_eq!(messages(&earlier["events"]), numbered(1, 121));

    let (status, body) = logs(&service, &alice, "?update=3");
    assert_eq!(status, 404, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("no update 3"),
        "{body}"
    );
    let (status, _) = call(
        &service,
        "GET",
        "stacks/p/none/logs",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 404);
}

#[test]
fn events_are_refused_once_the_lease_is_gone_and_to_another_updates_token() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    create_stack(&service, &alice, "other");
    let running = lease_of(&begin(&service, &alice, "dev").1);
    let other = lease_of(&begin(&service, &alice, "other").1);
    let crossed = (running.0.clone(), other.1.clone());
    let (status, body) = on_update(&service, &alice, &crossed, "events", batch(1, logged(1, 2)));
    assert_eq!(status, 401, "{body}");
    let (status, _) = on_update(&service, &alice, &running, "events", batch(1, logged(1, 2)));
    assert_eq!(status, 200);

    let (status, _) = cancel(&service, &alice);
    assert_eq!(status, 200);
    let (status, body) = on_update(&service, &alice, &running, "events", batch(2, logged(2, 3)));
    assert_eq!(status, 403, "{body}");
    // A retry of a batch stored before is refused too: nothing is acknowledged after the end.
    let (status, _) = on_update(&service, &alice, &running, "events", batch(1, logged(1, 2)));
    assert_eq!(status, 403);
}

fn diagnostic(n: usize) -> Event {
    Event::Diagnostic {
        urn: None,
        severity: Severity::Info,
        message: format!("event {n}"),
    }
}

fn names() -> (ProjectName, StackName) {
    (
        ProjectName::new("p").unwrap(),
        StackName::new("dev").unwrap(),
    )
}

#[test]
fn the_client_sends_120_events_as_3_batches_in_order_and_finish_flushes_the_rest() {
    let (server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let transport = Transport::new(&service.url, &alice);
    let (project, stack) = names();
    assert!(
        fetch_log(&transport, &project, &stack, None)
            .unwrap()
            .is_none()
    );
    let (update, lease) = begin_through(&transport);

    let mut log = Box::new(ServiceEventLog::start(
        transport.clone(),
        &update,
        &lease,
        EVENTS_BATCH,
    ));
    for n in 1..=120 {
        log.record(&diagnostic(n));
        // Outputs are values: a log never keeps them.
        log.record(&Event::Outputs {
            old: Default::default(),
            new: Default::default(),
        });
    }
    log.finish().unwrap();
    assert_eq!(stored_batches(&server, &db), "1|1|50\n1|2|50\n1|3|20\n");

    let phase = json!({ "phase": 1, "entry": history_entry("update") });
    let path = format!("updates/{update}/phases");
    transport
        .call("POST", &path, Some(&lease), Some(&phase))
        .unwrap();
    let read = fetch_log(&transport, &project, &stack, None)
        .unwrap()
        .unwrap();
    assert_eq!(read.number, 1);
    let seqs: Vec<u64> = read.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=120).collect::<Vec<_>>());
    assert_eq!(
        fetch_log(&transport, &project, &stack, Some(1)).unwrap(),
        Some(read)
    );
    assert_eq!(
        fetch_log(&transport, &project, &stack, Some(2)).unwrap(),
        None
    );
    let gone = StackName::new("gone").unwrap();
    assert!(
        fetch_log(&transport, &project, &gone, None).is_err(),
        "a missing stack is an error"
    );
}

/// What a begun update is told it may send: batches of up to 1,000 events, which a log page
/// reads back whole.
#[test]
fn the_client_sends_batches_as_large_as_the_service_takes_and_the_log_reads_them_back() {
    let (server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let transport = Transport::new(&service.url, &alice);
    let (_, begun) = begin(&service, &alice, "dev");
    assert_eq!(begun["events_batch"], EVENTS_BATCH_MAX, "{begun}");
    let (update, lease) = lease_of(&begun);

    let mut log = Box::new(ServiceEventLog::start(
        transport.clone(),
        &update,
        &lease,
        EVENTS_BATCH_MAX,
    ));
    for n in 1..=2_500 {
        log.record(&diagnostic(n));
    }
    log.finish().unwrap();
    assert_eq!(
        stored_batches(&server, &db),
        "1|1|1000\n1|2|1000\n1|3|500\n"
    );
    let phase = json!({ "phase": 1, "entry": history_entry("update") });
    let path = format!("updates/{update}/phases");
    transport
        .call("POST", &path, Some(&lease), Some(&phase))
        .unwrap();
    let (project, stack) = names();
    let read = fetch_log(&transport, &project, &stack, None)
        .unwrap()
        .unwrap();
    let seqs: Vec<u64> = read.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=2_500).collect::<Vec<_>>());
}

/// Pauses (SIGSTOP) or resumes (SIGCONT) a process.
fn signal(service: &Service, which: &str) {
    let status = Command::new("kill")
        .args([which, &service.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn recording_never_waits_for_the_service_and_finish_reports_a_failure() {
    let Updating {
        server: _server,
        db: _,
        service,
        alice: _,
        transport,
        update,
        lease,
    } = updating();

    // The service answers nothing while paused: had recording waited on a request, it would
    // never return, since the service resumes only after.
    let mut log = Box::new(ServiceEventLog::start(
        transport.clone(),
        &update,
        &lease,
        EVENTS_BATCH,
    ));
    signal(&service, "-STOP");
    for n in 1..=1000 {
        log.record(&diagnostic(n));
    }
    signal(&service, "-CONT");
    log.finish().unwrap();
    let phase = json!({ "phase": 1, "entry": history_entry("update") });
    let path = format!("updates/{update}/phases");
    transport
        .call("POST", &path, Some(&lease), Some(&phase))
        .unwrap();
    let (project, stack) = names();
    let read = fetch_log(&transport, &project, &stack, None)
        .unwrap()
        .unwrap();
    assert_eq!(
        read.events.len(),
        1000,
        "every event arrives once the service is back"
    );

    // A service that is gone for good: recording still returns, and finish says what failed.
    let mut log = Box::new(ServiceEventLog::start(
        transport.clone(),
        &update,
        &lease,
        EVENTS_BATCH,
    ));
    log.record(&diagnostic(1));
    drop(service);
    for n in 2..=200 {
        log.record(&diagnostic(n));
    }
    let error = log.finish().unwrap_err();
    let message = format!("{error:#}");
    assert!(message.contains(&format!("update {update}")), "{message}");
    let source = std::error::Error::source(&error)
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(source.contains("unavailable"), "{message}: {source}");
}

#[test]
fn a_lost_lease_stops_the_client_log_and_finish_says_so() {
    let Updating {
        server: _server,
        db: _,
        service,
        alice,
        transport,
        update,
        lease,
    } = updating();
    let (status, _) = cancel(&service, &alice);
    assert_eq!(status, 200);

    let before = transport.traffic();
    let mut log = Box::new(ServiceEventLog::start(
        transport.clone(),
        &update,
        &lease,
        EVENTS_BATCH,
    ));
    for n in 1..=500 {
        log.record(&diagnostic(n));
    }
    let error = log.finish().unwrap_err();
    let source = std::error::Error::source(&error)
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        source.contains("no longer holds its stack"),
        "{error}: {source}"
    );
    // The first refusal stopped the sender: of ten batches, only those already in flight went.
    let sent = transport.traffic().requests - before.requests;
    assert!((1..=3).contains(&sent), "{sent} batches sent");
}
