//! Why a journal entry could not be recorded.

use std::sync::Arc;

use super::persist::PersistError;
use crate::resource::FieldError;
use crate::snapshot::IntegrityError;
use crate::urn::Urn;

/// Why the snapshot manager could not record a mutation.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SnapshotError {
    /// The cause is part of the message and not the error's source, so that a reporter that
    /// walks the chain does not print it twice.
    #[error("refusing to record an invalid state: {0}")]
    Integrity(IntegrityError),
    /// A state holding a field no plinth records (an id with control characters, ...): the
    /// same check the loaders make, so that nothing recorded is refused when read back.
    #[error("refusing to record an invalid state: {0}")]
    Field(FieldError),
    #[error("journal entry refers to {0}, which the journal does not know")]
    Inconsistent(String),
    #[error("refusing to delete {0}: other resources in the state still depend on it")]
    StillDependedOn(Urn),
    /// A change to a base resource that the snapshot carried over as it was recorded, ahead of
    /// `by`, a state recorded earlier in this operation that depends on it.
    #[error(
        "cannot change {urn}: a resource recorded earlier in this update depends on {by}, which \
         is kept as recorded (not targeted) and depends on {urn} as it was recorded; target {by} \
         too, or use --target-dependents"
    )]
    KeptAsRecorded { urn: Urn, by: Urn },
    /// Recording an entry would carry base resource `old` into the snapshot as it was recorded,
    /// while an operation on it is in flight (see [`SnapshotManager::record_after_in_flight`](super::writer::SnapshotManager::record_after_in_flight)).
    #[error(
        "recording it would carry {urn} over as recorded while an operation on it is in flight"
    )]
    CarriesInFlight { old: usize, urn: Urn },
    #[error("could not persist the state: {0}")]
    Persist(Arc<PersistError>),
    #[error("the snapshot manager stopped")]
    Stopped,
}

impl From<IntegrityError> for SnapshotError {
    fn from(error: IntegrityError) -> SnapshotError {
        SnapshotError::Integrity(error)
    }
}

impl From<FieldError> for SnapshotError {
    fn from(error: FieldError) -> SnapshotError {
        SnapshotError::Field(error)
    }
}

impl From<PersistError> for SnapshotError {
    fn from(e: PersistError) -> Self {
        SnapshotError::Persist(Arc::new(e))
    }
}
