//! The guest SDKs and the WIT they are built against, embedded in the plinth binary so that
//! guests build against exactly the SDK this plinth speaks: the WIT here, each language's files
//! in its module ([`super::GuestLanguage::sdk_files`]). A language's SDK is written out with
//! the WIT once per version of the two under `<PLINTH_HOME>/sdk/<hash>/`, where its
//! componentizer reads them: a change to one language's SDK rebuilds no other language's guests.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::language::{Role, SdkFile};
use crate::home::plinth_home;

/// `(path, contents)` of files of the repository, by their paths in it, embedded in the binary.
macro_rules! embed {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../../../", $path)))),*]
    };
}
pub(super) use embed;

/// The WIT every language's guests are built against.
const WIT: &[SdkFile] = embed![
    "wit/plugin/types.wit",
    "wit/plugin/schema.wit",
    "wit/plugin/provider.wit",
    "wit/plugin/program.wit",
    "wit/plugin/worlds.wit",
    "wit/policy/policy.wit",
];

/// The folder of the policy package, whose values are the plugin package's.
const POLICY_WIT: &str = "wit/policy";

/// Every file written out: the WIT, then the language's SDK.
fn files(sdk: &'static [SdkFile]) -> impl Iterator<Item = (String, &'static str)> {
    let plugin_wit = WIT
        .iter()
        .filter(|(path, _)| path.starts_with("wit/plugin/"));
    // The componentizers take one folder of WIT: the policy package's holds the plugin
    // package it uses as a dependency, where WIT tools look for it.
    let policy_deps = plugin_wit.map(|(path, text)| {
        let name = path.rsplit('/').next().expect("a file name");
        (format!("{POLICY_WIT}/deps/plugin/{name}"), *text)
    });
    (WIT.iter().chain(sdk))
        .map(|(path, text)| ((*path).to_owned(), *text))
        .chain(policy_deps)
}

/// The SDKs on disk.
pub struct Sdk {
    /// A hash of every file: part of each built component's cache key.
    pub hash: String,
    root: PathBuf,
}

impl Sdk {
    /// The folder of WIT a `role`'s guests are built against.
    pub fn wit(&self, role: Role) -> PathBuf {
        match role {
            Role::Program | Role::Provider => self.root.join("wit/plugin"),
            Role::PolicyPack => self.root.join(POLICY_WIT),
        }
    }

    /// A directory of the SDKs, by its path in the repository (`sdk-guest/python`).
    pub fn dir(&self, path: &str) -> PathBuf {
        self.root.join(path)
    }
}

/// Writes the WIT and a language's `sdk` files out unless this version of them already is.
pub fn materialize(sdk: &'static [SdkFile]) -> Result<Sdk> {
    let mut hasher = Sha256::new();
    for (path, text) in files(sdk) {
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    let hash = hex::encode(hasher.finalize());
    let sdks = plinth_home()?.join("sdk");
    let root = sdks.join(&hash[..16]);
    if !root.is_dir() {
        write_all(&sdks, &root, sdk)
            .with_context(|| format!("writing the guest SDKs to {}", root.display()))?;
    }
    Ok(Sdk { hash, root })
}

/// Written beside, then renamed into place: a concurrent plinth sees all or nothing.
fn write_all(sdks: &Path, root: &Path, sdk: &'static [SdkFile]) -> Result<()> {
    std::fs::create_dir_all(sdks)?;
    let staging = tempfile::Builder::new().prefix(".sdk-").tempdir_in(sdks)?;
    for (path, text) in files(sdk) {
        let file = staging.path().join(&path);
        std::fs::create_dir_all(file.parent().expect("files are in directories"))?;
        std::fs::write(&file, text)?;
    }
    match std::fs::rename(staging.path(), root) {
        Ok(()) => Ok(()),
        // Another plinth wrote the same files first.
        Err(_) if root.is_dir() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The componentizers take one folder of WIT per world: the policy package's must hold
    /// the plugin package its values come from, as a dependency, file for file.
    #[test]
    fn the_policy_wit_holds_the_plugin_package_as_a_dependency() {
        let files: Vec<(String, &str)> = files(&[]).collect();
        let text = |path: &str| (files.iter()).find(|(p, _)| p == path).map(|(_, t)| *t);
        assert!(text("wit/policy/policy.wit").is_some_and(|t| t.contains("world policy-pack")));
        for (path, plugin) in WIT.iter().filter(|(p, _)| p.starts_with("wit/plugin/")) {
            let name = path.rsplit('/').next().unwrap();
            let dependency = format!("{POLICY_WIT}/deps/plugin/{name}");
            assert_eq!(text(&dependency), Some(*plugin), "{dependency}");
        }
    }
}
