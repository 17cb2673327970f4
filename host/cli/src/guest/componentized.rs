//! Languages whose guests a componentizer builds from their sources (TypeScript/JavaScript,
//! Python): the build is keyed by a content hash of the guest's sources, the directories it
//! depends on by path, the SDK and the toolchain, so an unchanged guest is not built again. A
//! language says which files are sources, what it depends on, which tools it needs, and how
//! its entry module and componentizer run; [`build`] does the rest.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use super::cache::{ComponentCache, Key, file_name_of};
use super::language::{GuestLanguage, Role};
use super::sdk::{self, Sdk};
use super::tools::Toolchain;

/// A directory the guest depends on, outside its own: a generated SDK, installed packages.
#[derive(Debug, Clone)]
pub struct Dependency {
    /// The package name (JavaScript), the path as written (Python), or the lock of the PyPI
    /// packages installed for a Python guest.
    pub name: String,
    pub dir: PathBuf,
}

/// One build: what the language's steps read and where they write.
pub struct Job<'a> {
    /// The guest's directory, canonical.
    pub dir: &'a Path,
    pub dependencies: &'a [Dependency],
    pub role: Role,
    pub sdk: &'a Sdk,
    pub tools: &'a Toolchain,
    /// A scratch directory for this build; `out` is in it.
    pub work: &'a Path,
    /// Where the component goes.
    pub out: &'a Path,
    /// The guest, as messages name it.
    pub what: &'a str,
}

/// A language built by a componentizer from its sources.
pub trait Componentized: GuestLanguage {
    /// The componentizer (and bundler) `scripts/setup` installs, or an error naming what to
    /// install.
    fn tools(&self, what: &str) -> Result<Toolchain>;
    /// Whether a file of the guest (or of a dependency) is a source, by its name and extension.
    fn is_source(&self, name: &str, extension: &str) -> bool;
    /// The directories the guest in `dir` depends on by path: their sources are part of the
    /// build's cache key.
    fn dependencies(&self, dir: &Path, what: &str) -> Result<Vec<Dependency>>;
    /// The module that exports the user's code through the SDK: its file name and text.
    fn entry_module(&self, job: &Job) -> Result<(&'static str, String)>;
    /// Turns the entry module (written in `job.work`) into the component at `job.out`.
    fn componentize(&self, job: &Job, entry: &Path) -> Result<()>;
    /// Checks the guest's types, where the language has a checker plinth runs; an error lists
    /// what is wrong, by file and line. Run once per cache key (and never with
    /// `--skip-typecheck`).
    fn typecheck(&self, _job: &Job) -> Result<()> {
        Ok(())
    }
}

/// Builds the guest in `dir` (or finds it in the cache) and returns its component.
pub fn build<L: Componentized + ?Sized>(
    language: &L,
    dir: &Path,
    role: Role,
    what: &str,
) -> Result<PathBuf> {
    let dir = dir.canonicalize()?;
    let dependencies = language.dependencies(&dir, what)?;
    let sdk = sdk::materialize(language.sdk_files())?;
    let tools = language.tools(what)?;
    let is_source = |path: &Path| is_source(language, path);
    let cache = ComponentCache::open()?;
    let mut key = Key::new(language.name())
        .with("role", role.world())
        .with("sdk", &sdk.hash)
        .with("toolchain", &tools.version)
        .with_sources(&dir, is_source)?;
    for dependency in &dependencies {
        key = key
            .with("dependency", &dependency.name)
            .with_sources(&dependency.dir, is_source)?;
    }
    let name = file_name_of(&dir);
    let cached = cache.get(&key, &name);
    let check = super::tsc::typecheck_enabled() && !cache.is_marked(&key, TYPECHECKED);
    if let (Some(cached), false) = (&cached, check) {
        return Ok(cached.clone());
    }
    let staging = cache.staging()?;
    let out = staging.path().join("component.wasm");
    let job = Job {
        dir: &dir,
        dependencies: &dependencies,
        role,
        sdk: &sdk,
        tools: &tools,
        work: staging.path(),
        out: &out,
        what,
    };
    if check {
        language.typecheck(&job)?;
        cache.mark(&key, TYPECHECKED)?;
    }
    if let Some(cached) = cached {
        return Ok(cached);
    }
    // Componentizing takes seconds; say so, and how long it took.
    eprintln!(
        "Building {what} from {} ({}, with {})...",
        dir.display(),
        language.name(),
        tools.version
    );
    let started = Instant::now();
    let (entry_name, text) = language.entry_module(&job)?;
    let entry = job.work.join(entry_name);
    std::fs::write(&entry, text)?;
    language.componentize(&job, &entry)?;
    eprintln!("Built {what} in {:.1}s.", started.elapsed().as_secs_f64());
    cache.store(&key, &name, &out)
}

/// The mark of a build whose types were checked.
const TYPECHECKED: &str = "typechecked";

/// Which files of a guest directory are its sources (and so part of the cache key).
fn is_source<L: Componentized + ?Sized>(language: &L, path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    // The project's own files (stack config, lock) are not the guest's sources.
    if name.starts_with("Plinth.") {
        return false;
    }
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    language.is_source(name, extension)
}
