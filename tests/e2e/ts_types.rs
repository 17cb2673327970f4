//! Types from TypeScript: plinth type-checks a TypeScript program as it builds it (a type
//! error fails the build naming its file and line, `--skip-typecheck` skips the check), and a
//! generated SDK passes a key its schema does not know on to the provider, whose check names
//! it, instead of dropping it for a default.

use crate::support::{Env, repo_root};

/// A project whose TypeScript program declares a note through the TypeScript SDK generated
/// from tests/plugins/notes-ts, with the key `prioirty` misspelt.
fn misspelt_project() -> Env {
    let provider = repo_root().join("tests/plugins/notes-ts");
    let env = Env::project(&format!(
        "name: scenario\nprogram: .\nplugins:\n  notes:\n    path: {}\n    grants:\n      \
         dirs:\n        - {{ host: ./notes, guest: /notes, access: read-write }}\n",
        provider.display()
    ));
    let dir = env.project.clone();
    std::fs::create_dir(dir.join("notes")).unwrap();
    std::fs::write(
        dir.join("package.json"),
        r#"{ "name": "typos", "private": true, "type": "module", "main": "index.ts",
             "dependencies": { "@plinth/notes": "file:./sdk" } }"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("index.ts"),
        "import type { Context } from \"@plinth/sdk\";\n\
         import { Note } from \"@plinth/notes\";\n\n\
         export default function main(ctx: Context) {\n  \
           new Note(ctx, \"n\", { text: \"remember the milk\", prioirty: 4 });\n\
         }\n",
    )
    .unwrap();
    env.ok(&[
        "gen-sdk",
        &provider.display().to_string(),
        "--lang",
        "ts",
        "--out",
        &env.project.join("sdk").display().to_string(),
        "--sdk-path",
        &repo_root().join("sdk-guest/js").display().to_string(),
    ]);
    env
}

#[test]
fn a_type_error_fails_the_build_naming_its_line() {
    let env = misspelt_project();
    let stderr = env.fails(&["preview"]);
    for needle in ["type errors", "index.ts:5:", "prioirty", "--skip-typecheck"] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    assert!(
        !stderr.contains("Building program"),
        "checked first: {stderr}"
    );
}

#[test]
fn a_misspelt_key_reaches_the_providers_check() {
    let env = misspelt_project();
    let stderr = env.fails(&["preview", "--skip-typecheck"]);
    assert!(!stderr.contains("type errors"), "{stderr}");
    assert!(
        stderr.contains("prioirty") && stderr.contains("is not an input"),
        "{stderr}"
    );
    // The key spelt right goes through.
    let index = env.project.join("index.ts");
    let code = std::fs::read_to_string(&index).unwrap();
    std::fs::write(&index, code.replace(", prioirty: 4", "")).unwrap();
    env.ok(&["up", "--yes"]);
    assert!(env.project.join("notes/n.json").is_file());
}
