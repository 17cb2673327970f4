//! `plinth import`: a resource that exists (a random pet, a PostgreSQL role made with psql, a
//! `shapes` firewall whose inputs hold every kind of value and hostile strings) is read through
//! its provider and adopted; the code it prints, pasted into a Rust, TypeScript or Python
//! program on the generated SDKs, builds and previews with no change. `--file` imports many;
//! a bad id changes nothing.

use std::path::PathBuf;

use plinth_test_postgres::Postgres;

use crate::postgres::{q, shared};
use crate::support::{Env, guest, on_terminal, printed, repo_root};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Lang {
    Rust,
    Ts,
    Python,
}

/// A provider a program uses: its name, its component and the root of its generated SDKs.
struct Plugin {
    name: &'static str,
    wasm: PathBuf,
    sdks: PathBuf,
}

fn random() -> Plugin {
    Plugin {
        name: "random",
        wasm: guest("plinth-random"),
        sdks: repo_root().join("sdks/random"),
    }
}

fn postgresql() -> Plugin {
    Plugin {
        name: "postgresql",
        wasm: guest("plinth-postgresql"),
        sdks: repo_root().join("sdks/postgresql"),
    }
}

fn shapes() -> Plugin {
    Plugin {
        name: "shapes",
        wasm: guest("plinth-shapes"),
        sdks: repo_root().join("tests/sdks/shapes"),
    }
}

/// Where the imported code goes in each program.
const MARK: &str = "IMPORTED CODE";

/// A project whose program, in `lang`, declares `before` (code of its own, such as a component
/// to import under) and nothing else, on `plugins` and their SDKs; `grants` is YAML put under
/// every plugin.
fn project(lang: Lang, plugins: &[Plugin], grants: &str, before: &str) -> Env {
    let env = Env::empty();
    let dir = &env.project;
    let mut yaml = String::from("name: imports\nprogram: .\nplugins:\n");
    for p in plugins {
        yaml += &format!("  {}:\n    path: {}\n{grants}", p.name, p.wasm.display());
    }
    std::fs::write(dir.join("Plinth.yaml"), yaml).unwrap();
    let sdk = |p: &Plugin, lang: &str| p.sdks.join(lang).display().to_string();
    match lang {
        Lang::Rust => {
            let mut deps = format!(
                "plinth-sdk = {{ path = {:?}, features = [\"program\"] }}\n",
                repo_root().join("sdk-guest/rust").display().to_string()
            );
            for p in plugins {
                deps += &format!(
                    "plinth-{}-sdk = {{ path = {:?} }}\n",
                    p.name,
                    sdk(p, "rust")
                );
            }
            std::fs::write(
                dir.join("Cargo.toml"),
                format!(
                    "[package]\nname = \"imports\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\
                     publish = false\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\n\
                     {deps}\n[workspace]\n"
                ),
            )
            .unwrap();
            // The versions the suite's guests were built with: their compiled dependencies are
            // reused.
            std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
            std::fs::create_dir(dir.join("src")).unwrap();
            std::fs::write(
                dir.join("src/lib.rs"),
                format!(
                    "#![allow(unused_variables)]\n\nuse plinth_sdk::{{Context, Error}};\n\n\
                     fn main(ctx: &Context) -> Result<(), Error> {{\n{before}    // {MARK}\n    \
                     Ok(())\n}}\n\nplinth_sdk::export_program!(main);\n"
                ),
            )
            .unwrap();
        }
        Lang::Ts => {
            let deps: Vec<String> = (plugins.iter())
                .map(|p| format!("    \"@plinth/{}\": \"file:{}\"", p.name, sdk(p, "ts")))
                .collect();
            std::fs::write(
                dir.join("package.json"),
                format!(
                    "{{\n  \"name\": \"imports\",\n  \"private\": true,\n  \"type\": \"module\",\n  \
                     \"main\": \"index.ts\",\n  \"dependencies\": {{\n{}\n  }}\n}}\n",
                    deps.join(",\n")
                ),
            )
            .unwrap();
            std::fs::write(
                dir.join("index.ts"),
                format!(
                    "import type {{ Context }} from \"@plinth/sdk\";\n// {MARK} (imports)\n\n\
                     export default function main(ctx: Context): void {{\n{before}  // {MARK}\n}}\n"
                ),
            )
            .unwrap();
        }
        Lang::Python => {
            let paths: Vec<String> = (plugins.iter())
                .map(|p| format!("{:?}", sdk(p, "python")))
                .collect();
            std::fs::write(
                dir.join("pyproject.toml"),
                format!(
                    "[project]\nname = \"imports\"\nversion = \"0.1.0\"\n\n[tool.plinth]\n\
                     module = \"main\"\npaths = [{}]\n",
                    paths.join(", ")
                ),
            )
            .unwrap();
            std::fs::write(
                dir.join("main.py"),
                format!("def main(ctx):\n{before}    # {MARK}\n    pass\n"),
            )
            .unwrap();
        }
    }
    env.ok(&["stack", "init", "dev"]);
    env
}

