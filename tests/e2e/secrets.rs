//! Secrets: sealed in state and config, hidden in every display and log line, opened only with
//! the stack's passphrase.

use crate::support::service::TestService;
use crate::support::{
    ConfigCleanup, Env, PASSPHRASE, ServiceLogin, guest, own_home, printed, repo_root,
};

/// Everything plinth printed, on stdout and stderr.
/// Runs plinth, expecting success, and appends what it printed to `log`.
fn run(env: &Env, args: &[&str], log: &mut String) -> String {
    let out = env.run(args);
    let text = printed(&out);
    assert!(out.status.success(), "plinth {args:?} failed:\n{text}");
    log.push_str(&text);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Fails naming the place where `plaintext` was found: a state file, the stack's config file or
/// what plinth printed.
fn assert_nowhere(env: &Env, plaintext: &str, log: &str) {
    for (path, bytes) in env.state_files() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(plaintext),
            "the plaintext of a secret is in {}",
            path.display()
        );
    }
    let config = env.project.join(format!("Plinth.{}.yaml", env.stack));
    let config = std::fs::read_to_string(&config).unwrap();
    assert!(
        !config.contains(plaintext),
        "the plaintext is in:\n{config}"
    );
    assert!(
        !log.contains(plaintext),
        "plinth printed the plaintext:\n{log}"
    );
}

#[test]
fn secret_config_stays_sealed_and_hidden() {
    let env = Env::scenario();
    let token = "tok-3f9a-very-secret";
    let mut log = String::new();
    run(
        &env,
        &["config", "set", "token_a", token, "--secret"],
        &mut log,
    );
    let shown = run(&env, &["config", "get", "token_a"], &mut log);
    assert_eq!(shown.trim(), "[secret]");
    let revealed = env.ok(&["config", "get", "token_a", "--show-secrets"]);
    assert_eq!(revealed.trim(), token);

    run(&env, &["preview"], &mut log);
    run(&env, &["-v", "up", "--yes"], &mut log);
    // The secret reached the resource as a secret input, and its echo as a secret output.
    let state = run(&env, &["stack", "export"], &mut log);
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    let a = state["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::a"))
        .unwrap();
    for side in ["inputs", "outputs"] {
        let sealed = a[side]["token"]["ciphertext"].as_str().unwrap_or_default();
        assert!(sealed.starts_with("v1:"), "{side}: {}", a[side]);
    }
    // A new value updates the resource; the journal and checkpoint keep it sealed too.
    let token2 = "tok-71c2-another-secret";
    run(
        &env,
        &["config", "set", "token_a", token2, "--secret"],
        &mut log,
    );
    let out = run(&env, &["-v", "up", "--yes"], &mut log);
    assert!(out.contains("1 updated"), "{out}");
    run(&env, &["stack", "output"], &mut log);
    run(&env, &["stack", "ls"], &mut log);
    assert_nowhere(&env, token, &log);
    assert_nowhere(&env, token2, &log);

    // A wrong passphrase is refused at once, in one line; no passphrase at all names the
    // variable to set.
    let out = env
        .command(&["preview"])
        .env("PLINTH_CONFIG_PASSPHRASE", "wrong")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("incorrect passphrase for stack `dev`"),
        "{stderr}"
    );
    for args in [
        &["stack", "output", "--show-secrets"][..],
        &["config", "get", "token_a", "--show-secrets"],
        &["up", "--yes"],
    ] {
        let out = env
            .command(args)
            .env_remove("PLINTH_CONFIG_PASSPHRASE")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("PLINTH_CONFIG_PASSPHRASE"), "{stderr}");
    }
    // Listing stacks, masked outputs and the history need no passphrase.
    for args in [
        &["stack", "ls"][..],
        &["stack", "output"],
        &["stack", "history"],
    ] {
        let out = env
            .command(args)
            .env_remove("PLINTH_CONFIG_PASSPHRASE")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", printed(&out));
    }

    // Once a stack has a salt, `up` checks the passphrase before it starts, even when no secret
    // is left in its state.
    env.ok(&["config", "rm", "token_a"]);
    env.ok(&["up", "--yes"]);
    assert!(!env.ok(&["stack", "export"]).contains("ciphertext"));
    let out = env
        .command(&["up", "--yes"])
        .env("PLINTH_CONFIG_PASSPHRASE", "wrong")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("incorrect passphrase for stack `dev`"),
        "{stderr}"
    );

    env.ok(&["destroy", "--yes"]);
}

