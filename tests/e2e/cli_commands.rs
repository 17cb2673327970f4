//! The commands a Pulumi user reaches for: `plinth about` and `plinth stack select --create`,
//! on both backends where they store something.

use crate::support::service::TestService;
use crate::support::{Env, ServiceLogin, on_terminal};

#[test]
fn about_reports_what_a_bug_report_needs_escaped() {
    // A plugin entry whose path holds a control character: shown escaped.
    let env = Env::scenario_with("  evil:\n    path: \"/x/\\e[2Jx.wasm\"\n");
    let text = env.ok(&["about"]);
    assert!(
        text.starts_with(&format!("plinth {}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(text.contains("Project: scenario"), "{text}");
    assert!(text.contains("plugin testkit: path "), "{text}");
    assert!(
        text.contains("plugin evil: path /x/\\u{1b}[2Jx.wasm"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(text.contains("Rust: "), "{text}");

    let json: serde_json::Value = serde_json::from_str(&env.ok(&["about", "--json"])).unwrap();
    assert_eq!(json["version"], env!("CARGO_PKG_VERSION"));
    let backend = format!("file://{}", env.state.path().display());
    assert_eq!(json["backend"]["found"], backend.as_str(), "{json}");
    assert_eq!(json["project"]["name"], "scenario");
    assert_eq!(
        json["project"]["plugins"]["evil"],
        "path /x/\u{1b}[2Jx.wasm"
    );
    // Every language is reported, found or not, with what to install when it is not.
    for language in ["Rust", "TypeScript/JavaScript", "Python"] {
        let found = &json["toolchains"][language];
        assert!(
            found["found"].is_string() || found["missing"].is_string(),
            "{json}"
        );
    }
}

fn select_create(env: &Env) {
    // A stack that does not exist: without --create an error, with it created and selected.
    let stderr = env.fails(&["stack", "select", "staging"]);
    assert!(stderr.contains("staging"), "{stderr}");
    let out = env.ok(&["stack", "select", "--create", "staging"]);
    assert!(out.contains("Created stack `staging` (selected)"), "{out}");
    assert!(env.ok(&["stack", "ls"]).contains("staging*"));
    // One that exists is selected, not created again.
    let out = env.ok(&["stack", "select", "--create", "dev"]);
    assert!(out.contains("Selected stack `dev`"), "{out}");
    assert!(env.ok(&["stack", "ls"]).contains("dev*"));
}

#[test]
fn stack_select_create_on_files() {
    select_create(&Env::scenario());
}

#[test]
fn stack_select_create_on_a_service() {
    let service = TestService::start();
    select_create(&Env::scenario_on(ServiceLogin {
        url: service.url().to_owned(),
        token: service.token.clone(),
    }));
}

#[test]
fn config_lists_every_value_with_secrets_masked() {
    let env = Env::scenario();
    assert!(env.ok(&["config"]).contains("No config values"));
    env.config("region", "eu-west-1");
    env.config("banner", "a\u{1b}[2Jb");
    env.ok(&["config", "set", "token", "s3cret-value", "--secret"]);

    let table = env.ok(&["config"]);
    assert!(table.contains("scenario:region"), "{table}");
    assert!(table.contains("eu-west-1"), "{table}");
    assert!(table.contains("[secret]"), "{table}");
    assert!(!table.contains("s3cret-value"), "{table}");
    // A value from a stack file cannot act on the terminal.
    assert!(
        table.contains("a\\u{1b}[2Jb") && !table.contains('\u{1b}'),
        "{table}"
    );

    let json: serde_json::Value = serde_json::from_str(&env.ok(&["config", "--json"])).unwrap();
    assert_eq!(json["scenario:region"]["value"], "eu-west-1");
    assert_eq!(json["scenario:region"]["secret"], false);
    assert_eq!(json["scenario:token"]["value"], "[secret]");
    assert_eq!(json["scenario:token"]["secret"], true);
    assert_eq!(json["scenario:banner"]["value"], "a\u{1b}[2Jb");

    let shown: serde_json::Value =
        serde_json::from_str(&env.ok(&["config", "--json", "--show-secrets"])).unwrap();
    assert_eq!(shown["scenario:token"]["value"], "s3cret-value");
}

#[test]
fn config_paths_set_and_get_inside_structured_values() {
    let env = Env::scenario();
    env.ok(&["config", "set", "--path", "db.hosts[0]", "a.example"]);
    env.ok(&["config", "set", "--path", "db.hosts[1]", "b.example"]);
    env.ok(&["config", "set", "--path", "db.port", "5432"]);
    let whole: serde_json::Value = serde_json::from_str(&env.ok(&["config", "get", "db"])).unwrap();
    assert_eq!(
        whole,
        serde_json::json!({"hosts": ["a.example", "b.example"], "port": "5432"})
    );
    let one = env.ok(&["config", "get", "--path", "db.hosts[1]"]);
    assert_eq!(one.trim(), "b.example");
    let list = env.ok(&["config", "get", "--path", "db.hosts"]);
    assert_eq!(list.trim(), r#"["a.example","b.example"]"#);

    // What cannot be done is refused, saying why, and changes nothing.
    let stderr = env.fails(&["config", "set", "--path", "db.hosts[5]", "x"]);
    assert!(stderr.contains("past the end of an array of 2"), "{stderr}");
    let stderr = env.fails(&["config", "set", "--path", "db[", "x"]);
    assert!(stderr.contains("is not a config path"), "{stderr}");
    let stderr = env.fails(&["config", "set", "--path", "db.port", "x", "--secret"]);
    assert!(stderr.contains("--path and --secret"), "{stderr}");
    env.config("plain", "not json");
    let stderr = env.fails(&["config", "set", "--path", "plain.x", "1"]);
    assert!(stderr.contains("not JSON"), "{stderr}");
    let stderr = env.fails(&["config", "get", "--path", "db.nothing"]);
    assert!(stderr.contains("has nothing at `db.nothing`"), "{stderr}");
    let after: serde_json::Value = serde_json::from_str(&env.ok(&["config", "get", "db"])).unwrap();
    assert_eq!(after, whole);
}

#[test]
fn parallel_is_refused_outside_its_range_before_anything_runs() {
    let env = Env::scenario();
    for (command, value) in [
        ("up", "0"),
        ("refresh", "100001"),
        ("destroy", "2.5"),
        ("preview", "many"),
    ] {
        let stderr = env.fails(&[command, "--parallel", value]);
        assert!(
            stderr.contains(&format!(
                "invalid value '{value}' for '--parallel <PARALLEL>'"
            )) && stderr.contains("expected a whole number from 1 to 100000"),
            "{command} --parallel {value}: {stderr}"
        );
    }
}

#[test]
fn completion_scripts_for_every_shell() {
    let env = Env::scenario();
    let bash = env.ok(&["completion", "bash"]);
    assert!(bash.contains("_plinth()"), "{bash}");
    // It names the subcommands, `new` among them, and bash reads it without an error.
    assert!(bash.contains("new") && bash.contains("stack"), "{bash}");
    let script = env.project.join("plinth.bash");
    std::fs::write(&script, &bash).unwrap();
    let status = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(status.success(), "bash -n refused the completion script");
    for (shell, mark) in [
        ("zsh", "#compdef plinth"),
        ("fish", "complete -c plinth"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = env.ok(&["completion", shell]);
        assert!(out.contains(mark), "{shell}: {out}");
    }
    let stderr = env.fails(&["completion", "tcsh"]);
    assert!(stderr.contains("invalid value 'tcsh'"), "{stderr}");
}

#[test]
fn stack_graph_draws_dependencies_and_parents_as_dot() {
    let env = Env::scenario();
    // A name that would end a DOT string and add an edge, were it not escaped.
    env.config("resources", "a,b,evil\\\"->\"x");
    env.config("chain", "true");
    env.config("component", "grp");
    env.ok(&["up", "--yes"]);
    let dot = env.ok(&["stack", "graph"]);
    assert!(dot.starts_with("strict digraph \"dev\" {"), "{dot}");
    let urn = |ty: &str, name: &str| format!("\"urn:plinth:dev::scenario::{ty}::{name}\"");
    // `b` depends on `a`; both are children of the group.
    let a = urn("scenario:Group$testkit:Echo", "a");
    let b = urn("scenario:Group$testkit:Echo", "b");
    assert!(dot.contains(&format!("{a} -> {b};")), "{dot}");
    let group = urn("scenario:Group", "grp");
    assert!(
        dot.contains(&format!("{group} -> {a} [style=dashed")),
        "{dot}"
    );
    assert!(dot.contains("[label=\"testkit:Echo\\na\"]"), "{dot}");
    assert!(dot.trim_end().ends_with('}'), "{dot}");
    assert!(dot.contains(r#"::evil\\\"->\"x""#), "{dot}");
    // Every string ends where it should: outside escapes, each line has its quotes in pairs.
    for line in dot.lines() {
        let mut quotes = 0;
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => quotes += 1,
                _ => {}
            }
        }
        assert_eq!(quotes % 2, 0, "{line}");
    }
    assert!(!dot.contains(r#"->"x""#), "{dot}");

    let file = env.project.join("graph.dot");
    env.ok(&["stack", "graph", "--file", file.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), dot);
}

/// The exit code of `plinth args` in `env`.
fn code(env: &Env, args: &[&str]) -> i32 {
    env.run(args).status.code().expect("plinth exited")
}

#[test]
fn exit_codes_tell_outcomes_apart() {
    let env = Env::scenario();
    env.config("resources", "a");
    // 2: a command line clap refuses.
    assert_eq!(code(&env, &["no-such-command"]), 2);
    // 3: changes found where none were expected.
    assert_eq!(code(&env, &["preview", "--expect-no-changes"]), 3);
    // 4: a confirmation with no terminal to ask on and no --yes.
    assert_eq!(code(&env, &["up"]), 4);
    assert!(env.resources().is_empty());
    // 0: success, and no changes where none are expected.
    assert_eq!(code(&env, &["up", "--yes"]), 0);
    assert_eq!(code(&env, &["preview", "--expect-no-changes"]), 0);
    assert_eq!(code(&env, &["refresh", "--expect-no-changes"]), 0);
    // 1: a failure.
    assert_eq!(code(&env, &["stack", "select", "nowhere"]), 1);

    // 5: the user answers no. `script` gives plinth a terminal; the answer waits in it.
    env.config("resources", "a,b");
    let out = on_terminal(&env.command(&["destroy"]), b"n\n");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{shown}");
    assert!(shown.contains("Cancelled; nothing was changed."), "{shown}");
    assert_eq!(env.resources().len(), 1);
}
