//! Hostile and damaged state and configuration files, and numbers JSON cannot hold: each is
//! refused with an error that says what is wrong, where, and what to do, or (a journal's torn
//! end, an update still running) said plainly on load; the state stays loadable and exports.

use std::path::PathBuf;
use std::process::Stdio;

use crate::service::{gated, release, up_held};
use crate::support::{Env, guest};

/// `<state>/stacks/scenario/<stack>.<ext>` of a scenario project.
fn stack_file(env: &Env, stack: &str, ext: &str) -> PathBuf {
    (env.state.path().join("stacks/scenario")).join(format!("{stack}.{ext}"))
}

/// Runs `args`, expecting success; returns stderr.
fn ok_stderr(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "plinth {args:?} failed:\n{stderr}");
    stderr
}

#[test]
fn a_torn_journal_end_is_named_on_load_with_what_may_be_missing() {
    let env = gated(None);
    let mut up = up_held(&env, Stdio::null);
    // Killed at its gate: the begin of `slow`'s create is the journal's only frame.
    up.kill().unwrap();
    up.wait().unwrap();
    let journal = std::fs::read(env.journal()).unwrap();
    // The header line, then frames: a length (u32, little-endian), its complement, a member.
    let (mut frames, mut last) = (0, journal.iter().position(|b| *b == b'\n').unwrap() + 1);
    let mut at = last;
    while at < journal.len() {
        frames += 1;
        last = at;
        at += 8 + u32::from_le_bytes(journal[at..at + 4].try_into().unwrap()) as usize;
    }
    assert_eq!(
        at,
        journal.len(),
        "the journal is whole before the test cuts it"
    );
    // The crash cut the last frame short: its last 10 bytes never reached the disk.
    std::fs::write(env.journal(), &journal[..journal.len() - 10]).unwrap();
    let lost = journal.len() - 10 - last;

    let stderr = ok_stderr(&env, &["preview"]);
    assert!(
        stderr.contains("had an interrupted update; its journal was replayed")
            && stderr.contains(&format!(
                "the end of the journal of stack `dev` could not be read and was left out: \
                 frame {frames} (the last {lost} bytes, from byte {last}); operations recorded \
                 there may be missing from the state"
            ))
            && stderr.contains("plinth refresh"),
        "{stderr}"
    );
    // The state still loads and exports; an update takes the stack over and finishes.
    env.export();
    release(&env);
    let stderr = ok_stderr(&env, &["up", "--yes", "--skip-preview"]);
    assert!(stderr.contains(&format!("frame {frames} (")), "{stderr}");
    assert!(!env.journal().exists());
    ok_stderr(&env, &["preview", "--expect-no-changes"]);
}

#[test]
fn a_preview_during_an_update_says_it_runs_not_that_it_was_interrupted() {
    let env = gated(None);
    let up = up_held(&env, Stdio::piped);
    let stderr = ok_stderr(&env, &["preview"]);
    assert!(
        stderr.contains("stack `dev` has an update running, `up` by")
            && stderr.contains(&format!("pid {}", up.id()))
            && stderr.contains("the state it has recorded so far"),
        "{stderr}"
    );
    assert!(!stderr.contains("interrupted"), "{stderr}");
    release(&env);
    let out = up.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Finished: nothing more to say.
    let stderr = ok_stderr(&env, &["preview"]);
    assert!(
        !stderr.contains("running") && !stderr.contains("interrupted"),
        "{stderr}"
    );
}

