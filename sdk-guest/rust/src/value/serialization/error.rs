//! The error of [`to_value`](super::to_value) and [`from_value`](super::from_value): a message,
//! and the path of the property it concerns (`rules[0].port`).

use std::fmt;

use crate::Error;

/// One step of a path into a value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// An error at a path; the path grows as the error travels out of nested values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathError {
    /// Innermost step first.
    steps: Vec<Step>,
    message: String,
}

impl PathError {
    /// The error, one level out: inside the property `key`.
    pub(crate) fn at_key(mut self, key: &str) -> PathError {
        self.steps.push(Step::Key(key.to_owned()));
        self
    }

    /// The error, one level out: inside the item `index`.
    pub(crate) fn at_index(mut self, index: usize) -> PathError {
        self.steps.push(Step::Index(index));
        self
    }

    /// The path, `rules[0].port`; empty for the value as a whole.
    pub(crate) fn path(&self) -> String {
        let mut path = String::new();
        for step in self.steps.iter().rev() {
            match step {
                Step::Key(key) if path.is_empty() => path.push_str(key),
                Step::Key(key) => {
                    path.push('.');
                    path.push_str(key);
                }
                Step::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        path
    }

    /// The message, without the path.
    #[cfg(feature = "provider")]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path() {
            path if path.is_empty() => f.write_str(&self.message),
            path => write!(f, "{path}: {}", self.message),
        }
    }
}

impl std::error::Error for PathError {}

impl serde::ser::Error for PathError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        PathError {
            steps: Vec::new(),
            message: message.to_string(),
        }
    }
}

impl serde::de::Error for PathError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        <PathError as serde::ser::Error>::custom(message)
    }
}

impl From<PathError> for Error {
    fn from(error: PathError) -> Error {
        Error::new(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::Error as _;

    #[test]
    fn paths_read_from_the_outside_in() {
        let e = PathError::custom("bad")
            .at_key("port")
            .at_index(0)
            .at_key("rules");
        assert_eq!(e.path(), "rules[0].port");
        assert_eq!(e.to_string(), "rules[0].port: bad");
        assert_eq!(PathError::custom("bad").to_string(), "bad");
    }
}
