//! Loading components: the precompiled cache, and files that are not components.

use crate::support;

use plinth_runtime::{ComponentBytes, Grants, Limits, LoadError, Runtime, Tier};

#[test]
fn the_second_load_hits_the_cache_and_is_much_faster() {
    let wasm = support::guest("plinth-testkit");
    let cache = tempfile::tempdir().unwrap();

    let runtime = Runtime::new(cache.path().to_owned()).unwrap();
    let (_, first) = runtime.load_component(&wasm, Tier::Optimized).unwrap();
    assert!(!first.cache_hit);
    assert!(first.write.is_some());

    // A new runtime, as in the next process.
    let runtime = Runtime::new(cache.path().to_owned()).unwrap();
    let (_, second) = runtime.load_component(&wasm, Tier::Optimized).unwrap();
    assert!(second.cache_hit);
    assert_eq!(first.sha256, second.sha256);
    assert!(
        second.load * 5 < first.load,
        "loading from the cache ({:?}) should be much faster than compiling ({:?})",
        second.load,
        first.load
    );
}

#[tokio::test]
async fn garbage_and_core_modules_are_clear_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(dir.path().join("cache")).unwrap();

    let garbage = dir.path().join("garbage.wasm");
    std::fs::write(&garbage, b"this is not WebAssembly").unwrap();
    let error = runtime
        .load_provider(
            "garbage",
            &garbage,
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .err()
        .expect("garbage is refused");
    assert!(matches!(error, LoadError::NotAComponent { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("garbage.wasm"), "{message}");
    assert!(
        message.contains("is not a WebAssembly component"),
        "{message}"
    );

    let module = dir.path().join("module.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    let message = runtime
        .load_program(&module, Limits::default(), Tier::Optimized)
        .await
        .err()
        .expect("a core module is refused")
        .to_string();
    assert!(message.contains("module.wasm"), "{message}");
    assert!(message.contains("core WebAssembly module"), "{message}");
}

#[tokio::test]
async fn a_missing_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(dir.path().join("cache")).unwrap();
    let missing = dir.path().join("missing.wasm");
    let error = runtime
        .load_provider(
            "missing",
            &missing,
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .err()
        .expect("a missing file is refused");
    assert!(matches!(error, LoadError::Read { .. }), "{error}");
    assert!(error.to_string().contains("missing.wasm"), "{error}");
}

/// The bytes whose hash a caller checked are the bytes that run: a file swapped after the check
/// (here, testkit replaced by random) is not read again.
#[tokio::test]
async fn a_provider_runs_the_bytes_that_were_hashed_not_the_file_as_it_is_now() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(dir.path().join("cache")).unwrap();
    let plugin = dir.path().join("plugin.wasm");
    std::fs::copy(support::guest("plinth-testkit"), &plugin).unwrap();

    let checked = ComponentBytes::read(&plugin).unwrap();
    let testkit_sha256 = checked.sha256().to_owned();
    std::fs::copy(support::guest("plinth-random"), &plugin).unwrap();
    assert_ne!(
        ComponentBytes::read(&plugin).unwrap().sha256(),
        testkit_sha256
    );

    let provider = runtime
        .load_provider_bytes(
            "testkit",
            checked,
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .unwrap_or_else(|e| panic!("the checked bytes did not load: {e}"));
    assert_eq!(provider.info().name, "testkit");
    let (_, stats) = runtime.load_component(&plugin, Tier::Optimized).unwrap();
    assert_ne!(
        stats.sha256, testkit_sha256,
        "the swapped file is another component"
    );
}