#[test]
fn a_checkpoint_of_another_stack_is_refused_on_load_and_import() {
    let env = Env::scenario();
    env.ok(&["up", "--yes"]);
    env.ok(&["stack", "init", "prod"]);
    let dev = stack_file(&env, "dev", "json");
    let prod = stack_file(&env, "prod", "json");
    std::fs::copy(&dev, &prod).unwrap();
    let files = env.state_files();

    fn prod_args<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [&["--stack", "prod"][..], args].concat()
    }
    for args in [
        &["preview"][..],
        &["up", "--yes"],
        &["state", "protect", "a"],
    ] {
        let stderr = env.fails(&prod_args(args));
        assert!(
            stderr.contains(&format!(
                "the state file {} is the state of stack `dev`, not of stack `prod`, so it was \
                 refused and nothing was changed",
                prod.display()
            )) && stderr.contains("plinth --stack dev stack import --file F"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(env.state_files(), files, "a refused command wrote state");

    // Exported as what it is, dev's state, it is refused by prod's import too.
    let exported = env.ok(&prod_args(&["stack", "export"]));
    let state: serde_json::Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(state["stack"], "dev");
    let file = env.state.path().join("exported.json");
    std::fs::write(&file, exported).unwrap();
    let stderr = env.fails(&prod_args(&[
        "stack",
        "import",
        "--file",
        file.to_str().unwrap(),
    ]));
    assert!(
        stderr.contains("is the state of stack `dev`, not of stack `prod`"),
        "{stderr}"
    );
    // Where it belongs, it imports.
    env.ok(&["stack", "import", "--file", file.to_str().unwrap()]);
    env.ok(&["preview", "--expect-no-changes"]);
}

#[test]
fn a_malformed_ciphertext_is_named_by_resource_and_property_and_still_exports() {
    let env = Env::scenario();
    env.config("resources", "a");
    env.ok(&["config", "set", "token_a", "tok-e1", "--secret"]);
    env.ok(&["up", "--yes"]);
    let path = stack_file(&env, "dev", "json");
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let a = (state["snapshot"]["resources"].as_array_mut().unwrap())
        .iter_mut()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::a"))
        .unwrap();
    let urn = a["urn"].as_str().unwrap().to_owned();
    let token = &mut a["inputs"]["token"];
    assert!(token["ciphertext"].is_string(), "{token}");
    token["ciphertext"] = "v1:AAAA".into();
    std::fs::write(&path, serde_json::to_vec(&state).unwrap()).unwrap();

    for args in [
        &["preview"][..],
        &["up", "--yes"],
        &["stack", "output", "--show-secrets"],
    ] {
        let stderr = env.fails(args);
        assert!(
            stderr.contains(&format!(
                "cannot open the secret of resource `{urn}` at `inputs.token`: a secret of \
                 stack `dev` is malformed: too short"
            )),
            "{args:?}: {stderr}"
        );
    }
    // What needs no plaintext works; the state is exported sealed, as it is, for repair,
    // without the passphrase.
    env.ok(&["stack", "output"]);
    let out = (env.command(&["stack", "export"]))
        .env_remove("PLINTH_CONFIG_PASSPHRASE")
        .output()
        .unwrap();
    let exported = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && exported.contains("v1:AAAA"),
        "{exported}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_duplicate_key_in_a_config_file_is_refused_naming_it_and_its_line() {
    let env = Env::scenario();
    let stack_yaml = env.project.join("Plinth.dev.yaml");
    // What `stack init` wrote (a new stack may have no file yet), then a config of our own.
    let mut text = std::fs::read_to_string(&stack_yaml).unwrap_or_default();
    assert!(!text.contains("config:"), "{text}");
    text.push_str("config:\n  scenario:resources: a\n  scenario:resources: b\n");
    let line = text.lines().count();
    std::fs::write(&stack_yaml, text).unwrap();
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains(&format!(
            "Plinth.dev.yaml is malformed: the key `scenario:resources` is given twice, the \
             second time at line {line}; give each key once"
        )),
        "{stderr}"
    );
    std::fs::remove_file(&stack_yaml).unwrap();

    // Plinth.yaml too.
    let project_yaml = env.project.join("Plinth.yaml");
    let text = std::fs::read_to_string(&project_yaml).unwrap();
    std::fs::write(&project_yaml, format!("{text}name: other\n")).unwrap();
    let stderr = env.fails(&["preview"]);
    let line = text.lines().count() + 1;
    assert!(
        stderr.contains(&format!(
            "Plinth.yaml is malformed: the key `name` is given twice, the second time at line {line}"
        )),
        "{stderr}"
    );
}

#[test]
fn an_oversized_or_deeply_nested_project_file_is_refused_before_parsing() {
    let env = Env::scenario();
    let project_yaml = env.project.join("Plinth.yaml");
    let text = std::fs::read_to_string(&project_yaml).unwrap();
    // 200 KB of brackets: the YAML parser took 23 s to refuse them.
    std::fs::write(
        &project_yaml,
        format!("{text}description: {}\n", "[".repeat(200_000)),
    )
    .unwrap();
    let stderr = env.fails(&["preview"]);
    let line = text.lines().count() + 1;
    assert!(
        stderr.contains(&format!(
            "Plinth.yaml is malformed: brackets nest more than 64 levels deep at line {line}"
        )),
        "{stderr}"
    );
    std::fs::write(
        &project_yaml,
        format!("{text}description: {}\n", "x".repeat(2 << 20)),
    )
    .unwrap();
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("Plinth.yaml is larger than 1024 KiB"),
        "{stderr}"
    );
}

