//! Policy packs: the test pack (tests/policies/testpack) judging the scenario program's
//! resources. A mandatory violation fails `preview` and stops `up` before the violating step;
//! an advisory one is shown and recorded; a pack that loops, traps, hoards memory, or tries to
//! reach a file, a socket or a secret gets nowhere, and the stack is left as it was.

use crate::support::{Env, guest, printed};

/// A scenario project with the random plugin; `extra` is appended to its Plinth.yaml.
fn project(extra: &str) -> Env {
    Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    path: {}\n  random:\n    path: {}\n{extra}",
        guest("plinth-scenario").display(),
        guest("plinth-testkit").display(),
        guest("plinth-random").display(),
    ))
}

fn pack() -> String {
    guest("plinth-policy-testpack").display().to_string()
}

/// Writes the policy configuration `json` into the project; its path.
pub(crate) fn pack_config(env: &Env, json: &str) -> String {
    let path = env.project.join("policy.json");
    std::fs::write(&path, json).unwrap();
    path.display().to_string()
}

/// Runs plinth expecting failure; what it printed.
pub(crate) fn fails(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    let text = printed(&out);
    assert!(!out.status.success(), "plinth {args:?} succeeded:\n{text}");
    text
}

/// Runs plinth expecting success; what it printed.
pub(crate) fn succeeds(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    let text = printed(&out);
    assert!(out.status.success(), "plinth {args:?} failed:\n{text}");
    text
}

pub(crate) const TOO_SHORT: &str = "[mandatory] policy `testpack/password-length`: the password is 8 characters long; make it \
     at least 16 (property `length`)";

#[test]
fn a_mandatory_violation_fails_preview_and_up_creates_nothing() {
    let env = project("");
    env.config("resources", "a");
    env.config("value_a", "long enough");
    env.config("password_length", "8");
    let pack = pack();

    let preview = fails(&env, &["preview", "--policy-pack", &pack]);
    assert!(preview.contains(TOO_SHORT), "{preview}");
    assert!(preview.contains("violates 1 mandatory policy"), "{preview}");

    // `up` previews first: the violation stops it before anything is created.
    let up = fails(&env, &["up", "--yes", "--policy-pack", &pack]);
    assert!(up.contains(TOO_SHORT), "{up}");
    assert!(env.resources().is_empty(), "{:?}", env.resources());

    // Without the preview, the violating step is stopped before its provider is asked.
    let up = fails(
        &env,
        &["up", "--yes", "--skip-preview", "--policy-pack", &pack],
    );
    assert!(up.contains(TOO_SHORT), "{up}");
    let names: Vec<String> = env.resources().into_iter().map(|(name, _)| name).collect();
    assert!(!names.contains(&"password".to_owned()), "{names:?}");

    // The same program passes without the pack, and with a long enough password.
    env.config("password_length", "16");
    succeeds(&env, &["up", "--yes", "--policy-pack", &pack]);
    let names: Vec<String> = env.resources().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["a", "password"]);
}

#[test]
fn an_advisory_violation_is_shown_recorded_and_the_run_succeeds() {
    let env = project(&format!("policy-packs:\n  - {}\n", pack()));
    env.config("resources", "a");
    env.config("value_a", "v");
    let up = succeeds(&env, &["up", "--yes"]);
    let advisory =
        "[advisory] policy `testpack/value-length`: `v` is a short value (property `value`)";
    assert!(up.contains(advisory), "{up}");
    // The stack's analysis, once the program has ended.
    let stack = "[advisory] policy `testpack/value-length`: the stack holds 1 echoes";
    assert!(up.contains(stack), "{up}");
    assert_eq!(env.resources().len(), 1, "{:?}", env.resources());
    let logs = succeeds(&env, &["logs"]);
    assert!(logs.contains(advisory), "{logs}");
}

