//! What a history entry says about where a run came from: the message it was given and the
//! commit, branch, pull request and CI system it ran for. Everything here was supplied by a
//! person, an environment or a client: lengths are capped where it is stored, and it is
//! escaped where it is shown.

use serde::{Deserialize, Serialize};

/// The longest message kept, in characters.
pub const MAX_MESSAGE: usize = 1024;
/// The longest of the other fields, in characters.
pub const MAX_FIELD: usize = 256;

/// Where a run came from; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunMetadata {
    /// What the person who ran it said it does (`--message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The CI system it ran in: `github-actions`, `gitlab-ci`, or `ci` for another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The pull (merge) request's number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<String>,
}

impl RunMetadata {
    pub fn is_empty(&self) -> bool {
        *self == RunMetadata::default()
    }

    /// Refuses a field longer than its cap, naming it.
    pub fn check(&self) -> Result<(), String> {
        let fields = [
            ("message", &self.message, MAX_MESSAGE),
            ("ci", &self.ci, MAX_FIELD),
            ("commit", &self.commit, MAX_FIELD),
            ("branch", &self.branch, MAX_FIELD),
            ("pull_request", &self.pull_request, MAX_FIELD),
        ];
        for (name, value, cap) in fields {
            let length = value.as_deref().map_or(0, |v| v.chars().count());
            if length > cap {
                return Err(format!(
                    "the run's {name} is {length} characters long; at most {cap} are kept"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overlong_field_is_refused_by_name() {
        let metadata = RunMetadata {
            branch: Some("b".repeat(MAX_FIELD + 1)),
            ..RunMetadata::default()
        };
        let error = metadata.check().unwrap_err();
        assert!(error.contains("branch is 257 characters"), "{error}");
        let fits = RunMetadata {
            message: Some("m".repeat(MAX_MESSAGE)),
            ..RunMetadata::default()
        };
        assert_eq!(fits.check(), Ok(()));
    }
}
