//! Running a build tool: its output is kept and shown only when it fails.

use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

pub fn run(command: &mut Command, what: &str, step: &str) -> Result<()> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("{what}: cannot run {step}"))?;
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    // componentize-py appends a Rust backtrace to a Python error; the error is what helps.
    let text = text
        .split("\nStack backtrace:")
        .next()
        .unwrap_or_default()
        .trim();
    bail!("{what}: {step} failed:\n{text}")
}