/// The program's source file.
fn source(env: &Env, lang: Lang) -> PathBuf {
    env.project.join(match lang {
        Lang::Rust => "src/lib.rs",
        Lang::Ts => "index.ts",
        Lang::Python => "main.py",
    })
}

/// Pastes `code` into the program: TypeScript's imports at the top of the module, everything
/// else into the program's function, indented.
fn paste(env: &Env, lang: Lang, code: &str) {
    let path = source(env, lang);
    let program = std::fs::read_to_string(&path).unwrap();
    let (imports, body): (Vec<&str>, Vec<&str>) = match lang {
        Lang::Ts => code.lines().partition(|l| l.starts_with("import ")),
        _ => (Vec::new(), code.lines().collect()),
    };
    let indent = if lang == Lang::Ts { "  " } else { "    " };
    let body: String = (body.iter())
        .map(|l| {
            if l.is_empty() {
                "\n".to_owned()
            } else {
                format!("{indent}{l}\n")
            }
        })
        .collect();
    let program = program.replacen(&format!("{indent}{} {MARK}\n", comment(lang)), &body, 1);
    let program = program.replacen(&format!("// {MARK} (imports)"), &imports.join("\n"), 1);
    assert!(!program.contains(MARK), "{program}");
    std::fs::write(path, program).unwrap();
}

fn comment(lang: Lang) -> &'static str {
    if lang == Lang::Python { "#" } else { "//" }
}

/// `plinth import ARGS --yes --out FILE`: the code it wrote.
fn import(env: &Env, args: &[&str]) -> String {
    let out = env.project.join("imported.code");
    let mut all = vec!["import"];
    all.extend_from_slice(args);
    all.extend(["--yes", "--out", out.to_str().unwrap()]);
    let printed = env.ok(&all);
    assert!(printed.contains("Wrote the code"), "{printed}");
    std::fs::read_to_string(out).unwrap()
}

