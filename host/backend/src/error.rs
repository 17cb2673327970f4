use std::path::PathBuf;

use plinth_state::{InvalidState, StateError};

use crate::secrets::SecretsError;

/// Why the backend could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("stack `{0}` does not exist; create it with `plinth stack init {0}`")]
    NoSuchStack(String),
    #[error("stack `{0}` already exists")]
    StackExists(String),
    /// An old version that cannot be had (`stack rollback`): `reason` says why.
    #[error("stack `{stack}` has no version {version} to roll back to: {reason}")]
    NoVersion {
        stack: String,
        version: u64,
        reason: String,
    },
    #[error(
        "stack `{stack}` still has {count} resources; run `plinth destroy` first, or pass --force to forget them"
    )]
    StackNotEmpty { stack: String, count: usize },
    #[error(
        "unsupported backend URL `{0}`: use file://<directory>, or http(s)://HOST for a `plinth serve` service"
    )]
    UnsupportedUrl(String),
    #[error(
        "cannot find a home directory for the default state directory; set PLINTH_BACKEND_URL=file://<dir>"
    )]
    NoHome,
    /// A stored state that could not be read or written (a checkpoint, a journal).
    #[error(transparent)]
    State(#[from] StateError),
    #[error(
        "the edited state of stack `{stack}` would not be valid, so it was not written: {error}"
    )]
    InvalidEdit { stack: String, error: InvalidState },
    #[error(
        "stack `{stack}` is locked by an update that is still running, {holder}: wait for it to finish, or stop it"
    )]
    Locked { stack: String, holder: String },
    /// A policy pack the service enforces could not be had as the service described it.
    #[error("the policy pack `{name}` the service enforces: {reason}")]
    PolicyPack { name: String, reason: String },
    /// What the service answered, when it did not do what was asked.
    #[error(transparent)]
    Service(#[from] crate::service::ServiceError),
    #[error(transparent)]
    Tag(#[from] plinth_state::tags::TagError),
    #[error("{action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<SecretsError> for BackendError {
    fn from(error: SecretsError) -> Self {
        BackendError::State(error.into())
    }
}

impl BackendError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> BackendError {
        let path = path.into();
        move |source| BackendError::Io {
            action,
            path,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    /// Each error of `error`'s chain, as a reporter that walks the chain (anyhow's `{:#}`)
    /// prints them: no level may repeat the one below it.
    fn assert_each_cause_once(error: &dyn Error) {
        let mut level = error;
        while let Some(source) = level.source() {
            let (outer, inner) = (level.to_string(), source.to_string());
            assert!(
                !outer.contains(&inner),
                "`{outer}` repeats its cause `{inner}`"
            );
            level = source;
        }
    }

    #[test]
    fn an_io_failure_names_its_cause_once() {
        let busy = std::io::Error::from_raw_os_error(16);
        let error = BackendError::io("removing", "/state/stacks/p/dev.lock")(busy);
        assert_each_cause_once(&error);
        assert_eq!(error.to_string(), "removing /state/stacks/p/dev.lock");
        assert!(error.source().unwrap().to_string().contains("os error 16"));
    }
}
