//! `plinth new`: each template, in an empty directory and with no network, makes a project
//! that goes `up` and `destroy`; a directory that holds anything, a bad name or a missing
//! provider is refused before a file is written.

use std::path::Path;

use crate::support::{Env, guest, on_terminal, printed, repo_root};

/// `plinth new TEMPLATE` in `env`'s empty project directory, on the suite's random provider
/// and, for Rust, the repository's `plinth-sdk`.
fn new_project(env: &Env, template: &str, name: &str) -> String {
    let random = guest("plinth-random");
    let sdk = repo_root().join("sdk-guest/rust");
    let out = env
        .command(&[
            "new",
            template,
            "--name",
            name,
            "--random",
            random.to_str().unwrap(),
            "--sdk-path",
            sdk.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", printed(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// `up`, a no-op preview, `destroy`, with cargo kept off the network.
fn up_and_destroy(env: &Env) {
    let run = |args: &[&str]| {
        let out = (env.command(args))
            .env("CARGO_NET_OFFLINE", "true")
            .output()
            .unwrap();
        assert!(out.status.success(), "plinth {args:?}:\n{}", printed(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    assert!(
        outputs["greeting"].as_str().unwrap().starts_with("Hello, "),
        "{outputs}"
    );
    assert_eq!(outputs["suffix"].as_str().unwrap().len(), 6, "{outputs}");
    run(&["preview", "--expect-no-changes"]);
    run(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
}

/// The workspace's lock in the new Rust project: it pins the versions the suite's guests were
/// built with, so the project's build reuses their compiled dependencies in the shared target
/// directory instead of compiling newer ones (cargo drops what the project does not use).
fn same_versions_as_the_suite(env: &Env) {
    std::fs::copy(
        repo_root().join("Cargo.lock"),
        env.project.join("Cargo.lock"),
    )
    .unwrap();
}

#[test]
fn the_rust_template_goes_up_and_down_offline() {
    let env = Env::empty();
    let out = new_project(&env, "rust", "new-rust");
    same_versions_as_the_suite(&env);
    assert!(out.contains("plinth up"), "{out}");
    assert!(env.project.join("sdks/random/rust/Cargo.toml").is_file());
    up_and_destroy(&env);
}

#[test]
fn the_typescript_template_goes_up_and_down() {
    let env = Env::empty();
    new_project(&env, "typescript", "new-ts");
    up_and_destroy(&env);
}

#[test]
fn the_python_template_goes_up_and_down() {
    let env = Env::empty();
    new_project(&env, "python", "new-py");
    up_and_destroy(&env);
}

#[test]
fn list_names_every_template() {
    let env = Env::empty();
    let out = env.ok(&["new", "--list"]);
    for template in [
        "rust",
        "typescript",
        "python",
        "rust-provider",
        "typescript-provider",
        "python-provider",
        "rust-policy",
        "typescript-policy",
        "python-policy",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{template} "))),
            "{out}"
        );
    }
}

/// Every file and directory under `dir`.
fn entries(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

#[test]
fn a_directory_with_anything_in_it_is_refused() {
    let env = Env::empty();
    std::fs::write(env.project.join("notes.txt"), "mine").unwrap();
    let stderr = env.fails(&["new", "python", "--name", "x", "--yes"]);
    assert!(
        stderr.contains("is not empty (it has `notes.txt`)"),
        "{stderr}"
    );
    assert_eq!(entries(&env.project), ["notes.txt"]);
    assert_eq!(
        std::fs::read_to_string(env.project.join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let env = Env::empty();
    // Not a terminal and no template: an error, not a prompt that never ends.
    let stderr = env.fails(&["new"]);
    assert!(stderr.contains("name a template"), "{stderr}");
    let stderr = env.fails(&["new", "cobol"]);
    assert!(stderr.contains("there is no template `cobol`"), "{stderr}");
    let stderr = env.fails(&["new", "rust", "--name", "Bad\u{1b}[2JName"]);
    assert!(stderr.contains("cannot be a project's name"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
    // A provider that is not there: nothing is written, the directory is made by no one.
    let stderr = env.fails(&["new", "rust", "sub", "--random", "/nowhere/random.wasm"]);
    assert!(stderr.contains("uses the random provider"), "{stderr}");
    assert!(
        entries(&env.project).is_empty(),
        "{:?}",
        entries(&env.project)
    );
}

#[test]
fn an_existing_stack_is_refused_and_the_project_removed() {
    let env = Env::empty();
    let random = guest("plinth-random");
    let args = [
        "new",
        "python",
        "first",
        "--name",
        "twice",
        "--random",
        random.to_str().unwrap(),
    ];
    env.ok(&args);
    // The same project and stack again, in another directory of the same backend.
    let mut again = args;
    again[2] = "second";
    let stderr = env.fails(&again);
    assert!(stderr.contains("already has a stack `dev`"), "{stderr}");
    assert!(!env.project.join("second").exists());
    assert!(env.project.join("first/Plinth.yaml").is_file());
}

#[test]
fn the_rust_provider_template_passes_its_tests_and_shows_its_types() {
    let env = Env::empty();
    let out = new_project(&env, "rust-provider", "greeter");
    same_versions_as_the_suite(&env);
    assert!(out.contains("cargo test"), "{out}");
    // No stack for a provider: it is not a project.
    assert!(!env.project.join("Plinth.yaml").exists());

    // Its own unit tests, natively and offline. `--release` shares the build scripts and
    // procedural macros the suite's guests built in the same target directory.
    let status = std::process::Command::new(env!("CARGO"))
        .args(["test", "--release", "--quiet"])
        .current_dir(&env.project)
        .env("CARGO_TARGET_DIR", crate::support::guest_target_dir())
        .env("CARGO_NET_OFFLINE", "true")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cargo test of the rust-provider template failed"
    );

    let out = (env.command(&["plugin", "inspect", "."]))
        .env("CARGO_NET_OFFLINE", "true")
        .output()
        .unwrap();
    let shown = printed(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("greeter:Greeting"), "{shown}");
    assert!(shown.contains("message"), "{shown}");

    // Its typed SDK generates from it, for programs to use.
    let sdk = repo_root().join("sdk-guest/rust");
    env.ok(&[
        "gen-sdk",
        ".",
        "--lang",
        "rust",
        "--out",
        "sdks/rust",
        "--sdk-path",
        sdk.to_str().unwrap(),
    ]);
    let generated = std::fs::read_to_string(env.project.join("sdks/rust/src/lib.rs")).unwrap();
    assert!(generated.contains("Greeting"), "{generated}");
}

/// Every file's text under `dir`, joined.
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text.push_str(&all_text(&path));
        } else {
            text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    text
}

/// A provider `plinth new TEMPLATE` made in an empty directory passes its own unit tests
/// (`test`, a command run in it, offline), builds, shows its types to `plugin inspect`, and
/// its typed SDK in `lang` generates from it.
fn the_provider_template_tests_builds_and_shows_its_types(
    template: &str,
    name: &str,
    test: &[&str],
    lang: &str,
) {
    let env = Env::empty();
    let out = new_project(&env, template, name);
    assert!(out.contains(test.join(" ").as_str()), "{out}");
    assert!(out.contains("plinth plugin inspect ."), "{out}");
    // No stack for a provider: it is not a project.
    assert!(!env.project.join("Plinth.yaml").exists());

    let run = std::process::Command::new(test[0])
        .args(&test[1..])
        .current_dir(&env.project)
        .env("PLINTH_TOOLS", crate::support::tools_dir())
        .env("npm_config_offline", "true")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{test:?} of the {template} template failed:\n{}",
        printed(&run)
    );
    let shown = printed(&run);
    assert!(
        shown.contains("pass 2") || shown.contains("Ran 2 tests"),
        "{shown}"
    );

    let out = env.command(&["plugin", "inspect", "."]).output().unwrap();
    let shown = printed(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains(&format!("{name}:Greeting")), "{shown}");
    assert!(shown.contains("message"), "{shown}");
    assert!(shown.contains("excited"), "{shown}");

    env.ok(&["gen-sdk", ".", "--lang", lang, "--out", "sdk"]);
    let generated = all_text(&env.project.join("sdk"));
    assert!(generated.contains("Greeting"), "{generated}");
}

#[test]
fn the_typescript_provider_template_passes_its_tests_and_shows_its_types() {
    the_provider_template_tests_builds_and_shows_its_types(
        "typescript-provider",
        "greeter-ts",
        &["npm", "test"],
        "ts",
    );
}

/// A test file esbuild cannot build fails `npm test` naming it, and leaves nothing in the
/// temporary directory.
#[test]
fn the_typescript_provider_template_cleans_up_after_a_test_that_does_not_build() {
    let env = Env::empty();
    new_project(&env, "typescript-provider", "broken-ts");
    std::fs::write(env.project.join("broken.test.ts"), "const = ;\n").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let run = std::process::Command::new("npm")
        .arg("test")
        .current_dir(&env.project)
        .env("PLINTH_TOOLS", crate::support::tools_dir())
        .env("npm_config_offline", "true")
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let shown = printed(&run);
    assert!(!run.status.success(), "{shown}");
    assert!(shown.contains("could not build broken.test.ts"), "{shown}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_python_provider_template_passes_its_tests_and_shows_its_types() {
    the_provider_template_tests_builds_and_shows_its_types(
        "python-provider",
        "greeter-py",
        &["python3", "-m", "unittest"],
        "python",
    );
}

#[test]
fn on_a_terminal_it_asks_for_the_name_and_the_stack() {
    let env = Env::empty();
    let random = guest("plinth-random");
    let mut command = env.command(&["new", "python", "--random", random.to_str().unwrap()]);
    // No stack named by the environment: it is asked for.
    command.env_remove("PLINTH_STACK");
    let out = on_terminal(&command, b"asked-name\nstaging\n");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("Project name ["), "{shown}");
    assert!(shown.contains("Stack [dev]"), "{shown}");
    let yaml = std::fs::read_to_string(env.project.join("Plinth.yaml")).unwrap();
    assert!(yaml.starts_with("name: asked-name\n"), "{yaml}");
    let ls = env.ok(&["stack", "ls"]);
    assert!(ls.contains("staging*"), "{ls}");
}

/// The policy pack `plinth new TEMPLATE` makes judges a program `plinth new rust` made: its
/// mandatory `string-length` fails the preview naming the short string (the program's 6
/// characters), and passes it once the string is long enough; its advisory `one-pet` finds
/// the one pet fine. Offline.
fn the_policy_template_judges_a_new_program(template: &str, name: &str) {
    let program = Env::empty();
    new_project(&program, "rust", "guarded");
    same_versions_as_the_suite(&program);
    let pack = Env::empty();
    let out = new_project(&pack, template, name);
    assert!(out.contains("--policy-pack"), "{out}");
    assert!(!pack.project.join("Plinth.yaml").exists());
    if template == "rust-policy" {
        same_versions_as_the_suite(&pack);
        assert!(out.contains("cargo test"), "{out}");
        let status = std::process::Command::new(env!("CARGO"))
            .args(["test", "--release", "--quiet"])
            .current_dir(&pack.project)
            .env("CARGO_TARGET_DIR", crate::support::guest_target_dir())
            .env("CARGO_NET_OFFLINE", "true")
            .status()
            .unwrap();
        assert!(
            status.success(),
            "cargo test of the {template} template failed"
        );
    }
    let dir = pack.project.to_str().unwrap();
    let preview = |args: &[&str]| {
        (program.command(args))
            .env("CARGO_NET_OFFLINE", "true")
            .output()
            .unwrap()
    };
    let out = preview(&["preview", "--policy-pack", dir]);
    let shown = printed(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!(
            "[mandatory] policy `{name}/string-length`: `suffix` is 6 characters long; make it \
             at least 8 (property `length`)"
        )),
        "{shown}"
    );
    program.config("suffix_length", "10");
    let out = preview(&["preview", "--policy-pack", dir]);
    let shown = printed(&out);
    assert!(out.status.success(), "{shown}");
    assert!(!shown.contains("one-pet"), "{shown}");
    assert!(!shown.contains("string-length"), "{shown}");
}

#[test]
fn the_rust_policy_template_passes_its_tests_and_judges_a_program() {
    the_policy_template_judges_a_new_program("rust-policy", "guard-rs");
}

#[test]
fn the_typescript_policy_template_judges_a_program() {
    the_policy_template_judges_a_new_program("typescript-policy", "guard-ts");
}

#[test]
fn the_python_policy_template_judges_a_program() {
    the_policy_template_judges_a_new_program("python-policy", "guard-py");
}