/// The preview after the pasted code finds nothing to change.
fn no_changes(env: &Env) {
    let out = env
        .command(&["preview", "--expect-no-changes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", printed(&out));
}

fn pet_in(lang: Lang) {
    let env = project(lang, &[random()], "", "");
    let code = import(&env, &["random:RandomPet", "my-pet", "very-brave-lion"]);
    assert_eq!(
        env.resources(),
        [("my-pet".to_owned(), "very-brave-lion".to_owned())]
    );
    let (class, variable, length) = match lang {
        Lang::Rust => (
            "RandomPet::builder(ctx, \"my-pet\")",
            "let my_pet",
            ".length(3)",
        ),
        Lang::Ts => ("new RandomPet(ctx, \"my-pet\"", "const myPet", "length: 3,"),
        Lang::Python => ("RandomPet(", "my_pet = ", "length=3,"),
    };
    assert!(
        code.contains(class) && code.contains(variable) && code.contains(length),
        "{code}"
    );
    paste(&env, lang, &code);
    no_changes(&env);
}

#[test]
fn a_random_pet_imported_into_a_rust_program_previews_with_no_change() {
    pet_in(Lang::Rust);
}

#[test]
fn a_random_pet_imported_into_a_typescript_program_previews_with_no_change() {
    pet_in(Lang::Ts);
}

#[test]
fn a_random_pet_imported_into_a_python_program_previews_with_no_change() {
    pet_in(Lang::Python);
}

/// A project on the suite's PostgreSQL server, granted its endpoint.
fn pg_project(server: &Postgres, lang: Lang) -> Env {
    let grants = format!(
        "    grants:\n      tcp: [\"127.0.0.1:{}\"]\n",
        server.port()
    );
    let env = project(lang, &[postgresql()], &grants, "");
    crate::postgres::configure_for(&env, server);
    env
}

fn role_in(lang: Lang, role: &str) {
    let pg = shared();
    q(&pg, "postgres", &format!("DROP ROLE IF EXISTS {role}"));
    q(
        &pg,
        "postgres",
        &format!("CREATE ROLE {role} LOGIN CREATEDB CONNECTION LIMIT 7"),
    );
    let env = pg_project(&pg, lang);
    let code = import(&env, &["postgresql:Role", "app", role]);
    let oid = q(
        &pg,
        "postgres",
        &format!("SELECT oid FROM pg_roles WHERE rolname = '{role}'"),
    );
    assert_eq!(env.resources(), [("app".to_owned(), oid)]);
    assert!(code.contains(&format!("\"{role}\"")), "{code}");
    paste(&env, lang, &code);
    no_changes(&env);
    // Adopting changed nothing on the server.
    assert_eq!(
        q(
            &pg,
            "postgres",
            &format!(
                "SELECT rolcanlogin, rolcreatedb, rolconnlimit FROM pg_roles WHERE rolname = '{role}'"
            )
        ),
        "t|t|7"
    );
    q(&pg, "postgres", &format!("DROP ROLE {role}"));
}

#[test]
fn a_postgresql_role_made_with_psql_imported_into_a_rust_program_previews_with_no_change() {
    role_in(Lang::Rust, "imp_rust_role");
}

#[test]
fn a_postgresql_role_made_with_psql_imported_into_a_typescript_program_previews_with_no_change() {
    role_in(Lang::Ts, "imp_ts_role");
}

#[test]
fn a_postgresql_role_made_with_psql_imported_into_a_python_program_previews_with_no_change() {
    role_in(Lang::Python, "imp_py_role");
}

/// A firewall's inputs, as the id `shapes` imports by: nested objects in an array, an enum
/// named by a keyword, a map, a secret, `any` and a float, and strings that would end a string
/// literal or a comment, run a command or start a new line in careless code.
fn hostile_firewall() -> serde_json::Value {
    serde_json::json!({
        "rules": [
            {"port": 443, "protocol": "tcp", "match": "\"; rm -rf / #"},
            {"port": 53, "protocol": "udp"}
        ],
        "type": "deny-all",
        "labels": {
            "*/ x": "'''\"\"\" \\ ${process.exit(1)}",
            "__proto__": "line\nbreak\r\u{2028}\u{0}",
            "class": "`backtick` {} #{x}"
        },
        // Reversed in the id; the provider reads back `s3cr3t-plaintext`.
        "token": "txetnialp-t3rc3s",
        "extra": {"nested": [1, 2.5, true, null, {"a-b": "*/ /* -->"}], "for": "x"},
        "weight": 0.25
    })
}

fn firewall_in(lang: Lang) {
    let env = project(lang, &[shapes()], "", "");
    let id = hostile_firewall().to_string();
    let code = import(&env, &["shapes:Firewall", "edge", &id]);
    assert!(!code.contains("s3cr3t-plaintext"), "{code}");
    // The comment names the key the secret is read from; setting it is the user's part.
    let key = code
        .split("plinth config set --secret ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no secret key named in:\n{code}"));
    env.ok(&["config", "set", "--secret", key, "s3cr3t-plaintext"]);
    paste(&env, lang, &code);
    no_changes(&env);
}

