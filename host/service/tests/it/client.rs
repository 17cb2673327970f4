//! The backend crate's client of the protocol against a real `plinth-serve` on a real
//! PostgreSQL: the journal goes in numbered batches of at most 100 and the service rebuilds the
//! state from them, secrets sealed by the client's key; a lost lease stops the persister with an
//! error that is not worth retrying.

use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use plinth_backend::Checkpoint;
use plinth_backend::secrets::PassphraseCrypter;
use plinth_backend::service::{LeaseKeeper, LeaseState, ServiceError, ServicePersister, Transport};
use plinth_engine::journal::{JournalEntry, Persister, SyncWaker};
use plinth_engine::names::StackName;
use plinth_engine::value::Value as PValue;
use plinth_state::protocol::JOURNAL_IN_FLIGHT;
use plinth_test_postgres::Postgres;
use serde_json::{Value, json};

#[test]
fn the_journal_goes_in_batches_and_the_service_rebuilds_the_state_secrets_sealed() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let transport = Transport::new(&service.url, &alice);
    let begun = (transport.call(
        "POST",
        "stacks/p/dev/updates",
        None,
        Some(&json!({ "kind": "update" })),
    ))
    .unwrap();
    // The service takes the short end of a create, which the persister then sends.
    assert_eq!(
        begun["journal_extensions"],
        json!([plinth_backend::CREATED_AS_BEGUN])
    );
    let (update, lease) = lease_of(&begun);
    let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
    let crypter = Arc::new(crypter);
    let mut persister = ServicePersister::new(transport.clone(), &update, &lease, crypter.clone())
        .shortening_creates();
    let secret = PValue::Secret(Box::new(PValue::String("hunter2".into())));
    for i in 0..125u64 {
        let r = resource(
            &format!("r{i}"),
            [("token".to_owned(), secret.clone())].into(),
        );
        let begin = creating(i + 1, &r, true).remove(0);
        persister
            .append(&serde_json::from_value(begin).unwrap())
            .unwrap();
        let mut created = r.clone();
        created.id = format!("id-{i}");
        created.outputs = [("password".to_owned(), secret.clone())].into();
        persister
            .append(&JournalEntry::Created {
                seq: i + 1,
                resource: created,
                replaces: None,
            })
            .unwrap();
    }
    persister.sync().unwrap();
    // A sync with nothing new sends nothing.
    persister.sync().unwrap();

    let journal = transport
        .call("GET", &format!("updates/{update}/journal"), None, None)
        .unwrap();
    let entries = journal["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 250);
    let short = (entries.iter())
        .filter(|e| e["entry"] == "created-as-begun")
        .count();
    assert_eq!(short, 125, "every create's end goes short");
    assert!(!journal.to_string().contains("hunter2"));
    let phase = json!({ "phase": 1, "entry": { "kind": "update", "started": 1, "ended": 2,
        "result": "succeeded", "plinth": "test",
        "changes": { "same": 0, "create": 0, "update": 0, "replace": 0, "delete": 0 } } });
    let done = transport
        .call(
            "POST",
            &format!("updates/{update}/phases"),
            Some(&lease),
            Some(&phase),
        )
        .unwrap();
    assert_eq!(done["version"], 1);
    let (status, checkpoint) = call(
        &service,
        "GET",
        "stacks/p/dev/export",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 200);
    let text = checkpoint.to_string();
    assert!(
        !text.contains("hunter2"),
        "the service never sees a secret in plaintext"
    );
    let stack = StackName::new("dev").unwrap();
    let opened = Checkpoint::parse(
        text.as_bytes(),
        &stack,
        Path::new("export"),
        crypter.as_ref(),
    )
    .unwrap();
    assert_eq!(opened.snapshot.resources.len(), 125);
    let first = &opened.snapshot.resources[0];
    assert_eq!(first.inputs["token"], secret, "completed from its begin");
    assert_eq!(
        (first.id.as_str(), &first.outputs["password"]),
        ("id-0", &secret)
    );

    // The stack is cancelled under the update: its persister stops, not to be retried.
    let (status, _) = cancel(&service, &alice);
    assert_eq!(status, 200);
    let r = resource("late", Default::default());
    persister
        .append(&serde_json::from_value(creating(200, &r, true).remove(0)).unwrap())
        .unwrap();
    let error = persister.sync().unwrap_err();
    assert!(!error.is_transient(), "{error}");
    assert!(
        error.to_string().contains("no longer holds its stack"),
        "{error}"
    );
}

