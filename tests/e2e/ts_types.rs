//! Types from TypeScript: plinth type-checks a TypeScript program as it builds it (a type
//! error fails the build naming its file and line, `--skip-typecheck` skips the check), and a
//! generated SDK passes a key its schema does not know on to the provider, whose check names
//! it, instead of dropping it for a default.

use crate::support::{Env, printed, repo_root};

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

/// The build is keyed on what the bundle is made of: files written under the project (the
/// notes the provider keeps in its grant, JSON or TypeScript nobody imports) rebuild nothing,
/// a module only imported for its types is checked again but not rebuilt, and a change to an
/// imported module rebuilds the program.
#[test]
fn a_typescript_program_is_rebuilt_only_when_what_it_bundles_changes() {
    let env = misspelt_project();
    let dir = &env.project;
    std::fs::write(dir.join("text.ts"), "export const text = \"milk\";\n").unwrap();
    std::fs::write(dir.join("kinds.ts"), "export type Label = string;\n").unwrap();
    std::fs::write(
        dir.join("index.ts"),
        "import type { Context } from \"@plinth/sdk\";\n\
         import { Note } from \"@plinth/notes\";\n\
         import { text } from \"./text\";\n\
         import type { Label } from \"./kinds\";\n\n\
         const label: Label = \"buy\";\n\n\
         export default function main(ctx: Context) {\n  \
           new Note(ctx, \"n\", { text: `${label} ${text}` });\n\
         }\n",
    )
    .unwrap();
    let note = || std::fs::read_to_string(dir.join("notes/n.json")).unwrap_or_default();
    let first = env.run(&["up", "--yes"]);
    let out = printed(&first);
    assert!(
        first.status.success() && out.contains("Building program"),
        "{out}"
    );
    assert!(note().contains("buy milk"), "{:?}: {out}", note());

    std::fs::write(dir.join("data.json"), r#"{"unrelated": true}"#).unwrap();
    std::fs::create_dir(dir.join("scratch")).unwrap();
    std::fs::write(dir.join("scratch/other.ts"), "export const x = 1;\n").unwrap();
    std::fs::write(dir.join("notes/extra.json"), "{}").unwrap();
    let again = env.built(&["up", "--yes"]);
    assert!(!again.contains("Building program"), "{again}");

    // Nothing of kinds.ts is in the bundle, yet the check reads it.
    std::fs::write(dir.join("kinds.ts"), "export type Label = number;\n").unwrap();
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("type errors") && stderr.contains("index.ts:6:"),
        "{stderr}"
    );
    assert!(!stderr.contains("Building program"), "{stderr}");
    std::fs::write(dir.join("kinds.ts"), "export type Label = string;\n").unwrap();

    std::fs::write(dir.join("text.ts"), "export const text = \"eggs\";\n").unwrap();
    let last = env.run(&["up", "--yes"]);
    let out = printed(&last);
    assert!(
        last.status.success() && out.contains("Building program"),
        "{out}"
    );
    // The note is replaced (its text is `replaceOnChange`) by one with the new text.
    let state = env.export().to_string();
    assert!(
        state.contains("buy eggs") && !state.contains("buy milk"),
        "{state}"
    );
}