#[test]
fn a_generated_password_stays_sealed_and_hidden() {
    let dir = repo_root().join("examples/hello");
    let stack = "e2e-secrets";
    let _cleanup = ConfigCleanup(dir.join(format!("Plinth.{stack}.yaml")));
    let env = Env::in_dir(dir, stack);
    let mut log = String::new();
    run(&env, &["-v", "up", "--yes"], &mut log);
    let out = run(&env, &["stack", "output"], &mut log);
    let line = out.lines().find(|l| l.starts_with("password")).unwrap();
    assert!(line.contains("[secret]"), "{out}");
    let masked = run(&env, &["stack", "output", "--json"], &mut log);
    let masked: serde_json::Value = serde_json::from_str(&masked).unwrap();
    assert_eq!(masked["password"], "[secret]");
    run(&env, &["stack", "export"], &mut log);
    run(&env, &["-v", "up", "--yes"], &mut log);

    let shown = env.ok(&["stack", "output", "--show-secrets", "--json"]);
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    let password = shown["password"].as_str().unwrap();
    assert_eq!(password.len(), 20, "{shown}");
    assert_nowhere(&env, password, &log);
    env.ok(&["destroy", "--yes"]);
}

/// The sealed `token` of resource `a`, in its inputs and its outputs, as `stack export` shows
/// the state.
fn sealed_tokens(env: &Env, log: &mut String) -> Vec<String> {
    let state = run(env, &["stack", "export"], log);
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    let a = (state["snapshot"]["resources"].as_array().unwrap().iter())
        .find(|r| r["urn"].as_str().unwrap().ends_with("::a"))
        .unwrap();
    (["inputs", "outputs"].iter())
        .map(|side| a[side]["token"]["ciphertext"].as_str().unwrap().to_owned())
        .collect()
}

/// A secret that did not change keeps its ciphertext through later commands (no re-encryption
/// of ten thousand unchanged secrets per checkpoint); a changed one is sealed afresh, and the
/// input and output holding the same plaintext never share a ciphertext.
#[test]
fn an_unchanged_secret_keeps_its_ciphertext() {
    let env = Env::scenario();
    let mut log = String::new();
    run(
        &env,
        &[
            "config",
            "set",
            "token_a",
            "tok-5d1e-kept-secret",
            "--secret",
        ],
        &mut log,
    );
    run(&env, &["up", "--yes"], &mut log);
    let first = sealed_tokens(&env, &mut log);
    assert_ne!(first[0], first[1], "equal plaintexts, distinct ciphertexts");
    run(&env, &["refresh", "--yes"], &mut log);
    run(&env, &["up", "--yes"], &mut log);
    assert_eq!(sealed_tokens(&env, &mut log), first);

    run(
        &env,
        &[
            "config",
            "set",
            "token_a",
            "tok-0b7c-changed-secret",
            "--secret",
        ],
        &mut log,
    );
    let out = run(&env, &["up", "--yes"], &mut log);
    assert!(out.contains("1 updated"), "{out}");
    let changed = sealed_tokens(&env, &mut log);
    assert!(
        changed.iter().all(|c| !first.contains(c)) && changed[0] != changed[1],
        "{first:?} {changed:?}"
    );
    assert_nowhere(&env, "tok-5d1e-kept-secret", &log);
    assert_nowhere(&env, "tok-0b7c-changed-secret", &log);
}

