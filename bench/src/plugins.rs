//! Plugin start and call costs, the Wasm component against the native gRPC baseline, both
//! driven in this process through the engine's `Provider` trait.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use plinth_engine::provider::Provider;
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Grants, Limits, Runtime, Tier};

use crate::grpc::GrpcProvider;

/// How many times each figure is measured; the mean is reported.
#[derive(Debug, Clone, Copy)]
pub struct Repeats {
    pub compiles: u32,
    pub starts: u32,
    pub calls: u32,
}

/// Start and call costs of both kinds of plugin.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PluginFigures {
    /// Compiling the component (a precompiled-cache miss).
    pub wasm_compile: Duration,
    /// `load_provider` with a warm cache: read and hash the `.wasm`, load the precompiled
    /// artifact, instantiate, ask for `info`.
    pub wasm_start: Duration,
    /// Spawn the plugin process, read its port, connect, ask for its info.
    pub grpc_start: Duration,
    /// One `check` of a `bench:Item`, warm, end to end through the `Provider` trait.
    pub wasm_call: Duration,
    pub grpc_call: Duration,
}

pub async fn measure(
    wasm: &Path,
    grpc_binary: &Path,
    cache: &Path,
    repeats: Repeats,
) -> anyhow::Result<PluginFigures> {
    let mut compile = Duration::ZERO;
    for _ in 0..repeats.compiles {
        let cold = tempfile::tempdir()?;
        let runtime = Runtime::new(cold.path().to_owned())?;
        let (_, stats) = runtime.load_component(wasm, Tier::Optimized)?;
        anyhow::ensure!(!stats.cache_hit, "a fresh cache cannot hit");
        compile += stats.load;
    }

    Runtime::new(cache.to_owned())?.load_component(wasm, Tier::Optimized)?;
    // Each start in a runtime of its own, as in a new process: a runtime that loaded the plugin
    // before would reuse what it loaded. Only the start is timed: the previous plugin (and its
    // runtime, or its process) is let go of first.
    let mut wasm_start = Duration::ZERO;
    let mut wasm_provider = None;
    for _ in 0..repeats.starts {
        drop(wasm_provider.take());
        let runtime = Runtime::new(cache.to_owned())?;
        let started = Instant::now();
        let provider = runtime
            .load_provider(
                "bench",
                wasm,
                Limits::default(),
                Grants::default(),
                Tier::Optimized,
            )
            .await?;
        wasm_start += started.elapsed();
        wasm_provider = Some(provider);
    }
    let wasm_start = wasm_start / repeats.starts;

    let mut grpc_start = Duration::ZERO;
    let mut grpc_provider = None;
    for _ in 0..repeats.starts {
        drop(grpc_provider.take());
        let started = Instant::now();
        let provider = GrpcProvider::start(grpc_binary).await?;
        grpc_start += started.elapsed();
        grpc_provider = Some(provider);
    }
    let grpc_start = grpc_start / repeats.starts;

    let wasm_provider = wasm_provider.context("at least one start")?;
    let grpc_provider: Arc<dyn Provider> = Arc::new(grpc_provider.context("at least one start")?);
    Ok(PluginFigures {
        wasm_compile: compile / repeats.compiles,
        wasm_start,
        grpc_start,
        wasm_call: call_cost(wasm_provider.as_ref(), repeats.calls).await?,
        grpc_call: call_cost(grpc_provider.as_ref(), repeats.calls).await?,
    })
}

/// The mean latency of `check` on a `bench:Item`, after a warm-up.
async fn call_cost(provider: &dyn Provider, calls: u32) -> anyhow::Result<Duration> {
    let urn = Urn::new("bench", "bench", None, "bench:Item", "item-0");
    let news: PropertyMap = [
        ("index".to_owned(), Value::Integer(0)),
        ("payload".to_owned(), Value::from("payload of item 0")),
        ("after".to_owned(), Value::from("item-0123456789abcdef")),
    ]
    .into();
    let checked = provider.check(&urn, None, &news).await?;
    anyhow::ensure!(
        checked.failures.is_empty() && checked.inputs == news,
        "`check` answered {checked:?}"
    );
    for _ in 0..calls.div_ceil(10) {
        provider.check(&urn, None, &news).await?;
    }
    let started = Instant::now();
    for _ in 0..calls {
        provider.check(&urn, None, &news).await?;
    }
    Ok(started.elapsed() / calls)
}
