//! Project and stack names. Both become parts of state file paths and of URNs, so each exists
//! only once validated: the only way to make one is through its validator, deserializing too.
//!
//! The rule is Pulumi's: letters, digits, `-`, `_` and `.`, not starting with `.` (so neither
//! `.` nor `..`, nor a hidden file), at most [`MAX_NAME_LEN`] characters. No separator, no `:`
//! (URNs split on `::`), no whitespace.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// The longest project or stack name.
pub const MAX_NAME_LEN: usize = 100;

/// What is wrong with a project or stack name; its message states the rule, and shows the name
/// escaped (it may come from a service or a file, and hold what a terminal acts on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid {kind} name `{}`: {problem}; a {kind} name is 1 to {MAX_NAME_LEN} letters, digits, `-`, `_` or `.`, not starting with `.`",
    crate::shown::escape_controls(.name)
)]
pub struct NameError {
    pub kind: &'static str,
    pub name: String,
    pub problem: NameProblem,
}

/// The first way a name breaks the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameProblem {
    #[error("it is empty")]
    Empty,
    #[error("it is {0} characters long")]
    TooLong(usize),
    #[error("it starts with `.`")]
    LeadingDot,
    #[error("it contains {0:?}")]
    Forbidden(char),
}

/// Checks `name` against the rule without taking ownership, so URN validation allocates nothing.
pub(crate) fn check(kind: &'static str, name: &str) -> Result<(), NameError> {
    let problem = if name.is_empty() {
        Some(NameProblem::Empty)
    } else if name.chars().count() > MAX_NAME_LEN {
        Some(NameProblem::TooLong(name.chars().count()))
    } else if name.starts_with('.') {
        Some(NameProblem::LeadingDot)
    } else {
        name.chars()
            .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .map(NameProblem::Forbidden)
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(NameError {
            kind,
            name: name.to_owned(),
            problem,
        }),
    }
}

macro_rules! validated_name {
    ($(#[$doc:meta])* $ty:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $ty(String);

        impl $ty {
            /// Validates `name`.
            pub fn new(name: impl Into<String>) -> Result<$ty, NameError> {
                let name = name.into();
                check($kind, &name)?;
                Ok($ty(name))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $ty {
            type Error = NameError;
            fn try_from(name: String) -> Result<$ty, NameError> {
                $ty::new(name)
            }
        }

        impl std::str::FromStr for $ty {
            type Err = NameError;
            fn from_str(name: &str) -> Result<$ty, NameError> {
                $ty::new(name)
            }
        }

        impl From<$ty> for String {
            fn from(name: $ty) -> String {
                name.0
            }
        }

        impl Deref for $ty {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<std::path::Path> for $ty {
            fn as_ref(&self) -> &std::path::Path {
                self.0.as_ref()
            }
        }

        impl PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

validated_name!(
    /// The name of a project (`name` in Plinth.yaml).
    ProjectName,
    "project"
);

validated_name!(
    /// The name of a stack of a project.
    StackName,
    "stack"
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::{Component, Path};

    #[test]
    fn dot_names_and_separators_are_refused_saying_why() {
        for (name, problem) in [
            ("..", "starts with `.`"),
            (".", "starts with `.`"),
            (".hidden", "starts with `.`"),
            ("", "is empty"),
            ("a/b", "'/'"),
            ("a\\b", "'\\\\'"),
            ("a::b", "':'"),
            ("a b", "' '"),
        ] {
            let err = ProjectName::new(name).unwrap_err().to_string();
            assert!(err.contains(problem), "{name:?}: {err}");
            assert!(err.contains("not starting with `.`"), "{err}");
        }
        let long = "a".repeat(MAX_NAME_LEN + 1);
        assert!(StackName::new(&long[1..]).is_ok());
        assert!(
            StackName::new(long)
                .unwrap_err()
                .to_string()
                .contains("101 characters")
        );
    }

    #[test]
    fn deserializing_validates() {
        assert!(serde_json::from_str::<ProjectName>("\"..\"").is_err());
        let name: StackName = serde_json::from_str("\"dev.eu-1\"").unwrap();
        assert_eq!(name.as_str(), "dev.eu-1");
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"dev.eu-1\"");
    }

    /// The directory `dir/<name>` and the file `dir/<name>.<ext>` are inside `dir`, one level
    /// down, as a path resolver would see them: no `..`, no root, no second component.
    fn stays_inside(name: &str) -> bool {
        let dir = Path::new("/state/stacks");
        [dir.join(name), dir.join(format!("{name}.json"))]
            .iter()
            .all(|path| {
                let rest = path.strip_prefix(dir).unwrap();
                let parts: Vec<_> = rest.components().collect();
                parts.len() == 1 && matches!(parts[0], Component::Normal(_))
            })
    }

    proptest! {
        #[test]
        fn no_accepted_name_resolves_outside_its_directory(name in "\\PC{0,12}|[.a-z/\\\\:-]{0,6}") {
            match (ProjectName::new(name.clone()), StackName::new(name.clone())) {
                (Ok(project), Ok(stack)) => {
                    prop_assert!(stays_inside(&project));
                    prop_assert!(stays_inside(&stack));
                }
                (Err(project), Err(stack)) => {
                    for message in [project.to_string(), stack.to_string()] {
                        prop_assert!(message.contains("letters, digits, `-`, `_` or `.`, not starting with `.`"), "{}", message);
                        let quoted = format!("`{name}`");
                        prop_assert!(message.contains(&quoted), "{}", message);
                    }
                }
                (a, b) => prop_assert!(false, "the two rules disagree on {name:?}: {a:?} {b:?}"),
            }
        }

        #[test]
        fn every_name_of_the_alphabet_is_accepted(name in "[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}") {
            prop_assert!(ProjectName::new(name.clone()).is_ok());
            prop_assert!(StackName::new(name).is_ok());
        }
    }
}
