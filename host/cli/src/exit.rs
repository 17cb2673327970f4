//! plinth's exit codes, so that a script or a CI job can tell outcomes apart: 0 success, 1 a
//! failure, 2 a command line clap refused, and the codes below. docs/cli.md ("Exit codes") lists
//! them; keep the two in step.

use std::fmt;
use std::process::ExitCode;

/// `preview|refresh --expect-no-changes` found changes.
pub const CHANGES: u8 = 3;
/// plinth would not go on without an answer it could not get: a confirmation with no
/// terminal to ask on and no `--yes`.
pub const REFUSED: u8 = 4;
/// The user answered no to a confirmation: nothing was changed.
pub const CANCELLED: u8 = 5;

/// An error that ends plinth with a code of its own rather than 1.
#[derive(Debug)]
pub struct Exit {
    pub code: u8,
    pub message: String,
}

/// An error that ends plinth with `code`.
pub fn error(code: u8, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Exit {
        code,
        message: message.into(),
    })
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// The code an error ends plinth with: its own if it carries one, else 1.
pub fn code_of(error: &anyhow::Error) -> ExitCode {
    error
        .downcast_ref::<Exit>()
        .map_or(ExitCode::FAILURE, |e| ExitCode::from(e.code))
}

/// The code of a confirmation answered no.
pub fn cancelled() -> ExitCode {
    ExitCode::from(CANCELLED)
}
