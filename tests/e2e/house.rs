//! The house has no circles: in the engine and the CLI, no module reaches back to itself
//! through the modules it names (issue 28). A shared type lives in the module that owns it, or
//! in a small module of its own that both sides name.

use std::collections::BTreeSet;

use crate::support::module_graph::{Module, circles, graph};
use crate::support::repo_root;

/// The circles of a crate, each as the modules it goes through (`a::b`) and who names whom.
fn circles_of(src: &std::path::Path) -> Vec<String> {
    let graph = graph(src);
    let shown = |m: &Module| m.join("::");
    (circles(&graph).iter())
        .map(|circle| {
            let names: Vec<String> = (circle.iter())
                .flat_map(|from| {
                    (graph[from].iter())
                        .filter(|to| circle.contains(*to))
                        .map(move |to| format!("{} -> {}", shown(from), shown(to)))
                })
                .collect();
            names.join(", ")
        })
        .collect()
}

#[test]
fn the_engine_and_the_cli_have_no_module_circle() {
    for krate in ["host/engine", "host/cli", "host/runtime"] {
        let src = repo_root().join(krate).join("src");
        let found = circles_of(&src);
        assert!(
            found.is_empty(),
            "{krate} has module circles: move what both sides need to the module that owns it, \
             or to a small module both name:\n  {}",
            found.join("\n  ")
        );
    }
}

/// The check finds a circle where there is one, through `use` trees, child paths, `super::`
/// and a parent's re-export, and only that one.
#[test]
fn a_circle_is_found_through_use_super_and_re_exports() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod c;\nmod d;\n// crate::d::X is a comment\n",
    );
    // Character literals that look like the start of a string or of an escape.
    write(
        "a.rs",
        "use crate::{b::{self, B}};\nfn f<'x>(_: &'x str) { let _ = ['\\\\', '\"', '\\'']; crate::c::C; }\n",
    );
    write(
        "b.rs",
        "mod inner;\npub use inner::Shared;\npub fn f() { let _ = \"crate::d\"; }\n",
    );
    write("b/inner.rs", "pub fn g() { super::super::a::run(); }\n");
    write(
        "c.rs",
        "pub struct C;\n#[cfg(test)]\nmod tests { use crate::a; }\n",
    );
    write("d.rs", "use crate::b::Shared;\n");
    let graph = graph(dir.path());
    let module = |path: &str| -> Module { path.split("::").map(str::to_owned).collect() };
    let named = |from: &str, to: &[&str]| {
        let to: BTreeSet<Module> = to.iter().map(|m| module(m)).collect();
        assert_eq!(graph[&module(from)], to, "{from}: {graph:?}");
    };
    named("a", &["b", "c"]);
    named("b::inner", &["a"]);
    // The re-export leads to the module that defines `Shared`.
    named("b", &["b::inner"]);
    named("d", &["b::inner"]);
    // Neither a comment, a string nor a test module counts.
    assert!(
        graph[&vec![]].is_empty() && graph[&module("c")].is_empty(),
        "{graph:?}"
    );
    assert_eq!(
        circles(&graph),
        vec![BTreeSet::from([
            module("a"),
            module("b"),
            module("b::inner")
        ])],
        "{graph:?}"
    );
}
