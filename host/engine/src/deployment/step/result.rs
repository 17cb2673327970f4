//! What a step gives back: what it makes known to dependents, or why it failed.

use crate::deployment::limit::Cancelled;
use crate::provider::LoadError;
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
