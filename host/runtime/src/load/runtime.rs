//! The entry point: one [`Runtime`] per process loads every provider and program.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use plinth_engine::program::Program;
use plinth_engine::provider::Provider;
use wasmtime::component::Component;

use crate::abi::inspect::ComponentInfo;
use crate::abi::versions::{self, Kind, WitVersion};
use crate::access::advice::{GrantAdvice, PlainAdvice};
use crate::access::grants::Grants;
use crate::error::LoadError;
use crate::load::bytes::ComponentBytes;
use crate::load::cache::LoadStats;
use crate::load::engines::{Engines, Loaded, TierEngine};
use crate::load::policy_pack::{ComponentPolicyPack, PolicySettings};
use crate::load::program::{ComponentProgram, ProgramPre};
use crate::load::provider::{self, ComponentProvider, ProviderPre};
use crate::load::tier::Tier;
use crate::sandbox::ProgramCode;
use crate::sandbox::limits::Limits;

/// The wasmtime embedding: an engine per compiler [`Tier`] configured for plinth's components,
/// their precompiled-artifact cache and the linkers of every world. Create one per process and
/// share it.
pub struct Runtime {
    engines: Arc<Engines>,
    advice: Arc<dyn GrantAdvice>,
}

impl Runtime {
    /// Creates the optimized tier's engine and starts its epoch ticker (the fast tier's is
    /// created when a component first asks for it). Precompiled artifacts are kept in
    /// `cache_dir`, which is created when the first one is written.
    pub fn new(cache_dir: PathBuf) -> Result<Runtime, LoadError> {
        Ok(Runtime {
            engines: Arc::new(Engines::new(cache_dir)?),
            advice: Arc::new(PlainAdvice),
        })
    }

    /// Words the advice that follows a refusal (a capability not granted, an attempt the sandbox
    /// refused) the embedder's way, e.g. as the lines of its configuration to add.
    pub fn with_grant_advice(mut self, advice: Arc<dyn GrantAdvice>) -> Runtime {
        self.advice = advice;
        self
    }

    /// Loads the component at `path` on `tier`: from its precompiled artifact if the cache has
    /// one, otherwise by compiling it (and caching the result). Compiling takes from
    /// milliseconds to seconds: async callers should prefer [`load_provider`](Self::load_provider)
    /// and [`load_program`](Self::load_program), which do it on a blocking thread.
    pub fn load_component(
        &self,
        path: &Path,
        tier: Tier,
    ) -> Result<(Component, LoadStats), LoadError> {
        let loaded = match self.engines.load_unchanged(path, tier) {
            Some(loaded) => loaded,
            None => self.engines.load_changed(path, tier)?,
        };
        Ok((loaded.component, loaded.stats))
    }

    /// Loads and starts the provider `name` from the component at `path`, compiled on `tier`,
    /// with `grants` (a granted directory that does not exist is an error). Its `info` is read
    /// once, now; a component that calls itself something else than `name` is an error.
    pub async fn load_provider(
        &self,
        name: &str,
        path: &Path,
        limits: Limits,
        grants: Grants,
        tier: Tier,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        let started = Instant::now();
        grants.validate(name)?;
        let loaded = self.load_path_async(path, tier).await;
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
        tier: Tier,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        let started = Instant::now();
        grants.validate(name)?;
        let path = &wasm.path().to_owned();
        let loaded = self.load_off_thread(wasm, tier).await?;
        self.start_provider(name, path, loaded, limits, grants, started)
            .await
    }

    /// Starts the provider `name` from its loaded component.
    async fn start_provider(
        &self,
        name: &str,
        path: &Path,
        Loaded {
            on,
            component,
            stats,
        }: Loaded,
        limits: Limits,
        grants: Grants,
        started: Instant,
    ) -> Result<Arc<dyn Provider>, LoadError> {
        let version = versions::detect(&on.engine, &component, path, Kind::Provider)?;
        let pre = prepare_provider(&on, &component, &stats.sha256, version, path)?;
        let provider = ComponentProvider::start(
            name,
            path,
            pre,
            limits,
            grants,
            self.advice.clone(),
            on.epoch.clone(),
        )
        .await?;
        tracing::debug!(
            target: "plinth::runtime",
            provider = name,
            wit = %version,
            tier = %stats.tier,
            cache_hit = stats.cache_hit,
            elapsed = ?started.elapsed(),
            "provider started"
        );
        Ok(Arc::new(provider))
    }

    /// Loads and instantiates the program component at `path`, compiled on `tier`. One
    /// instance serves the whole run: its body, then every apply closure it registers.
    pub async fn load_program(
        &self,
        path: &Path,
        limits: Limits,
        tier: Tier,
    ) -> Result<Box<dyn Program>, LoadError> {
        self.load_program_with(path, None, limits, tier).await
    }

