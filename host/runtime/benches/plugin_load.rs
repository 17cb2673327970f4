//! How fast plugins start and answer, on the `plinth-testkit` component:
//!
//! - compile: `.wasm` to machine code (a cache miss);
//! - cache load: the precompiled artifact from the cache (a hit);
//! - start: `load_provider` with a warm cache, in a new runtime as in a new process — cache
//!   load, pre-instantiation, instantiation and the `info` call; instantiate is start minus
//!   cache load; start again: the same in a runtime that loaded the plugin before;
//! - call: the mean latency of `check` on `testkit:Echo` with a small input, on a warm instance.
//!
//! Run with `cargo bench -p plinth-runtime`. `PLINTH_BENCH_QUICK=1` runs each figure a few
//! times only, for profilers (`valgrind --tool=callgrind`), which run code ~50× slower.
//! `PLINTH_PERFMAP=1` has wasmtime write `/tmp/perf-<pid>.map`, which names the guest's
//! functions for `perf report` (and maps callgrind's unnamed addresses to them).

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Grants, Limits, Runtime, Tier};

// The allocator of the plinth binary, so that the host's share of a call is what it is there.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How many times each figure is measured.
struct Counts {
    compiles: u32,
    loads: u32,
    starts: u32,
    warmup_calls: u32,
    calls: u32,
}

const FULL: Counts = Counts {
    compiles: 5,
    loads: 200,
    starts: 50,
    warmup_calls: 1_000,
    calls: 100_000,
};

const QUICK: Counts = Counts {
    compiles: 1,
    loads: 20,
    starts: 20,
    warmup_calls: 100,
    calls: 2_000,
};

fn main() {
    let quick = std::env::var_os("PLINTH_BENCH_QUICK").is_some_and(|v| v != "0");
    let counts = if quick { QUICK } else { FULL };
    let wasm = support::guest("plinth-testkit");
    let size = std::fs::metadata(&wasm)
        .expect("the component exists")
        .len();
    println!("plinth-testkit: {} KiB", size / 1024);

    let mut compile = Duration::ZERO;
    for _ in 0..counts.compiles {
        let cache = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(cache.path().to_owned()).unwrap();
        let (_, stats) = runtime.load_component(&wasm, Tier::Optimized).unwrap();
        assert!(!stats.cache_hit);
        compile += stats.load;
    }
    report("compile (cache miss)", compile / counts.compiles);

    // Each load and start in a runtime of its own, as in a new process: a runtime that loaded
    // the plugin before reuses what it loaded (measured apart, as "start again").
    let cache = tempfile::tempdir().unwrap();
    let fresh = || Runtime::new(cache.path().to_owned()).unwrap();
    fresh().load_component(&wasm, Tier::Optimized).unwrap();
    let (mut load, mut read) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..counts.loads {
        let (_, stats) = fresh().load_component(&wasm, Tier::Optimized).unwrap();
        assert!(stats.cache_hit);
        load += stats.load;
        read += stats.read;
    }
    report("cache load (deserialize)", load / counts.loads);
    report("  + read and hash the .wasm", read / counts.loads);

    let tokio = tokio::runtime::Runtime::new().unwrap();
    tokio.block_on(async {
        let mut start = Duration::ZERO;
        for _ in 0..counts.starts {
            let runtime = fresh();
            let started = Instant::now();
            let provider = runtime
                .load_provider(
                    "testkit",
                    &wasm,
                    Limits::default(),
                    Grants::default(),
                    Tier::Optimized,
                )
                .await
                .unwrap();
            start += started.elapsed();
            drop(provider);
        }
        let start = start / counts.starts;
        report("start (load_provider, warm cache)", start);
        report(
            "  instantiate + info (start - load)",
            start.saturating_sub((load + read) / counts.loads),
        );

        let runtime = fresh();
        let mut provider = None;
        let started = Instant::now();
        for _ in 0..counts.starts {
            provider = Some(
                runtime
                    .load_provider(
                        "testkit",
                        &wasm,
                        Limits::default(),
                        Grants::default(),
                        Tier::Optimized,
                    )
                    .await
                    .unwrap(),
            );
        }
        report(
            "start again (same runtime, e.g. 2nd config)",
            started.elapsed() / counts.starts,
        );

        let provider = provider.unwrap();
        let urn = Urn::new("bench", "runtime", None, "testkit:Echo", "e");
        let news: PropertyMap = [("value".to_owned(), Value::from("small"))].into();
        for _ in 0..counts.warmup_calls {
            provider.check(&urn, None, &news).await.unwrap();
        }
        let started = Instant::now();
        for _ in 0..counts.calls {
            provider.check(&urn, None, &news).await.unwrap();
        }
        report(
            "call (check on testkit:Echo)",
            started.elapsed() / counts.calls,
        );
    });
}

fn report(what: &str, duration: Duration) {
    println!("{what:<40} {:>12.1} µs", duration.as_secs_f64() * 1e6);
}
