//! Real `plinth-serve` processes on a real PostgreSQL: leases, the one running update per
//! stack, tokens. Nothing waits on timing: a lease expiry is awaited as a condition, under a
//! generous bound.

use crate::common::*;
use plinth_state::protocol::{JOURNAL_BATCH_MAX, JOURNAL_IN_FLIGHT};
use serde_json::{Value, json};

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

/// Journal and event batches check the access token in the statement that stores them: a
/// token revoked after this service last saw it valid is refused all the same, and a token no
/// user has never gets its body read.
#[test]
fn batches_are_refused_to_a_revoked_token_even_one_seen_valid_just_before() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    let created = token_admin(&db, &["create", "--user", "alice"]);
    assert!(created.status.success(), "{created:?}");
    let leaving = String::from_utf8(created.stdout).unwrap().trim().to_owned();
    let told = String::from_utf8_lossy(&created.stderr);
    let id = (told
        .strip_prefix("Created token ")
        .and_then(|rest| rest.split_whitespace().next()))
    .unwrap_or_else(|| panic!("{told}"))
    .to_owned();
    create_stack(&service, &alice, "dev");
    let running = lease_of(&begin(&service, &alice, "dev").1);
    let journal = |seq: u64, name: &str| {
        let entries = creating(seq, &resource(name, Default::default()), true);
        Some(json!({ "seq": seq, "entries": entries }))
    };
    let events = |seq: u64| {
        let event = json!({ "seq": seq, "at_ms": seq, "event": "diagnostic", "severity": "info",
                            "message": "m" });
        Some(json!({ "seq": seq, "events": [event] }))
    };
    let (status, body) = on_update(&service, &leaving, &running, "journal", journal(1, "a"));
    assert_eq!(status, 200, "{body}");
    let (status, body) = on_update(&service, &leaving, &running, "events", events(1));
    assert_eq!(status, 200, "{body}");

    // The token is revoked while the service still remembers it valid.
    let revoked = token_admin(&db, &["revoke", &id]);
    assert!(revoked.status.success(), "{revoked:?}");
    for token in [leaving.as_str(), "not-a-token"] {
        let (status, body) = on_update(&service, token, &running, "journal", journal(2, "b"));
        assert_eq!(status, 401, "{body}");
        assert!(
            body["message"].as_str().unwrap().contains("not valid"),
            "{body}"
        );
        let (status, body) = on_update(&service, token, &running, "events", events(2));
        assert_eq!(status, 401, "{body}");
    }
    // Nothing was stored under those numbers: they are free for the valid token.
    let (status, body) = on_update(&service, &alice, &running, "journal", journal(2, "b"));
    assert_eq!((status, &body["retry"]), (200, &json!(false)), "{body}");
    let (status, body) = on_update(&service, &alice, &running, "events", events(2));
    assert_eq!((status, &body["retry"]), (200, &json!(false)), "{body}");
}

