//! What a component file is, without loading it for use: the description `plinth plugin
//! inspect` shows, and what a user checks before granting a plugin anything.

use std::path::{Path, PathBuf};

use plinth_engine::provider::ProviderInfo;

use crate::abi::versions::{Kind, WitVersion};
use crate::access::capabilities::Capabilities;
use crate::error::LoadError;

/// The description of a plinth component, from [`Runtime::inspect`](crate::Runtime::inspect).
#[derive(Debug, Clone)]
pub struct ComponentInfo {
    pub path: PathBuf,
    /// A provider or a program.
    pub kind: Kind,
    /// The version of `plinth:plugin` it was built against.
    pub wit_version: WitVersion,
    /// The SHA-256 of the file, in hex: what the precompiled cache knows it by.
    pub sha256: String,
    /// The file's size in bytes.
    pub size: u64,
    /// A provider's name, version, resource types and functions, from its `info`; `None` for a
    /// program, which declares none of them.
    pub provider: Option<ProviderInfo>,
    /// What the provider asks to be granted: empty for a program, and for a provider built
    /// against 0.1, which could not ask for anything.
    pub capabilities: Capabilities,
}

impl ComponentInfo {
    /// The description of a program at `path`.
    pub(crate) fn program(
        path: &Path,
        wit_version: WitVersion,
        sha256: String,
    ) -> Result<ComponentInfo, LoadError> {
        Ok(ComponentInfo {
            path: path.to_owned(),
            kind: Kind::Program,
            wit_version,
            sha256,
            size: file_size(path)?,
            provider: None,
            capabilities: Capabilities::default(),
        })
    }

    /// The description of a provider at `path` that gave `info` and asked for `capabilities`.
    pub(crate) fn provider(
        path: &Path,
        wit_version: WitVersion,
        sha256: String,
        (info, capabilities): (ProviderInfo, Capabilities),
    ) -> Result<ComponentInfo, LoadError> {
        Ok(ComponentInfo {
            path: path.to_owned(),
            kind: Kind::Provider,
            wit_version,
            sha256,
            size: file_size(path)?,
            provider: Some(info),
            capabilities,
        })
    }
}

fn file_size(path: &Path) -> Result<u64, LoadError> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|error| LoadError::Read {
            path: path.to_owned(),
            error,
        })
}
