//! The entry point: one [`Runtime`] per process loads every provider and program.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use plinth_engine::program::Program;
use plinth_engine::provider::Provider;
use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};

use crate::abi::bindings::{v0_1, v0_2, v0_3};
use crate::abi::inspect::ComponentInfo;
use crate::abi::versions::{self, Kind, WitVersion};
use crate::access::advice::{GrantAdvice, PlainAdvice};
use crate::access::grants::Grants;
use crate::error::LoadError;
use crate::load::bytes::ComponentBytes;
use crate::load::cache::{ArtifactCache, LoadStats};
use crate::load::policy_pack::{ComponentPolicyPack, PolicySettings};
use crate::load::program::{self, ComponentProgram, ProgramPre, ProgramState};
use crate::load::provider::{self, ComponentProvider, ProviderPre};
use crate::sandbox::Sandbox;
use crate::sandbox::epoch::EpochTicker;
use crate::sandbox::limits::Limits;
use crate::sandbox::link::link_sandboxed_wasi;

/// The wasmtime embedding: an engine configured for plinth's components, its precompiled-artifact
/// cache and the linkers of both worlds. Create one per process and share it.
pub struct Runtime {
    engine: Engine,
    cache: ArtifactCache,
    epoch: Arc<EpochTicker>,
    provider_linker: Linker<Sandbox>,
    program_linker: Linker<ProgramState>,
    policy_linker: Linker<Sandbox>,
    advice: Arc<dyn GrantAdvice>,
    /// Providers linked already, by the SHA-256 of their component: another configuration of a
    /// plugin is not linked again.
    prepared: Mutex<HashMap<String, ProviderPre>>,
}

impl Runtime {
    /// Creates the engine and starts its epoch ticker. Precompiled artifacts are kept in
    /// `cache_dir`, which is created when the first one is written.
    pub fn new(cache_dir: PathBuf) -> Result<Runtime, LoadError> {
        let engine = crate::load::engine::new_engine()?;
        let epoch = EpochTicker::start(&engine)
            .map_err(|e| LoadError::Engine(format!("cannot start the epoch thread: {e}")))?;
        let link_error = |e: wasmtime::Error| LoadError::Engine(format!("{e:#}"));

        let mut provider_linker = Linker::new(&engine);
        link_sandboxed_wasi(&mut provider_linker).map_err(link_error)?;
        // Every version: each links its types' (empty) interfaces under its own names.
        v0_1::provider::ProviderPlugin::add_to_linker::<_, HasSelf<_>>(&mut provider_linker, |s| s)
            .map_err(link_error)?;
        v0_2::provider::ProviderPlugin::add_to_linker::<_, HasSelf<_>>(&mut provider_linker, |s| s)
            .map_err(link_error)?;
        v0_3::provider::ProviderPlugin::add_to_linker::<_, HasSelf<_>>(&mut provider_linker, |s| s)
            .map_err(link_error)?;

        let mut program_linker = Linker::new(&engine);
        link_sandboxed_wasi(&mut program_linker).map_err(link_error)?;
        program::add_to_linker(&mut program_linker).map_err(link_error)?;

        let mut policy_linker = Linker::new(&engine);
        crate::load::policy_pack::add_to_linker(&mut policy_linker).map_err(link_error)?;

        Ok(Runtime {
            cache: ArtifactCache::new(cache_dir, &engine),
            engine,
            epoch: Arc::new(epoch),
            provider_linker,
            program_linker,
            policy_linker,
            advice: Arc::new(PlainAdvice),
            prepared: Mutex::default(),
        })
    }

    /// Words the advice that follows a refusal (a capability not granted, an attempt the sandbox
    /// refused) the embedder's way, e.g. as the lines of its configuration to add.
    pub fn with_grant_advice(mut self, advice: Arc<dyn GrantAdvice>) -> Runtime {
        self.advice = advice;
        self
    }

    /// Loads the component at `path`: from its precompiled artifact if the cache has one,
    /// otherwise by compiling it (and caching the result). Compiling takes from milliseconds
    /// to seconds: async callers should prefer [`load_provider`](Self::load_provider) and
    /// [`load_program`](Self::load_program), which do it on a blocking thread.
    pub fn load_component(&self, path: &Path) -> Result<(Component, LoadStats), LoadError> {
        self.cache.load_path(&self.engine, path)
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
        let loaded = self.load_path_async(path).await;
        self.start_provider(name, path, loaded?, limits, grants, started)
            .await
    }

    /// [`load_provider`](Self::load_provider) from bytes read (and hashed) already: a caller
    /// that checked `wasm`'s hash (against a lock file's pin) runs exactly what it checked.
    pub async fn load_provider_bytes(
        &self,
        name: &str,
        wasm: ComponentBytes,
        limits: Limits,
        grants: Grants,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        let started = Instant::now();
        grants.validate(name)?;
        let path = &wasm.path().to_owned();
        let loaded = self.load_off_thread(wasm).await?;
        self.start_provider(name, path, loaded, limits, grants, started)
            .await
    }

    /// Starts the provider `name` from its loaded component.
    async fn start_provider(
        &self,
        name: &str,
        path: &Path,
        (component, stats): (Component, LoadStats),
        limits: Limits,
        grants: Grants,
        started: Instant,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        let version = versions::detect(&self.engine, &component, path, Kind::Provider)?;
        let pre = self.prepare_provider(&component, &stats.sha256, version, path)?;
        let provider = ComponentProvider::start(
            name,
            path,
            pre,
            limits,
            grants,
            self.advice.clone(),
            self.epoch.clone(),
        )
        .await?;
        tracing::debug!(
            target: "plinth::runtime",
            provider = name,
            wit = %version,
            cache_hit = stats.cache_hit,
            elapsed = ?started.elapsed(),
            "provider started"
        );
        Ok(Arc::new(provider))
    }

