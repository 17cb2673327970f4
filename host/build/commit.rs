// The build script of `plinth` and `plinth-serve` (each crate's build.rs includes this file):
// the commit they are built from, as the `PLINTH_COMMIT` environment variable of the compile,
// for `plinth --version` and the service's `GET /api/v1/version`.
//
// `PLINTH_COMMIT` set at build time wins (a packager building from a source archive knows it);
// else git's HEAD, if the workspace is the top of a git checkout (a source archive unpacked
// inside another repository must not take that repository's commit); else `unknown`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-env-changed=PLINTH_COMMIT");
    let commit = std::env::var("PLINTH_COMMIT")
        .ok()
        .filter(|c| is_commit(c))
        .or_else(from_git)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo::rustc-env=PLINTH_COMMIT={commit}");
}

/// A commit id: 7 to 64 hex digits (SHA-1 or SHA-256 object names, possibly abbreviated).
fn is_commit(text: &str) -> bool {
    (7..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

fn workspace() -> Option<PathBuf> {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    manifest.join("../..").canonicalize().ok()
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    out.status.success().then(|| text.trim().to_owned())
}

fn from_git() -> Option<String> {
    let root = workspace()?;
    let top = PathBuf::from(git(&root, &["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != root {
        return None;
    }
    // Built again when HEAD moves: a checkout changes HEAD, a commit the branch it names (a
    // file, or a line of packed-refs once git packed it).
    let git_dir = PathBuf::from(git(&root, &["rev-parse", "--absolute-git-dir"])?);
    let common = git(
        &root,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .map_or_else(|| git_dir.clone(), PathBuf::from);
    watch(&git_dir.join("HEAD"));
    if let Some(branch) = git(&root, &["symbolic-ref", "-q", "HEAD"]) {
        watch(&common.join(branch));
    }
    watch(&common.join("packed-refs"));
    let commit = git(&root, &["rev-parse", "HEAD"])?;
    is_commit(&commit).then_some(commit)
}

/// A path cargo watches only if it exists: one that does not would rerun this on every build.
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}
