//! The recorded state of one resource.

use serde::{Deserialize, Serialize};

use crate::program::CustomTimeouts;
use crate::shown::escape_controls;
use crate::urn::{Urn, provided_package};
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

/// A field of a resource state that no plinth records: refused before a guest's or a user's
/// value is recorded, and on load (a state edited by hand, or written by an older plinth).
/// Messages show the offending text escaped ([`escape_controls`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error(
        "resource `{}`: its `type` is `{}`, but its URN says `{}`",
        shown(urn),
        shown(ty),
        shown(urn_type)
    )]
    TypeMismatch {
        urn: Urn,
        ty: String,
        urn_type: String,
    },
    #[error("resource `{}`: its URN contains control characters", shown(urn))]
    ControlInUrn { urn: Urn },
    #[error(
        "resource `{}`: its `id` \"{}\" contains control characters",
        shown(urn),
        shown(id)
    )]
    ControlInId { urn: Urn, id: String },
    #[error(
        "resource `{}`: its `provider` `{}` is not a provider resource (a provider's type is `plinth:providers:<package>`)",
        shown(urn),
        shown(provider)
    )]
    NotAProvider { urn: Urn, provider: Urn },
    #[error(
        "resource `{}`: its `provider` `{}` has an empty `id`",
        shown(urn),
        shown(provider)
    )]
    EmptyProviderId { urn: Urn, provider: Urn },
    #[error(
        "resource `{}`: its `provider` `{}` has the id \"{}\", which contains control characters",
        shown(urn),
        shown(provider),
        shown(id)
    )]
    ControlInProviderId { urn: Urn, provider: Urn, id: String },
}

fn shown(text: &impl std::fmt::Display) -> String {
    escape_controls(&text.to_string()).into_owned()
}

/// Whether `id` can be recorded as a resource's id: printable, so that every command can show
/// it and a user can type it back (`--import-pending-create URN=ID`, `state` edits).
pub fn is_recordable_id(id: &str) -> bool {
    !id.contains(char::is_control)
}

impl ResourceState {
    /// Checks the fields a URN's parsing does not: the type agrees with the URN, the URN and
    /// ids are printable, a provider reference names a provider resource and one of its ids.
    /// The one check of what may be recorded: the journal applies it to every state it records,
    /// the loaders to every state they read.
    pub fn check_fields(&self) -> Result<(), FieldError> {
        let urn = || self.urn.clone();
        if self.ty != self.urn.ty() {
            return Err(FieldError::TypeMismatch {
                urn: urn(),
                ty: self.ty.clone(),
                urn_type: self.urn.ty().to_owned(),
            });
        }
        if !self.urn.is_printable() {
            return Err(FieldError::ControlInUrn { urn: urn() });
        }
        if !is_recordable_id(&self.id) {
            return Err(FieldError::ControlInId {
                urn: urn(),
                id: self.id.clone(),
            });
        }
        if let Some(provider) = &self.provider {
            if provided_package(provider.urn.ty()).is_none() {
                return Err(FieldError::NotAProvider {
                    urn: urn(),
                    provider: provider.urn.clone(),
                });
            }
            if provider.id.is_empty() {
                return Err(FieldError::EmptyProviderId {
                    urn: urn(),
                    provider: provider.urn.clone(),
                });
            }
            if !is_recordable_id(&provider.id) {
                return Err(FieldError::ControlInProviderId {
                    urn: urn(),
                    provider: provider.urn.clone(),
                    id: provider.id.clone(),
                });
            }
        }
        Ok(())
    }

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