/// An update may record a secret whatever the stack held before (any provider output, any
/// program value can be one), so it needs the stack's secrets before it starts. Without a
/// passphrase and without a terminal to ask on, `up` of the example (whose password is the
/// stack's first secret) stops before any provider call, naming the variable to set, and
/// leaves the state as it was: no resource created, none left as a pending create.
#[test]
fn an_update_without_the_passphrase_stops_before_anything_is_created() {
    let dir = repo_root().join("examples/hello");
    let stack = "e2e-no-passphrase";
    let config = dir.join(format!("Plinth.{stack}.yaml"));
    let _cleanup = ConfigCleanup(config.clone());
    let env = Env::in_dir(dir, stack);
    let exported = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(exported.path(), env.ok(&["stack", "export"])).unwrap();
    let exported = exported.path().to_str().unwrap();
    let state = env.state_files();
    let config_text = std::fs::read(&config).ok();
    for args in [
        &["up", "--yes"][..],
        &["up", "--yes", "--skip-preview"],
        &["refresh", "--yes"],
        &["destroy", "--yes"],
        &["stack", "import", "--file", exported],
    ] {
        let out = env
            .command(args)
            .env_remove("PLINTH_CONFIG_PASSPHRASE")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {}", printed(&out));
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("no passphrase: set PLINTH_CONFIG_PASSPHRASE"),
            "{args:?}: {stderr}"
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "",
            "{args:?}: nothing may start"
        );
        assert_eq!(env.state_files(), state, "{args:?} changed the state");
        assert_eq!(std::fs::read(&config).ok(), config_text, "{args:?}");
    }
    // With the passphrase, the same update runs.
    env.ok(&["up", "--yes"]);
    env.ok(&["destroy", "--yes"]);
}

/// The same, seen from the provider's side: a stack that holds no secret and whose program
/// makes none still needs its secrets before an update, and nothing reaches the world without.
#[test]
fn an_update_without_the_passphrase_touches_no_resource() {
    let env = Env::scenario_with_world();
    env.config("kind", "record");
    let state = env.state_files();
    let out = env
        .command(&["up", "--yes"])
        .env_remove("PLINTH_CONFIG_PASSPHRASE")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", printed(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("PLINTH_CONFIG_PASSPHRASE"),
        "{}",
        printed(&out)
    );
    assert_eq!(std::fs::read_dir(env.world()).unwrap().count(), 0);
    assert_eq!(env.state_files(), state);
}

/// A program and a plugin that print secrets (a secret config value, through a resource's
/// input and output, and a generated password) put none of them in plinth's output or log: each
/// printed line reaches the log with `[secret]` in its place.
#[test]
fn secrets_printed_by_a_program_or_a_plugin_are_masked() {
    let env = Env::scenario_with(&format!(
        "  random:\n    path: {}\n",
        guest("plinth-random").display()
    ));
    let token = "tok-5be1-printed-secret";
    let mut log = String::new();
    run(
        &env,
        &["config", "set", "token_a", token, "--secret"],
        &mut log,
    );
    env.config("resources", "a");
    env.config("inputs_a", "print_inputs=yes");
    env.config("print_a", "token");
    env.config("password_length", "24");
    env.config("print_password", "result");
    // Every guest line is logged: the program's stdout at info, everything else at debug.
    let out = env
        .command(&["-v", "up", "--yes"])
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    let text = printed(&out);
    assert!(out.status.success(), "{text}");
    log.push_str(&text);
    for line in [
        "plugin prints token: [secret]",
        "plugin warns token: [secret]",
        "program prints a.token: [secret]",
        "program warns a.token: [secret]",
        "program prints password.result: [secret]",
        "program warns password.result: [secret]",
    ] {
        assert!(log.contains(line), "`{line}` is not in:\n{log}");
    }

    let shown = env.ok(&["stack", "output", "--show-secrets", "--json"]);
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    let password = shown["password"].as_str().unwrap().to_owned();
    assert_eq!(password.len(), 24, "{shown}");
    assert_nowhere(&env, token, &log);
    assert_nowhere(&env, &password, &log);
    run(&env, &["destroy", "--yes"], &mut log);
    assert_nowhere(&env, token, &log);
}

