//! The postgresql provider over TLS, against a real server that takes TLS connections only
//! (`ssl = on`, `hostssl` lines only, a CA and certificates made by the test): the host runs
//! the handshake and checks the certificate as `sslmode` says; every refusal names its reason,
//! and nothing is created on a refused run.

use std::sync::Arc;

use plinth_test_postgres::{CERT_USER, Postgres, SERVER_NAME};
use serde_json::json;

use crate::support::{Env, guest};

/// One TLS cluster for the tests of this module (each uses names of its own), stopped when the
/// test process exits.
fn server() -> Arc<Postgres> {
    Postgres::shared_tls().expect("a PostgreSQL server with TLS")
}

/// A project whose provider connects to `host` on `server`'s port with `sslmode`, granted
/// exactly that endpoint, and declares the role `role`.
fn project(server: &Postgres, host: &str, sslmode: &str, role: &str) -> Env {
    let env = Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  postgresql:\n    path: {}\n    grants:\n      tcp: [\"{host}:{}\"]\n  random:\n    path: {}\n",
        guest("plinth-pg-program").display(),
        guest("plinth-postgresql").display(),
        server.port(),
        guest("plinth-random").display(),
    ));
    env.config("postgresql:host", host);
    env.config("postgresql:port", &server.port().to_string());
    env.config("postgresql:sslmode", sslmode);
    let resources = json!([{"type": "postgresql:Role", "name": "r", "inputs": {"name": role}}]);
    env.config("resources", &resources.to_string());
    env
}

/// `project`, as the superuser with its password.
fn with_password(server: &Postgres, host: &str, sslmode: &str, role: &str) -> Env {
    let env = project(server, host, sslmode, role);
    crate::postgres::give_password(&env, server);
    env
}

/// Grants the provider `tls-insecure: [endpoint]` beside its `tcp` grant.
fn grant_insecure(env: &Env, endpoint: &str) {
    let path = env.project.join("Plinth.yaml");
    let yaml = std::fs::read_to_string(&path).unwrap();
    let (before, after) = yaml.split_once("  random:").unwrap();
    let yaml = format!("{before}      tls-insecure: [\"{endpoint}\"]\n  random:{after}");
    std::fs::write(&path, yaml).unwrap();
}

/// Fails unless `err` refuses an unverified session to `endpoint`, naming the grant to add.
fn refused_unverified(err: &str, endpoint: &str) {
    assert!(
        err.contains("without verifying the server's certificate fully"),
        "{err}"
    );
    assert!(
        err.contains(&format!("tls-insecure: [\"{endpoint}\"]")),
        "the grant to add: {err}"
    );
}

/// Sets a PEM value: it starts with `-`, so after `--`.
fn set_pem(env: &Env, key: &str, pem: &str, secret: bool) {
    let mut args = vec!["config", "set", key];
    if secret {
        args.push("--secret");
    }
    args.extend(["--", pem]);
    env.ok(&args);
}

fn role_exists(server: &Postgres, role: &str) -> bool {
    let sql = format!("SELECT count(*) FROM pg_roles WHERE rolname = '{role}'");
    server.psql("postgres", &sql).unwrap().trim() == "1"
}

#[test]
fn verify_full_connects_and_manages_a_role() {
    let pg = server();
    let tls = pg.tls().unwrap();
    let env = with_password(&pg, SERVER_NAME, "verify-full", "tls_full_role");
    set_pem(&env, "postgresql:sslrootcert", &tls.ca, false);
    env.ok(&["up", "--yes"]);
    assert!(role_exists(&pg, "tls_full_role"));

    // Drift made on the server is seen over TLS too, and restored.
    pg.psql("postgres", "ALTER ROLE tls_full_role LOGIN")
        .unwrap();
    let out = env.ok(&["refresh", "--yes"]);
    assert!(out.contains("updated") || out.contains('~'), "{out}");
    env.ok(&["up", "--yes"]);
    let login = pg
        .psql(
            "postgres",
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'tls_full_role'",
        )
        .unwrap();
    assert_eq!(login.trim(), "f");

    env.ok(&["destroy", "--yes"]);
    assert!(!role_exists(&pg, "tls_full_role"));
}

#[test]
fn a_wrong_root_a_wrong_name_and_no_tls_are_refused_naming_the_reason() {
    let pg = server();
    let tls = pg.tls().unwrap();

    let wrong_root = with_password(&pg, SERVER_NAME, "verify-full", "tls_wrong_root");
    set_pem(&wrong_root, "postgresql:sslrootcert", &tls.other_ca, false);
    let err = wrong_root.fails(&["up", "--yes"]);
    assert!(err.contains("unknown issuer"), "{err}");
    assert!(err.contains("postgresql:sslrootcert"), "{err}");
    assert!(!role_exists(&pg, "tls_wrong_root"));

    // The certificate names `localhost` only; `verify-ca` does not check the name.
    let wrong_name = with_password(&pg, "127.0.0.1", "verify-full", "tls_wrong_name");
    set_pem(&wrong_name, "postgresql:sslrootcert", &tls.ca, false);
    let err = wrong_name.fails(&["up", "--yes"]);
    assert!(err.contains("host name mismatch"), "{err}");
    assert!(err.contains("`localhost`"), "the names it carries: {err}");
    assert!(!role_exists(&pg, "tls_wrong_name"));
    // `verify-ca` skips the name check: only where the project allows it.
    wrong_name.config("postgresql:sslmode", "verify-ca");
    let endpoint = format!("127.0.0.1:{}", pg.port());
    refused_unverified(&wrong_name.fails(&["up", "--yes"]), &endpoint);
    assert!(!role_exists(&pg, "tls_wrong_name"));
    grant_insecure(&wrong_name, &endpoint);
    wrong_name.ok(&["up", "--yes"]);
    assert!(role_exists(&pg, "tls_wrong_name"));
    wrong_name.ok(&["destroy", "--yes"]);

    let plain = with_password(&pg, SERVER_NAME, "disable", "tls_plain");
    let err = plain.fails(&["up", "--yes"]);
    assert!(err.contains("no encryption"), "{err}");
    assert!(err.contains("requires SSL"), "{err}");
    assert!(!role_exists(&pg, "tls_plain"));
}

