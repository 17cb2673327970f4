//! Typed SDKs and schemas: the committed generated SDKs match the generator, a program on a
//! generated SDK drives a real provider through `up`, a misspelt type names the types there
//! are, and `plugin inspect` shows typed properties.

use crate::count_line;
use crate::support::{ConfigCleanup, Env, guest, repo_root};

/// `sdks/generated.txt`: each committed SDK's provider and directory. Rust providers by their
/// built component; the TypeScript and Python ones by their source directory, which plinth
/// builds (once: the build cache keeps it).
fn generated_sdks() -> Vec<(std::path::PathBuf, String)> {
    let root = repo_root();
    let list = std::fs::read_to_string(root.join("sdks/generated.txt")).unwrap();
    (list.lines())
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (provider, sdk) = line.split_once(' ').unwrap();
            let provider = match provider.strip_prefix("crate:") {
                Some(name) => guest(name),
                None => root.join(provider),
            };
            (provider, sdk.to_owned())
        })
        .collect()
}

/// Every SDK directory is in `sdks/generated.txt`, so that neither the check below nor
/// `scripts/bump-version` can pass one by.
#[test]
fn every_committed_sdk_is_listed_as_generated() {
    let root = repo_root();
    let list = std::fs::read_to_string(root.join("sdks/generated.txt")).unwrap();
    let listed: std::collections::BTreeSet<&str> = (list.lines())
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once(' ').map(|(_, sdk)| sdk))
        .collect();
    for parent in ["sdks", "tests/sdks"] {
        for entry in std::fs::read_dir(root.join(parent)).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                let sdk = format!("{parent}/{}", entry.file_name().to_str().unwrap());
                assert!(
                    listed.contains(sdk.as_str()),
                    "{sdk} is not in sdks/generated.txt"
                );
            }
        }
    }
}

/// The SDKs under `sdks/` are what `plinth gen-sdk` makes of the providers' schemas today: a
/// schema change without regenerating them fails here.
#[test]
fn committed_sdks_are_up_to_date() {
    let env = Env::scenario();
    let root = repo_root();
    let providers = generated_sdks();
    for (wasm, sdk) in &providers {
        // Each language's SDK, and the plinth SDK it depends on by path (Python's needs none).
        for (lang, sdk_path) in [
            ("rust", Some("sdk-guest/rust")),
            ("ts", Some("sdk-guest/js")),
            ("python", None),
        ] {
            let out = root.join(sdk).join(lang);
            let mut args = vec![
                "gen-sdk".to_owned(),
                wasm.display().to_string(),
                "--lang".to_owned(),
                lang.to_owned(),
                "--out".to_owned(),
                out.display().to_string(),
                "--check".to_owned(),
            ];
            let mut regenerate = format!(
                "plinth gen-sdk {} --lang {lang} --out {sdk}/{lang}",
                wasm.display()
            );
            if let Some(path) = sdk_path {
                args.extend([
                    "--sdk-path".to_owned(),
                    root.join(path).display().to_string(),
                ]);
                regenerate.push_str(&format!(" --sdk-path {path}"));
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let output = env.run(&args);
            assert!(
                output.status.success(),
                "{sdk}/{lang} is out of date: run `{regenerate}`\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

/// A program on the SDK generated from the shapes provider, whose schema has nested objects,
/// arrays, maps, enums, secrets, `any`, keywords and a function: every value crosses to the
/// provider and back typed, and typed outputs feed typed inputs.
#[test]
fn a_generated_sdk_carries_every_kind_of_type_through_up() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Plinth.yaml"),
        format!(
            "name: shapes\nprogram: {}\nplugins:\n  shapes:\n    path: {}\n",
            guest("plinth-shapes-program").display(),
            guest("plinth-shapes").display()
        ),
    )
    .unwrap();
    let env = Env::in_dir(dir.path().to_owned(), "dev");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 created"), "{out}");
    let outputs: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["ports"], serde_json::json!([443, 53]));
    assert_eq!(outputs["count"], 2);
    assert_eq!(outputs["first"], "443/Tcp");
    assert_eq!(outputs["policy"], "DenyAll");
    assert_eq!(outputs["labels"], 1);
    assert_eq!(outputs["weight"], 0.5);
    assert_eq!(outputs["fingerprint"], "[secret]");
    let revealed: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "output", "--json", "--show-secrets"])).unwrap();
    assert_eq!(revealed["fingerprint"], "terc3s");
    // On the wire and in state, the provider's own names and strings.
    let state = env.export();
    let edge = (state["snapshot"]["resources"].as_array().unwrap().iter())
        .find(|r| r["urn"].as_str().unwrap().ends_with("::edge"))
        .unwrap();
    assert_eq!(edge["inputs"]["type"], "deny-all", "{edge}");
    assert_eq!(edge["inputs"]["rules"][1]["protocol"], "udp", "{edge}");
    assert_eq!(edge["inputs"]["rules"][0]["match"], "10.0.0.0/8", "{edge}");
    assert!(edge["inputs"]["rules"][1].get("match").is_none(), "{edge}");
    // A second run changes nothing.
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("no changes"), "{out}");
}

