//! Reading a stored checkpoint for display: its resources, and their property values with every
//! secret shown as `[secret]`. The service holds secrets sealed; the console never opens one,
//! and never shows even the ciphertext.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// What a secret or an unknown value shows as.
pub(super) const SECRET: &str = "[secret]";
const UNKNOWN: &str = "[unknown]";
/// The key that marks a secret or unknown value in state.
const SIG_KEY: &str = plinth_engine::value::SIG_KEY;

/// A resource as a checkpoint records it, with what the console shows; its properties left
/// unparsed until asked for (a page about one resource, or a diff, parses 2 of 10,000 maps,
/// not 20,000).
#[derive(Deserialize)]
pub(super) struct Resource {
    pub urn: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub custom: bool,
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub inputs: Option<Box<RawValue>>,
    #[serde(default)]
    pub outputs: Option<Box<RawValue>>,
    #[serde(default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub dependencies: Vec<String>,
    #[serde(default)]
    pub protect: bool,
}

impl Resource {
    /// The name the program gave it: the URN's last part.
    pub fn name(&self) -> &str {
        self.urn
            .rsplit_once("::")
            .map_or(&self.urn, |(_, name)| name)
    }

    pub fn inputs(&self) -> Result<Map<String, Value>, ApiError> {
        parsed(&self.inputs)
    }

    pub fn outputs(&self) -> Result<Map<String, Value>, ApiError> {
        parsed(&self.outputs)
    }

    /// Whether its properties are as `other`'s, byte for byte (a checkpoint is written in one
    /// canonical form; a secret sealed anew differs, and is compared as shown).
    pub fn same_properties(&self, other: &Resource) -> bool {
        let raw = |v: &Option<Box<RawValue>>| v.as_ref().map(|v| v.get().to_owned());
        raw(&self.inputs) == raw(&other.inputs) && raw(&self.outputs) == raw(&other.outputs)
    }
}

/// A property map left unparsed, parsed (none: empty).
fn parsed(raw: &Option<Box<RawValue>>) -> Result<Map<String, Value>, ApiError> {
    match raw {
        Some(raw) => serde_json::from_str::<Option<Map<String, Value>>>(raw.get())
            .map(Option::unwrap_or_default)
            .map_err(|e| ApiError::Internal(format!("a stored checkpoint does not parse: {e}"))),
        None => Ok(Map::new()),
    }
}

/// A resource as the stack's tree draws it: its properties left unparsed (a stack of 10,000
/// resources is drawn without building 20,000 property maps), but for the stack's own outputs.
#[derive(Deserialize)]
pub(super) struct Node {
    pub urn: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub protect: bool,
    #[serde(default)]
    pub delete: bool,
    #[serde(default)]
    pub outputs: Option<Box<RawValue>>,
}

impl Node {
    pub fn name(&self) -> &str {
        self.urn
            .rsplit_once("::")
            .map_or(&self.urn, |(_, name)| name)
    }
}

#[derive(Deserialize)]
struct Nodes {
    #[serde(default)]
    resources: Vec<Node>,
}

#[derive(Deserialize)]
struct NodeCheckpoint {
    snapshot: Nodes,
}

/// The resources of a stored checkpoint as the tree draws them.
pub(super) fn nodes(checkpoint: &[u8]) -> Result<Vec<Node>, ApiError> {
    let checkpoint: NodeCheckpoint = serde_json::from_slice(checkpoint)
        .map_err(|e| ApiError::Internal(format!("a stored checkpoint does not parse: {e}")))?;
    Ok(checkpoint.snapshot.resources)
}

#[derive(Deserialize)]
struct Snapshot {
    #[serde(default)]
    resources: Vec<Resource>,
}

#[derive(Deserialize)]
struct Checkpoint {
    snapshot: Snapshot,
}

/// The resources of a stored checkpoint, in its (topological) order.
pub(super) fn resources(checkpoint: &[u8]) -> Result<Vec<Resource>, ApiError> {
    let checkpoint: Checkpoint = serde_json::from_slice(checkpoint)
        .map_err(|e| ApiError::Internal(format!("a stored checkpoint does not parse: {e}")))?;
    Ok(checkpoint.snapshot.resources)
}

/// `value` as shown: secrets and unknowns replaced by their markers, all the way down.
pub(super) fn shown(value: &Value) -> Value {
    match value {
        Value::Object(map) => match map.get(SIG_KEY) {
            Some(Value::String(sig)) if sig == "secret" => Value::String(SECRET.to_owned()),
            Some(_) => Value::String(UNKNOWN.to_owned()),
            None => Value::Object(map.iter().map(|(k, v)| (k.clone(), shown(v))).collect()),
        },
        Value::Array(items) => Value::Array(items.iter().map(shown).collect()),
        other => other.clone(),
    }
}

/// A property map as shown, pretty-printed.
pub(super) fn pretty(map: &Map<String, Value>) -> String {
    let shown = shown(&Value::Object(map.clone()));
    serde_json::to_string_pretty(&shown).expect("JSON serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_secret_shows_as_its_marker_wherever_it_is() {
        let value = json!({
            "plain": "x",
            "deep": [{ "p": { "plinth:sig": "secret", "ciphertext": "v1:abc" } }],
            "later": { "plinth:sig": "unknown" },
        });
        assert_eq!(
            shown(&value),
            json!({ "plain": "x", "deep": [{ "p": "[secret]" }], "later": "[unknown]" })
        );
    }
}
