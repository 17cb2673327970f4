//! Stack state on the service, against real `plinth-serve` processes on a real PostgreSQL:
//! begin returns the base; phases and completion make versions rebuilt from the journal (secrets
//! stay sealed as the client sealed them: the service holds no key); an update that ends without
//! completing leaves its operations pending; history pages; export of any version; import.

use crate::common::*;
use serde_json::{Value, json};

fn export(service: &Service, token: &str, version: Option<u64>) -> (u16, Value) {
    let query = version.map_or_else(String::new, |v| format!("?version={v}"));
    call(
        service,
        "GET",
        &format!("stacks/p/dev/export{query}"),
        Some(token),
        None,
        None,
    )
}

fn resource_names(checkpoint: &Value) -> Vec<String> {
    (checkpoint["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter())
    .map(|r| {
        r["urn"]
            .as_str()
            .unwrap()
            .rsplit("::")
            .next()
            .unwrap()
            .to_owned()
    })
    .collect()
}

#[test]
fn versions_are_rebuilt_from_the_journal_and_an_interrupted_operation_stays_pending() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");

    // The first update starts from the empty state.
    let (status, begun) = begin(&service, &alice, "dev");
    assert_eq!(status, 200, "{begun}");
    assert_eq!(
        (&begun["base_version"], &begun["base_checkpoint"]),
        (&json!(0), &Value::Null)
    );
    let first = lease_of(&begun);
    // A secret as the client seals it: the service never opens it.
    let a = resource("a", Default::default());
    let mut entries = creating(1, &a, false);
    for e in &mut entries {
        e["resource"]["inputs"]["token"] =
            json!({ "plinth:sig": "secret", "ciphertext": "v1:sealed-by-client" });
    }
    let batch = Some(json!({ "seq": 1, "entries": entries }));
    assert_eq!(on_update(&service, &alice, &first, "journal", batch).0, 200);
    let phase = Some(json!({ "phase": 1, "entry": history_entry("update") }));
    let (status, body) = on_update(&service, &alice, &first, "phases", phase.clone());
    assert_eq!((status, &body["version"]), (200, &json!(1)), "{body}");
    // A retried phase makes no second version.
    let (status, body) = on_update(&service, &alice, &first, "phases", phase);
    assert_eq!((status, &body["version"]), (200, &json!(1)), "{body}");
    let done = Some(json!({ "result": "succeeded" }));
    assert_eq!(on_update(&service, &alice, &first, "complete", done).0, 200);

    // The next update gets that version as its base, in the same call; the secret as sealed.
    let (status, begun) = begin(&service, &alice, "dev");
    assert_eq!(status, 200, "{begun}");
    assert_eq!(begun["base_version"], 1);
    let base: Value = serde_json::from_str(begun["base_checkpoint"].as_str().unwrap()).unwrap();
    assert_eq!(resource_names(&base), ["a"]);
    assert_eq!(
        base["snapshot"]["resources"][0]["inputs"]["token"]["ciphertext"],
        "v1:sealed-by-client"
    );
    // It begins creating b, and its client dies: b's creation was begun, never ended.
    let second = lease_of(&begun);
    let batch =
        Some(json!({ "seq": 1, "entries": creating(1, &resource("b", Default::default()), true) }));
    assert_eq!(
        on_update(&service, &alice, &second, "journal", batch).0,
        200
    );
    let (status, body) = cancel(&service, &alice);
    assert_eq!(status, 200, "{body}");

    let (status, latest) = export(&service, &alice, None);
    assert_eq!(status, 200, "{latest}");
    assert_eq!(resource_names(&latest), ["a"]);
    let pending = latest["snapshot"]["pending_operations"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{latest}");
    assert!(
        pending[0]["resource"]["urn"]
            .as_str()
            .unwrap()
            .ends_with("::b")
    );

    // The next update starts from it, the operation still pending.
    let (status, begun) = begin(&service, &alice, "dev");
    assert_eq!(
        (status, &begun["base_version"]),
        (200, &json!(2)),
        "{begun}"
    );
    let base: Value = serde_json::from_str(begun["base_checkpoint"].as_str().unwrap()).unwrap();
    assert_eq!(
        base["snapshot"]["pending_operations"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Import: version 1 replaces the state, as a phase of an update.
    let import = lease_of(&begun);
    let (_, first_version) = export(&service, &alice, Some(1));
    let phase = json!({ "phase": 1, "entry": history_entry("import"),
                        "checkpoint": first_version.to_string() });
    let (status, body) = on_update(&service, &alice, &import, "phases", Some(phase));
    assert_eq!((status, &body["version"]), (200, &json!(3)), "{body}");
    assert_eq!(
        on_update(
            &service,
            &alice,
            &import,
            "complete",
            Some(json!({ "result": "succeeded" }))
        )
        .0,
        200
    );
    let (_, latest) = export(&service, &alice, None);
    assert_eq!(resource_names(&latest), ["a"]);
    let pending = latest["snapshot"]["pending_operations"].as_array();
    assert_eq!(pending.map_or(0, Vec::len), 0, "{latest}");
    let (status, body) = export(&service, &alice, Some(9));
    assert_eq!(status, 404, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("1 to 3"),
        "{body}"
    );

    // History, newest first, a page at a time.
    let (status, page) = call(
        &service,
        "GET",
        "stacks/p/dev/history?page=2&per_page=1",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], 3);
    let listed = page["versions"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["version"], 2);
    assert_eq!(listed[0]["user"], "alice");
    assert_eq!(listed[0]["entry"]["result"], "failed");
}

/// A phase that journaled nothing keeps its base as it is, but still records the plugins it
/// used when they are others.
#[test]
fn a_phase_without_journal_keeps_its_state_and_records_its_plugins() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let plugin = |version: &str| json!([{ "name": "t", "version": version, "sha256": "00" }]);
    let first = lease_of(&begin(&service, &alice, "dev").1);
    let entries = creating(1, &resource("a", Default::default()), false);
    let batch = Some(json!({ "seq": 1, "entries": entries }));
    assert_eq!(on_update(&service, &alice, &first, "journal", batch).0, 200);
    let phase = json!({ "phase": 1, "entry": history_entry("update"), "plugins": plugin("1.0.0") });
    assert_eq!(
        on_update(&service, &alice, &first, "phases", Some(phase)).0,
        200
    );
    let done = Some(json!({ "result": "succeeded" }));
    assert_eq!(
        on_update(&service, &alice, &first, "complete", done.clone()).0,
        200
    );
    let (_, version_1) = export(&service, &alice, Some(1));

    // Phases that journal nothing: with the same plugins, with none said, with others.
    for (plugins, version) in [
        (Some(plugin("1.0.0")), 2),
        (None, 3),
        (Some(plugin("2.0.0")), 4),
    ] {
        let update = lease_of(&begin(&service, &alice, "dev").1);
        let mut phase = json!({ "phase": 1, "entry": history_entry("update") });
        if let Some(plugins) = plugins {
            phase["plugins"] = plugins;
        }
        let (status, body) = on_update(&service, &alice, &update, "phases", Some(phase));
        assert_eq!((status, &body["version"]), (200, &json!(version)), "{body}");
        assert_eq!(
            on_update(&service, &alice, &update, "complete", done.clone()).0,
            200
        );
    }
    let (_, version_3) = export(&service, &alice, Some(3));
    assert_eq!(version_3, version_1, "nothing journaled, nothing changed");
    let (_, version_4) = export(&service, &alice, Some(4));
    assert_eq!(version_4["plugins"], plugin("2.0.0"));
    assert_eq!(version_4["snapshot"], version_1["snapshot"]);
}

#[test]
fn a_checkpoint_that_is_not_one_is_refused_and_changes_nothing() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let running = lease_of(&begin(&service, &alice, "dev").1);
    let phase =
        json!({ "phase": 1, "entry": history_entry("import"), "checkpoint": "{\"version\": 99}" });
    let (status, body) = on_update(&service, &alice, &running, "phases", Some(phase));
    assert_eq!(status, 400, "{body}");
    let (status, page) = call(
        &service,
        "GET",
        "stacks/p/dev/history",
        Some(&alice),
        None,
        None,
    );
    assert_eq!((status, &page["total"]), (200, &json!(0)), "{page}");
}

#[test]
fn a_stack_with_resources_is_removed_only_with_force_and_never_while_updated() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let running = lease_of(&begin(&service, &alice, "dev").1);
    let (status, body) = call(
        &service,
        "DELETE",
        "stacks/p/dev?force=true",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 409, "an update holds it: {body}");
    assert!(
        body["message"].as_str().unwrap().contains("alice"),
        "{body}"
    );
    let entries = creating(1, &resource("a", Default::default()), false);
    let batch = Some(json!({ "seq": 1, "entries": entries }));
    assert_eq!(
        on_update(&service, &alice, &running, "journal", batch).0,
        200
    );
    let done = Some(json!({ "result": "succeeded", "entry": history_entry("update") }));
    assert_eq!(
        on_update(&service, &alice, &running, "complete", done).0,
        200
    );

    let (status, body) = call(&service, "DELETE", "stacks/p/dev", Some(&alice), None, None);
    assert_eq!(status, 409, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("1 resources"),
        "{body}"
    );
    let (status, body) = call(
        &service,
        "DELETE",
        "stacks/p/dev?force=true",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 200, "{body}");
    let (status, _) = call(&service, "GET", "stacks/p/dev", Some(&alice), None, None);
    assert_eq!(status, 404);
    // The name is free again, with no state.
    create_stack(&service, &alice, "dev");
    let (status, begun) = begin(&service, &alice, "dev");
    assert_eq!(
        (status, &begun["base_version"]),
        (200, &json!(0)),
        "{begun}"
    );
}