/// `--check` notices a stale file, and generating writes the SDK whole.
#[test]
fn gen_sdk_writes_and_checks_a_crate() {
    let env = Env::scenario();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kv-sdk");
    let wasm = guest("plinth-kv");
    let args = |check: bool| {
        let mut args = vec![
            "gen-sdk".to_owned(),
            wasm.display().to_string(),
            "--lang".into(),
            "rust".into(),
            "--out".into(),
            out.display().to_string(),
        ];
        if check {
            args.push("--check".into());
        }
        args
    };
    let run = |check: bool| {
        let args = args(check);
        env.run(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let stderr = String::from_utf8(run(true).stderr).unwrap();
    assert!(stderr.contains("out of date"), "{stderr}");
    let written = run(false);
    let stdout = String::from_utf8(written.stdout).unwrap();
    assert!(
        stdout.contains("Wrote the rust SDK of `kv` 0.1.0 (1 resource type, 0 functions)"),
        "{stdout}"
    );
    let library = std::fs::read_to_string(out.join("src/lib.rs")).unwrap();
    assert!(
        library.contains("pub const TYPE: &str = \"kv:Entry\";"),
        "{library}"
    );
    let manifest = std::fs::read_to_string(out.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"plinth-kv-sdk\""), "{manifest}");
    assert!(run(true).status.success());
    std::fs::write(
        out.join("src/lib.rs"),
        library.replace("kv:Entry", "kv:Old"),
    )
    .unwrap();
    let stderr = String::from_utf8(run(true).stderr).unwrap();
    assert!(stderr.contains("out of date (src/lib.rs)"), "{stderr}");
    // A program is not a provider: nothing to generate.
    let program = guest("plinth-scenario");
    let stderr = env.fails(&["gen-sdk", program.to_str().unwrap(), "--lang", "rust"]);
    assert!(stderr.contains("not a provider plugin"), "{stderr}");
}

/// The kv example: a program on the generated SDK, and the provider the guide walks through,
/// with create, update in place, read of an entry gone out of band, and delete.
#[test]
fn kv_example_lifecycle() {
    let dir = repo_root().join("examples/kv");
    let data = dir.join("data");
    let stack = "e2e-kv";
    let _cleanup = ConfigCleanup(dir.join(format!("Plinth.{stack}.yaml")));
    let env = Env::in_dir(dir, stack);
    let stored = |key: &str| std::fs::read_to_string(data.join(key)).ok();

    // A preview writes nothing, and knows the outputs the provider plans.
    let out = env.ok(&["preview"]);
    assert!(out.contains("size: 5"), "{out}");
    assert_eq!(stored("greeting"), None);

    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 created"), "{out}");
    assert_eq!(stored("greeting").as_deref(), Some("hello"));
    assert_eq!(stored("copy").as_deref(), Some("hello"));
    assert_eq!(env.ok(&["stack", "output", "size"]).trim(), "5");

    // A new value updates both entries in place; the preview before it changes nothing.
    env.config("greeting", "bonjour");
    env.ok(&["preview"]);
    assert_eq!(stored("greeting").as_deref(), Some("hello"));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 updated"), "{out}");
    assert_eq!(stored("copy").as_deref(), Some("bonjour"));
    assert_eq!(env.ok(&["stack", "output", "size"]).trim(), "7");

    // An entry deleted out of band: refresh forgets it (read says it is gone), up writes it
    // again.
    std::fs::remove_file(data.join("copy")).unwrap();
    env.ok(&["refresh", "--yes"]);
    let names: Vec<String> = env.resources().into_iter().map(|r| r.0).collect();
    assert_eq!(names, ["greeting"]);
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 created"), "{out}");
    assert_eq!(stored("copy").as_deref(), Some("bonjour"));

    env.ok(&["destroy", "--yes"]);
    let left: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [".gitignore"]);
}

