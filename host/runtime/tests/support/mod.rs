//! What the integration tests share: building the guest components they run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// Builds the guest crate `package` for `wasm32-wasip2`, once per test binary, and returns the
/// path of its component.
pub fn guest(package: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = root.join("target/wasm");
    let wasm = target
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", package.replace('-', "_")));
    // Held during the build: concurrent tests wait for it instead of building again.
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if !built.iter().any(|p| p == package) {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .current_dir(&root)
            .env("CARGO_TARGET_DIR", &target)
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip2",
                "-p",
                package,
            ])
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "building the guest `{package}` failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        built.push(package.to_owned());
    }
    wasm
}
