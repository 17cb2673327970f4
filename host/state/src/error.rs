//! Why a stored state could not be read or written.

use std::path::PathBuf;

use crate::secrets::SecretsError;

/// Why a stored state (a checkpoint, a journal, a history) could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(
        "the state of stack `{stack}` was written by a newer plinth (schema {found}, this plinth reads up to {supported}); upgrade plinth"
    )]
    NewerSchema {
        stack: String,
        found: u32,
        supported: u32,
    },
    #[error(
        "the state of stack `{stack}` has schema {found}, which this plinth no longer reads (supported: {supported})"
    )]
    OlderSchema {
        stack: String,
        found: u32,
        supported: u32,
    },
    #[error("the state file {path} is not valid: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error(
        "the state file {path} is the state of stack `{found}`, not of stack `{stack}`, so it was refused and nothing was changed: \
         if it is stack `{found}`'s state, import it there (`plinth --stack {found} stack import --file F`, F a copy of it); \
         if it really is `{stack}`'s, set its `stack` field, and the stack part of its resource URNs, to `{stack}`"
    )]
    OtherStack {
        path: PathBuf,
        found: String,
        stack: String,
    },
    #[error(transparent)]
    Secrets(#[from] SecretsError),
    #[error("cannot encode the state: {0}")]
    Encode(String),
}

/// Why a state may not be written: its order and references, or a field of one resource.
#[derive(Debug, thiserror::Error)]
pub enum InvalidState {
    #[error(transparent)]
    Integrity(#[from] plinth_engine::snapshot::IntegrityError),
    #[error(transparent)]
    Field(#[from] plinth_engine::resource::FieldError),
}
