//! A hostile provider tries to unmask a secret input: `adversary:Leak`
//! (tests/plugins/adversary/src/secrets.rs) returns the plaintext of its secret input `token`
//! through every channel a provider has: `check`'s inputs and failures, `invalid`,
//! `unknown-type`, `failed` and `partially-created` errors, output values and keys, `diff`'s
//! property names, `read` (refresh) and `update`. Whatever it does, the plaintext appears
//! nowhere: not on stdout or stderr, not in `plinth logs`, the state directory (checkpoint,
//! journal, backups, history, logs) or `stack export`, where the secret stays sealed. An output
//! key holding it is refused (a key cannot be secret, and renaming it would change the data).

use serde_json::Value;

use crate::support::{Env, guest};

const TOKEN: &str = "tok-hostile-6b1e-plaintext";

/// A scenario project whose resource `x` is an `adversary:Leak` leaking through `leak`, given
/// [`TOKEN`] as its secret input `token`.
fn arena(leak: &str) -> Env {
    let env = Env::scenario_with(&format!(
        "  adversary:\n    path: {}\n",
        guest("plinth-adversary").display()
    ));
    env.config("resources", "x");
    env.config("type_x", "adversary:Leak");
    env.config("inputs_x", &format!("leak={leak}"));
    env.ok(&["config", "set", "token_x", TOKEN, "--secret"]);
    env
}

/// Runs plinth with `args`; returns whether it succeeded and what it printed (stdout, then
/// stderr), after checking that it printed no plaintext.
fn run(env: &Env, args: &[&str]) -> (bool, String) {
    let out = env.run(args);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !printed.contains(TOKEN),
        "plinth {args:?} printed the plaintext:\n{printed}"
    );
    (out.status.success(), printed)
}

/// The plaintext is in no state file, in no update's log, and not in `stack export`.
fn assert_nowhere(env: &Env) {
    for (path, bytes) in env.state_files() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TOKEN),
            "the plaintext is in {}",
            path.display()
        );
    }
    let (ok, _) = run(env, &["logs"]);
    assert!(ok);
    let (ok, _) = run(env, &["logs", "--json"]);
    assert!(ok);
    let (ok, _) = run(env, &["stack", "export"]);
    assert!(ok);
}

/// `x`'s state in `stack export`.
fn exported_x(env: &Env) -> Value {
    let state = env.export();
    let resources = state["snapshot"]["resources"].as_array().unwrap().iter();
    resources
        .rev()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::x"))
        .cloned()
        .unwrap_or_else(|| panic!("no x in {state:#}"))
}

/// `x`'s property `key` on `side` (`inputs` or `outputs`) is sealed in the export.
fn assert_sealed(x: &Value, side: &str, key: &str) {
    let sealed = x[side][key]["ciphertext"].as_str().unwrap_or_default();
    assert!(
        sealed.starts_with("v1:"),
        "{side}.{key} is not sealed: {x:#}"
    );
}

#[test]
fn a_secret_returned_plain_by_check_stays_secret() {
    let env = arena("check-plain");
    let (ok, preview) = run(&env, &["preview"]);
    assert!(ok && preview.contains("[secret]"), "{preview}");
    let (ok, up) = run(&env, &["-v", "up", "--yes"]);
    assert!(ok, "{up}");
    let x = exported_x(&env);
    assert_sealed(&x, "inputs", "token");
    assert_sealed(&x, "inputs", "copy");
    assert_nowhere(&env);
}

#[test]
fn a_secret_in_check_failures_and_errors_is_masked() {
    for leak in ["check-failure", "invalid", "unknown-type", "failed"] {
        let env = arena(leak);
        let (ok, preview) = run(&env, &["preview"]);
        if leak.starts_with("check") || leak == "invalid" {
            assert!(!ok && preview.contains("[secret]"), "{leak}: {preview}");
        }
        let (ok, up) = run(&env, &["-v", "up", "--yes", "--skip-preview"]);
        assert!(!ok, "{leak}: {up}");
        assert!(
            up.contains("[secret]"),
            "{leak}: the error is not shown: {up}"
        );
        assert_nowhere(&env);
    }
}

#[test]
fn a_secret_in_a_partial_creation_is_masked_and_sealed() {
    let env = arena("partial");
    let (ok, up) = run(&env, &["-v", "up", "--yes", "--skip-preview"]);
    assert!(
        !ok && up.contains("initializing with `[secret]` failed"),
        "{up}"
    );
    let x = exported_x(&env);
    assert_eq!(x["id"], "partial-leak", "{x:#}");
    for key in ["token", "copy", "url"] {
        assert_sealed(&x, "outputs", key);
    }
    assert_nowhere(&env);
}