#[test]
fn after_a_crashed_clients_lease_expires_the_next_update_starts_with_its_operation_pending() {
    let (_server, db) = database();
    let service = serve(&db, &["--lease", "1s"]);
    let (alice, bob) = (token(&db, "alice"), token(&db, "bob"));
    create_stack(&service, &alice, "dev");
    // Alice's client begins creating `a`, then dies: it never renews nor completes. On a slow
    // machine the short lease may expire before the batch arrives; then the scenario starts over
    // (what is asserted never depends on how fast it ran).
    loop {
        let (status, begun) = begin(&service, &alice, "dev");
        if status == 409 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        assert_eq!(status, 200, "{begun}");
        let crashed = lease_of(&begun);
        let entries = creating(1, &resource("a", Default::default()), true);
        let batch = Some(json!({ "seq": 1, "entries": entries }));
        match on_update(&service, &alice, &crashed, "journal", batch) {
            (200, _) => break,
            (403, _) => continue,
            (status, body) => panic!("{status} {body}"),
        }
    }
    let mut taken = None;
    eventually("the lease expiring", || {
        let (status, body) = begin(&service, &bob, "dev");
        assert!(matches!(status, 200 | 409), "{status} {body}");
        taken = (status == 200).then_some(body);
        taken.is_some()
    });
    let taken = taken.unwrap();
    let base: Value = serde_json::from_str(taken["base_checkpoint"].as_str().unwrap()).unwrap();
    let pending = base["snapshot"]["pending_operations"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{base}");
    assert!(
        pending[0]["resource"]["urn"]
            .as_str()
            .unwrap()
            .ends_with("::a")
    );
    let (_, history) = call(
        &service,
        "GET",
        "stacks/p/dev/history",
        Some(&bob),
        None,
        None,
    );
    assert_eq!(
        history["versions"][0]["entry"]["result"], "failed",
        "{history}"
    );
    assert_eq!(history["versions"][0]["user"], "alice", "{history}");
}

/// An update whose journal an older plinth wrote, recording an id no plinth records (a control
/// character), cannot make a version as a client's phase; when it ends, the version keeps what
/// its journal recorded, as the file backend keeps its journal: `stack export` shows it whole
/// (every client's load refuses it, saying how to repair it with `plinth state delete`).
#[test]
fn a_journal_an_older_plinth_wrote_with_an_id_no_plinth_records_is_kept_when_it_ends() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let (status, begun) = begin(&service, &alice, "dev");
    assert_eq!(status, 200, "{begun}");
    let update = lease_of(&begun);
    let mut old = resource("a", Default::default());
    old.id = "a\tb".into();
    let mut entries = creating(1, &old, false);
    entries.extend(creating(2, &resource("c", Default::default()), false));
    let batch = Some(json!({ "seq": 1, "entries": entries }));
    assert_eq!(
        on_update(&service, &alice, &update, "journal", batch).0,
        200
    );
    let phase = Some(json!({ "phase": 1, "entry": history_entry("update") }));
    let (status, body) = on_update(&service, &alice, &update, "phases", phase);
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("contains control characters"),
        "{body}"
    );

    let done = Some(json!({ "result": "failed" }));
    let (status, body) = on_update(&service, &alice, &update, "complete", done);
    assert_eq!(status, 200, "{body}");
    let (status, latest) = export(&service, &alice, None);
    assert_eq!(status, 200, "{latest}");
    assert_eq!(resource_names(&latest), ["a", "c"], "{latest}");
    assert_eq!(latest["snapshot"]["resources"][0]["id"], "a\tb");
    let (status, history) = call(
        &service,
        "GET",
        "stacks/p/dev/history",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 200, "{history}");
    assert!(
        history["versions"][0]["entry"]["note"]
            .as_str()
            .unwrap()
            .contains("kept as recorded"),
        "{history}"
    );
}