#[test]
fn the_configuration_sets_the_minimum_and_the_level() {
    let env = project(&format!("policy-packs:\n  - path: {}\n", pack()));
    env.config("resources", "a");
    env.config("value_a", "long enough");
    env.config("password_length", "20");
    succeeds(&env, &["preview"]);

    let stricter = pack_config(&env, r#"{"password-length": {"minimum": 32}}"#);
    let preview = fails(&env, &["preview", "--policy-pack-config", &stricter]);
    assert!(
        preview.contains("the password is 20 characters long; make it at least 32"),
        "{preview}"
    );

    let advisory = pack_config(
        &env,
        r#"{"password-length": {"enforcementLevel": "advisory", "minimum": 32}}"#,
    );
    let preview = succeeds(&env, &["preview", "--policy-pack-config", &advisory]);
    assert!(
        preview.contains("[advisory] policy `testpack/password-length`"),
        "{preview}"
    );

    let disabled = pack_config(
        &env,
        r#"{"password-length": "disabled", "value-length": "disabled"}"#,
    );
    let preview = succeeds(&env, &["preview", "--policy-pack-config", &disabled]);
    assert!(!preview.contains("policy `testpack/"), "{preview}");

    for (json, error) in [
        (
            r#"{"pasword-length": {"minimum": 32}}"#,
            "names the policy `pasword-length`, which no policy pack holds",
        ),
        (
            r#"{"password-length": "strict"}"#,
            "the level \"strict\" is not one of",
        ),
        // Checked by the host against the schema the pack declares, before the pack sees it:
        // a key of the wrong type, and one the schema does not allow (which the pack's own
        // `configure` would have ignored).
        (
            r#"{"password-length": {"minimum": "long"}}"#,
            "the configuration of policy `testpack/password-length` does not match the schema \
             the pack declares: at `/minimum`: \"long\" is not of type \"integer\"",
        ),
        (
            r#"{"password-length": {"minimum": 20, "minimun": 32}}"#,
            "the configuration of policy `testpack/password-length` does not match the schema \
             the pack declares: at its top level: Additional properties are not allowed \
             ('minimun' was unexpected)",
        ),
        ("not json", "is malformed"),
    ] {
        let file = pack_config(&env, json);
        let out = fails(&env, &["preview", "--policy-pack-config", &file]);
        assert!(out.contains(error), "{json}: {out}");
    }
}

/// Runs `up` on a stack that exists, with the test pack's hostile policy in `mode`; checks the
/// run fails naming the pack, and the stack is left as it was.
fn hostile_run_fails(mode: &str, expected: &str) {
    let env = hostile_project(&pack(), "64MiB", "2s");
    hostile_runs_fail(&env, "testpack", &[(mode, expected)]);
}

/// A scenario project whose stack exists, with the pack at `pack` under the given limits.
pub(crate) fn hostile_project(pack: &str, memory: &str, timeout: &str) -> Env {
    let limits = format!("    limits: {{ memory: {memory}, call-timeout: {timeout} }}\n");
    let env = project(&format!("policy-packs:\n  - path: {pack}\n{limits}"));
    env.config("resources", "a");
    env.config("value_a", "first");
    succeeds(&env, &["up", "--yes"]);
    env
}

/// For each `(mode, expected)`, runs `up` (previewing first, then not) with the hostile policy
/// of `env`'s pack, named `name`, in that mode: each run fails naming the pack and saying
/// `expected`, and the stack is left as it was.
pub(crate) fn hostile_runs_fail(env: &Env, name: &str, modes: &[(&str, &str)]) {
    let before = env.export()["snapshot"]["resources"].clone();
    env.config("value_a", "second");
    let loop_timeout = call_timeout(env);
    for (mode, expected) in modes {
        // Only the loop is for the deadline to stop: under any other mode, what the pack does
        // (trap, run out of memory) must end the call, however slow a loaded machine makes it
        // (a TypeScript pack filling 128 MiB once took longer than 5 s).
        let timeout = if *mode == "loop" {
            &loop_timeout
        } else {
            UNHURRIED
        };
        set_call_timeout(env, timeout);
        let config = pack_config(env, &format!(r#"{{"hostile": {{"mode": "{mode}"}}}}"#));
        for skip in [false, true] {
            let mut args = vec!["up", "--yes", "--policy-pack-config", &config];
            if skip {
                args.push("--skip-preview");
            }
            let out = fails(env, &args);
            assert!(
                out.contains(&format!("policy pack `{name}` failed")),
                "{mode}: {out}"
            );
            assert!(out.contains(expected), "{mode}: {out}");
            assert_eq!(env.export()["snapshot"]["resources"], before, "{mode}");
        }
    }
}

/// The call timeout of the modes the deadline is not meant to stop.
const UNHURRIED: &str = "10min";

/// The call timeout [`hostile_project`] wrote into `env`'s `Plinth.yaml`.
fn call_timeout(env: &Env) -> String {
    let yaml = std::fs::read_to_string(env.project.join("Plinth.yaml")).unwrap();
    split_at_call_timeout(&yaml).1.to_owned()
}

/// Sets the call timeout [`hostile_project`] wrote into `env`'s `Plinth.yaml`.
fn set_call_timeout(env: &Env, timeout: &str) {
    let path = env.project.join("Plinth.yaml");
    let yaml = std::fs::read_to_string(&path).unwrap();
    let (head, _, tail) = split_at_call_timeout(&yaml);
    std::fs::write(&path, format!("{head}{timeout}{tail}")).unwrap();
}

/// `yaml` as what comes before the call timeout's value, the value, and what follows it.
fn split_at_call_timeout(yaml: &str) -> (&str, &str, &str) {
    let key = "call-timeout: ";
    let start = yaml.find(key).expect("the pack's limits") + key.len();
    let end = start + yaml[start..].find(' ').expect("a timeout, then ` }`");
    (&yaml[..start], &yaml[start..end], &yaml[end..])
}

#[test]
fn a_pack_that_loops_fails_naming_it_and_changes_nothing() {
    hostile_run_fails("loop", "`analyze-resource` timed out after 2s");
}

#[test]
fn a_pack_that_traps_fails_naming_it_and_changes_nothing() {
    hostile_run_fails("trap", "`analyze-resource` panicked");
}

#[test]
fn a_pack_that_hoards_memory_fails_naming_it_and_changes_nothing() {
    hostile_run_fails("allocate", "`analyze-resource` ran out of memory");
}

#[test]
fn a_pack_cannot_open_a_file_reach_a_socket_or_show_a_secret() {
    let env = project(&format!("policy-packs:\n  - {}\n", pack()));
    env.config("resources", "a");
    env.config("value_a", "long enough");

    let secret_file = env.project.join("secret.txt");
    std::fs::write(&secret_file, "policy-file-content-7c1e").unwrap();
    let config = pack_config(
        &env,
        &format!(
            r#"{{"hostile": {{"mode": "open-file", "path": "{}"}}}}"#,
            secret_file.display()
        ),
    );
    let out = succeeds(&env, &["preview", "--policy-pack-config", &config]);
    assert!(out.contains("could not read the file"), "{out}");
    assert!(!out.contains("policy-file-content-7c1e"), "{out}");

    a_pack_cannot_connect(&env);

    let token = "tok-policy-9d2f-secret";
    succeeds(&env, &["config", "set", "token_a", token, "--secret"]);
    let config = pack_config(&env, r#"{"hostile": {"mode": "leak"}}"#);
    let out = succeeds(&env, &["up", "--yes", "--policy-pack-config", &config]);
    assert!(out.contains("the secrets are: [secret]"), "{out}");
    assert!(!out.contains(token), "{out}");
    let logs = succeeds(&env, &["logs"]);
    assert!(logs.contains("the secrets are: [secret]"), "{logs}");
    assert!(!logs.contains(token), "{logs}");
}

/// The test pack of `env` (in the `hostile` policy's `socket` mode) tries a connection to a
/// local listener: it is refused, and none reached the listener.
pub(crate) fn a_pack_cannot_connect(env: &Env) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let config = pack_config(
        env,
        &format!(r#"{{"hostile": {{"mode": "socket", "address": "{address}"}}}}"#),
    );
    let out = succeeds(env, &["preview", "--policy-pack-config", &config]);
    assert!(out.contains("could not connect"), "{out}");
    // The run is over: a connection it made would be waiting.
    listener.set_nonblocking(true).unwrap();
    assert_eq!(
        listener.accept().unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );
}
