//! Numbers end to end: integers stay integers through a provider, the state, `stack export` and
//! `stack import`, and every display; a 0.2 provider (whose numbers are floats) and 0.3
//! providers work in one project, numbers crossing between them; and a value of the wrong type
//! fails `preview`, before anything is created.

use crate::count_line;
use crate::support::{Env, guest};

/// The `numbers` program with `random` (0.3) and `scale` (0.2), in `dir`.
pub(crate) fn numbers_project(dir: &tempfile::TempDir) -> Env {
    std::fs::write(
        dir.path().join("Plinth.yaml"),
        format!(
            "name: numbers\nprogram: {}\nplugins:\n  random:\n    path: {}\n  scale:\n    path: {}\n",
            guest("plinth-numbers").display(),
            guest("plinth-random").display(),
            guest("plinth-legacy-v02").display()
        ),
    )
    .unwrap();
    Env::in_dir(dir.path().to_owned(), "dev")
}

/// The state of the resource named `name` in an exported checkpoint.
fn resource<'a>(state: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    state["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
        .unwrap_or_else(|| panic!("no resource `{name}` in {state}"))
}

fn outputs(env: &Env) -> serde_json::Value {
    serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap()
}

#[test]
fn integers_round_trip_through_a_provider_the_state_export_import_and_display() {
    let dir = tempfile::tempdir().unwrap();
    let env = numbers_project(&dir);

    let out = env.ok(&["up", "--yes"]);
    // What was created and the outputs show integers as integers, floats as floats (the last
    // `Outputs:` section is the update's, after the preview's).
    assert!(out.contains("result: 8402\n"), "{out}");
    assert!(out.contains("result: 9007199254740993\n"), "{out}");
    let shown = |name: &str| {
        out.lines()
            .rev()
            .filter_map(|l| l.split_once(':'))
            // An output's key may be marked added (`+`), changed (`~`) or removed (`-`).
            .find(|(key, _)| key.trim().trim_start_matches(['+', '~', '-']).trim() == name)
            .unwrap_or_else(|| panic!("no output `{name}` in:\n{out}"))
            .1
            .trim()
            .to_owned()
    };
    assert_eq!(shown("n"), "8402");
    assert_eq!(shown("big"), "9007199254740993");
    assert_eq!(shown("product"), "16804.0");
    assert_eq!(shown("ratio"), "0.5");

    // `stack output`: JSON numbers of the right kind, and plain text.
    let json = outputs(&env);
    assert_eq!(json["n"].as_i64(), Some(8402), "{json}");
    assert_eq!(json["m"].as_i64(), Some(16804), "{json}");
    // 2^53 + 1 has no float: it survived every hop exactly.
    assert_eq!(json["big"].as_i64(), Some((1 << 53) + 1), "{json}");
    assert!(json["product"].is_f64(), "{json}");
    assert_eq!(json["ratio"].as_f64(), Some(0.5), "{json}");
    assert_eq!(env.ok(&["stack", "output", "n"]).trim(), "8402");
    assert_eq!(env.ok(&["stack", "output", "product"]).trim(), "16804.0");

    // The state: integers are written as integers.
    let state = env.export();
    let n = resource(&state, "n");
    assert!(n["outputs"]["result"].is_i64(), "{n}");
    assert!(n["inputs"]["min"].is_i64(), "{n}");
    // The root and the default provider are recorded in whichever order their steps end.
    let root = (state["snapshot"]["resources"].as_array().unwrap().iter())
        .find(|r| r["type"] == "plinth:plinth:Stack")
        .expect("the stack's root resource");
    assert_eq!(root["outputs"]["n"].as_i64(), Some(8402));
    let text = env.ok(&["stack", "export"]);
    assert!(text.contains("\"result\":8402"), "{text}");

    // Export, import, export: the same document, and nothing to change.
    let file = dir.path().join("exported.json");
    env.ok(&["stack", "export", "--file", file.to_str().unwrap()]);
    env.ok(&["stack", "import", "--file", file.to_str().unwrap()]);
    let again = env.export();
    assert_eq!(again["snapshot"], state["snapshot"]);
    assert!(resource(&again, "big")["outputs"]["result"].is_i64());
    assert_eq!(outputs(&env), json);
    env.ok(&["preview", "--expect-no-changes"]);
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("no changes"), "{out}");
}

#[test]
fn a_0_2_provider_and_0_3_providers_work_in_one_project() {
    let dir = tempfile::tempdir().unwrap();
    let env = numbers_project(&dir);
    let version = |package: &str| {
        let path = guest(package);
        let described: serde_json::Value =
            serde_json::from_str(&env.ok(&["plugin", "inspect", path.to_str().unwrap(), "--json"]))
                .unwrap();
        described["wit_version"].as_str().unwrap().to_owned()
    };
    assert_eq!(version("plinth-random"), "0.3.0");
    assert_eq!(version("plinth-legacy-v02"), "0.2.0");

    env.ok(&["up", "--yes"]);
    let state = env.export();
    // The 0.2 guest received 8402 as a float and answered in floats...
    let product = resource(&state, "product");
    assert!(product["outputs"]["product"].is_f64(), "{product}");
    assert_eq!(product["outputs"]["product"].as_f64(), Some(16804.0));
    // ... which the 0.3 provider took where it expects an integer.
    let m = resource(&state, "m");
    assert!(m["inputs"]["min"].is_i64(), "{m}");
    assert_eq!(m["outputs"]["result"].as_i64(), Some(16804), "{m}");

    // A new count replaces the chain across both versions.
    env.config("count", "10");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("3 replaced"), "{out}");
    let json = outputs(&env);
    assert_eq!(
        (json["n"].as_i64(), json["m"].as_i64()),
        (Some(10), Some(20))
    );

    env.ok(&["destroy", "--yes"]);
    assert!(env.resources().is_empty());
}

#[test]
fn a_value_of_the_wrong_type_fails_preview_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let env = numbers_project(&dir);
    env.config("wrong", "true");

    let failed = env.run(&["preview"]);
    assert!(!failed.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&failed.stdout),
        String::from_utf8_lossy(&failed.stderr)
    );
    for needle in [
        "random:RandomPet::bad",
        "separator: expected a string, got the integer 5",
    ] {
        assert!(said.contains(needle), "{needle} not in:\n{said}");
    }

    // `up` previews first: it fails the same way, with nothing created.
    let stderr = env.fails(&["up", "--yes"]);
    assert!(stderr.contains("separator"), "{stderr}");
    assert!(env.resources().is_empty(), "{:?}", env.resources());

    env.ok(&["config", "rm", "wrong"]);
    env.ok(&["up", "--yes"]);
    assert_eq!(env.resources().len(), 4);
}
