//! How fast plugins start and answer, on the `plinth-testkit` component:
//!
//! - compile: `.wasm` to machine code (a cache miss);
//! - cache load: the precompiled artifact from the cache (a hit);
//! - start: `load_provider` with a warm cache — cache load, pre-instantiation, instantiation and
//!   the `info` call; instantiate is start minus cache load;
//! - call: the mean latency of `check` on `testkit:Echo` with a small input, on a warm instance.
//!
//! Run with `cargo bench -p plinth-runtime`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Grants, Limits, Runtime};

const COMPILES: u32 = 5;
const LOADS: u32 = 200;
const STARTS: u32 = 50;
const WARMUP_CALLS: u32 = 1_000;
const CALLS: u32 = 100_000;

fn main() {
    let wasm = support::guest("plinth-testkit");
    let size = std::fs::metadata(&wasm)
        .expect("the component exists")
        .len();
    println!("plinth-testkit: {} KiB", size / 1024);

    let mut compile = Duration::ZERO;
    for _ in 0..COMPILES {
        let cache = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(cache.path().to_owned()).unwrap();
        let (_, stats) = runtime.load_component(&wasm).unwrap();
        assert!(!stats.cache_hit);
        compile += stats.load;
    }
    report("compile (cache miss)", compile / COMPILES);

    let cache = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(cache.path().to_owned()).unwrap();
    runtime.load_component(&wasm).unwrap();
    let (mut load, mut read) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..LOADS {
        let (_, stats) = runtime.load_component(&wasm).unwrap();
        assert!(stats.cache_hit);
        load += stats.load;
        read += stats.read;
    }
    report("cache load (deserialize)", load / LOADS);
    report("  + read and hash the .wasm", read / LOADS);

    let tokio = tokio::runtime::Runtime::new().unwrap();
    tokio.block_on(async {
        let started = Instant::now();
        let mut provider = None;
        for _ in 0..STARTS {
            provider = Some(
                runtime
                    .load_provider("testkit", &wasm, Limits::default(), Grants::default())
                    .await
                    .unwrap(),
            );
        }
        let start = started.elapsed() / STARTS;
        report("start (load_provider, warm cache)", start);
        report(
            "  instantiate + info (start - load)",
            start.saturating_sub((load + read) / LOADS),
        );

        let provider = provider.unwrap();
        let urn = Urn::new("bench", "runtime", None, "testkit:Echo", "e");
        let news: PropertyMap = [("value".to_owned(), Value::from("small"))].into();
        for _ in 0..WARMUP_CALLS {
            provider.check(&urn, None, &news).await.unwrap();
        }
        let started = Instant::now();
        for _ in 0..CALLS {
            provider.check(&urn, None, &news).await.unwrap();
        }
        report("call (check on testkit:Echo)", started.elapsed() / CALLS);
    });
}

fn report(what: &str, duration: Duration) {
    println!("{what:<40} {:>12.1} µs", duration.as_secs_f64() * 1e6);
}