/// An update of stack `dev` begun by alice on a new service, with a persister of its journal
/// whose wakes of the writer come through `wakes`.
struct Journaling {
    _server: Arc<Postgres>,
    service: Service,
    alice: String,
    transport: Transport,
    update: String,
    persister: ServicePersister,
    waker: SyncWaker,
    wakes: std::sync::mpsc::Receiver<()>,
}

fn journaling() -> Journaling {
    let Updating {
        server,
        db: _,
        service,
        alice,
        transport,
        update,
        lease,
    } = updating();
    let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
    let persister = ServicePersister::new(transport.clone(), &update, &lease, Arc::new(crypter));
    let (woken, wakes) = std::sync::mpsc::channel();
    let waker = SyncWaker::new(move || {
        let _ = woken.send(());
    });
    Journaling {
        _server: server,
        service,
        alice,
        transport,
        update,
        persister,
        waker,
        wakes,
    }
}

#[test]
fn syncs_started_without_waiting_settle_in_order_in_batches_numbered_without_gaps() {
    // Syncs of 150, 2 and 60 entries, each started before the last settled: their entries go
    // in batches of at most 100, whatever sync they came with.
    settle_in_order(1, &[75, 1, 30]);
}

#[test]
fn pipelined_syncs_settle_in_order_in_batches_numbered_without_gaps() {
    // Many small syncs, two batches under way at once: the service stores each once the
    // one ahead of it is, whichever arrives first.
    let sizes: Vec<u64> = (0..60).map(|i| 1 + i % 3).collect();
    settle_in_order(JOURNAL_IN_FLIGHT, &sizes);
}

/// Starts a sync after creating each count of `resources`, none waited for, with up to `window`
/// batches under way; checks that every sync settles and the journal holds it all, in order.
fn settle_in_order(window: usize, resources: &[u64]) {
    let Journaling {
        _server,
        service: _service,
        transport,
        update,
        persister,
        waker,
        wakes,
        ..
    } = journaling();
    let mut persister = persister.in_flight(window);
    let mut seq = 0;
    for &resources in resources {
        for _ in 0..resources {
            seq += 1;
            for entry in creating(
                seq,
                &resource(&format!("r{seq}"), Default::default()),
                false,
            ) {
                persister
                    .append(&serde_json::from_value(entry).unwrap())
                    .unwrap();
            }
        }
        assert!(
            persister.start_sync(&waker).is_none(),
            "a sync waits on the network"
        );
    }
    let mut settled = 0;
    while settled < resources.len() {
        wakes.recv().expect("the sender wakes the writer");
        while let Some(outcome) = persister.settled() {
            outcome.unwrap();
            settled += 1;
        }
    }
    assert!(persister.settled().is_none(), "no sync is in flight");

    let journal = transport
        .call("GET", &format!("updates/{update}/journal"), None, None)
        .unwrap();
    let entries = journal["entries"].as_array().unwrap();
    assert_eq!(entries.len() as u64, 2 * seq);
    let seqs: Vec<u64> = (entries.iter().step_by(2))
        .map(|entry| entry["seq"].as_u64().unwrap())
        .collect();
    // (The service refuses a batch that does not follow the last one: none was refused.)
    assert_eq!(seqs, (1..=seq).collect::<Vec<_>>(), "in the order appended");
}

#[test]
fn once_the_lease_is_lost_every_sync_started_without_waiting_fails_and_wakes_the_writer() {
    lease_lost_fails_every_sync(1);
}

#[test]
fn once_the_lease_is_lost_every_pipelined_sync_fails_and_wakes_the_writer() {
    lease_lost_fails_every_sync(JOURNAL_IN_FLIGHT);
}

fn lease_lost_fails_every_sync(window: usize) {
    let Journaling {
        _server,
        service,
        alice,
        persister,
        waker,
        wakes,
        ..
    } = journaling();
    let mut persister = persister.in_flight(window);
    let (status, _) = cancel(&service, &alice);
    assert_eq!(status, 200);
    // The first sync is refused by the service; the later ones are failed by the persister
    // itself, with no request under way to wake the writer: it must wake it all the same.
    for seq in 1..=3u64 {
        let r = resource(&format!("r{seq}"), Default::default());
        persister
            .append(&serde_json::from_value(creating(seq, &r, true).remove(0)).unwrap())
            .unwrap();
        assert!(persister.start_sync(&waker).is_none());
        let outcome = loop {
            (wakes.recv_timeout(std::time::Duration::from_secs(120)))
                .unwrap_or_else(|_| panic!("sync {seq} never woke the writer"));
            if let Some(outcome) = persister.settled() {
                break outcome;
            }
        };
        let error = outcome.unwrap_err();
        assert!(!error.is_transient(), "{error}");
        assert!(
            error.to_string().contains("no longer holds its stack"),
            "sync {seq}: {error}"
        );
        assert!(persister.settled().is_none(), "no sync is in flight");
    }
}

