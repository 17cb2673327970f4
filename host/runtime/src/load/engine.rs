//! The one place the wasmtime engines are configured (one per [`Tier`], alike but for the
//! compiler), and the fingerprint of that configuration that keys the precompiled-artifact cache.

use std::hash::{Hash, Hasher};

use sha2::{Digest, Sha256};
use wasmtime::{Config, Engine, Strategy, WasmBacktraceDetails};

use crate::error::LoadError;
use crate::load::tier::Tier;

/// How often the epoch advances. Deadlines are checked at this granularity, and a busy guest
/// yields to the async executor this often.
pub(crate) const EPOCH_TICK: std::time::Duration = std::time::Duration::from_millis(10);

/// Creates the engine the components of `tier` run on. Deadlines, limits and traps are the
/// same in both: only the compiler differs.
pub(crate) fn new_engine(tier: Tier) -> Result<Engine, LoadError> {
    let mut config = Config::new();
    config.strategy(match tier {
        Tier::Fast => Strategy::Winch,
        Tier::Optimized => Strategy::Cranelift,
    });
    config
        .wasm_component_model(true)
        // Deadlines: compiled code checks the epoch, which a background thread advances.
        .epoch_interruption(true)
        // Fuel would slow every guest down; epochs are enough for deadlines.
        .consume_fuel(false)
        // The default reads an environment variable; a fixed value keeps the cache key stable.
        .wasm_backtrace_details(WasmBacktraceDetails::Disable)
        // Native unwind tables only serve outside unwinders (a debugger, a profiler), not
        // wasmtime's own traps and backtraces; registering them costs every plugin start.
        .native_unwind_info(false);
    // For profiling guests: `perf` names their functions from the map this writes to
    // /tmp/perf-<pid>.map (valgrind's callgrind too, by address); off by default, as writing it
    // costs every plugin start.
    if std::env::var_os("PLINTH_PERFMAP").is_some_and(|v| v != "0") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    Engine::new(&config).map_err(|e| LoadError::Engine(format!("{e:#}")))
}

/// A stable fingerprint of everything in `engine`'s configuration that a precompiled artifact
/// depends on, the wasmtime version included: artifacts are only reused under the same one.
pub(crate) fn fingerprint(engine: &Engine) -> String {
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hex::encode(&hasher.0.finalize()[..8])
}

/// Feeds [`Hash`] implementations into SHA-256, which, unlike the std hasher, is the same in
/// every build and process.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        u64::from_le_bytes(
            digest[..8]
                .try_into()
                .expect("a SHA-256 digest has 32 bytes"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_stable_across_engines() {
        for tier in Tier::ALL {
            let a = fingerprint(&new_engine(tier).unwrap());
            let b = fingerprint(&new_engine(tier).unwrap());
            assert_eq!(a, b);
            assert_eq!(a.len(), 16);
        }
    }

    #[test]
    fn the_fingerprint_changes_with_the_configuration() {
        let mut config = Config::new();
        config.wasm_component_model(true).consume_fuel(true);
        let other = Engine::new(&config).unwrap();
        assert_ne!(
            fingerprint(&new_engine(Tier::Optimized).unwrap()),
            fingerprint(&other)
        );
    }

    #[test]
    fn the_tiers_have_different_fingerprints() {
        assert_ne!(
            fingerprint(&new_engine(Tier::Fast).unwrap()),
            fingerprint(&new_engine(Tier::Optimized).unwrap())
        );
    }
}