/// A misspelt type token fails the preview, naming the closest type and every one the
/// provider offers, before anything is created.
#[test]
fn a_misspelt_type_names_the_types_the_provider_offers() {
    let env = Env::scenario();
    env.config("resources", "a,b");
    env.config("type_b", "testkit:Ecoh");
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("unknown resource type testkit:Ecoh; did you mean testkit:Echo? The provider testkit offers: testkit:"),
        "{stderr}"
    );
    env.fails(&["up", "--yes"]);
    assert!(
        env.resources().iter().all(|r| r.0 != "b"),
        "{:?}",
        env.resources()
    );
}

/// `plugin inspect` shows each resource type's typed properties, and `--json` their schemas.
#[test]
fn plugin_inspect_shows_typed_properties() {
    let env = Env::scenario();
    let kv = guest("plinth-kv");
    let shown = env.ok(&["plugin", "inspect", kv.to_str().unwrap()]);
    for needle in [
        "  kv:Entry\n    A value stored under a key.\n    inputs:\n",
        "      key    string  required, replaces  The key: letters, digits",
        "      value  string  required            The value stored under the key.",
        "    outputs:\n",
        "      size   integer  required  The value's length in bytes.",
    ] {
        assert!(shown.contains(needle), "missing\n{needle}\nin:\n{shown}");
    }
    let random = guest("plinth-random");
    let shown = env.ok(&["plugin", "inspect", random.to_str().unwrap()]);
    assert!(
        shown.contains("optional, replaces, default true"),
        "{shown}"
    );
    let result = (shown.lines())
        .skip_while(|l| *l != "  random:RandomPassword")
        .find(|l| l.trim_start().starts_with("result "))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        result.contains("string") && result.contains("required, secret"),
        "{result}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["plugin", "inspect", kv.to_str().unwrap(), "--json"]))
            .unwrap();
    let entry = &json["resources"][0];
    assert_eq!(entry["token"], "kv:Entry");
    assert_eq!(entry["inputs"][0]["name"], "key");
    assert_eq!(entry["inputs"][0]["type"]["type"], "string");
    assert_eq!(entry["inputs"][0]["required"], true);
    assert_eq!(entry["inputs"][0]["replace_on_change"], true);
    assert_eq!(entry["outputs"][2]["type"]["type"], "integer");
}

/// A misspelt keyword through the generated Python SDK (which a type checker refuses, its type
/// being `Never`) still reaches the provider, whose check refuses it by name: it does not
/// vanish into a default.
#[test]
fn a_misspelt_keyword_through_the_generated_python_sdk_is_refused_by_check() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Plinth.yaml"),
        format!(
            "name: typo\nprogram: .\nplugins:\n  random:\n    path: {}\n",
            guest("plinth-random").display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        format!(
            "[project]\nname = \"typo\"\nversion = \"0.1.0\"\n\n[tool.plinth]\npaths = [{:?}]\n",
            repo_root().join("sdks/random/python").display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("main.py"),
        "from plinth_random import RandomPet\n\n\ndef main(ctx):\n    \
         RandomPet(ctx, \"pet\", lenght=3)\n",
    )
    .unwrap();
    let env = Env::in_dir(dir.path().to_owned(), "dev");
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("lenght: is not an input of random:RandomPet")
            && stderr.contains("did you mean `length`?"),
        "{stderr}"
    );
}
