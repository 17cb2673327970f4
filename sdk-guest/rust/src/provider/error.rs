//! Why a provider call failed, mirroring the WIT `provider-error`.

use std::fmt;

use crate::{Error, PropertyMap};

/// A problem with one input or configuration property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailure {
    /// The property at fault; empty when the failure concerns the whole input.
    pub property: String,
    /// Why the property was rejected, for the user.
    pub reason: String,
}

impl CheckFailure {
    /// A failure of `property` (empty for the input as a whole).
    pub fn new(property: impl Into<String>, reason: impl Into<String>) -> CheckFailure {
        CheckFailure {
            property: property.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.property.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.property, self.reason)
        }
    }
}

/// Why a provider call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderError {
    /// The inputs or configuration were rejected.
    Invalid(Vec<CheckFailure>),
    /// The resource type or function token is not one this provider knows.
    UnknownType(String),
    /// The resource does not exist anymore.
    NotFound,
    /// The resource was created but failed to initialize: the engine records this state and
    /// halts, so that the resource is not leaked.
    PartiallyCreated {
        /// The id of the created resource.
        id: String,
        /// Its outputs, as far as they are known.
        outputs: PropertyMap,
        /// What went wrong.
        reasons: Vec<String>,
    },
    /// Any other failure, with a message for the user.
    Failed(String),
}

impl ProviderError {
    /// A [`ProviderError::Failed`] with this message.
    pub fn failed(message: impl Into<String>) -> ProviderError {
        ProviderError::Failed(message.into())
    }

    /// A [`ProviderError::Invalid`] with one failure.
    pub fn invalid(property: impl Into<String>, reason: impl Into<String>) -> ProviderError {
        ProviderError::Invalid(vec![CheckFailure::new(property, reason)])
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderError::Invalid(failures) => {
                f.write_str("invalid inputs")?;
                for (i, failure) in failures.iter().enumerate() {
                    f.write_str(if i == 0 { ": " } else { "; " })?;
                    write!(f, "{failure}")?;
                }
                Ok(())
            }
            ProviderError::UnknownType(token) => {
                write!(f, "unknown resource type or function `{token}`")
            }
            ProviderError::NotFound => f.write_str("the resource does not exist"),
            ProviderError::PartiallyCreated { id, reasons, .. } => {
                write!(
                    f,
                    "`{id}` was created but failed to initialize: {}",
                    reasons.join("; ")
                )
            }
            ProviderError::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ProviderError {}

impl From<String> for ProviderError {
    fn from(message: String) -> Self {
        ProviderError::Failed(message)
    }
}

impl From<&str> for ProviderError {
    fn from(message: &str) -> Self {
        ProviderError::failed(message)
    }
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        ProviderError::Failed(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_failures() {
        let err = ProviderError::Invalid(vec![
            CheckFailure::new("length", "must be at least 1"),
            CheckFailure::new("", "nothing to generate"),
        ]);
        assert_eq!(
            err.to_string(),
            "invalid inputs: length: must be at least 1; nothing to generate"
        );
    }

    #[test]
    fn messages_convert_to_failed() {
        assert_eq!(ProviderError::from("x"), ProviderError::failed("x"));
        assert_eq!(
            ProviderError::from(Error::new("y")),
            ProviderError::Failed("y".into())
        );
    }
}
