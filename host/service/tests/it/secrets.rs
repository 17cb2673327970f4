//! Service-managed secrets against a real `plinth-serve` on a real PostgreSQL: values sealed and
//! opened by the service under each stack's data key, which the database holds only sealed by
//! the master key; a service without a master key, or with another one, refuses clearly.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use crate::common::*;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use plinth_backend::Checkpoint;
use plinth_backend::secrets::{Crypter, SecretsError};
use plinth_backend::service::{ServiceCrypter, ServicePersister, Transport};
use plinth_engine::journal::Persister;
use plinth_engine::names::StackName;
use plinth_engine::value::Value as PValue;
use plinth_test_postgres::Postgres;
use serde_json::json;

const SECRET: &str = "correct-horse-battery-staple";

/// A new master key file in `dir`, made by the real command.
fn master_key(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let out = Command::new(env!("CARGO_BIN_EXE_plinth-serve"))
        .args(["key", "create"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    path
}

fn crypter(service: &Service, token: &str, stack: &str) -> ServiceCrypter {
    ServiceCrypter::new(Transport::new(&service.url, token), "p", stack)
}

#[test]
fn a_key_file_is_new_random_and_private_and_never_overwritten() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let first = master_key(dir.path(), "a.key");
    let second = master_key(dir.path(), "b.key");
    let mode = std::fs::metadata(&first).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&first).unwrap();
    assert_eq!(BASE64.decode(text.trim()).unwrap().len(), 32);
    assert_ne!(text, std::fs::read_to_string(&second).unwrap());

    let again = Command::new(env!("CARGO_BIN_EXE_plinth-serve"))
        .args(["key", "create"])
        .arg(&first)
        .output()
        .unwrap();
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&first).unwrap(), text, "untouched");
}