#[test]
fn a_number_a_provider_returns_that_json_cannot_hold_fails_the_step() {
    let env = Env::scenario_with(&format!(
        "  adversary:\n    path: {}\n",
        guest("plinth-adversary").display()
    ));
    env.config("type_x", "adversary:Numbers");
    for (number, what) in [
        ("nan", "NaN"),
        ("inf", "infinity"),
        ("-inf", "negative infinity"),
    ] {
        env.config("resources", "ok,x");
        env.config("inputs_x", &format!("number={number}"));
        let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
        assert!(
            stderr.contains("plugin `adversary`: `create` returned malformed outputs")
                && stderr.contains(&format!("`stats.size` is {what}: a number must be finite")),
            "{stderr}"
        );
        // `x` exists, so it is recorded, by its id, without the outputs that could not be
        // stored; nothing is left pending; the state loads and exports.
        let state = env.export();
        let x = (state["snapshot"]["resources"].as_array().unwrap().iter())
            .find(|r| r["urn"].as_str().unwrap().ends_with("::x"))
            .unwrap_or_else(|| panic!("no `x` in {state}"));
        assert_eq!(x["id"], "x", "{x}");
        assert!(x["outputs"].get("stats").is_none(), "{x}");
        assert!(
            (state["snapshot"]["pending_operations"].as_array()).is_none_or(Vec::is_empty),
            "{state}"
        );
        // A run without it deletes it.
        env.config("resources", "ok");
        env.ok(&["up", "--yes", "--skip-preview"]);
        let names: Vec<_> = env.resources().into_iter().map(|r| r.0).collect();
        assert_eq!(names, ["ok"], "{number}");
    }
}

#[test]
fn a_number_a_program_sends_that_json_cannot_hold_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let env = crate::numbers::numbers_project(&dir);
    env.config("not_finite", "inf");
    for args in [&["preview"][..], &["up", "--yes"]] {
        let stderr = env.fails(args);
        assert!(
            stderr.contains("register-resource `odd`: malformed inputs: `tuning[1]` is infinity"),
            "{args:?}: {stderr}"
        );
    }
    env.export();
    env.ok(&["config", "rm", "not_finite"]);
    env.ok(&["up", "--yes"]);
}

/// `stack import` reads at most 256 MiB: a larger file is refused by its size before a byte is
/// read, and an endless stream (stdin from /dev/zero) once the cap is read, the state unchanged.
#[test]
fn a_checkpoint_to_import_larger_than_the_cap_is_refused_without_reading_it_all() {
    let env = Env::scenario();
    env.config("resources", "ok");
    env.ok(&["up", "--yes", "--skip-preview"]);
    let before = env.export();
    let dir = tempfile::tempdir().unwrap();
    // Sparse: no disk is used.
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len((256 << 20) + 1)
        .unwrap();
    let stderr = env.fails(&["stack", "import", "--file", huge.to_str().unwrap()]);
    assert!(
        stderr.contains("huge.json is larger than 256 MiB, the most `stack import` reads"),
        "{stderr}"
    );
    let out = (env.command(&["stack", "import"]))
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("standard input is larger than 256 MiB"),
        "{stderr}"
    );
    assert_eq!(env.export(), before);
}
