//! Languages whose guests a componentizer builds from their sources (TypeScript/JavaScript,
//! Python): the build is keyed by a content hash of what the component is made of (the
//! bundle, the modules packed), the SDK and the toolchain, so an unchanged guest is not built
//! again, whatever else is written under its directory. A language says what it depends on,
//! which tools it needs, how it gathers what it packs, and how its componentizer runs;
//! [`build`] does the rest.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use plinth_runtime::ProgramCode;

use super::cache::{ComponentCache, Key, file_name_of};
use super::language::{Built, GuestLanguage, Role};
use super::sdk::{self, Sdk};
use super::tools::Toolchain;
use super::typecheck;

/// A directory the guest depends on, outside its own: a generated SDK, installed packages.
#[derive(Debug, Clone)]
pub struct Dependency {
    /// The package name (JavaScript), the path as written (Python), or the lock of the PyPI
    /// packages installed for a Python guest.
    pub name: String,
    pub dir: PathBuf,
}

/// What a build makes of the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// One component holding the runtime and the guest's code: what `plinth plugin build`
    /// ships.
    Whole,
    /// The guest's code alone, in `<work>/code`, which the language's prebuilt runtime
    /// loads at run time.
    Loaded,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::Whole => "whole",
            Form::Loaded => "loaded",
        }
    }
}

/// One build: what the language's steps read and where they write.
pub struct Job<'a> {
    /// The guest's directory, canonical.
    pub dir: &'a Path,
    pub dependencies: &'a [Dependency],
    pub role: Role,
    /// Whole, or the code a prebuilt runtime loads.
    pub form: Form,
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
    /// The directories the guest in `dir` depends on by path (their names are part of the
    /// build's cache key; what it packs of them is keyed by [`Componentized::pack`]).
    fn dependencies(&self, dir: &Path, what: &str) -> Result<Vec<Dependency>>;
    /// Writes, in `job.work`, the module that exports the user's code through the SDK and
    /// whatever the componentizer reads (a bundle), and returns every file the component will
    /// be made of, labelled by a name that does not depend on where the build runs: their
    /// contents are the build's cache key. Runs on every build, so it must be quick.
    fn pack(&self, job: &Job) -> Result<Vec<(String, PathBuf)>>;
    /// Turns what [`Componentized::pack`] wrote into the component at `job.out`.
    fn componentize(&self, job: &Job) -> Result<()>;

    /// Checks the guest's types, where the language has a checker plinth runs, and returns
    /// the files the checker read (those of the toolchain and the SDK aside); an error lists
    /// what is wrong, by file and line. Run once per version of those files (and never with
    /// `--skip-typecheck`).
    fn typecheck(&self, _job: &Job) -> Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }
}

/// A componentized language with a prebuilt runtime: one component that runs any guest's
/// code, packed in [`Form::Loaded`] and read at run time from [`plinth_runtime::CODE_DIR`].
pub trait Prebuilt: Componentized {
    /// Builds, at `job.out`, the runtime for `job.role`. It depends on the SDK and the
    /// toolchain only, never on the guest.
    fn componentize_runtime(&self, job: &Job) -> Result<()>;

    /// The folder of `job.work` in which [`Prebuilt::componentize_runtime`] leaves the files
    /// the runtime reads at run time (Python's standard library), if it has any: they are
    /// kept beside the runtime and given to the guest read-only at
    /// [`plinth_runtime::LIBRARY_DIR`].
    fn runtime_library(&self) -> Option<&'static str> {
        None
    }
}

/// Builds the guest in `dir` (or finds it in the cache) and returns its component.
pub fn build<L: Componentized + ?Sized>(
    language: &L,
    dir: &Path,
    role: Role,
    what: &str,
) -> Result<PathBuf> {
    let whole = |job: &Job, cache: &ComponentCache, key: &Key, _| whole(language, job, cache, key);
    prepare(language, dir, role, what, Form::Whole, whole)
}

/// The whole component of `job`, from the cache or componentized now.
fn whole<L: Componentized + ?Sized>(
    language: &L,
    job: &Job,
    cache: &ComponentCache,
    key: &Key,
) -> Result<PathBuf> {
    let name = file_name_of(job.dir);
    cache.get_or_build(key, &name, || {
        let how = format!("{}, with {}", language.name(), job.tools.version);
        building(job.what, job.dir, &how);
        let started = Instant::now();
        language.componentize(job)?;
        eprintln!(
            "Built {} in {:.1}s.",
            job.what,
            started.elapsed().as_secs_f64()
        );
        cache.store(key, &name, job.out)
    })
}

