//! The runtime's integration tests, one binary: each file under `tests/` was a binary of its own
//! that linked wasmtime and built its guests again; one links once and builds each guest once.

mod adversary;
mod grants;
mod loading;
mod program;
mod provider;
mod reach;
// Where the benches find it too.
#[path = "../support/mod.rs"]
mod support;
mod tiers;
mod versions;

/// The artifact cache of the tests that are not about the cache: each component compiles once
/// (about a second of CPU each) rather than once per test. It is the end-to-end tests' own
/// (their PLINTH_HOME's `cache`, kept under target/ across runs): the guests both suites run
/// compile once for both. Artifacts are named by the component's hash, the engine's fingerprint
/// and the tier, and written by rename, as concurrent plinth processes share one cache.
fn shared_cache() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/e2e-home/cache")
}