#[test]
fn hostile_values_of_every_type_imported_into_a_rust_program_stay_inert() {
    firewall_in(Lang::Rust);
}

#[test]
fn hostile_values_of_every_type_imported_into_a_typescript_program_stay_inert() {
    firewall_in(Lang::Ts);
}

#[test]
fn hostile_values_of_every_type_imported_into_a_python_program_stay_inert() {
    firewall_in(Lang::Python);
}

/// A Rust program with a component and an explicit provider resource: the code it gets
/// refers to both by their variables.
#[test]
fn parent_and_provider_options_are_written_for_the_variables_of_the_program() {
    let before = "    let web = ctx.component(\"acme:Web\", \"web\").register();\n    \
                  let rng = ctx.resource(\"plinth:providers:random\", \"rng\").register();\n";
    let env = project(Lang::Rust, &[random()], "", before);
    env.ok(&["up", "--yes"]);
    let code = import(
        &env,
        &[
            "random:RandomString",
            "token",
            "Ab3xY9",
            "--parent",
            "web",
            "--provider",
            "rng",
        ],
    );
    assert!(
        code.contains(".options(|o| o.parent(&web).provider(&rng))"),
        "{code}"
    );
    let state = env.export();
    let token = (state["snapshot"]["resources"].as_array().unwrap().iter())
        .find(|r| r["urn"].as_str().unwrap().ends_with("::token"))
        .unwrap();
    assert!(
        (token["urn"].as_str().unwrap()).ends_with("::acme:Web$random:RandomString::token"),
        "{token}"
    );
    assert!(
        (token["provider"]["urn"].as_str().unwrap()).ends_with("::plinth:providers:random::rng"),
        "{token}"
    );
    paste(&env, Lang::Rust, &code);
    no_changes(&env);
}

#[test]
fn a_file_imports_two_resources_at_once() {
    let env = project(Lang::Python, &[random()], "", "");
    let file = env.project.join("import.json");
    std::fs::write(
        &file,
        serde_json::json!({"resources": [
            {"type": "random:RandomPet", "name": "first", "id": "quick-fox"},
            {"type": "random:RandomString", "name": "second", "id": "Zq9-x"}
        ]})
        .to_string(),
    )
    .unwrap();
    // Printed, without --out.
    let out = env.ok(&["import", "--file", file.to_str().unwrap(), "--yes"]);
    assert!(out.contains("2 imported"), "{out}");
    assert_eq!(
        env.resources(),
        [
            ("first".to_owned(), "quick-fox".to_owned()),
            ("second".to_owned(), "Zq9-x".to_owned())
        ]
    );
    let code = out.split("shows no change for them:\n\n").nth(1).unwrap();
    assert!(
        code.contains("from plinth_random import RandomPet"),
        "{code}"
    );
    assert!(code.contains("length=5"), "{code}");
    paste(&env, Lang::Python, code);
    no_changes(&env);
}

