//! The entry point: one [`Runtime`] per process loads every provider and program.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use plinth_engine::program::Program;
use plinth_engine::provider::Provider;
use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};

use crate::bindings::program::{Program as ProgramBindings, ProgramPre};
use crate::bindings::provider::{ProviderPlugin, ProviderPluginPre};
use crate::cache::{ArtifactCache, LoadStats};
use crate::epoch::EpochTicker;
use crate::error::LoadError;
use crate::grants::Grants;
use crate::limits::Limits;
use crate::program::{ComponentProgram, ProgramState};
use crate::provider::ComponentProvider;
use crate::sandbox::Sandbox;

/// The wasmtime embedding: an engine configured for plinth's components, its precompiled-artifact
/// cache and the linkers of both worlds. Create one per process and share it.
pub struct Runtime {
    engine: Engine,
    cache: ArtifactCache,
    epoch: Arc<EpochTicker>,
    provider_linker: Linker<Sandbox>,
    program_linker: Linker<ProgramState>,
}

impl Runtime {
    /// Creates the engine and starts its epoch ticker. Precompiled artifacts are kept in
    /// `cache_dir`, which is created when the first one is written.
    pub fn new(cache_dir: PathBuf) -> Result<Runtime, LoadError> {
        let engine = crate::engine::new_engine()?;
        let epoch = EpochTicker::start(&engine)
            .map_err(|e| LoadError::Engine(format!("cannot start the epoch thread: {e}")))?;
        let link_error = |e: wasmtime::Error| LoadError::Engine(format!("{e:#}"));

        let mut provider_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut provider_linker).map_err(link_error)?;
        ProviderPlugin::add_to_linker::<_, HasSelf<_>>(&mut provider_linker, |s| s)
            .map_err(link_error)?;

        let mut program_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut program_linker).map_err(link_error)?;
        ProgramBindings::add_to_linker::<_, HasSelf<_>>(&mut program_linker, |s| s)
            .map_err(link_error)?;

        Ok(Runtime {
            cache: ArtifactCache::new(cache_dir, &engine),
            engine,
            epoch: Arc::new(epoch),
            provider_linker,
            program_linker,
        })
    }

    /// Loads the component at `path`: from its precompiled artifact if the cache has one,
    /// otherwise by compiling it (and caching the result). Compiling takes from milliseconds
    /// to seconds: async callers should prefer [`load_provider`](Self::load_provider) and
    /// [`load_program`](Self::load_program), which do it on a blocking thread.
    pub fn load_component(&self, path: &Path) -> Result<(Component, LoadStats), LoadError> {
        self.cache.load(&self.engine, path)
    }

    /// Loads and starts the provider `name` from the component at `path`, with `grants` (a
    /// granted directory that does not exist is an error). Its `info` is read once, now; a
    /// component that calls itself something else than `name` is an error.
    pub async fn load_provider(
        &self,
        name: &str,
        path: &Path,
        limits: Limits,
        grants: Grants,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        let started = Instant::now();
        grants.validate(name)?;
        let (component, stats) = self.load_off_thread(path).await?;
        let pre = self
            .provider_linker
            .instantiate_pre(&component)
            .and_then(ProviderPluginPre::new)
            .map_err(|e| LoadError::Link {
                path: path.to_owned(),
                world: "provider",
                message: format!("{e:#}"),
            })?;
        let provider =
            ComponentProvider::start(name, path, pre, limits, grants, self.epoch.clone()).await?;
        tracing::debug!(
            target: "plinth::runtime",
            provider = name,
            cache_hit = stats.cache_hit,
            elapsed = ?started.elapsed(),
            "provider started"
        );
        Ok(Arc::new(provider))
    }

    /// Loads and instantiates the program component at `path`. One instance serves the whole
    /// run: its body, then every apply closure it registers.
    pub async fn load_program(
        &self,
        path: &Path,
        limits: Limits,
    ) -> Result<Box<dyn Program>, LoadError> {
        let started = Instant::now();
        let (component, stats) = self.load_off_thread(path).await?;
        let pre = self
            .program_linker
            .instantiate_pre(&component)
            .and_then(ProgramPre::new)
            .map_err(|e| LoadError::Link {
                path: path.to_owned(),
                world: "program",
                message: format!("{e:#}"),
            })?;
        let program = ComponentProgram::start(path, pre, limits, self.epoch.clone()).await?;
        tracing::debug!(
            target: "plinth::runtime",
            program = %path.display(),
            cache_hit = stats.cache_hit,
            elapsed = ?started.elapsed(),
            "program started"
        );
        Ok(Box::new(program))
    }

    /// [`load_component`](Self::load_component) on a blocking thread, off the async executor.
    async fn load_off_thread(&self, path: &Path) -> Result<(Component, LoadStats), LoadError> {
        let (engine, cache, path) = (self.engine.clone(), self.cache.clone(), path.to_owned());
        match tokio::task::spawn_blocking(move || cache.load(&engine, &path)).await {
            Ok(loaded) => loaded,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}
