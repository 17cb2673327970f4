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