#[test]
fn a_bad_id_or_a_bad_entry_is_refused_and_changes_nothing() {
    let pg = shared();
    let env = pg_project(&pg, Lang::Python);
    env.ok(&["import", "postgresql:Role", "one", "postgres", "--yes"]);
    let before = env.export();
    let stderr = env.fails(&[
        "import",
        "postgresql:Role",
        "ghost",
        "imp_no_such_role",
        "--yes",
    ]);
    assert!(
        stderr.contains("postgresql:Role `ghost` (id `imp_no_such_role`)")
            && stderr.contains("finds no resource with that id"),
        "{stderr}"
    );
    // A name the stack already has, and a file with a bad entry.
    let stderr = env.fails(&["import", "postgresql:Role", "one", "postgres", "--yes"]);
    assert!(stderr.contains("the stack already has"), "{stderr}");
    let file = env.project.join("bad.json");
    std::fs::write(
        &file,
        r#"{"resources": [{"type": "postgresql:Role", "name": "two", "id": "postgres"},
                          {"type": "postgresql:Role", "name": "three"}]}"#,
    )
    .unwrap();
    let stderr = env.fails(&["import", "--file", file.to_str().unwrap(), "--yes"]);
    assert!(
        stderr.contains("resources[1]") && stderr.contains("missing field `id`"),
        "{stderr}"
    );
    assert_eq!(env.export()["snapshot"], before["snapshot"]);
}

#[test]
fn declining_the_preview_imports_nothing() {
    let env = project(Lang::Python, &[random()], "", "");
    let import = ["import", "random:RandomPet", "pet", "calm-owl"];
    let out = on_terminal(&env.command(&import), b"n\n");
    let text = printed(&out);
    assert!(
        text.contains("Do you want to import these resources?")
            && text.contains("Cancelled; nothing was changed."),
        "{text}"
    );
    // Without a terminal, only --yes goes ahead.
    let stderr = env.fails(&import);
    assert!(stderr.contains("pass --yes"), "{stderr}");
    assert!(env.resources().is_empty());
}

/// A program given as a component file has no language plinth can tell: `--language` says it.
#[test]
fn the_code_s_language_is_asked_for_when_the_program_is_a_component() {
    let env = Env::project(&format!(
        "name: imports\nprogram: {}\nplugins:\n  random:\n    path: {}\n",
        guest("plinth-scenario").display(),
        guest("plinth-random").display()
    ));
    let stderr = env.fails(&["import", "random:RandomPet", "pet", "calm-owl", "--yes"]);
    assert!(stderr.contains("pass --language"), "{stderr}");
    assert!(env.resources().is_empty());
    let out = env.ok(&[
        "import",
        "random:RandomPet",
        "pet",
        "calm-owl",
        "--yes",
        "--language",
        "typescript",
    ]);
    assert!(
        out.contains("import { RandomPet } from \"@plinth/random\";")
            && out.contains("const pet = new RandomPet(ctx, \"pet\", {});"),
        "{out}"
    );
}

/// A role and a database it owns, made with psql, imported by one `--file` into a Python
/// program.
#[test]
fn a_file_imports_a_postgresql_role_and_its_database() {
    let pg = shared();
    q(&pg, "postgres", "DROP DATABASE IF EXISTS imp_file_db");
    q(&pg, "postgres", "DROP ROLE IF EXISTS imp_file_owner");
    q(&pg, "postgres", "CREATE ROLE imp_file_owner");
    q(
        &pg,
        "postgres",
        "CREATE DATABASE imp_file_db OWNER imp_file_owner CONNECTION LIMIT 3",
    );
    let env = pg_project(&pg, Lang::Python);
    let file = env.project.join("import.json");
    std::fs::write(
        &file,
        serde_json::json!({"resources": [
            {"type": "postgresql:Role", "name": "owner", "id": "imp_file_owner"},
            {"type": "postgresql:Database", "name": "db", "id": "imp_file_db"}
        ]})
        .to_string(),
    )
    .unwrap();
    let code = import(&env, &["--file", file.to_str().unwrap()]);
    assert!(
        code.contains("owner=\"imp_file_owner\",") && code.contains("connection_limit=3,"),
        "{code}"
    );
    assert_eq!(env.resources().len(), 2);
    paste(&env, Lang::Python, &code);
    no_changes(&env);
    q(&pg, "postgres", "DROP DATABASE imp_file_db");
    q(&pg, "postgres", "DROP ROLE imp_file_owner");
}
