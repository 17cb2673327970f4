//! Guests built from source: a program or plugin directory in one of the languages plinth
//! knows is built into a component. Each language is one module implementing
//! [`GuestLanguage`], listed once in [`LANGUAGES`]; docs/languages.md says how to add one.
//! TypeScript/JavaScript and Python guests are componentized with the pinned tools
//! `scripts/setup` installs and cached by a content hash of their sources, the SDK and the
//! componentizer ([`componentized`]); Rust guests are built by cargo and cached by cargo's
//! dep-info ([`rust`]).

mod cache;
mod componentized;
mod crate_cache;
mod python;
mod run;
mod rust;
mod sdk;
mod tools;
mod typescript;

use std::path::{Path, PathBuf};

use anyhow::Result;

/// What the component is for: the WIT world it is built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Program,
    Provider,
    PolicyPack,
}

impl Role {
    fn world(self) -> &'static str {
        match self {
            Role::Program => "program",
            Role::Provider => "provider-plugin",
            Role::PolicyPack => "policy-pack",
        }
    }
}

/// One guest language: how plinth recognises a guest written in it, the SDK files it embeds
/// for it, and how it builds one.
pub trait GuestLanguage: Sync {
    /// The language's id: `plinth gen-sdk --lang`, the folder of generated SDKs
    /// (`sdks/<provider>/<id>`) and the key of its SDK emitter.
    fn id(&self) -> &'static str;
    /// Other spellings `--lang` accepts.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// Its name in messages.
    fn name(&self) -> &'static str;
    /// The file whose presence makes a directory a guest in this language.
    fn manifest(&self) -> &'static str;
    /// Whether `dir` is a guest in this language.
    fn detect(&self, dir: &Path) -> bool {
        dir.join(self.manifest()).is_file()
    }
    /// The SDK files plinth embeds and writes out for this language's builds, as
    /// `(path in the repository, contents)`; none when its build fetches the SDK itself.
    fn sdk_files(&self) -> &'static [SdkFile] {
        &[]
    }
    /// Builds the guest in `dir` as a `role` (or finds it in the cache) and returns its
    /// component. `what` names it in messages.
    fn build(&self, dir: &Path, role: Role, what: &str) -> Result<PathBuf>;
}

/// An embedded file: its path in the repository and its contents.
pub type SdkFile = (&'static str, &'static str);

/// Every guest language, in the order a directory is matched against them: the first whose
/// manifest it has builds it.
pub static LANGUAGES: &[&dyn GuestLanguage] =
    &[&typescript::TypeScript, &python::Python, &rust::Rust];

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