/// Builds the guest in `dir` to run here. A program runs on the language's prebuilt program
/// runtime (built once per SDK and toolchain) with the code it loads, which is all an edit
/// rebuilds; providers and policy packs are built whole.
pub fn build_to_run<L: Prebuilt + ?Sized>(
    language: &L,
    dir: &Path,
    role: Role,
    what: &str,
) -> Result<Built> {
    if role != Role::Program {
        return Ok(Built {
            component: build(language, dir, role, what)?,
            code: None,
        });
    }
    let loaded = |job: &Job, cache: &ComponentCache, key: &Key, started| {
        loaded(language, job, cache, key, started)
    };
    prepare(language, dir, role, what, Form::Loaded, loaded)
}

/// The prebuilt runtime of `job`'s language and role, and the code of `job` it loads, each
/// from the cache or built now; `started` is when the build began.
fn loaded<L: Prebuilt + ?Sized>(
    language: &L,
    job: &Job,
    cache: &ComponentCache,
    key: &Key,
    started: Instant,
) -> Result<Built> {
    let what = job.what;
    let code = match cache.get_dir(key, CODE) {
        Some(code) => code,
        None => {
            // Bundled (and type-checked) already: say what was built, and how long it took.
            let how = format!("{}, for its prebuilt runtime", language.name());
            building(what, job.dir, &how);
            eprintln!("Built {what} in {:.1}s.", started.elapsed().as_secs_f64());
            cache.store_dir(key, CODE, &job.work.join(CODE))?
        }
    };
    let role = job.role;
    let runtime_key = Key::new(language.name())
        .with("runtime", role.world())
        .with("sdk", &job.sdk.hash)
        .with("toolchain", &job.tools.version);
    let name = format!("{}-{}-runtime", language.id(), role.world());
    // Built by one process at a time: the others wait for it, then find it built.
    let component = cache.get_or_build(&runtime_key, &name, || {
        let runtime = format!("the {} {} runtime", language.name(), role.world());
        let staging = cache.staging()?;
        let out = staging.path().join("component.wasm");
        let job = Job {
            work: staging.path(),
            out: &out,
            ..*job
        };
        eprintln!(
            "Building {runtime} (once for this SDK and toolchain, with {})...",
            job.tools.version
        );
        let started = Instant::now();
        language.componentize_runtime(&job)?;
        eprintln!(
            "Built {runtime} in {:.1}s.",
            started.elapsed().as_secs_f64()
        );
        // The library first: the component's arrival is what marks the entry complete.
        if let Some(library) = language.runtime_library() {
            cache.store_dir(&runtime_key, library, &staging.path().join(library))?;
        }
        cache.store(&runtime_key, &name, &out)
    })?;
    let library = match language.runtime_library() {
        Some(folder) => Some(cache.get_dir(&runtime_key, folder).with_context(|| {
            format!(
                "the build cache's entry of the {} runtime has no {folder} folder: remove {} \
                 and build again",
                language.name(),
                component.parent().unwrap_or(&component).display()
            )
        })?),
        None => None,
    };
    Ok(Built {
        component,
        code: Some(ProgramCode {
            dir: code,
            library,
            name: file_name_of(job.dir),
        }),
    })
}

/// The folder of a build's scratch directory, and of its cache entry, that holds the code a
/// prebuilt runtime loads.
pub const CODE: &str = "code";

/// Gathers what the guest in `dir` is made of in `form`, keys the build on it, checks the
/// guest's types once per key, and hands the job, the cache and the key to `finish`.
fn prepare<L: Componentized + ?Sized, T>(
    language: &L,
    dir: &Path,
    role: Role,
    what: &str,
    form: Form,
    finish: impl FnOnce(&Job, &ComponentCache, &Key, Instant) -> Result<T>,
) -> Result<T> {
    let started = Instant::now();
    let dir = dir.canonicalize()?;
    let dependencies = language.dependencies(&dir, what)?;
    let sdk = sdk::materialize(language.sdk_files())?;
    let tools = language.tools(what)?;
    let cache = ComponentCache::open()?;
    let staging = cache.staging()?;
    let out = staging.path().join("component.wasm");
    let job = Job {
        dir: &dir,
        dependencies: &dependencies,
        role,
        form,
        sdk: &sdk,
        tools: &tools,
        work: staging.path(),
        out: &out,
        what,
    };
    let mut key = Key::new(language.name())
        .with("role", role.world())
        .with("form", form.name())
        .with("sdk", &sdk.hash)
        .with("toolchain", &tools.version);
    for dependency in &dependencies {
        key = key.with("dependency", &dependency.name);
    }
    for (label, file) in language.pack(&job)? {
        key = key.with_file(&label, &file)?;
    }
    if super::tsc::typecheck_enabled() {
        typecheck::once(&dir, role, &cache, &key, || language.typecheck(&job))?;
    }
    finish(&job, &cache, &key, started)
}

/// Says that `what`, from `dir`, is being built (componentizing takes seconds).
fn building(what: &str, dir: &Path, how: &str) {
    eprintln!("Building {what} from {} ({how})...", dir.display());
}
