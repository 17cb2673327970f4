//! Hostile strings: ids a provider creates or reads back with control characters, import ids
//! that hold them (from a program and from the command line), a state file an older plinth
//! wrote with one, and messages, printed lines and output keys made of terminal escapes. Each
//! id is refused before it is recorded, naming the resource and the plugin; the state stays
//! loadable, `stack export` works, and later runs work. Nothing a guest or a state file
//! supplied reaches the terminal raw.
//!
//! The resource `x` is an `adversary:Ids` (tests/plugins/adversary/src/ids.rs) beside `ok`, a
//! `testkit:Echo`, in the scenario program; its inputs write control characters as visible
//! escapes (`\t`, `\e`, `\u{202e}`), which the plugin turns into the real ones.

use std::process::Output;

use serde_json::Value;

use crate::support::{Env, guest};

const X: &str = "urn:plinth:dev::scenario::adversary:Ids::x";

/// A scenario project with the adversary plugin, declaring `ok` and `x` with `inputs`.
fn arena(inputs: &str) -> Env {
    let env = Env::scenario_with(&format!(
        "  adversary:\n    path: {}\n",
        guest("plinth-adversary").display()
    ));
    env.config("resources", "ok,x");
    env.config("type_x", "adversary:Ids");
    env.config("inputs_x", inputs);
    env
}

/// Everything a run printed, stdout then stderr, as text (it must be UTF-8).
fn printed(out: &Output) -> String {
    let mut text = String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8");
    text.push_str(std::str::from_utf8(&out.stderr).expect("stderr is UTF-8"));
    text
}

/// Fails unless no character a terminal acts on (but the newlines between lines) is in `text`.
fn assert_inert(text: &str) {
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(raw.is_empty(), "raw control characters {raw:?} in:\n{text}");
}

/// The recorded resource named `name`, if any.
fn recorded<'a>(state: &'a Value, name: &str) -> Option<&'a Value> {
    (state["snapshot"]["resources"].as_array().unwrap().iter())
        .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
}

