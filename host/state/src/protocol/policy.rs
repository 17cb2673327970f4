//! The policy packs a service enforces on a stack (`plinth serve policy add`): which a run must
//! load, and their components.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A pack the service says a run of the stack must run, whatever the project says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequiredPack {
    /// As `plinth serve policy add` named it.
    pub name: String,
    #[serde(default)]
    pub version: String,
    /// The SHA-256 of its component, in hex: the client checks the bytes it fetched against it.
    pub digest: String,
    /// The configuration of its policies, in `--policy-pack-config`'s format: it wins over the
    /// client's, which does not apply to this pack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// Where its component is, under `/api/v1/`: `policy-packs/DIGEST`.
    pub path: String,
    /// The limits it runs under, as `plinth serve policy add` set them (the client's defaults
    /// for what is not set, and for a service before limits were added).
    #[serde(default, skip_serializing_if = "PackLimits::is_empty")]
    pub limits: PackLimits,
}

/// The limits of a pack the service enforces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackLimits {
    /// The most linear memory its instance may use, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// How long one call into it may take, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout_ms: Option<u64>,
}

impl PackLimits {
    pub fn is_empty(&self) -> bool {
        self.memory_bytes.is_none() && self.call_timeout_ms.is_none()
    }
}

/// `GET stacks/P/S/policy-packs`: the packs a run of the stack must run.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RequiredPacks {
    pub packs: Vec<RequiredPack>,
}

/// `GET policy-packs/DIGEST`: a pack's component, in base64 (the protocol is JSON).
#[derive(Debug, Serialize, Deserialize)]
pub struct PackComponent {
    pub digest: String,
    pub wasm_base64: String,
}
