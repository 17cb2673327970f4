//! `plinth serve`: runs the team backend, the `plinth-serve` binary installed beside `plinth`.
//! The service lives in its own binary so that the command line links neither its HTTP server
//! nor its PostgreSQL driver, and so that a change to the engine does not rebuild the service.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use anyhow::{Context, Result};

const SERVICE_BINARY: &str = "plinth-serve";

/// The service binary: beside this one, else on the PATH.
fn service_binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(SERVICE_BINARY)))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(SERVICE_BINARY))
}

/// Replaces this process with the service, given `args` as they came.
pub fn serve(args: Vec<String>) -> Result<std::process::ExitCode> {
    let binary = service_binary();
    let error = std::process::Command::new(&binary).args(args).exec();
    Err(error).with_context(|| {
        format!(
            "cannot run {}: `plinth serve` needs the `{SERVICE_BINARY}` binary beside `plinth` or on the PATH \
             (build it with `cargo build -p plinth-service`)",
            binary.display()
        )
    })
}
