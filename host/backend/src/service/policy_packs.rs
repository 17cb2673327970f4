//! The policy packs a service enforces on a stack: which they are, and their components,
//! each checked against the digest the service gave before it is used.

use base64::Engine as _;
use plinth_state::protocol::policy::{PackComponent, RequiredPack, RequiredPacks};
use sha2::{Digest, Sha256};

use super::transport::{ServiceError, Transport};
use crate::api::FetchedPack;
use crate::error::BackendError;

/// The packs `GET {path}` names, each component fetched and checked.
pub(super) fn fetch(transport: &Transport, path: &str) -> Result<Vec<FetchedPack>, ServiceError> {
    let answer = transport.call("GET", path, None, None)?;
    let required: RequiredPacks =
        serde_json::from_value(answer).map_err(|e| ServiceError::Unreadable {
            request: format!("GET {path}"),
            reason: e.to_string(),
        })?;
    required
        .packs
        .into_iter()
        .map(|pack| component(transport, pack))
        .collect()
}

/// `pack` with its component, fetched from where the service said.
fn component(transport: &Transport, pack: RequiredPack) -> Result<FetchedPack, ServiceError> {
    let unreadable = |reason: String| ServiceError::Unreadable {
        request: format!("GET {}", pack.path),
        reason,
    };
    // A path of the service's own API, not a URL it could point anywhere.
    if !pack.path.starts_with("policy-packs/") || pack.path.contains("..") {
        return Err(unreadable(format!(
            "the pack `{}` is at `{}`, not under policy-packs/",
            pack.name.escape_debug(),
            pack.path.escape_debug()
        )));
    }
    let answer = transport.call("GET", &pack.path, None, None)?;
    let got: PackComponent =
        serde_json::from_value(answer).map_err(|e| unreadable(e.to_string()))?;
    let component = base64::engine::general_purpose::STANDARD
        .decode(got.wasm_base64)
        .map_err(|e| unreadable(format!("the component is not base64: {e}")))?;
    Ok(FetchedPack { pack, component })
}

/// `fetched`, once every component matches its pack's digest.
pub(super) fn checked(fetched: Vec<FetchedPack>) -> Result<Vec<FetchedPack>, BackendError> {
    for f in &fetched {
        let digest = hex::encode(Sha256::digest(&f.component));
        if digest != f.pack.digest {
            return Err(BackendError::PolicyPack {
                name: f.pack.name.escape_debug().to_string(),
                reason: format!(
                    "its component's SHA-256 is {digest}, not the {} the service named; it was \
                     not run. Ask the service's administrator to check it \
                     (`plinth serve policy ls`)",
                    f.pack.digest.escape_debug()
                ),
            });
        }
    }
    Ok(fetched)
}
