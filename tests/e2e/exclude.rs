//! `--exclude` and `--exclude-dependents`: the inverse of `--target`, deletions included (an
//! excluded resource is not deleted even if the program dropped it).

use std::collections::BTreeMap;

use crate::support::{Env, echo_values};

fn expect(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    (pairs.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `a` ← `b` ← `c` ← `d`: each depends on the one before.
fn chain() -> Env {
    let env = Env::scenario();
    env.config("resources", "a,b,c,d");
    env.config("chain", "true");
    env.ok(&["up", "--yes"]);
    env
}

#[test]
fn exclude_keeps_the_excluded_even_when_the_program_drops_them() {
    let env = chain();
    // An unknown name is refused before anything runs, as `--target` refuses it.
    let err = env.fails(&["up", "--yes", "--exclude", "nosuch"]);
    assert!(err.contains("nosuch"), "{err}");
    let err = env.fails(&["up", "--yes", "--exclude", "a", "--target", "b"]);
    assert!(err.contains("cannot be used with"), "{err}");

    // The program changes `b` and `c` and drops `d`: `b` and `d` are excluded.
    env.config("resources", "a,b,c");
    env.config("value_b", "v2");
    env.config("value_c", "v2");
    let out = env.ok(&["preview", "--exclude", "b", "--exclude", "d"]);
    assert!(!out.contains("delete"), "{out}");
    env.ok(&["up", "--yes", "--exclude", "b", "--exclude", "d"]);
    let kept = [("a", "v"), ("b", "v"), ("c", "v2"), ("d", "v")];
    assert_eq!(echo_values(&env), expect(&kept));

    // With its dependents: excluding `b` leaves `c` too, and `d` (which depends on `c`), though
    // the program dropped it; `a` changes.
    env.config("value_a", "v3");
    env.config("value_c", "v3");
    env.ok(&["up", "--yes", "--exclude", "b", "--exclude-dependents"]);
    let kept = [("a", "v3"), ("b", "v"), ("c", "v2"), ("d", "v")];
    assert_eq!(echo_values(&env), expect(&kept));
    // Without exclusions, everything follows the program, and `d` goes.
    env.ok(&["up", "--yes"]);
    let kept = [("a", "v3"), ("b", "v2"), ("c", "v3")];
    assert_eq!(echo_values(&env), expect(&kept));
}

#[test]
fn an_excluding_destroy_and_refresh_leave_the_excluded_alone() {
    let env = chain();
    // A refresh takes the flags too (what it leaves unread: the engine's
    // `a_refresh_excluding_a_resource_leaves_its_drift_unrecorded`).
    let out = env.ok(&["refresh", "--yes", "--exclude", "a", "--exclude-dependents"]);
    assert!(out.contains("no changes"), "{out}");
    let err = env.fails(&["refresh", "--yes", "--exclude", "nosuch"]);
    assert!(err.contains("nosuch"), "{err}");
    // `b` depends on `a`: a destroy excluding `b` would have to keep `a`, and says so in its
    // preview, before anything is deleted.
    let err = env.fails(&["destroy", "--yes", "--exclude", "b"]);
    assert!(err.contains("b depends on it and is excluded"), "{err}");
    let all = [("a", "v"), ("b", "v"), ("c", "v"), ("d", "v")];
    assert_eq!(echo_values(&env), expect(&all));
    // Excluding `a` alone: its dependents go, it stays.
    env.ok(&["destroy", "--yes", "--exclude", "a"]);
    assert_eq!(echo_values(&env), expect(&[("a", "v")]));
}
