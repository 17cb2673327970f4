//! Policy packs as the engine sees them: something that judges each resource a deployment is
//! about to create, update or replace, and the whole stack once the program has ended. The
//! runtime implements [`PolicyPack`] over sandboxed components; the engine only asks and
//! enforces the answer (see `deployment::step::policy`).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::shown::escape_controls;
use crate::urn::Urn;
use crate::value::PropertyMap;

/// What a violation of a policy does to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnforcementLevel {
    /// Shown and recorded; the run goes on.
    Advisory,
    /// Fails `preview`, and stops `up` before the violating step runs.
    Mandatory,
    /// Not run.
    Disabled,
}

impl EnforcementLevel {
    /// The level named `name` as the configuration spells it.
    pub fn parse(name: &str) -> Option<EnforcementLevel> {
        match name {
            "advisory" => Some(EnforcementLevel::Advisory),
            "mandatory" => Some(EnforcementLevel::Mandatory),
            "disabled" => Some(EnforcementLevel::Disabled),
            _ => None,
        }
    }
}

impl fmt::Display for EnforcementLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EnforcementLevel::Advisory => "advisory",
            EnforcementLevel::Mandatory => "mandatory",
            EnforcementLevel::Disabled => "disabled",
        })
    }
}

/// A resource as a policy sees it.
#[derive(Debug, Clone)]
pub struct PolicyResource {
    pub ty: String,
    pub urn: Urn,
    /// The inputs its provider checked.
    pub inputs: PropertyMap,
    /// The recorded inputs of a resource being updated or replaced.
    pub old_inputs: Option<PropertyMap>,
    /// The provider resource that manages it.
    pub provider: Option<Urn>,
    pub parent: Option<Urn>,
    pub dependencies: Vec<Urn>,
}

/// One policy's objection, its text masked and its level the one in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The pack's name.
    pub pack: String,
    pub policy: String,
    pub level: EnforcementLevel,
    pub message: String,
    /// The offending property; empty for the whole resource.
    pub property: String,
    /// The resource at fault; `None` for the stack as a whole.
    pub urn: Option<Urn>,
}

impl fmt::Display for Violation {
    /// `[mandatory] policy `pack/policy`: message (property `p`)`, on one line whatever the
    /// pack wrote: its text cannot start a line of its own.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}] policy `{}/{}`: {}",
            self.level,
            escape_controls(&self.pack),
            escape_controls(&self.policy),
            escape_controls(&self.message)
        )?;
        if !self.property.is_empty() {
            write!(f, " (property `{}`)", escape_controls(&self.property))?;
        }
        Ok(())
    }
}

/// Why a pack gave no verdict: it trapped, ran out of time or memory, or returned nonsense.
#[derive(Debug, Clone, thiserror::Error)]
#[error("policy pack `{pack}` failed: {message}")]
pub struct PolicyError {
    pub pack: String,
    pub message: String,
}

/// What one pack did in a run: which pack (its digest names its bytes) and how many
/// violations it reported at each level. A run's packs are in its `policy-summary` event and,
/// on the service, in the update's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PackRun {
    pub name: String,
    pub version: String,
    /// The SHA-256 of the pack's component, in hex.
    pub digest: String,
    pub advisory: u64,
    pub mandatory: u64,
}

/// A loaded, configured policy pack.
#[async_trait]
pub trait PolicyPack: Send + Sync {
    fn name(&self) -> &str;
    fn version(&self) -> &str;
    /// The SHA-256 of its component, in hex.
    fn digest(&self) -> &str;
    /// The violations of `resource`, about to be created, updated or replaced, by the
    /// policies not disabled.
    async fn analyze_resource(
        &self,
        resource: &PolicyResource,
    ) -> Result<Vec<Violation>, PolicyError>;
    /// The violations of the stack whose resources are `resources`.
    async fn analyze_stack(
        &self,
        resources: &[PolicyResource],
    ) -> Result<Vec<Violation>, PolicyError>;
}

/// The packs a deployment runs, in the order they were given.
#[derive(Clone, Default)]
pub struct PolicyPacks(pub Vec<Arc<dyn PolicyPack>>);

impl PolicyPacks {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for PolicyPacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|pack| pack.name()))
            .finish()
    }
}
