//! `postgresql:Role.password_wo`, a write-only input, against a real PostgreSQL server: the role
//! logs in with it, nothing plinth writes holds it (sealed or not), a new value changes nothing
//! until `password_wo_version` changes, and then it does.

use plinth_test_postgres::Postgres;
use serde_json::json;

use crate::postgres::{count_line, declare, granted, role, shared};
use crate::support::{Env, assert_write_only, printed_with_logs};

const FIRST: &str = "wo-first-Kd83hQp0Zr";
const SECOND: &str = "wo-second-Vt51mXc7Ls";
const ROLE: &str = "wo_app";

/// Whether `user` logs in to `server` with `password`.
fn logs_in(server: &Postgres, user: &str, password: &str) -> bool {
    let login = std::process::Command::new("psql")
        .args([
            "-X",
            "-At",
            "-h",
            "127.0.0.1",
            "-p",
            &server.port().to_string(),
        ])
        .args(["-U", user, "-d", "postgres", "-c", "SELECT current_user"])
        .env("PGPASSWORD", password)
        .output()
        .unwrap();
    login.status.success() && String::from_utf8_lossy(&login.stdout).trim() == user
}

/// The role, its password given in the clear in the program (no secret config at all): plinth
/// must keep it out of everything by itself.
fn declare_role(env: &Env, password: &str, version: i64) {
    declare(
        env,
        &json!([role(
            "app",
            json!({"name": ROLE, "login": true, "password_wo": password,
                   "password_wo_version": version})
        )]),
    );
}

#[test]
fn a_write_only_password_is_sent_never_stored_and_changed_by_its_version() {
    let pg = shared();
    let env = granted(&pg);
    declare_role(&env, FIRST, 1);
    let preview = env.ok(&["preview", "--diff"]);
    assert!(
        preview.contains("password_wo: (write-only: sent, not recorded)"),
        "{preview}"
    );
    // The events, as `--json` streams them, and debug logs.
    let all = printed_with_logs(&env, &["up", "--yes", "--json"]);
    assert!(all.contains("password_wo"), "the events name it: {all}");
    assert!(logs_in(&pg, ROLE, FIRST), "the role logs in with it");
    assert_write_only(&env, "password_wo", FIRST, &all);

    // A new value alone: nothing to do, the role keeps its password.
    declare_role(&env, SECOND, 1);
    let up = env.ok(&["up", "--yes"]);
    assert!(!count_line(&up).contains("updated"), "{up}");
    assert!(logs_in(&pg, ROLE, FIRST) && !logs_in(&pg, ROLE, SECOND));

    // The version changes: the new value is sent, once.
    declare_role(&env, SECOND, 2);
    let all = printed_with_logs(&env, &["up", "--yes", "-v", "--diff"]);
    assert!(count_line(&all).contains("updated"), "{all}");
    assert!(
        all.contains("password_wo: (write-only: sent, not recorded)"),
        "{all}"
    );
    assert!(logs_in(&pg, ROLE, SECOND) && !logs_in(&pg, ROLE, FIRST));
    assert_write_only(&env, "password_wo", SECOND, &all);
    assert_write_only(&env, "password_wo", FIRST, &all);

    // Refresh reads no password back, so finds no drift; the next up changes nothing.
    let refresh = env.ok(&["refresh", "--yes"]);
    assert!(!refresh.contains("drift"), "{refresh}");
    let preview = env.ok(&["preview"]);
    assert!(!preview.contains("password_wo"), "{preview}");
    env.ok(&["destroy", "--yes"]);
    assert_eq!(
        pg.psql(
            "postgres",
            &format!("SELECT count(*) FROM pg_roles WHERE rolname = '{ROLE}'")
        )
        .unwrap()
        .trim(),
        "0"
    );
}

#[test]
fn a_write_only_password_without_its_version_is_refused_by_name() {
    let pg = shared();
    let env = granted(&pg);
    declare(
        &env,
        &json!([role(
            "app",
            json!({"name": "wo_refused", "password_wo": FIRST})
        )]),
    );
    let err = env.fails(&["up", "--yes"]);
    assert!(err.contains("give password_wo_version too"), "{err}");
    assert!(!err.contains(FIRST), "{err}");
}