#[test]
fn values_round_trip_per_stack_and_a_dump_of_the_database_holds_no_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let key = master_key(dir.path(), "master.key");
    let (server, db) = database();
    let service = serve(&db, &["--master-key", key.to_str().unwrap()]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    create_stack(&service, &alice, "prod");
    let dev = crypter(&service, &alice, "dev");
    let prod = crypter(&service, &alice, "prod");
    dev.unlock().unwrap();

    // A batch in one request, opened back in order; nonces are fresh.
    let values: Vec<String> = (0..50).map(|i| format!("\"{SECRET}-{i}\"")).collect();
    let sealed = dev.seal_all(&values).unwrap();
    assert_eq!(sealed.len(), 50);
    assert!(
        sealed
            .iter()
            .all(|s| s.starts_with("v1:") && !s.contains(SECRET))
    );
    assert_ne!(dev.seal(&values[0]).unwrap(), sealed[0]);
    assert_eq!(dev.open_all(&sealed).unwrap(), values);

    // Another stack's key opens none of them, and says why.
    let refused = prod.open(&sealed[0]).unwrap_err();
    assert!(
        matches!(&refused, SecretsError::Unavailable { stack, reason }
            if stack == "prod" && reason.contains("sealed for another stack")),
        "{refused}"
    );
    let bogus = dev.open("v1:bm90IGEgc2VhbGVkIHZhbHVl").unwrap_err();
    assert!(bogus.to_string().contains("cannot be opened"), "{bogus}");
    let missing = crypter(&service, &alice, "nope").unlock().unwrap_err();
    assert!(missing.to_string().contains("does not exist"), "{missing}");

    // A state with a secret, journaled and rebuilt by the service, opens with the stack's
    // crypter.
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
    let dev: Arc<dyn Crypter> = Arc::new(dev);
    let mut persister = ServicePersister::new(transport.clone(), &update, &lease, dev.clone());
    let secret = PValue::Secret(Box::new(PValue::String(SECRET.into())));
    let r = resource("db", [("password".to_owned(), secret.clone())].into());
    for entry in creating(1, &r, false) {
        persister
            .append(&serde_json::from_value(entry).unwrap())
            .unwrap();
    }
    persister.sync().unwrap();
    let phase = json!({ "phase": 1, "entry": { "kind": "update", "started": 1, "ended": 2,
        "result": "succeeded", "plinth": "test",
        "changes": { "same": 0, "create": 0, "update": 0, "replace": 0, "delete": 0 } } });
    (transport.call(
        "POST",
        &format!("updates/{update}/phases"),
        Some(&lease),
        Some(&phase),
    ))
    .unwrap();
    let (status, export) = call(
        &service,
        "GET",
        "stacks/p/dev/export",
        Some(&alice),
        None,
        None,
    );
    assert_eq!(status, 200);
    let stack = StackName::new("dev").unwrap();
    let text = export.to_string();
    let opened =
        Checkpoint::parse(text.as_bytes(), &stack, Path::new("export"), dev.as_ref()).unwrap();
    assert_eq!(opened.snapshot.resources[0].inputs["password"], secret);

    // The dump: no secret, no data key, no master key, in any encoding.
    let dump = server.dump(db.rsplit('/').next().unwrap()).unwrap();
    let dump = String::from_utf8(dump).unwrap();
    assert!(dump.contains("stack_keys"), "the dump covers the key table");
    assert!(
        !dump.contains(SECRET),
        "a secret's plaintext is in the dump"
    );
    let master = std::fs::read_to_string(&key).unwrap();
    let master = BASE64.decode(master.trim()).unwrap();
    let rows = server
        .psql(
            db.rsplit('/').next().unwrap(),
            "SELECT stack_id, encode(sealed_key, 'hex') FROM stack_keys ORDER BY stack_id",
        )
        .unwrap();
    let rows: Vec<(i64, Vec<u8>)> = (rows.lines())
        .map(|line| {
            let (id, sealed) = line.split_once('|').unwrap();
            (id.parse().unwrap(), hex::decode(sealed).unwrap())
        })
        .collect();
    assert_eq!(rows.len(), 2, "dev and prod each got a data key: {rows:?}");
    for key in [master.clone()].into_iter().chain(
        rows.iter()
            .map(|(id, sealed)| data_key(&master, *id, sealed)),
    ) {
        for form in [hex::encode(&key), BASE64.encode(&key)] {
            assert!(!dump.contains(&form), "a key is in the dump as {form}");
        }
        assert!(
            !dump
                .as_bytes()
                .windows(key.len())
                .any(|w| w == key.as_slice()),
            "a key is in the dump as raw bytes"
        );
    }
    // What was searched for is what seals the secrets: dev's data key opens dev's values.
    let (dev_id, dev_sealed) = &rows[0];
    let dev_key = data_key(&master, *dev_id, dev_sealed);
    let cipher = XChaCha20Poly1305::new_from_slice(&dev_key).unwrap();
    let bytes = BASE64.decode(&sealed[0][3..]).unwrap();
    let (nonce, body) = bytes.split_at(24);
    let plain = cipher.decrypt(XNonce::from_slice(nonce), body).unwrap();
    assert_eq!(String::from_utf8(plain).unwrap(), values[0]);
}

/// Opens a stack's sealed data key with the master key, as the service does.
fn data_key(master: &[u8], stack_id: i64, sealed: &[u8]) -> Vec<u8> {
    let key = try_data_key(master, stack_id, sealed).expect("the data key opens");
    assert_eq!(key.len(), 32);
    key
}

fn try_data_key(master: &[u8], stack_id: i64, sealed: &[u8]) -> Option<Vec<u8>> {
    let cipher = XChaCha20Poly1305::new_from_slice(master).unwrap();
    let (nonce, msg) = sealed.split_at(24);
    let aad = format!("plinth stack key {stack_id}");
    cipher
        .decrypt(
            XNonce::from_slice(nonce),
            Payload {
                msg,
                aad: aad.as_bytes(),
            },
        )
        .ok()
}

