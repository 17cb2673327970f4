//! The recorded state of one resource.

use serde::{Deserialize, Serialize};

use crate::program::CustomTimeouts;
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
    /// The provider resource that manages this one (absent in states written before provider
    /// resources were recorded: those use their package's default provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderRef>,
    /// The `custom_timeouts` it was registered with: deleting it honors them even once the
    /// program no longer declares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_timeouts: Option<CustomTimeouts>,
}

/// A reference to one provider resource: its URN and id (a replaced provider keeps its URN and
/// gets a new id).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProviderRef {
    pub urn: Urn,
    pub id: String,
}

impl ResourceState {
    /// Every URN this state must come after in a snapshot: its parent, dependencies and
    /// provider.
    pub fn predecessors(&self) -> impl Iterator<Item = &Urn> {
        (self.parent.iter())
            .chain(self.dependencies.iter())
            .chain(self.provider.iter().map(|p| &p.urn))
    }

    /// The predecessors with what each is to this state, for messages.
    pub fn relations(&self) -> impl Iterator<Item = (&'static str, &Urn)> {
        (self.parent.iter().map(|p| ("parent", p)))
            .chain(self.dependencies.iter().map(|d| ("dependency", d)))
            .chain(self.provider.iter().map(|p| ("provider", &p.urn)))
    }
}