#[test]
fn answers_are_typed_a_busy_stack_names_its_holder() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let (alice, bob) = (token(&db, "alice"), token(&db, "bob"));
    create_stack(&service, &alice, "dev");
    begin_through(&Transport::new(&service.url, &alice));
    let bobs = Transport::new(&service.url, &bob);
    match bobs.call(
        "POST",
        "stacks/p/dev/updates",
        None,
        Some(&json!({ "kind": "update" })),
    ) {
        Err(ServiceError::Conflict {
            holder: Some(holder),
            message,
        }) => {
            assert_eq!(holder["user"], "alice");
            assert!(message.contains("alice"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let nobody = Transport::new(&service.url, "not-a-token");
    assert!(matches!(
        nobody.call("GET", "user", None, None),
        Err(ServiceError::Unauthorized(_))
    ));
    let answer: Value = bobs.call("GET", "user", None, None).unwrap();
    assert_eq!(answer["name"], "bob");
}

#[test]
fn the_keeper_renews_the_lease_at_half_its_duration_and_learns_when_it_is_lost() {
    let (_server, db) = database();
    let service = serve(&db, &["--lease", "2s"]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let transport = Transport::new(&service.url, &alice);
    let begun = transport
        .call(
            "POST",
            "stacks/p/dev/updates",
            None,
            Some(&json!({ "kind": "update" })),
        )
        .unwrap();
    let (update, lease) = lease_of(&begun);
    let first = begun["lease_expires"].as_i64().unwrap();
    let seconds = begun["lease_seconds"].as_f64().unwrap();
    let keeper = LeaseKeeper::start(transport.clone(), &update, &lease, seconds, first);
    eventually(
        "a renewal extending the lease",
        || matches!(keeper.state(), LeaseState::Held { expires } if expires > first),
    );
    let (status, _) = cancel(&service, &alice);
    assert_eq!(status, 200);
    eventually("the keeper learning the lease is lost", || {
        matches!(keeper.state(), LeaseState::Lost(_))
    });
}

/// Batch `seq` of the journal creating `r{seq}`, its begin and its end.
fn creating_batch(seq: u64) -> Option<Value> {
    let entries = creating(
        seq,
        &resource(&format!("r{seq}"), Default::default()),
        false,
    );
    Some(json!({ "seq": seq, "entries": entries }))
}

#[test]
fn a_version_is_made_from_the_batches_as_stored_whichever_replica_parsed_them() {
    let (server, db) = database();
    let (first, second) = (serve(&db, &[]), serve(&db, &[]));
    let alice = token(&db, "alice");
    create_stack(&first, &alice, "dev");
    let (status, begun) = begin(&first, &alice, "dev");
    assert_eq!(status, 200, "{begun}");
    let running = lease_of(&begun);
    // Each replica parses the batches it receives; the first makes the version, so it reads
    // the second's back from the database.
    for seq in 1..=4 {
        let replica = if seq % 2 == 1 { &first } else { &second };
        let (status, body) = on_update(replica, &alice, &running, "journal", creating_batch(seq));
        assert_eq!(status, 200, "batch {seq}: {body}");
    }
    // The database holds the facts: batch 3, as the first replica parsed it, is changed there.
    let name = db.rsplit('/').next().unwrap();
    let changed = serde_json::to_string(&creating_batch(5).unwrap()["entries"]).unwrap();
    server
        .psql(
            name,
            &format!(
                "UPDATE journal_batches SET entries = '{changed}',
                 digest = sha256(convert_to('{changed}', 'UTF8')) WHERE seq = 3"
            ),
        )
        .unwrap();
    let phase = json!({ "phase": 1, "entry": history_entry("update") });
    let (status, body) = on_update(&first, &alice, &running, "phases", Some(phase));
    assert_eq!(status, 200, "{body}");
    let (status, checkpoint) = call(
        &first,
        "GET",
        "stacks/p/dev/export",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 200, "{checkpoint}");
    let names: Vec<&str> = (checkpoint["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter())
    .map(|r| r["urn"].as_str().unwrap().rsplit("::").next().unwrap())
    .collect();
    assert_eq!(names, ["r1", "r2", "r5", "r4"]);
}
