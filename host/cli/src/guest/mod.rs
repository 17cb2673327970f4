//! Guests written in TypeScript/JavaScript or Python: a program or plugin directory with a
//! `package.json` or a `pyproject.toml` is componentized with the pinned tools `scripts/setup`
//! installs. Built components are cached by a content hash of the sources, the SDK and the
//! componentizer, so an unchanged guest is not built again.

mod cache;
mod crate_cache;
mod js;
mod python;
mod run;
mod sdk;
mod tools;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

pub use cache::ComponentCache;
pub use crate_cache::CrateCache;

/// What the component is for: the WIT world it is built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Program,
    Provider,
}

impl Role {
    fn world(self) -> &'static str {
        match self {
            Role::Program => "program",
            Role::Provider => "provider-plugin",
        }
    }
}

/// The language of a guest directory, if it is a JS/TS or Python one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    JavaScript,
    Python,
}

impl Language {
    pub fn of(dir: &Path) -> Option<Language> {
        if dir.join("package.json").is_file() {
            Some(Language::JavaScript)
        } else if dir.join("pyproject.toml").is_file() {
            Some(Language::Python)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Language::JavaScript => "TypeScript/JavaScript",
            Language::Python => "Python",
        }
    }
}

/// A directory the guest depends on by path, outside its own: a generated SDK.
#[derive(Debug, Clone)]
pub struct Dependency {
    /// The package name (JavaScript) or the path as written (Python).
    name: String,
    dir: PathBuf,
}

/// Builds the guest in `dir` (or finds it in the cache) and returns its component.
pub fn build(dir: &Path, language: Language, role: Role, what: &str) -> Result<PathBuf> {
    let dir = dir.canonicalize()?;
    let dependencies = match language {
        Language::JavaScript => js::dependencies(&dir, what)?,
        Language::Python => python::dependencies(&dir, what)?,
    };
    let sdk = sdk::materialize()?;
    let toolchain = match language {
        Language::JavaScript => tools::javascript(what)?,
        Language::Python => tools::python(what)?,
    };
    let cache = ComponentCache::open()?;
    let mut key = cache::Key::new(language.name())
        .with("role", role.world())
        .with("sdk", &sdk.hash)
        .with("toolchain", &toolchain.version)
        .with_sources(&dir, |path| sources::is_source(language, path))?;
    for dependency in &dependencies {
        key = key
            .with("dependency", &dependency.name)
            .with_sources(&dependency.dir, |path| sources::is_source(language, path))?;
    }
    cache.get_or_build(&key, |out| {
        // Componentizing takes seconds; say so, and how long it took.
        eprintln!(
            "Building {what} from {} ({}, with {})...",
            dir.display(),
            language.name(),
            toolchain.version
        );
        let started = Instant::now();
        match language {
            Language::JavaScript => {
                js::build(&dir, &dependencies, role, &sdk, &toolchain, out, what)?
            }
            Language::Python => {
                python::build(&dir, &dependencies, role, &sdk, &toolchain, out, what)?
            }
        }
        eprintln!("Built {what} in {:.1}s.", started.elapsed().as_secs_f64());
        Ok(())
    })
}

/// Which files of a guest directory are its sources (and so part of the cache key).
mod sources {
    use std::path::Path;

    use super::Language;

    pub fn is_source(language: Language, path: &Path) -> bool {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // The project's own files (stack config, lock) are not the guest's sources.
        if name.starts_with("Plinth.") {
            return false;
        }
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        match language {
            Language::JavaScript => {
                matches!(
                    ext,
                    "ts" | "mts" | "cts" | "tsx" | "js" | "mjs" | "cjs" | "json"
                )
            }
            Language::Python => matches!(ext, "py") || name == "pyproject.toml",
        }
    }
}