#[test]
fn tokens_are_listed_without_themselves_and_a_revoked_one_is_refused_even_mid_update() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let created = token_admin(
        &db,
        &["create", "--user", "alice", "--description", "laptop"],
    );
    assert!(created.status.success(), "{created:?}");
    let laptop = String::from_utf8(created.stdout).unwrap().trim().to_owned();
    let told = String::from_utf8_lossy(&created.stderr);
    let id = told
        .strip_prefix("Created token ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{told}"))
        .to_owned();
    let ci = token(&db, "alice");
    let bob = token(&db, "bob");

    let listed = token_admin(&db, &["list"]);
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert_eq!(
        listed.lines().count(),
        4,
        "a header and three tokens: {listed}"
    );
    let laptop_line = listed.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(
        laptop_line.contains("alice") && laptop_line.ends_with("laptop"),
        "{listed}"
    );
    for secret in [&laptop, &ci, &bob] {
        assert!(
            !listed.contains(secret.as_str()),
            "a token is listed: {listed}"
        );
    }
    let bobs = token_admin(&db, &["list", "--user", "bob"]);
    assert_eq!(String::from_utf8(bobs.stdout).unwrap().lines().count(), 2);

    // An update is running under the laptop's token when it is revoked: its next request is
    // refused, and so is every other request with that token. The others still work.
    create_stack(&service, &laptop, "dev");
    let update = lease_of(&begin(&service, &laptop, "dev").1);
    assert_eq!(on_update(&service, &laptop, &update, "renew", None).0, 200);
    let revoked = token_admin(&db, &["revoke", &id.to_uppercase()]);
    assert!(revoked.status.success(), "{revoked:?}");
    let out = String::from_utf8(revoked.stdout).unwrap();
    assert!(
        out.starts_with("Revoked 1 token(s)") && out.contains(&id),
        "{out}"
    );
    let (status, body) = on_update(&service, &laptop, &update, "renew", None);
    assert_eq!(status, 401, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("revoked"),
        "{body}"
    );
    assert_eq!(
        call(&service, "GET", "user", Some(&laptop), None, None).0,
        401
    );
    assert_eq!(call(&service, "GET", "user", Some(&ci), None, None).0, 200);

    // Revoking again, or a malformed id, says what is wrong; nothing else is revoked.
    let again = token_admin(&db, &["revoke", &id]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("no token not yet revoked has the id"));
    let bad = token_admin(&db, &["revoke", "xyz"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a token id"));

    // Every token of a user at once.
    let all = token_admin(&db, &["revoke", "--user", "alice"]);
    assert!(
        String::from_utf8(all.stdout)
            .unwrap()
            .starts_with("Revoked 1 token(s)")
    );
    assert_eq!(call(&service, "GET", "user", Some(&ci), None, None).0, 401);
    assert_eq!(call(&service, "GET", "user", Some(&bob), None, None).0, 200);
    let none = token_admin(&db, &["revoke", "--user", "alice"]);
    assert!(String::from_utf8_lossy(&none.stderr).contains("has no token"));
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
    let (status, body) = cancel(&service, &alice);
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
    // Each batch begins creating the named resources.
    let batch = |seq: u64, names: &[&str]| {
        let entries: Vec<Value> = (names.iter())
            .enumerate()
            .flat_map(|(i, n)| {
                creating(seq * 10 + i as u64, &resource(n, Default::default()), true)
            })
            .collect();
        Some(json!({ "seq": seq, "entries": entries }))
    };
    let (status, body) = on_update(&service, &alice, &running, "journal", batch(1, &["a", "b"]));
    assert_eq!((status, &body["retry"]), (200, &json!(false)), "{body}");
    // The answer was lost and the client sends the batch again.
    let (status, body) = on_update(&service, &alice, &running, "journal", batch(1, &["a", "b"]));
    assert_eq!((status, &body["retry"]), (200, &json!(true)), "{body}");
    // A retry written otherwise (by another client version) is still the same batch: the
    // service digests batches as they are written, and tells this one by its content.
    let otherwise = serde_json::to_string_pretty(&batch(1, &["a", "b"]).unwrap()).unwrap();
    let (status, body) = send(
        &service,
        "POST",
        &format!("updates/{}/journal", running.0),
        Some(&alice),
        Some(&running.1),
        otherwise.into_bytes(),
    );
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
    // Too far ahead to be one of the batches a client has in flight: refused at once.
    let beyond = 2 + JOURNAL_IN_FLIGHT as u64;
    let (status, body) = on_update(&service, &alice, &running, "journal", batch(beyond, &["d"]));
    assert_eq!(status, 409, "{body}");
    let (status, _) = on_update(&service, &alice, &running, "journal", batch(2, &["c"]));
    assert_eq!(status, 200);
    let (status, body) = on_update(
        &service,
        &alice,
        &running,
        "journal",
        Some(json!({ "seq": 3, "entries": [{ "entry": "begin", "urn": "x" }] })),
    );
    assert_eq!(
        status, 400,
        "a malformed entry is refused when it arrives: {body}"
    );
    // One more than a batch takes.
    let too_many: Vec<Value> = (0..=JOURNAL_BATCH_MAX as u64)
        .flat_map(|i| creating(i, &resource("many", Default::default()), true))
        .take(JOURNAL_BATCH_MAX + 1)
        .collect();
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
        .map(|e| {
            e["resource"]["urn"]
                .as_str()
                .unwrap()
                .rsplit("::")
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(urns, ["a", "b", "c"], "each batch once, in order");

    // Once the update no longer holds the stack, nothing more is appended.
    cancel(&service, &alice);
    let (status, _) = on_update(&service, &alice, &running, "journal", batch(3, &["d"]));
    assert_eq!(status, 403);
}

#[test]
fn a_begin_retried_under_its_request_id_gets_its_own_update_back() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let (alice, bob) = (token(&db, "alice"), token(&db, "bob"));
    create_stack(&service, &alice, "dev");
    let begin_as = |token: &str, request: &str| {
        call(
            &service,
            "POST",
            "stacks/p/dev/updates",
            Some(token),
            None,
            Some(json!({ "kind": "update", "request_id": request })),
        )
    };
    let request = "6f1d3c52-8a0e-4f4e-9b57-2d2b8f0c9a11";
    let (status, first) = begin_as(&alice, request);
    assert_eq!(status, 200, "{first}");
    // The answer was lost: the client sends the same request again.
    let (status, again) = begin_as(&alice, request);
    assert_eq!(
        status, 200,
        "a retry is not refused as its own holder: {again}"
    );
    assert_eq!(again["update_id"], first["update_id"]);
    assert_eq!(again["base_version"], first["base_version"]);
    let (first, again) = (lease_of(&first), lease_of(&again));
    assert_ne!(first.1, again.1, "the retry gets a lease token of its own");
    // Only the token the client got acts on the update.
    assert_eq!(on_update(&service, &alice, &first, "renew", None).0, 401);
    assert_eq!(on_update(&service, &alice, &again, "renew", None).0, 200);
    // Anyone else, or another request, still finds the stack held.
    assert_eq!(begin_as(&bob, request).0, 409);
    assert_eq!(begin(&service, &alice, "dev").0, 409);
    let other = "0b6c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e";
    assert_eq!(begin_as(&alice, other).0, 409);

    let done = Some(json!({ "result": "succeeded" }));
    assert_eq!(on_update(&service, &alice, &again, "complete", done).0, 200);
    // A request whose update has ended begins nothing more.
    let (status, body) = begin_as(&alice, request);
    assert_eq!(status, 409, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("already ended"),
        "{body}"
    );
    assert_eq!(begin_as(&alice, other).0, 200);
}
