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
    "wit/hints/hints.wit",
    "wit/inputs/inputs.wit",
];

/// The folder of the policy package, whose values are the plugin package's.
const POLICY_WIT: &str = "wit/policy";

/// The folder of the world componentized providers are built against.
const PROVIDER_WIT: &str = "wit/provider";

/// That world: the plugin world, and the write-only inputs the SDK states for the provider
/// (`plinth:inputs`, whose package needs `plinth:hints` to resolve).
const PROVIDER_WORLD: &str = "package plinth:guest;\n\n\
    world provider-plugin {\n    \
        include plinth:plugin/provider-plugin@0.3.0;\n    \
        export plinth:inputs/write-only@0.1.0;\n\
    }\n";

/// Every file written out: the WIT, then the language's SDK.
fn files(sdk: &'static [SdkFile]) -> impl Iterator<Item = (String, &'static str)> {
    // The componentizers take one folder of WIT: the policy package's and the provider
    // world's hold the packages they use as dependencies, where WIT tools look for them.
    let deps = |folder: &'static str, packages: &'static [&'static str]| {
        WIT.iter().filter_map(move |(path, text)| {
            let (package, name) = path.strip_prefix("wit/")?.split_once('/')?;
            packages
                .contains(&package)
                .then(|| (format!("{folder}/deps/{package}/{name}"), *text))
        })
    };
    (WIT.iter().chain(sdk))
        .map(|(path, text)| ((*path).to_owned(), *text))
        .chain(deps(POLICY_WIT, &["plugin"]))
        .chain(deps(PROVIDER_WIT, &["plugin", "hints", "inputs"]))
        .chain([(format!("{PROVIDER_WIT}/world.wit"), PROVIDER_WORLD)])
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
            Role::Program => self.plugin_wit(),
            Role::Provider => self.root.join(PROVIDER_WIT),
            Role::PolicyPack => self.root.join(POLICY_WIT),
        }
    }

    /// The folder of the plugin package alone.
    pub fn plugin_wit(&self) -> PathBuf {
        self.root.join("wit/plugin")
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
    fn the_provider_world_holds_the_packages_it_uses_as_dependencies() {
        let files: Vec<(String, &str)> = files(&[]).collect();
        let text = |path: &str| (files.iter()).find(|(p, _)| p == path).map(|(_, t)| *t);
        let world = text(&format!("{PROVIDER_WIT}/world.wit")).unwrap();
        assert!(world.contains("export plinth:inputs/write-only@0.1.0;"));
        for (path, original) in WIT.iter().filter(|(p, _)| !p.starts_with("wit/policy/")) {
            let dependency = format!("{PROVIDER_WIT}/deps/{}", path.strip_prefix("wit/").unwrap());
            assert_eq!(text(&dependency), Some(*original), "{dependency}");
        }
    }

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