/// The stacks' sealed data keys, by stack name.
fn sealed_keys(server: &Postgres, db: &str) -> Vec<(String, i64, Vec<u8>)> {
    let rows = server
        .psql(
            db.rsplit('/').next().unwrap(),
            "SELECT s.name, k.stack_id, encode(k.sealed_key, 'hex') \
             FROM stack_keys k JOIN stacks s ON s.id = k.stack_id ORDER BY s.name",
        )
        .unwrap();
    (rows.lines())
        .map(|line| {
            let mut fields = line.split('|');
            let name = fields.next().unwrap().to_owned();
            let id = fields.next().unwrap().parse().unwrap();
            (name, id, hex::decode(fields.next().unwrap()).unwrap())
        })
        .collect()
}

/// The raw bytes of a key file.
fn key_bytes(path: &Path) -> Vec<u8> {
    BASE64
        .decode(std::fs::read_to_string(path).unwrap().trim())
        .unwrap()
}

#[test]
fn without_a_master_key_secrets_are_refused_saying_what_to_do() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let (status, body) = call(
        &service,
        "POST",
        "stacks/p/dev/secrets/seal",
        Some(&alice),
        None,
        Some(json!({ "plaintexts": ["\"x\""] })),
    );
    assert_eq!(status, 501, "{body}");
    let error = crypter(&service, &alice, "dev").unlock().unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("without a master key")
            && text.contains("--master-key")
            && text.contains("--secrets-provider passphrase"),
        "{text}"
    );
    // No token, no secrets.
    let (status, _) = call(
        &service,
        "POST",
        "stacks/p/dev/secrets/open",
        None,
        None,
        Some(json!({ "ciphertexts": [] })),
    );
    assert_eq!(status, 401);
}

#[test]
fn a_service_restarted_with_another_master_key_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let key = master_key(dir.path(), "master.key");
    let other = master_key(dir.path(), "other.key");
    let (_server, db) = database();
    let first = serve(&db, &["--master-key", key.to_str().unwrap()]);
    let alice = token(&db, "alice");
    create_stack(&first, &alice, "dev");
    let sealed = crypter(&first, &alice, "dev").seal("\"kept\"").unwrap();
    drop(first);

    let refused = Command::new(env!("CARGO_BIN_EXE_plinth-serve"))
        .args(["--database", &db, "--listen", "127.0.0.1:0", "--master-key"])
        .arg(&other)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("is not the one this database's secrets are sealed with"),
        "{stderr}"
    );
    let garbage = dir.path().join("garbage.key");
    std::fs::write(&garbage, "not a key\n").unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_plinth-serve"))
        .args(["--database", &db, "--listen", "127.0.0.1:0", "--master-key"])
        .arg(&garbage)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("is not a plinth master key"), "{stderr}");

    // With its own key again, what it sealed opens.
    let again = serve(&db, &["--master-key", key.to_str().unwrap()]);
    let opened = crypter(&again, &alice, "dev").open(&sealed).unwrap();
    assert_eq!(opened, "\"kept\"");
}

/// Runs `plinth-serve key rotate` with `args`.
fn rotate(db: &str, args: &[&Path]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_plinth-serve"));
    command.args(["key", "rotate", "--database", db]);
    for pair in args.chunks(2) {
        command.arg(pair[0]).arg(pair[1]);
    }
    command.output().unwrap()
}

