//! The recorded state of one resource.

use serde::{Deserialize, Serialize};

use crate::urn::Urn;
use crate::value::PropertyMap;

/// What the engine knows about one resource after a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceState {
    pub urn: Urn,
    #[serde(rename = "type")]
    pub ty: String,
    /// False for component resources, which only group their children.
    pub custom: bool,
    /// The provider-assigned id; empty for components.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(default)]
    pub inputs: PropertyMap,
    #[serde(default)]
    pub outputs: PropertyMap,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Urn>,
    /// Resources this one depends on, through its inputs or explicitly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Urn>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub protect: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retain_on_delete: bool,
    /// This state was replaced by a newer one with the same URN and awaits deletion.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete: bool,
}

impl ResourceState {
    /// Every URN this state must come after in a snapshot: its parent and dependencies.
    pub fn predecessors(&self) -> impl Iterator<Item = &Urn> {
        self.parent.iter().chain(self.dependencies.iter())
    }
}