#[test]
fn a_server_without_ssl_is_refused_when_tls_is_required() {
    // The shared cluster of the other tests has `ssl = off`.
    let plain = Postgres::shared().expect("a PostgreSQL server");
    let env = with_password(&plain, "127.0.0.1", "require", "tls_required");
    let err = env.fails(&["up", "--yes"]);
    assert!(err.contains("does not support SSL"), "{err}");
    assert!(!role_exists(&plain, "tls_required"));
    // `prefer` (the default) goes on without TLS there, as libpq does.
    env.config("postgresql:sslmode", "prefer");
    env.ok(&["up", "--yes"]);
    assert!(role_exists(&plain, "tls_required"));
    env.ok(&["destroy", "--yes"]);
}

#[test]
fn require_and_prefer_encrypt_without_a_root_only_where_granted() {
    let pg = server();
    for mode in ["require", "prefer"] {
        let role = format!("tls_{mode}_role");
        let env = with_password(&pg, "127.0.0.1", mode, &role);
        // No verification at all: refused unless the project grants it for the endpoint.
        let endpoint = format!("127.0.0.1:{}", pg.port());
        refused_unverified(&env.fails(&["up", "--yes"]), &endpoint);
        assert!(!role_exists(&pg, &role), "{mode}");
        // A grant of another endpoint does not do.
        grant_insecure(&env, "127.0.0.1:1");
        refused_unverified(&env.fails(&["up", "--yes"]), &endpoint);
        let yaml = std::fs::read_to_string(env.project.join("Plinth.yaml")).unwrap();
        let yaml = yaml.replace("      tls-insecure: [\"127.0.0.1:1\"]\n", "");
        std::fs::write(env.project.join("Plinth.yaml"), yaml).unwrap();
        grant_insecure(&env, &endpoint);
        env.ok(&["up", "--yes"]);
        assert!(role_exists(&pg, &role), "{mode}");
        env.ok(&["destroy", "--yes"]);
    }
}

#[test]
fn a_client_certificate_logs_in_and_its_key_stays_secret() {
    let pg = server();
    let tls = pg.tls().unwrap();
    // No password: `pg_hba.conf` authenticates this user by its certificate.
    let env = project(&pg, SERVER_NAME, "verify-full", "tls_by_cert");
    env.config("postgresql:username", CERT_USER);
    set_pem(&env, "postgresql:sslrootcert", &tls.ca, false);
    set_pem(&env, "postgresql:sslcert", &tls.client_cert, false);

    // Without the key the configuration is refused before any connection.
    let err = env.fails(&["up", "--yes"]);
    assert!(err.contains("sslkey"), "{err}");

    set_pem(&env, "postgresql:sslkey", &tls.client_key, true);
    let out = env.ok(&["up", "--yes"]);
    assert!(role_exists(&pg, "tls_by_cert"));
    let owner = pg
        .psql(
            "postgres",
            "SELECT count(*) FROM pg_roles WHERE rolname = 'tls_by_cert'",
        )
        .unwrap();
    assert_eq!(owner.trim(), "1");

    // The key's body is in no output and no state.
    let body: String = (tls.client_key.lines())
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let export = env.export().to_string();
    for (what, text) in [("up", out.as_str()), ("state", export.as_str())] {
        assert!(!text.contains(&body[..32]), "the key shows in {what}");
    }
    let config = std::fs::read_dir(&env.project)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .collect::<String>();
    assert!(
        !config.contains(&body[..32]),
        "the key shows in the stack config"
    );

    // A wrong key for the certificate is refused by the host before the handshake.
    let other = project(&pg, SERVER_NAME, "verify-full", "tls_by_cert");
    other.config("postgresql:username", CERT_USER);
    set_pem(&other, "postgresql:sslrootcert", &tls.ca, false);
    set_pem(&other, "postgresql:sslcert", &tls.ca, false);
    set_pem(&other, "postgresql:sslkey", &tls.client_key, true);
    let err = other.fails(&["up", "--yes"]);
    assert!(
        !err.contains(&body[..32]),
        "the key shows in an error: {err}"
    );

    env.ok(&["destroy", "--yes"]);
    assert!(!role_exists(&pg, "tls_by_cert"));
}
