//! The SDK's general error: a message for the user.

use std::fmt;

/// An error with a message for the user. Common standard errors convert into it, so `?` works
/// on parsing and formatting results inside programs and providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error { message }
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error::new(message)
    }
}

/// Standard errors keep their own message.
macro_rules! from_std_error {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(error: $t) -> Self {
                Error::new(error.to_string())
            }
        }
    )*};
}

from_std_error!(
    std::num::ParseIntError,
    std::num::ParseFloatError,
    std::num::TryFromIntError,
    std::str::ParseBoolError,
    std::str::Utf8Error,
    std::string::FromUtf8Error,
    std::fmt::Error,
    std::io::Error
);

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<u8, Error> {
        Ok(s.parse::<u8>()?)
    }

    #[test]
    fn question_mark_converts_std_errors() {
        assert_eq!(parse("7"), Ok(7));
        assert_eq!(
            parse("x").unwrap_err().message(),
            "invalid digit found in string"
        );
    }

    #[test]
    fn strings_convert() {
        assert_eq!(Error::from("no").to_string(), "no");
        assert_eq!(Error::from(String::from("no")), Error::new("no"));
    }
}