#[test]
fn a_secret_in_ids_outputs_diffs_and_reads_stays_secret() {
    let env = arena("outputs-plain");
    let (ok, up) = run(&env, &["-v", "up", "--yes"]);
    assert!(ok, "{up}");
    let x = exported_x(&env);
    assert_eq!(x["id"], "id-leak", "{x:#}");
    // Echoed at its own path, copied elsewhere, built into another text, and a plain output
    // the schema declares secret.
    for key in ["token", "copy", "url", "credential"] {
        assert_sealed(&x, "outputs", key);
    }
    assert_nowhere(&env);

    // `diff` names a property after the secret and `update` returns it plain again.
    env.config("value_x", "changed");
    let (ok, preview) = run(&env, &["preview"]);
    assert!(ok, "{preview}");
    let (ok, up) = run(&env, &["-v", "up", "--yes"]);
    assert!(ok && up.contains("1 updated"), "{up}");
    let x = exported_x(&env);
    for key in ["token", "copy", "url", "credential"] {
        assert_sealed(&x, "outputs", key);
    }
    // `read` (refresh) returns the input plain and the outputs as create did.
    let (ok, refresh) = run(&env, &["-v", "refresh", "--yes"]);
    assert!(ok, "{refresh}");
    let x = exported_x(&env);
    assert_sealed(&x, "inputs", "token");
    for key in ["token", "copy", "url", "credential"] {
        assert_sealed(&x, "outputs", key);
    }
    assert_nowhere(&env);
    let (ok, destroy) = run(&env, &["-v", "destroy", "--yes"]);
    assert!(ok, "{destroy}");
    assert_nowhere(&env);
}

#[test]
fn an_output_key_holding_a_secret_fails_the_step_and_nothing_renamed_is_recorded() {
    for at in ["top", "nested"] {
        let env = arena("key");
        env.config("inputs_x", &format!("leak=key;leak_at={at}"));
        let (ok, up) = run(&env, &["-v", "up", "--yes", "--skip-preview"]);
        assert!(!ok, "{at}: {up}");
        assert!(
            up.contains("adversary:Leak::x")
                && up.contains("plugin `adversary`")
                && up.contains("`create` returned malformed outputs")
                && up.contains("a property name holding the value of a secret (`key-[secret]`)"),
            "{at}: the error names the resource, the plugin and what was wrong:\n{up}"
        );
        // The resource exists, so its id is kept, without the outputs it was refused for.
        let x = exported_x(&env);
        assert_eq!(x["id"], "key-leak", "{at}: {x:#}");
        assert!(
            !x["outputs"].to_string().contains("key-"),
            "{at}: renamed: {x:#}"
        );
        assert_nowhere(&env);
        // A plugin that stops doing it lets the stack go on.
        env.config("inputs_x", "");
        let (ok, up) = run(&env, &["up", "--yes", "--skip-preview"]);
        assert!(ok, "{at}: {up}");
        let (ok, destroy) = run(&env, &["destroy", "--yes"]);
        assert!(ok, "{at}: {destroy}");
        assert_nowhere(&env);
    }
}

/// A property name counts only a secret of at least `MIN_KEY_SECRET_LEN` (8) characters: a
/// 4-character secret (`admin`, `1234`, a word names are made of) inside an output key is a
/// coincidence more likely than a leak, and refusing it would fail every resource with such a
/// field. The step succeeds with the key kept as returned, while every value holding the short
/// secret is still sealed and it is masked in the logs.
#[test]
fn an_output_key_holding_a_short_secret_is_kept() {
    const SHORT: &str = "k3y9";
    let env = arena("key");
    env.ok(&["config", "set", "token_x", SHORT, "--secret"]);
    let (ok, up) = run(&env, &["up", "--yes", "--skip-preview"]);
    assert!(ok, "{up}");
    let x = exported_x(&env);
    assert_eq!(x["outputs"][format!("key-{SHORT}")], true, "{x:#}");
    assert_sealed(&x, "inputs", "token");
    assert_sealed(&x, "outputs", "token");
    let (ok, logs) = run(&env, &["logs"]);
    assert!(ok && !logs.contains(SHORT), "{logs}");
}
