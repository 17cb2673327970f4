//! Guests built from source: a program or plugin directory in one of the languages plinth
//! knows is built into a component. Each language is one module implementing
//! [`GuestLanguage`], listed once in [`LANGUAGES`]; docs/languages.md says how to add one.
//! TypeScript/JavaScript and Python guests are componentized with the pinned tools
//! `scripts/setup` installs and cached by a content hash of what they pack (the bundle, the
//! modules), the SDK and the componentizer ([`componentized`]); Rust guests are built by cargo
//! and cached by cargo's dep-info ([`rust`]).

mod cache;
mod componentized;
mod crate_cache;
mod language;
mod pycode;
mod pyimports;
mod pypackages;
mod python;
mod run;
mod rust;
mod sdk;
mod tools;
mod tsc;
mod typecheck;
mod typescript;

use std::path::Path;

pub use language::{Built, GuestLanguage, Role};
pub use tsc::skip_typecheck;

/// Every guest language, in the order a directory is matched against them: the first whose
/// manifest it has builds it.
pub static LANGUAGES: &[&dyn GuestLanguage] =
    &[&typescript::TypeScript, &python::Python, &rust::Rust];

/// What builds each language's guests, by language name: the toolchain's version, or what is
/// missing and how to install it (for `plinth about`).
pub fn toolchains() -> Vec<(&'static str, anyhow::Result<String>)> {
    use componentized::Componentized;
    let what = "a guest";
    vec![
        (rust::Rust.name(), rust::toolchain()),
        (
            typescript::TypeScript.name(),
            typescript::TypeScript.tools(what).map(|t| t.version),
        ),
        (
            python::Python.name(),
            python::Python.tools(what).map(|t| t.version),
        ),
    ]
}

/// The language of the guest in `dir`, if it is one.
pub fn detect(dir: &Path) -> Option<&'static dyn GuestLanguage> {
    LANGUAGES.iter().copied().find(|l| l.detect(dir))
}

/// The language `id` (or one of its aliases) names.
pub fn by_id(id: &str) -> Option<&'static dyn GuestLanguage> {
    (LANGUAGES.iter().copied()).find(|l| l.id() == id || l.aliases().contains(&id))
}

#[cfg(test)]
mod tests {
    use super::componentized::Componentized;
    use super::*;

    #[test]
    fn a_directory_is_the_first_language_whose_manifest_it_has() {
        let dir = tempfile::tempdir().unwrap();
        assert!(detect(dir.path()).is_none());
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        assert_eq!(detect(dir.path()).unwrap().id(), "rust");
        std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
        assert_eq!(detect(dir.path()).unwrap().id(), "python");
        std::fs::write(dir.path().join("package.json"), "{}").unwrap();
        assert_eq!(detect(dir.path()).unwrap().id(), "ts");
    }

    #[test]
    fn languages_have_distinct_ids_and_aliases() {
        let mut names: Vec<&str> = (LANGUAGES.iter())
            .flat_map(|l| std::iter::once(l.id()).chain(l.aliases().iter().copied()))
            .collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "{names:?}");
        assert_eq!(by_id("typescript").unwrap().id(), "ts");
        assert_eq!(by_id("py").unwrap().id(), "python");
        assert!(by_id("cobol").is_none());
    }

    /// A missing path dependency is named in one readable sentence, in either language.
    #[test]
    fn a_missing_path_dependency_is_one_sentence() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"dependencies": {"@plinth/random": "file:../nowhere"}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[tool.plinth]\npaths = [\"../nowhere\"]\n",
        )
        .unwrap();
        for error in [
            typescript::TypeScript
                .dependencies(dir.path(), "program")
                .unwrap_err(),
            python::Python
                .dependencies(dir.path(), "program")
                .unwrap_err(),
        ] {
            let text = error.to_string();
            assert!(
                text.contains("nowhere") && text.contains("plinth gen-sdk") && !text.contains("  "),
                "{text}"
            );
        }
    }
}
