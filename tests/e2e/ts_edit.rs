//! The TypeScript edit loop: a program runs on the prebuilt program runtime, which evaluates
//! the program's bundle from a read-only directory, so an edit rebuilds the bundle only. The
//! runtime (and its precompiled form) is built once per SDK and toolchain, and an exception
//! in the loaded bundle still names the user's file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::support::{Env, repo_root};

/// A TypeScript program that exports `greeting`, then runs `tail` (more statements).
fn write_program(dir: &Path, greeting: &str, tail: &str) {
    std::fs::write(
        dir.join("index.ts"),
        format!(
            "import type {{ Context }} from \"@plinth/sdk\";\n\n\
             export default function main(ctx: Context) {{\n  \
               ctx.export(\"greeting\", {greeting:?});\n{tail}}}\n"
        ),
    )
    .unwrap();
}

fn project() -> Env {
    let env = Env::project("name: scenario\nprogram: .\n");
    std::fs::write(
        env.project.join("package.json"),
        r#"{ "name": "edited", "private": true, "type": "module", "main": "index.ts" }"#,
    )
    .unwrap();
    env
}

/// The prebuilt TypeScript program runtimes in the tests' build cache, with when each was
/// written and its inode: a runtime built again would be a new file.
fn runtimes() -> BTreeMap<PathBuf, (SystemTime, u64)> {
    use std::os::unix::fs::MetadataExt;
    let cache = repo_root().join("target/e2e-home/build-cache");
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(&cache).into_iter().flatten().flatten() {
        let file = entry.path().join("ts-program-runtime.wasm");
        if let Ok(meta) = std::fs::metadata(&file) {
            found.insert(file, (meta.modified().unwrap(), meta.ino()));
        }
    }
    found
}

fn greeting(env: &Env) -> String {
    let outputs: serde_json::Value =
        serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap();
    outputs["greeting"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn an_edited_typescript_program_runs_its_new_code_on_the_same_runtime() {
    let env = project();
    write_program(&env.project, "one", "");
    let first = env.built(&["up", "--yes"]);
    assert!(first.contains("Building program"), "{first}");
    assert_eq!(greeting(&env), "one");
    let runtimes_before = runtimes();
    assert!(
        !runtimes_before.is_empty(),
        "no runtime in the build cache:\n{first}"
    );

    for (edit, word) in ["two", "three"].iter().enumerate() {
        write_program(&env.project, word, "");
        let stderr = env.built(&["up", "--yes"]);
        // The program's bundle is rebuilt; the runtime is not: the same file, untouched.
        assert!(stderr.contains("Building program"), "edit {edit}: {stderr}");
        assert!(
            !stderr.contains("program runtime (once"),
            "edit {edit} rebuilt the runtime: {stderr}"
        );
        assert_eq!(runtimes(), runtimes_before, "edit {edit}: {stderr}");
        assert_eq!(greeting(&env), *word, "edit {edit}: {stderr}");
    }
    // An unchanged program is not even bundled into the cache again.
    let again = env.built(&["preview"]);
    assert!(!again.contains("Building program"), "{again}");
}

#[test]
fn an_exception_in_the_loaded_bundle_names_the_users_line() {
    let env = project();
    write_program(
        &env.project,
        "one",
        "  throw new Error(\"the sixth line\");\n",
    );
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("Error: the sixth line") && stderr.contains("index.ts:5:"),
        "{stderr}"
    );
    // Neither the runtime's own frames nor esbuild's show.
    assert!(!stderr.contains("> eval"), "{stderr}");
    assert!(!stderr.contains("bundle.js"), "{stderr}");

    // An error thrown while the bundle is evaluated is reported like one thrown in `main`.
    std::fs::write(
        env.project.join("index.ts"),
        "import type { Context } from \"@plinth/sdk\";\n\
         const table: Record<string, number> = {};\n\
         if (table.x === undefined) throw new RangeError(\"at load\");\n\
         export default function main(_ctx: Context) {}\n",
    )
    .unwrap();
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("RangeError: at load") && stderr.contains("index.ts:3:"),
        "{stderr}"
    );
}

/// A plan names the program by a digest over the runtime and the code it loads: a plan saved
/// before an edit refuses the edited program, though the runtime is the same file.
#[test]
fn a_plan_refuses_a_typescript_program_edited_since() {
    let env = project();
    write_program(&env.project, "one", "");
    let plan = env.project.join("plan.json");
    env.ok(&["preview", "--save-plan", plan.to_str().unwrap()]);
    write_program(&env.project, "two", "");
    let stderr = env.fails(&["up", "--yes", "--plan", plan.to_str().unwrap()]);
    assert!(
        stderr.contains("the program changed since the plan was made"),
        "{stderr}"
    );
    write_program(&env.project, "one", "");
    env.ok(&["up", "--yes", "--plan", plan.to_str().unwrap()]);
    assert_eq!(greeting(&env), "one");
}

/// The code directory the runtime reads is no grant: the program's `node:fs` still reaches no
/// directory, its own bundle included.
#[test]
fn a_typescript_program_cannot_touch_its_own_code() {
    let env = project();
    std::fs::write(
        env.project.join("index.ts"),
        "import type { Context } from \"@plinth/sdk\";\n\
         import { readFileSync, writeFileSync } from \"node:fs\";\n\n\
         export default function main(ctx: Context) {\n  \
           let read = \"refused\";\n  \
           try { read = readFileSync(\"/.plinth-code/bundle.js\", \"utf8\").slice(0, 9); } catch {}\n  \
           ctx.export(\"greeting\", read);\n  \
           writeFileSync(\"/.plinth-code/bundle.js\", \"globalThis.x = 1;\");\n\
         }\n",
    )
    .unwrap();
    let stderr = env.fails(&["up", "--yes"]);
    assert!(
        stderr.contains("EACCES")
            && stderr.contains("programs and policy packs are granted no directory"),
        "{stderr}"
    );
    assert!(stderr.contains("index.ts:8:"), "{stderr}");
}
