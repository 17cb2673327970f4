//! A stack's whole life through the CLI, one function for every backend: init, preview, up,
//! export and import, a no-change preview, an update, refresh after an out-of-band deletion,
//! history, destroy and removal. The file backend runs it here; the service runs the same
//! function in `service.rs`.

use crate::count_line;
use crate::support::{Env, ServiceLogin};

/// The plaintext of the stack's one secret; it must reach no export.
const SECRET: &str = "tok-5d1e-lifecycle-secret";

fn rows(rows: &[(&str, &str)]) -> Vec<(String, String)> {
    (rows.iter())
        .map(|(k, r)| (k.to_string(), r.to_string()))
        .collect()
}

/// Runs a stack's whole life on the service `service` names (the file backend if none),
/// checking each step.
pub fn whole_life(service: Option<ServiceLogin>) {
    let env = Env::scenario_with_world_on(service);
    env.config("kind", "record");
    env.config("chain", "true");
    env.ok(&["config", "set", "--secret", "token_a", SECRET]);
    assert!(env.ok(&["stack", "ls"]).contains("dev"));
    assert!(env.ok(&["stack", "history"]).contains("no history"));

    // A preview plans and records nothing.
    let out = env.ok(&["preview"]);
    assert!(count_line(&out).contains("2 to create"), "{out}");
    assert!(env.resources().is_empty());
    assert!(env.history().is_empty());

    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 created"), "{out}");
    let first = env.resources();
    assert_eq!(first.len(), 2, "{first:?}");
    for (_, id) in &first {
        assert!(env.world().join(format!("{id}.json")).exists());
    }
    assert_eq!(env.ok(&["stack", "output", "names"]).trim(), "v,v");
    let exported = env.ok(&["stack", "export"]);
    assert!(!exported.contains(SECRET), "an export holds the plaintext");
    assert!(exported.contains("ciphertext"), "{exported}");

    // Export and import the same state: nothing changes, and nothing is left to do.
    let file = env.state.path().join("exported.json");
    env.ok(&["stack", "export", "--file", file.to_str().unwrap()]);
    let out = env.ok(&["stack", "import", "--file", file.to_str().unwrap()]);
    // Two records and the default provider resource of their package.
    assert!(out.contains("Imported 3 resources"), "{out}");
    assert_eq!(env.resources(), first);
    env.ok(&["preview", "--expect-no-changes"]);
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("no changes"), "{out}");
    assert_eq!(env.resources(), first);

    // A changed input updates that resource in place.
    env.config("value_b", "w");
    let err = env.fails(&["preview", "--expect-no-changes"]);
    assert!(err.contains("--expect-no-changes"), "{err}");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 updated"), "{out}");
    assert_eq!(env.resources(), first);
    assert_eq!(env.ok(&["stack", "output", "names"]).trim(), "v,w");

    // A record deleted out of band: refresh finds it gone, `up` puts it back.
    let a = env.id_of("a");
    std::fs::remove_file(env.world().join(format!("{a}.json"))).unwrap();
    let err = env.fails(&["refresh", "--expect-no-changes"]);
    assert!(err.contains("--expect-no-changes"), "{err}");
    assert_eq!(env.resources(), first, "expect-no-changes records nothing");
    let out = env.ok(&["refresh", "--yes"]);
    assert!(out.contains("gone"), "{out}");
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["b"]);
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 created"), "{out}");
    let a = env.id_of("a");
    assert!(env.world().join(format!("{a}.json")).exists());
    env.ok(&["refresh", "--expect-no-changes"]);

    assert_eq!(
        env.history(),
        rows(&[
            ("update", "succeeded"),
            ("refresh", "succeeded"),
            ("update", "succeeded"),
            ("update", "succeeded"),
            ("import", "succeeded"),
            ("update", "succeeded"),
        ])
    );

    // A stack with resources is not removed; destroyed, it is.
    let err = env.fails(&["stack", "rm", "dev"]);
    assert!(err.contains("destroy"), "{err}");
    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
    let records = std::fs::read_dir(env.world()).unwrap().filter(|e| {
        let name = e.as_ref().unwrap().file_name();
        name.to_string_lossy().ends_with(".json")
    });
    assert_eq!(records.count(), 0, "destroy left records in the world");
    env.ok(&["stack", "rm", "dev"]);
    assert!(!env.ok(&["stack", "ls"]).contains("dev"));
    let err = env.fails(&["preview"]);
    assert!(err.contains("stack `dev` does not exist"), "{err}");
}

#[test]
fn a_stack_lives_from_init_to_removal_on_the_file_backend() {
    whole_life(None);
}