/// A phase that journaled nothing keeps its base's state: its version names the version holding
/// that checkpoint instead of storing a copy, and reads as that checkpoint everywhere (begin,
/// export of either version, a chain of such phases); a rename then stores the renamed
/// checkpoint in the latest version itself.
#[test]
fn a_version_that_changed_nothing_stores_no_copy_of_its_checkpoint() {
    let (server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let name = db.rsplit('/').next().unwrap().to_owned();
    let sql = |statement: &str| server.psql(&name, statement).unwrap().trim().to_owned();

    let running = lease_of(&begin(&service, &alice, "dev").1);
    let entries = creating(1, &resource("a", Default::default()), false);
    let batch = Some(json!({ "seq": 1, "entries": entries }));
    assert_eq!(
        on_update(&service, &alice, &running, "journal", batch).0,
        200
    );
    for phase in 1..=3 {
        let phase = Some(json!({ "phase": phase, "entry": history_entry("update") }));
        let (status, body) = on_update(&service, &alice, &running, "phases", phase);
        assert_eq!(status, 200, "{body}");
    }
    let done = Some(json!({ "result": "succeeded" }));
    assert_eq!(
        on_update(&service, &alice, &running, "complete", done).0,
        200
    );
    assert_eq!(
        sql("SELECT version, checkpoint IS NULL, checkpoint_of FROM versions ORDER BY version"),
        "1|f|\n2|t|1\n3|t|1",
        "each later version names the first, which holds the checkpoint"
    );
    let (status, first) = export(&service, &alice, Some(1));
    assert_eq!(status, 200, "{first}");
    assert_eq!(resource_names(&first), ["a"]);
    for version in [Some(2), Some(3), None] {
        assert_eq!(export(&service, &alice, version), (200, first.clone()));
    }
    let (status, begun) = begin(&service, &alice, "dev");
    assert_eq!(
        (status, &begun["base_version"]),
        (200, &json!(3)),
        "{begun}"
    );
    let base: Value = serde_json::from_str(begun["base_checkpoint"].as_str().unwrap()).unwrap();
    assert_eq!(base, first);
    let (status, body) = cancel(&service, &alice);
    assert_eq!(status, 200, "{body}");

    let (status, body) = call(
        &service,
        "POST",
        "stacks/p/dev/rename",
        Some(&alice),
        None,
        Some(json!({ "name": "prod" })),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        sql("SELECT version, checkpoint IS NULL, checkpoint_of FROM versions ORDER BY version"),
        "1|f|\n2|t|1\n3|f|",
        "the renamed checkpoint is the latest version's own; the older ones keep the old name"
    );
    let (status, renamed) = call(
        &service,
        "GET",
        "stacks/p/prod/export",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 200, "{renamed}");
    assert!(
        renamed.to_string().contains("urn:plinth:prod::"),
        "{renamed}"
    );
    let (status, old) = call(
        &service,
        "GET",
        "stacks/p/prod/export?version=2",
        Some(&alice),
        None,
        None,
    );
    assert_eq!((status, old), (200, first));
}
