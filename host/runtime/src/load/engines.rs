//! An engine per [`Tier`], each with its precompiled cache, epoch ticker and linkers, created on
//! first use; and loading a component on a tier, on the optimizing one instead where the fast
//! one's compiler refuses it: a guest is never refused for the tier it was asked to run on.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};

use crate::abi::bindings::{v0_1, v0_2, v0_3};
use crate::error::LoadError;
use crate::load::bytes::ComponentBytes;
use crate::load::cache::{ArtifactCache, LoadStats};
use crate::load::file_index::Fingerprint;
use crate::load::program::{self, ProgramState};
use crate::load::provider::ProviderPre;
use crate::load::tier::Tier;
use crate::sandbox::Sandbox;
use crate::sandbox::epoch::EpochTicker;
use crate::sandbox::link::link_sandboxed_wasi;

/// One tier's engine and what is tied to it: a component, a linker, a store and an epoch
/// belong to one engine.
pub(crate) struct TierEngine {
    pub(crate) tier: Tier,
    pub(crate) engine: Engine,
    pub(crate) cache: ArtifactCache,
    pub(crate) epoch: Arc<EpochTicker>,
    pub(crate) provider_linker: Linker<Sandbox>,
    pub(crate) program_linker: Linker<ProgramState>,
    pub(crate) policy_linker: Linker<Sandbox>,
    /// Providers linked already, by the SHA-256 of their component: another configuration of a
    /// plugin is not linked again.
    pub(crate) prepared: Mutex<HashMap<String, ProviderPre>>,
}

impl TierEngine {
    fn new(tier: Tier, cache_dir: PathBuf) -> Result<TierEngine, LoadError> {
        let engine = crate::load::engine::new_engine(tier)?;
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

        Ok(TierEngine {
            tier,
            cache: ArtifactCache::new(cache_dir, &engine, tier),
            engine,
            epoch: Arc::new(epoch),
            provider_linker,
            program_linker,
            policy_linker,
            prepared: Mutex::default(),
        })
    }
}

/// A component loaded, and the engine it belongs to.
pub(crate) struct Loaded {
    pub(crate) on: Arc<TierEngine>,
    pub(crate) component: Component,
    pub(crate) stats: LoadStats,
}

/// The engines of a runtime, by tier, each created when a component first asks for it.
pub(crate) struct Engines {
    cache_dir: PathBuf,
    fast: OnceLock<Result<Arc<TierEngine>, String>>,
    optimized: OnceLock<Result<Arc<TierEngine>, String>>,
}

impl Engines {
    /// The engines of a runtime whose artifacts are kept in `cache_dir`; the optimized one is
    /// created now, so that a host that cannot run guests at all says so at once.
    pub(crate) fn new(cache_dir: PathBuf) -> Result<Engines, LoadError> {
        let engines = Engines {
            cache_dir,
            fast: OnceLock::new(),
            optimized: OnceLock::new(),
        };
        engines.exact(Tier::Optimized)?;
        Ok(engines)
    }

    fn exact(&self, tier: Tier) -> Result<Arc<TierEngine>, LoadError> {
        let slot = match tier {
            Tier::Fast => &self.fast,
            Tier::Optimized => &self.optimized,
        };
        let created = slot.get_or_init(|| {
            TierEngine::new(tier, self.cache_dir.clone())
                .map(Arc::new)
                .map_err(|e| e.to_string())
        });
        created.clone().map_err(LoadError::Engine)
    }

    /// The engine of `tier`; the optimized one if the fast one cannot be created here (a
    /// platform Winch does not compile for), said once.
    pub(crate) fn get(&self, tier: Tier) -> Result<Arc<TierEngine>, LoadError> {
        match (tier, self.exact(tier)) {
            (Tier::Fast, Err(e)) => {
                static SAID: OnceLock<()> = OnceLock::new();
                SAID.get_or_init(|| {
                    tracing::warn!(
                        "the fast compiler tier is unavailable, using the optimized one: {e}"
                    )
                });
                self.exact(Tier::Optimized)
            }
            (_, created) => created,
        }
    }

    /// The component at `path` if neither reading the file nor compiling it is needed (see
    /// [`ArtifactCache::load_unchanged`]): cheap enough for the async executor.
    pub(crate) fn load_unchanged(&self, path: &Path, tier: Tier) -> Option<Loaded> {
        let first = self.get(tier).ok()?;
        if let Some((component, stats)) = first.cache.load_unchanged(&first.engine, path) {
            return Some(Loaded {
                on: first,
                component,
                stats,
            });
        }
        // Refused by the fast compiler before: its optimized artifact is the one to find.
        let sha256 = first.cache.known_hash(path)?;
        first.cache.refused(&sha256)?;
        let optimized = self.get(Tier::Optimized).ok()?;
        let (component, stats) = optimized.cache.load_unchanged(&optimized.engine, path)?;
        Some(Loaded {
            on: optimized,
            component,
            stats,
        })
    }

    /// Reads and hashes the file at `path`, loads it as by [`load`](Self::load), and records
    /// its hash for [`load_unchanged`](Self::load_unchanged). Blocking: compiling takes seconds.
    pub(crate) fn load_changed(&self, path: &Path, tier: Tier) -> Result<Loaded, LoadError> {
        let before = Fingerprint::of(path);
        let wasm = ComponentBytes::read(path)?;
        let loaded = self.load(&wasm, tier)?;
        loaded.on.cache.record_hash(path, before, &wasm);
        Ok(loaded)
    }

    /// Loads `wasm` on `tier`, from its precompiled artifact when there is one. A component
    /// the fast tier's compiler refuses (or refused before) is compiled by the optimizing one.
    /// Blocking.
    pub(crate) fn load(&self, wasm: &ComponentBytes, tier: Tier) -> Result<Loaded, LoadError> {
        let first = self.get(tier)?;
        if first.tier == Tier::Fast {
            if let Some(reason) = first.cache.refused(wasm.sha256()) {
                tracing::debug!(
                    path = %wasm.path().display(),
                    "the fast tier refused this component before ({reason}); loading it optimized"
                );
                return self.load(wasm, Tier::Optimized);
            }
            match first.cache.load(&first.engine, wasm) {
                Err(LoadError::Compile { message, .. }) => {
                    tracing::info!(
                        path = %wasm.path().display(),
                        "the fast tier's compiler refused the component, compiling it with the \
                         optimizing one: {message}"
                    );
                    let loaded = self.load(wasm, Tier::Optimized)?;
                    // Only a component the optimizing compiler takes: an invalid one is no news.
                    first.cache.record_refusal(wasm.sha256(), &message);
                    return Ok(loaded);
                }
                loaded => {
                    let (component, stats) = loaded?;
                    return Ok(Loaded {
                        on: first,
                        component,
                        stats,
                    });
                }
            }
        }
        let (component, stats) = first.cache.load(&first.engine, wasm)?;
        Ok(Loaded {
            on: first,
            component,
            stats,
        })
    }
}