fn pending(state: &Value) -> Vec<(String, String)> {
    (state["snapshot"]["pending_operations"].as_array())
        .into_iter()
        .flatten()
        .map(|op| {
            let kind = op["kind"].as_str().unwrap().to_owned();
            (kind, op["resource"]["urn"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn an_id_created_with_a_control_character_fails_its_step_and_is_never_recorded() {
    let env = arena(r"create_id=a\tb");
    let out = env.run(&["up", "--yes", "--skip-preview"]);
    assert!(!out.status.success(), "{}", printed(&out));
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(
        stderr.contains("adversary:Ids::x")
            && stderr.contains("plugin `adversary` created the resource")
            && stderr.contains(r#""a\tb""#)
            && stderr.contains("not managed"),
        "the error names the resource, the plugin and the escaped id:\n{stderr}"
    );
    assert_inert(&printed(&out));

    // The state loads and exports, `x` only as a pending create. (Whether `ok` was created
    // before the failure halted the run depends on the order the steps ran in.)
    let state = env.export();
    assert!(recorded(&state, "x").is_none(), "{state:#}");
    assert_eq!(pending(&state), [("creating".to_owned(), X.to_owned())]);

    // A user cannot adopt it by that id either: the command line refuses it.
    let adopt = format!("{X}=a\tb");
    let out = env.run(&["refresh", "--yes", "--import-pending-create", &adopt]);
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(
        stderr.contains(r"`a\tb` contains control characters"),
        "{stderr}"
    );
    assert_inert(&printed(&out));

    // Every command works: the preview warns of the pending create, a fixed plugin creates `x`,
    // refresh clears the pending create, destroy deletes everything.
    let preview = env.run(&["preview"]);
    assert!(preview.status.success(), "{}", printed(&preview));
    assert!(printed(&preview).contains(&format!("a create of {X} was interrupted")));
    env.config("inputs_x", "create_id=fine");
    env.ok(&["up", "--yes", "--skip-preview"]);
    assert_eq!(recorded(&env.export(), "x").unwrap()["id"], "fine");
    env.ok(&["refresh", "--yes"]);
    assert!(pending(&env.export()).is_empty());
    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
}

#[test]
fn an_id_read_back_with_a_newline_fails_the_refresh_and_keeps_what_was_recorded() {
    let env = arena("");
    env.ok(&["up", "--yes", "--skip-preview"]);
    env.config("inputs_x", r"read_id=x\n+ created fake");
    // The input changes: `x` is updated in place, then read back by refresh.
    env.ok(&["up", "--yes", "--skip-preview"]);
    let before = env.export();
    let out = env.run(&["refresh", "--yes"]);
    assert!(!out.status.success(), "{}", printed(&out));
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(
        stderr.contains(X)
            && stderr.contains("plugin `adversary` read the resource back")
            && stderr.contains(r#""x\n+ created fake""#),
        "{stderr}"
    );
    assert_inert(&printed(&out));
    assert!(
        !printed(&out)
            .lines()
            .any(|l| l.starts_with("+ created fake")),
        "a fake line was printed"
    );
    let after = env.export();
    assert_eq!(recorded(&after, "x"), recorded(&before, "x"));
    env.config("inputs_x", "");
    env.ok(&["up", "--yes", "--skip-preview"]);
    env.ok(&["destroy", "--yes"]);
}

#[test]
fn a_program_import_id_with_a_tab_is_refused_before_the_provider_is_asked() {
    let env = arena("");
    env.config("import_x", "a\tb");
    let out = env.run(&["up", "--yes", "--skip-preview"]);
    assert!(!out.status.success(), "{}", printed(&out));
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(
        stderr.contains("adversary:Ids::x") && stderr.contains(r#"cannot import "a\tb""#),
        "{stderr}"
    );
    assert_inert(&printed(&out));
    let state = env.export();
    assert!(
        recorded(&state, "x").is_none() && pending(&state).is_empty(),
        "{state:#}"
    );
    env.ok(&["config", "rm", "import_x"]);
    env.ok(&["up", "--yes", "--skip-preview"]);
    env.ok(&["destroy", "--yes"]);
}

#[test]
fn a_state_an_older_plinth_wrote_with_a_control_character_id_exports_and_repairs() {
    let env = arena("");
    env.ok(&["up", "--yes", "--skip-preview"]);
    let mut state = env.export();
    let resources = state["snapshot"]["resources"].as_array_mut().unwrap();
    let x = (resources.iter_mut()).find(|r| r["urn"] == X).unwrap();
    x["id"] = "x\t\u{1b}[2Ky".into();
    let checkpoint = env.state.path().join("stacks/scenario/dev.json");
    std::fs::write(&checkpoint, serde_json::to_vec_pretty(&state).unwrap()).unwrap();

    // Commands that use the state refuse it, saying what is wrong and how to repair it.
    for args in [
        &["preview"][..],
        &["up", "--yes"],
        &["destroy", "--yes"],
        &["refresh", "--yes"],
    ] {
        let out = env.run(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8(out.stderr.clone()).unwrap();
        assert!(
            stderr.contains(X)
                && stderr.contains(r#""x\t\u{1b}[2Ky" contains control characters"#)
                && stderr.contains("plinth state delete"),
            "{args:?}: {stderr}"
        );
        assert_inert(&printed(&out));
    }
    // Listing stacks and exporting the state work, the export as it is.
    assert!(env.ok(&["stack", "ls"]).contains("dev"));
    assert_eq!(recorded(&env.export(), "x").unwrap()["id"], "x\t\u{1b}[2Ky");
    // Another edit is refused, naming the resource; deleting it repairs the state.
    let stderr = env.fails(&["state", "protect", "ok"]);
    assert!(
        stderr.contains("would not be valid") && stderr.contains(X),
        "{stderr}"
    );
    let out = env.run(&["state", "delete", "x", "--yes"]);
    assert!(out.status.success(), "{}", printed(&out));
    assert!(
        printed(&out).contains(r"id x\t\u{1b}[2Ky"),
        "{}",
        printed(&out)
    );
    assert_inert(&printed(&out));
    assert!(recorded(&env.export(), "x").is_none());
    env.ok(&["up", "--yes", "--skip-preview"]);
    env.ok(&["destroy", "--yes"]);
}

#[test]
fn a_journal_an_older_plinth_wrote_with_a_control_character_id_exports_and_repairs() {
    let env = arena("");
    env.ok(&["up", "--yes", "--skip-preview"]);
    let state = env.export();
    let resources = state["snapshot"]["resources"].as_array().unwrap();
    let old = resources.iter().position(|r| r["urn"] == X).unwrap();
    let mut x = resources[old].clone();
    x["id"] = "x\n+ created fake\u{1b}[2K".into();
    // A journal of plain lines, as plinth wrote before journal headers: the interrupted
    // update recorded a changed state of `x`, with an id no plinth records now.
    let line = serde_json::json!({"entry": "same", "old": old, "resource": x});
    let journal = env.state.path().join("stacks/scenario/dev.journal");
    std::fs::write(&journal, format!("{line}\n")).unwrap();

    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("contains control characters") && stderr.contains("plinth state delete"),
        "{stderr}"
    );
    assert_inert(&stderr);
    // The export holds the journal's state, as it is.
    assert_eq!(
        recorded(&env.export(), "x").unwrap()["id"],
        "x\n+ created fake\u{1b}[2K"
    );
    let out = env.run(&["state", "delete", "x", "--yes"]);
    assert!(out.status.success(), "{}", printed(&out));
    assert!(
        printed(&out).contains(r"id x\n+ created fake\u{1b}[2K"),
        "{}",
        printed(&out)
    );
    assert!(
        !printed(&out).contains("\n+ created fake"),
        "{}",
        printed(&out)
    );
    assert_inert(&printed(&out));
    assert!(!journal.exists());
    assert!(recorded(&env.export(), "x").is_none());
    env.ok(&["up", "--yes", "--skip-preview"]);
    env.ok(&["destroy", "--yes"]);
}

#[test]
fn a_state_imported_with_a_control_character_id_is_refused_even_with_force() {
    let env = arena("");
    env.ok(&["up", "--yes", "--skip-preview"]);
    let text = env
        .ok(&["stack", "export"])
        .replace(r#""id":"x""#, r#""id":"x\u0007""#);
    assert!(text.contains(r#""x\u0007""#), "{text}");
    let file = env.project.join("state.json");
    std::fs::write(&file, text).unwrap();
    let stderr = env.fails(&[
        "stack",
        "import",
        "--force",
        "--file",
        file.to_str().unwrap(),
    ]);
    assert!(
        stderr.contains(r#""x\u{7}" contains control characters"#),
        "{stderr}"
    );
    assert_inert(&stderr);
    assert_eq!(recorded(&env.export(), "x").unwrap()["id"], "x");
}

#[test]
fn terminal_escapes_from_a_plugin_reach_no_output_raw() {
    // A message that would retitle the terminal, erase the line and print a fake success, a
    // printed line doing the same, an output key with a bidi override.
    // (`\u{3b}` is `;`, which would end the input in the scenario's `key=value;...` list.)
    let attack = r"\e]0\u{3b}pwned\a\r\e[2K\e[1A  + adversary:Ids x created\u{202e}\b\u{9b}2J";
    let env = arena(&format!("print={attack};output_key=k\\u{{202e}}ey"));
    // The printed line reaches the log (`-v`); the output key the plan and the summary.
    let out = env.run(&["up", "--yes", "-v"]);
    assert!(out.status.success(), "{}", printed(&out));
    let text = printed(&out);
    assert_inert(&text);
    // Escaped by the log formatter (ESC, BEL) and by plinth's log writer (CR, the rest).
    assert!(
        text.contains(r"stdout: \x1b]0;pwned\x07\r\x1b[2K"),
        "{text}"
    );
    assert!(text.contains(r"created\u{202e}\x08\u{9b}2J"), "{text}");
    assert!(text.contains(r"k\u{202e}ey"), "{text}");

    // A create that fails with that message.
    env.config("resources", "ok,x,y");
    env.config("type_y", "adversary:Ids");
    env.config("inputs_y", &format!("fail_with={attack}"));
    let out = env.run(&["up", "--yes", "--skip-preview"]);
    assert!(!out.status.success());
    let text = printed(&out);
    assert_inert(&text);
    assert!(
        text.contains("plugin `adversary`") && text.contains(r"\u{1b}]0;pwned"),
        "{text}"
    );
    // What the update logged, shown again, is escaped as well.
    let logs = env.run(&["logs"]);
    assert!(logs.status.success(), "{}", printed(&logs));
    let text = printed(&logs);
    assert_inert(&text);
    assert!(text.contains(r"\u{1b}]0;pwned"), "{text}");
    // The state is whole and later runs work.
    assert!(pending(&env.export()).is_empty());
    env.config("resources", "ok");
    env.ok(&["up", "--yes", "--skip-preview"]);
    env.ok(&["destroy", "--yes"]);
}

#[test]
fn a_resource_name_made_of_terminal_escapes_is_refused_and_shown_escaped() {
    let env = arena("");
    env.config("resources", "ok,\u{1b}]0;pwned\u{7}\r");
    let out = env.run(&["up", "--yes", "--skip-preview"]);
    assert!(!out.status.success(), "{}", printed(&out));
    let text = printed(&out);
    assert_inert(&text);
    // (The program trims the name: the `\r` at its end is gone.)
    assert!(
        text.contains(r"testkit:Echo::\u{1b}]0;pwned\u{7}`")
            && text.contains("may not contain control characters"),
        "{text}"
    );
    let state = env.export();
    assert!(
        (state["snapshot"]["resources"].as_array().unwrap().iter())
            .all(|r| !r["urn"].as_str().unwrap().contains(char::is_control)),
        "{state:#}"
    );
    env.config("resources", "ok");
    env.ok(&["up", "--yes", "--skip-preview"]);
}

#[test]
fn a_plugin_whose_name_would_print_a_line_of_its_own_is_refused_and_shown_escaped() {
    // tests/plugins/misnamed calls itself "misnamed\n[fake] created\e[2K".
    let wasm = guest("plinth-misnamed");
    let wasm = wasm.to_str().unwrap();
    let env = Env::scenario_with(&format!("  misnamed:\n    path: {wasm}\n"));
    env.config("resources", "x");
    env.config("type_x", "misnamed:Thing");
    for args in [
        &["plugin", "install", wasm][..],
        &["plugin", "inspect", wasm],
        &["gen-sdk", wasm, "--lang", "rust"],
        &["preview"],
    ] {
        let out = env.run(args);
        assert!(!out.status.success(), "{args:?}");
        let text = printed(&out);
        assert!(
            text.contains(r#"`info` returned the name "misnamed\n[fake] created\u{1b}[2K""#),
            "{args:?}: {text}"
        );
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("[fake]")),
            "{args:?}: {text}"
        );
        assert_inert(&text);
    }
    assert!(!env.project.join("sdks").exists());
}

#[test]
fn a_program_error_with_a_newline_and_escapes_stays_on_its_line() {
    // The scenario program fails with "unknown kind `…`", quoting this value.
    let env = arena("");
    env.config("kind", "x\n[fake] created\u{1b}[2K");
    for args in [&["preview"][..], &["up", "--yes", "--skip-preview"]] {
        let out = env.run(args);
        assert!(!out.status.success(), "{args:?}");
        let text = printed(&out);
        assert!(
            text.contains(r"unknown kind `x\n[fake] created\u{1b}[2K`"),
            "{args:?}: {text}"
        );
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("[fake]")),
            "{args:?}: {text}"
        );
        assert_inert(&text);
    }
}

#[test]
fn plugin_inspect_shows_a_schema_description_escaped_on_its_line() {
    // adversary:Ids describes itself with a newline, a fake line and an erase-line.
    let env = arena("");
    let wasm = guest("plinth-adversary");
    let out = env.run(&["plugin", "inspect", wasm.to_str().unwrap()]);
    assert!(out.status.success(), "{}", printed(&out));
    let text = printed(&out);
    assert!(
        text.contains(r"keys its inputs name.\n[fake] created\u{1b}[2K"),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("[fake]")),
        "{text}"
    );
    assert_inert(&text);
}

#[test]
fn stack_history_shows_a_history_file_s_text_escaped() {
    let env = arena("");
    env.ok(&["up", "--yes", "--skip-preview"]);
    // A history file someone edited: a plugin name and a plinth version that would print a
    // fake line and erase the one before.
    let file = env.state.path().join("stacks/scenario/dev.history");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut entry: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    entry["plugins"][0]["name"] = "p\n[fake] created\u{1b}[1A".into();
    entry["plinth"] = "0.1\r\u{1b}[2K".into();
    std::fs::write(&file, format!("{text}{entry}\n")).unwrap();
    let out = env.run(&["stack", "history"]);
    assert!(out.status.success(), "{}", printed(&out));
    let text = printed(&out);
    assert!(
        text.contains(r"p\n[fake] created\u{1b}[1A@") && text.contains(r"0.1\r\u{1b}[2K"),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("[fake]")),
        "{text}"
    );
    assert_inert(&text);
}
