//! The rabbitmq provider's `User` passwords against a real broker: a recorded password changed
//! with `rabbitmqctl` is found by refresh (re-hashed with the broker's salt) and set again by
//! up; a write-only `password_wo` logs in, leaves no trace in anything plinth writes or prints,
//! and is sent again only when `password_wo_version` changes.

use serde_json::json;

use crate::count_line;
use crate::rabbitmq::{broker, declare, project};
use crate::support::{Env, assert_not_written, assert_write_only, printed_with_logs};

const FIRST: &str = "rmq-first-Zp41cVb8Nq";
const SECOND: &str = "rmq-second-Jw62tRx5Lk";
const ELSEWHERE: &str = "changed-with-rabbitmqctl";

#[test]
fn a_recorded_password_changed_on_the_broker_is_drift_that_up_undoes() {
    let broker = broker();
    let env = project(&broker, "%2F");
    env.ok(&["config", "set", "app_password", FIRST, "--secret"]);
    declare(
        &env,
        &json!([{"type": "rabbitmq:User", "name": "user", "inputs": {
            "name": "app", "password": {"$secret": "app_password"}, "tags": ["monitoring"]}}]),
    );
    env.ok(&["up", "--yes"]);
    assert!(broker.logs_in("app", FIRST).unwrap(), "app does not log in");
    env.ok(&["refresh", "--expect-no-changes"]);

    broker.ctl(&["change_password", "app", ELSEWHERE]).unwrap();
    let out = env.run(&["refresh", "--expect-no-changes"]);
    assert!(!out.status.success(), "the changed password went unnoticed");
    let out = env.ok(&["refresh", "--yes"]);
    assert!(out.contains("password"), "not shown as drift:\n{out}");
    assert!(!out.contains(FIRST), "{out}");

    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 updated"), "{out}");
    assert!(broker.logs_in("app", FIRST).unwrap(), "app does not log in");
    assert!(!broker.logs_in("app", ELSEWHERE).unwrap());
    env.ok(&["refresh", "--expect-no-changes"]);
    env.ok(&["destroy", "--yes"]);
}

/// A user whose password is write-only, given in the clear in the program: plinth must keep it
/// out of everything by itself.
fn declare_write_only(env: &Env, password: &str, version: i64, tags: &[&str]) {
    declare(
        env,
        &json!([{"type": "rabbitmq:User", "name": "user", "inputs": {
            "name": "wo_app", "password_wo": password, "password_wo_version": version,
            "tags": tags}}]),
    );
}

#[test]
fn a_write_only_password_logs_in_and_is_never_recorded() {
    let broker = broker();
    let env = project(&broker, "%2F");
    let logs_in = |password: &str| broker.logs_in("wo_app", password).unwrap();

    declare_write_only(&env, FIRST, 1, &["monitoring"]);
    let all = printed_with_logs(&env, &["up", "--yes", "--json"]);
    assert!(logs_in(FIRST));
    assert_write_only(&env, "password_wo", FIRST, &all);

    // Tags change, the version does not: the user keeps its password.
    declare_write_only(&env, SECOND, 1, &["management"]);
    let all = printed_with_logs(&env, &["up", "--yes", "--diff"]);
    assert!(count_line(&all).contains("1 updated"), "{all}");
    assert!(logs_in(FIRST) && !logs_in(SECOND));
    assert_eq!(
        (broker.definitions().unwrap()["users"]
            .as_array()
            .unwrap()
            .iter())
        .find(|u| u["name"] == "wo_app")
        .unwrap()["tags"],
        json!(["management"])
    );

    // The version changes: the new password is sent.
    declare_write_only(&env, SECOND, 2, &["management"]);
    let all = printed_with_logs(&env, &["up", "--yes", "-v", "--diff"]);
    assert!(count_line(&all).contains("1 updated"), "{all}");
    assert!(logs_in(SECOND) && !logs_in(FIRST));
    assert_write_only(&env, "password_wo", SECOND, &all);
    assert_write_only(&env, "password_wo", FIRST, &all);

    // A write-only password has nothing recorded to compare with: a change made on the
    // broker is not drift (as documented).
    broker
        .ctl(&["change_password", "wo_app", ELSEWHERE])
        .unwrap();
    env.ok(&["refresh", "--expect-no-changes"]);
    let all = printed_with_logs(&env, &["destroy", "--yes"]);
    assert_not_written(&env, SECOND, &all);
    assert_not_written(&env, FIRST, &all);
    assert!(!logs_in(ELSEWHERE));
}