    /// As [`Runtime::load_program`], for a component that loads the program's `code` at run
    /// time (a prebuilt language runtime), when there is some.
    pub async fn load_program_with(
        &self,
        path: &Path,
        code: Option<&ProgramCode>,
        limits: Limits,
        tier: Tier,
    ) -> Result<Box<dyn Program>, LoadError> {
        let started = Instant::now();
        let Loaded {
            on,
            component,
            stats,
        } = self.load_path_async(path, tier).await?;
        let version = versions::detect(&on.engine, &component, path, Kind::Program)?;
        let pre = ProgramPre::new(&on.program_linker, &component, version)
            .map_err(link_error(path, Kind::Program))?;
        let program = ComponentProgram::start(path, code, pre, limits, on.epoch.clone()).await?;
        tracing::debug!(
            target: "plinth::runtime",
            program = %path.display(),
            wit = %version,
            tier = %stats.tier,
            cache_hit = stats.cache_hit,
            elapsed = ?started.elapsed(),
            "program started"
        );
        Ok(Box::new(program))
    }

    /// Loads the policy pack at `path`, compiled on `tier`, and configures it with `settings`,
    /// by policy name. It runs granted nothing, under `limits`.
    pub async fn load_policy_pack(
        &self,
        path: &Path,
        limits: Limits,
        settings: &BTreeMap<String, PolicySettings>,
        tier: Tier,
    ) -> Result<Arc<ComponentPolicyPack>, LoadError> {
        let Loaded {
            on,
            component,
            stats,
        } = self.load_path_async(path, tier).await?;
        let pack = ComponentPolicyPack::start(
            &on.policy_linker,
            &component,
            stats.sha256,
            path,
            limits,
            settings,
            on.epoch.clone(),
        )
        .await?;
        Ok(Arc::new(pack))
    }

    /// Loads the policy pack `wasm`, compiled on `tier`, as [`Self::load_policy_pack`] does:
    /// the bytes whose hash the caller checked (a pin in Plinth.lock) are the bytes compiled.
    pub async fn load_policy_pack_bytes(
        &self,
        wasm: ComponentBytes,
        limits: Limits,
        settings: &BTreeMap<String, PolicySettings>,
        tier: Tier,
    ) -> Result<Arc<ComponentPolicyPack>, LoadError> {
        let path = wasm.path().to_owned();
        let Loaded {
            on,
            component,
            stats,
        } = self.load_off_thread(wasm, tier).await?;
        let pack = ComponentPolicyPack::start(
            &on.policy_linker,
            &component,
            stats.sha256,
            &path,
            limits,
            settings,
            on.epoch.clone(),
        )
        .await?;
        Ok(Arc::new(pack))
    }

    /// Describes the component at `path`: provider or program, the WIT version it was built
    /// against, its hash and size and, for a provider, its `info` and the capabilities it asks
    /// for, read from an instance in the bare sandbox (granted nothing). Compiled optimized, as
    /// a plugin one inspects is one to install.
    pub async fn inspect(&self, path: &Path) -> Result<ComponentInfo, LoadError> {
        let Loaded {
            on,
            component,
            stats,
        } = self.load_path_async(path, Tier::Optimized).await?;
        let (kind, version) = versions::classify(&on.engine, &component, path)?;
        match kind {
            Kind::Provider => {
                let pre = ProviderPre::new(&on.provider_linker, &component, version)
                    .map_err(link_error(path, kind))?;
                let name = path.file_stem().unwrap_or_default().to_string_lossy();
                let info =
                    provider::read_info(&name, path, pre, Limits::default(), Grants::default())
                        .await?;
                ComponentInfo::provider(path, version, stats.sha256, info)
            }
            Kind::Program => {
                ProgramPre::new(&on.program_linker, &component, version)
                    .map_err(link_error(path, kind))?;
                ComponentInfo::program(path, version, stats.sha256)
            }
        }
    }

    /// Compiles (or loads from the cache) `wasm` on a blocking thread, off the async executor.
    async fn load_off_thread(&self, wasm: ComponentBytes, tier: Tier) -> Result<Loaded, LoadError> {
        let engines = self.engines.clone();
        off_thread(move || engines.load(&wasm, tier)).await
    }

    /// Loads the component at `path`. One unchanged since it was compiled is loaded here, on
    /// the executor: mapping its artifact takes a fraction of a millisecond, less than a trip
    /// to the blocking pool and back would cost on a busy machine (two thread wake-ups, each
    /// waiting for a free core). Reading, hashing and compiling go to a blocking thread.
    async fn load_path_async(&self, path: &Path, tier: Tier) -> Result<Loaded, LoadError> {
        if let Some(loaded) = self.engines.load_unchanged(path, tier) {
            return Ok(loaded);
        }
        let (engines, path) = (self.engines.clone(), path.to_owned());
        off_thread(move || engines.load_changed(&path, tier)).await
    }
}

/// `component`, with the SHA-256 `sha256`, pre-instantiated as a provider on `on`, once per
/// process.
fn prepare_provider(
    on: &TierEngine,
    component: &Component,
    sha256: &str,
    version: WitVersion,
    path: &Path,
) -> Result<ProviderPre, LoadError> {
    let prepared = on.prepared.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(pre) = prepared.get(sha256) {
        return Ok(pre.clone());
    }
    drop(prepared);
    let pre = ProviderPre::new(&on.provider_linker, component, version)
        .map_err(link_error(path, Kind::Provider))?;
    (on.prepared.lock().unwrap_or_else(PoisonError::into_inner))
        .insert(sha256.to_owned(), pre.clone());
    Ok(pre)
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
