//! What one step does: decide how a registration changes its resource (same, create, update,
//! replace) from the provider's check and diff, then carry it out, recording every provider call
//! before it starts and after it ends.
//!
//! [`context`] holds what the steps of one deployment share, [`claims`] which base resources
//! they took charge of, [`execute`] runs a registration's step, [`delete`] the deletes,
//! [`provider`] the steps of provider resources and [`untargeted`] what `--target` leaves out.

mod base;
mod claims;
mod context;
mod delete;
mod execute;
mod plan;
pub(crate) mod provider;
mod untargeted;

pub(crate) use claims::Claims;
pub(crate) use context::StepContext;
pub(crate) use execute::unrecordable_read;

use crate::deployment::limit::Cancelled;
use crate::program::RegisterRequest;
use crate::provider::LoadError;
use crate::resource::ProviderRef;
use crate::urn::Urn;
use crate::value::{PropertyMap, Value};

/// Why a step failed: a resource's own failure, or one of the plugin it needs (reported once,
/// however many resources need that plugin).
#[derive(Debug, Clone, thiserror::Error)]
pub enum StepError {
    #[error("{urn}: {message}")]
    Resource { urn: Urn, message: String },
    /// A plugin could not be made available (loaded, started or configured). The message is
    /// the cause's own (it names the plugin), so it is not repeated as an error source.
    #[error("{cause}")]
    Plugin { plugin: String, cause: LoadError },
    /// Not started: the operation stopped (a failure, or cancellation) while it waited.
    #[error("not started: the operation stopped")]
    Halted,
}

impl From<Cancelled> for StepError {
    fn from(_: Cancelled) -> StepError {
        StepError::Halted
    }
}

/// A registration ready to run: inputs resolved, URN and dependencies known.
pub(crate) struct ResourceStep {
    pub urn: Urn,
    pub request: RegisterRequest,
    pub inputs: PropertyMap,
    pub parent: Option<Urn>,
    pub dependencies: Vec<Urn>,
    /// The provider resource that manages it (none for components and provider resources).
    pub provider: Option<ProviderBinding>,
}

/// The provider resource a registration is bound to, as its step left it.
#[derive(Debug, Clone)]
pub(crate) struct ProviderBinding {
    pub reference: ProviderRef,
    pub config: PropertyMap,
    /// This run replaced the provider: what it manages is replaced too.
    pub replaced: bool,
}

/// A finished step's outputs.
pub(crate) enum StepOutputs {
    Own(PropertyMap),
    /// Those base resource `i` recorded, unchanged: dependents read them from the base rather
    /// than from a copy kept for the rest of the deployment.
    Base(usize),
}

/// What a finished resource step makes known to dependents.
pub(crate) struct StepResult {
    pub id: Value,
    pub outputs: StepOutputs,
    /// A base resource this step replaced, to delete at the end (create-before-delete).
    pub replaced: Option<usize>,
    /// The resource does not exist (an untargeted create): its outputs are unknown.
    pub absent: bool,
}