#[test]
fn a_master_key_rotates_with_every_replica_serving_throughout() {
    let dir = tempfile::tempdir().unwrap();
    let old = master_key(dir.path(), "old.key");
    let new = master_key(dir.path(), "new.key");
    let (server, db) = database();
    let alice = token(&db, "alice");
    let old_only = serve(&db, &["--master-key", old.to_str().unwrap()]);
    create_stack(&old_only, &alice, "dev");
    let dev_sealed = crypter(&old_only, &alice, "dev")
        .seal("\"dev secret\"")
        .unwrap();

    // Step 1: a replica restarted with both keys. The database's key is still the old one, so
    // a data key it makes is sealed with that, and the replica holding only the old key opens
    // what it seals.
    let both = serve(
        &db,
        &[
            "--master-key",
            old.to_str().unwrap(),
            "--master-key",
            new.to_str().unwrap(),
        ],
    );
    create_stack(&both, &alice, "prod");
    let prod_sealed = crypter(&both, &alice, "prod")
        .seal("\"prod secret\"")
        .unwrap();
    let opened = crypter(&old_only, &alice, "prod")
        .open(&prod_sealed)
        .unwrap();
    assert_eq!(opened, "\"prod secret\"");

    // A rotation from keys that are not the database's changes nothing.
    let stranger = master_key(dir.path(), "stranger.key");
    let other = master_key(dir.path(), "other.key");
    let refused = rotate(
        &db,
        &[Path::new("--from"), &stranger, Path::new("--to"), &other],
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    let (old_bytes, new_bytes) = (key_bytes(&old), key_bytes(&new));
    let before = sealed_keys(&server, &db);
    assert_eq!(before.len(), 2);
    assert!(
        before
            .iter()
            .all(|(_, id, k)| try_data_key(&old_bytes, *id, k).is_some())
    );

    // Step 2: the rotation re-seals both data keys with the new key.
    let out = rotate(&db, &[Path::new("--from"), &old, Path::new("--to"), &new]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Re-sealed 2 stack keys"), "{stdout}");
    let after = sealed_keys(&server, &db);
    for ((name, id, was), (_, _, is)) in before.iter().zip(&after) {
        assert!(
            try_data_key(&old_bytes, *id, is).is_none(),
            "{name}: still the old key"
        );
        assert_eq!(
            data_key(&new_bytes, *id, is),
            data_key(&old_bytes, *id, was),
            "{name}: the data key itself is unchanged, so its values still open"
        );
    }
    // The replica with both keys serves on; the one with the old key only says what to do.
    assert_eq!(
        crypter(&both, &alice, "dev").open(&dev_sealed).unwrap(),
        "\"dev secret\""
    );
    // 503, which a load balancer gives to another replica, naming no internal id.
    let (status, stale) = call(
        &old_only,
        "POST",
        "stacks/p/dev/secrets/open",
        Some(&alice),
        None,
        Some(json!({ "ciphertexts": [dev_sealed] })),
    );
    let message = stale["message"].as_str().unwrap_or_default();
    assert_eq!(status, 503, "{stale}");
    assert!(
        message.contains("this replica") && message.contains("restart it with the current key"),
        "{stale}"
    );
    assert!(
        !message.contains("stack 1") && !message.contains("internal"),
        "{stale}"
    );
    // A stack's first data key is now sealed with the new key.
    create_stack(&both, &alice, "qa");
    let qa_sealed = crypter(&both, &alice, "qa").seal("\"qa secret\"").unwrap();
    let (_, qa_id, qa_key) = sealed_keys(&server, &db).remove(2);
    assert!(try_data_key(&new_bytes, qa_id, &qa_key).is_some());
    // Run again (say, after a lost connection), the rotation has nothing left to do.
    let again = rotate(&db, &[Path::new("--from"), &old, Path::new("--to"), &new]);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        stdout.contains("Re-sealed 0 stack keys") && stdout.contains("3 already"),
        "{stdout}"
    );

    // Step 3: replicas restart with the new key only, and every value opens; the old key alone
    // is refused at start.
    drop((old_only, both));
    let refused = Command::new(env!("CARGO_BIN_EXE_plinth-serve"))
        .args(["--database", &db, "--listen", "127.0.0.1:0", "--master-key"])
        .arg(&old)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("plinth serve key rotate"),
        "{stderr}"
    );
    let new_only = serve(&db, &["--master-key", new.to_str().unwrap()]);
    for (stack, sealed, plain) in [
        ("dev", &dev_sealed, "\"dev secret\""),
        ("prod", &prod_sealed, "\"prod secret\""),
        ("qa", &qa_sealed, "\"qa secret\""),
    ] {
        assert_eq!(
            crypter(&new_only, &alice, stack).open(sealed).unwrap(),
            plain
        );
    }
}