/// A stack moved to another project directory and backend whose secrets are sealed under
/// another passphrase: the import opens each secret with the passphrase it was exported under
/// and seals it under the target's; without that passphrase it fails naming the variable to
/// set, and writes nothing.
#[test]
fn an_import_reseals_secrets_for_a_stack_with_another_passphrase() {
    let source = Env::scenario();
    let token = "tok-5e1d-moved-secret";
    source.ok(&["config", "set", "token_a", token, "--secret"]);
    source.ok(&["up", "--yes"]);
    let exported = source.state.path().join("exported.json");
    source.ok(&["stack", "export", "--file", exported.to_str().unwrap()]);
    let stamp = std::fs::read_to_string(&exported).unwrap();
    let stamp: serde_json::Value = serde_json::from_str(&stamp).unwrap();
    assert_eq!(stamp["secrets_provider"]["type"], "passphrase", "{stamp}");
    assert!(stamp["secrets_provider"]["salt"].is_string(), "{stamp}");
    let exported = exported.to_str().unwrap();

    // The same project elsewhere, on its own backend, with a passphrase of its own.
    let target =
        Env::project(&std::fs::read_to_string(source.project.join("Plinth.yaml")).unwrap());
    let other = "another passphrase";
    let as_target = |args: &[&str]| {
        let mut command = target.command(args);
        command.env("PLINTH_CONFIG_PASSPHRASE", other);
        command
    };
    let target_config = target.project.join("Plinth.dev.yaml");
    let config_before = std::fs::read(&target_config).ok();
    let out = as_target(&["stack", "import", "--file", exported])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("PLINTH_SOURCE_PASSPHRASE") && stderr.contains("exported state"),
        "{stderr}"
    );
    assert_eq!(target.resources(), vec![], "nothing was imported");
    assert!(target.ok(&["stack", "history"]).contains("no history"));
    assert_eq!(
        std::fs::read(&target_config).ok(),
        config_before,
        "nor a salt written"
    );

    let out = as_target(&["stack", "import", "--file", exported])
        .env("PLINTH_SOURCE_PASSPHRASE", PASSPHRASE)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", printed(&out));
    // The secret is sealed under the target's key now: it opens with the target's passphrase
    // alone, into the same plaintext (the same config gives no changes).
    let export = |mut command: std::process::Command| -> serde_json::Value {
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", printed(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let sealed = |state: &serde_json::Value| {
        let resources = state["snapshot"]["resources"].as_array().unwrap();
        let a = (resources.iter())
            .find(|r| r["urn"].as_str().unwrap().ends_with("::a"))
            .unwrap();
        a["inputs"]["token"]["ciphertext"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let moved = export(as_target(&["stack", "export"]));
    let original = export(source.command(&["stack", "export"]));
    assert_eq!(
        moved["snapshot"]["resources"].as_array().unwrap().len(),
        original["snapshot"]["resources"].as_array().unwrap().len()
    );
    assert_ne!(sealed(&moved), sealed(&original));
    assert_ne!(moved["secrets_provider"], original["secrets_provider"]);
    let set = as_target(&["config", "set", "token_a", token, "--secret"])
        .output()
        .unwrap();
    assert!(set.status.success(), "{}", printed(&set));
    let preview = as_target(&["preview", "--expect-no-changes"])
        .output()
        .unwrap();
    assert!(preview.status.success(), "{}", printed(&preview));
    let wrong = target.command(&["preview"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("incorrect passphrase for stack `dev`"),
        "{}",
        printed(&wrong)
    );
    let text = std::fs::read_to_string(&target_config).unwrap();
    assert!(!text.contains(token));

    // Back into the source: sealed under the source's passphrase again.
    let back = target.state.path().join("back.json");
    as_target(&["stack", "export", "--file", back.to_str().unwrap()])
        .output()
        .unwrap();
    let out = source
        .command(&["stack", "import", "--file", back.to_str().unwrap()])
        .env("PLINTH_SOURCE_PASSPHRASE", other)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", printed(&out));
    source.ok(&["preview", "--expect-no-changes"]);
    source.ok(&["destroy", "--yes"]);
}

/// A stack's secrets provider is chosen at `stack init` and recorded in its config file; the
/// service's provider needs a service, and a provider plinth does not know is a clear error.
#[test]
fn the_secrets_provider_is_chosen_at_init_and_recorded() {
    let env = Env::scenario();
    let stderr = env.fails(&["stack", "init", "prod", "--secrets-provider", "service"]);
    assert!(
        stderr.contains("needs a service backend")
            && stderr.contains("--secrets-provider passphrase"),
        "{stderr}"
    );
    assert!(
        !env.ok(&["stack", "ls"]).contains("prod"),
        "nothing created"
    );

    let out = env.ok(&["stack", "init", "prod", "--secrets-provider", "passphrase"]);
    assert!(out.contains("sealed by the passphrase provider"), "{out}");
    let config = env.project.join("Plinth.prod.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("secretsprovider: passphrase"), "{text}");
    env.ok(&["--stack", "prod", "config", "set", "k", "v", "--secret"]);
    let shown = env.ok(&["--stack", "prod", "config", "get", "k", "--show-secrets"]);
    assert_eq!(shown.trim(), "v");

    std::fs::write(&config, "secretsprovider: vault\n").unwrap();
    let stderr = env.fails(&["--stack", "prod", "config", "set", "k", "v", "--secret"]);
    assert!(
        stderr.contains("`secretsprovider: vault` is not a secrets provider"),
        "{stderr}"
    );
}

/// A stack moved from files to a service and back: on the service its secrets are sealed by the
/// service's provider (no passphrase needed there), back on files by the passphrase again. A
/// service's secrets open only for a caller logged in to it.
#[test]
fn a_stack_moves_from_files_to_a_service_and_back_its_secrets_resealed() {
    let dir = tempfile::tempdir().unwrap();
    // Started with a master key, as every test service is.
    let service = TestService::start();
    let source = Env::scenario();
    let token = "tok-9b3e-travelling-secret";
    source.ok(&["config", "set", "token_a", token, "--secret"]);
    source.ok(&["up", "--yes"]);
    let to_service = dir.path().join("to-service.json");
    source.ok(&["stack", "export", "--file", to_service.to_str().unwrap()]);

    let target = Env::scenario_on(ServiceLogin {
        url: service.url().to_owned(),
        token: service.token.clone(),
    });
    let no_passphrase = |env: &Env, args: &[&str]| {
        let out = env
            .command(args)
            .env_remove("PLINTH_CONFIG_PASSPHRASE")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", printed(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    target.ok(&["stack", "import", "--file", to_service.to_str().unwrap()]);
    let moved: serde_json::Value =
        serde_json::from_str(&no_passphrase(&target, &["stack", "export"])).unwrap();
    assert_eq!(
        moved["secrets_provider"]["type"], "service",
        "{}",
        moved["secrets_provider"]
    );
    assert_eq!(moved["secrets_provider"]["url"], service.url());
    // The same config, sealed by the service too, gives no changes: the moved secret opened
    // into the same plaintext, and nothing needed a passphrase.
    no_passphrase(&target, &["config", "set", "token_a", token, "--secret"]);
    no_passphrase(&target, &["preview", "--expect-no-changes"]);
    let config = std::fs::read_to_string(target.project.join("Plinth.dev.yaml")).unwrap();
    assert!(
        !config.contains(token) && !config.contains("encryptionsalt"),
        "{config}"
    );
    let dump = service
        .database
        .server
        .dump(&service.database.name)
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&dump).contains(token),
        "the secret is in a dump of the service's database"
    );

    // Back to files: the service opens what it sealed for a caller logged in to it.
    let back = dir.path().join("back.json");
    no_passphrase(
        &target,
        &["stack", "export", "--file", back.to_str().unwrap()],
    );
    let home = own_home();
    let import_back = || {
        source
            .command(&["stack", "import", "--file", back.to_str().unwrap()])
            .env("PLINTH_HOME", home.path())
            .output()
            .unwrap()
    };
    let refused = import_back();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains(&format!("plinth login {}", service.url())),
        "{stderr}"
    );
    let login = source
        .command(&["login", service.url(), "--token", &service.token])
        .env("PLINTH_HOME", home.path())
        .env_remove("PLINTH_BACKEND_URL")
        .output()
        .unwrap();
    assert!(login.status.success(), "{}", printed(&login));
    let out = import_back();
    assert!(out.status.success(), "{}", printed(&out));
    let state = source.export();
    assert_eq!(state["secrets_provider"]["type"], "passphrase");
    source.ok(&["preview", "--expect-no-changes"]);
    source.ok(&["destroy", "--yes"]);
}