    /// `component`, with the SHA-256 `sha256`, pre-instantiated as a provider, once per process.
    fn prepare_provider(
        &self,
        component: &Component,
        sha256: &str,
        version: WitVersion,
        path: &Path,
    ) -> Result<ProviderPre, LoadError> {
        let prepared = self.prepared.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(pre) = prepared.get(sha256) {
            return Ok(pre.clone());
        }
        drop(prepared);
        let pre = ProviderPre::new(&self.provider_linker, component, version)
            .map_err(link_error(path, Kind::Provider))?;
        (self.prepared.lock().unwrap_or_else(PoisonError::into_inner))
            .insert(sha256.to_owned(), pre.clone());
        Ok(pre)
    }

    /// Loads and instantiates the program component at `path`. One instance serves the whole
    /// run: its body, then every apply closure it registers.
    pub async fn load_program(
        &self,
        path: &Path,
        limits: Limits,
    ) -> Result<Box<dyn Program>, LoadError> {
        let started = Instant::now();
        let (component, stats) = self.load_path_async(path).await?;
        let version = versions::detect(&self.engine, &component, path, Kind::Program)?;
        let pre = ProgramPre::new(&self.program_linker, &component, version)
            .map_err(link_error(path, Kind::Program))?;
        let program = ComponentProgram::start(path, pre, limits, self.epoch.clone()).await?;
        tracing::debug!(
            target: "plinth::runtime",
            program = %path.display(),
            wit = %version,
            cache_hit = stats.cache_hit,
            elapsed = ?started.elapsed(),
            "program started"
        );
        Ok(Box::new(program))
    }

    /// Loads the policy pack at `path` and configures it with `settings`, by policy name. It
    /// runs granted nothing, under `limits`.
    pub async fn load_policy_pack(
        &self,
        path: &Path,
        limits: Limits,
        settings: &BTreeMap<String, PolicySettings>,
    ) -> Result<Arc<ComponentPolicyPack>, LoadError> {
        let (component, stats) = self.load_path_async(path).await?;
        let pack = ComponentPolicyPack::start(
            &self.policy_linker,
            &component,
            stats.sha256,
            path,
            limits,
            settings,
            self.epoch.clone(),
        )
        .await?;
        Ok(Arc::new(pack))
    }

    /// Loads the policy pack `wasm`, as [`Self::load_policy_pack`] does: the bytes whose hash
    /// the caller checked (a pin in Plinth.lock) are the bytes compiled.
    pub async fn load_policy_pack_bytes(
        &self,
        wasm: ComponentBytes,
        limits: Limits,
        settings: &BTreeMap<String, PolicySettings>,
    ) -> Result<Arc<ComponentPolicyPack>, LoadError> {
        let path = wasm.path().to_owned();
        let (component, stats) = self.load_off_thread(wasm).await?;
        let pack = ComponentPolicyPack::start(
            &self.policy_linker,
            &component,
            stats.sha256,
            &path,
            limits,
            settings,
            self.epoch.clone(),
        )
        .await?;
        Ok(Arc::new(pack))
    }

    /// Describes the component at `path`: provider or program, the WIT version it was built
    /// against, its hash and size and, for a provider, its `info` and the capabilities it asks
    /// for, read from an instance in the bare sandbox (granted nothing).
    pub async fn inspect(&self, path: &Path) -> Result<ComponentInfo, LoadError> {
        let (component, stats) = self.load_path_async(path).await?;
        let (kind, version) = versions::classify(&self.engine, &component, path)?;
        match kind {
            Kind::Provider => {
                let pre = ProviderPre::new(&self.provider_linker, &component, version)
                    .map_err(link_error(path, kind))?;
                let name = path.file_stem().unwrap_or_default().to_string_lossy();
                let info =
                    provider::read_info(&name, path, pre, Limits::default(), Grants::default())
                        .await?;
                ComponentInfo::provider(path, version, stats.sha256, info)
            }
            Kind::Program => {
                ProgramPre::new(&self.program_linker, &component, version)
                    .map_err(link_error(path, kind))?;
                ComponentInfo::program(path, version, stats.sha256)
            }
        }
    }

    /// Compiles (or loads from the cache) `wasm` on a blocking thread, off the async executor.
    async fn load_off_thread(
        &self,
        wasm: ComponentBytes,
    ) -> Result<(Component, LoadStats), LoadError> {
        let (engine, cache) = (self.engine.clone(), self.cache.clone());
        off_thread(move || cache.load(&engine, &wasm)).await
    }

    /// Loads the component at `path`. One unchanged since it was compiled is loaded here, on
    /// the executor: mapping its artifact takes a fraction of a millisecond, less than a trip
    /// to the blocking pool and back would cost on a busy machine (two thread wake-ups, each
    /// waiting for a free core). Reading, hashing and compiling go to a blocking thread.
    async fn load_path_async(&self, path: &Path) -> Result<(Component, LoadStats), LoadError> {
        if let Some(loaded) = self.cache.load_unchanged(&self.engine, path) {
            return Ok(loaded);
        }
        let (engine, cache, path) = (self.engine.clone(), self.cache.clone(), path.to_owned());
        off_thread(move || cache.load_changed(&engine, &path)).await
    }
}

/// Runs `work` on a blocking thread; a panic there is resumed here.
async fn off_thread<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> R {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// The error for a component at `path` that does not link as a `kind`.
fn link_error(path: &Path, kind: Kind) -> impl FnOnce(wasmtime::Error) -> LoadError {
    move |e| LoadError::Link {
        path: path.to_owned(),
        world: kind.world(),
        message: format!("{e:#}"),
    }
}
