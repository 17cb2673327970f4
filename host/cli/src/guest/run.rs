//! Running a build tool: its output is kept and shown only when it fails.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use anyhow::{Context, Result, bail};

pub fn run(command: &mut Command, what: &str, step: &str) -> Result<()> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("{what}: cannot run {step}"))?;
    check(&output, what, step)
}

/// The tool's failure, with what it said.
fn check(output: &Output, what: &str, step: &str) -> Result<()> {
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

/// [`run`], with `input` on the tool's standard input; what it wrote on its standard output.
pub fn run_with_input(
    command: &mut Command,
    input: &str,
    what: &str,
    step: &str,
) -> Result<Vec<u8>> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("{what}: cannot run {step}"))?;
    // The input is small and read before the tool writes much: no deadlock with its output.
    let written = (child.stdin.take().expect("piped")).write_all(input.as_bytes());
    let output = child
        .wait_with_output()
        .with_context(|| format!("{what}: cannot run {step}"))?;
    check(&output, what, step)?;
    written.with_context(|| format!("{what}: cannot give {step} its input"))?;
    Ok(output.stdout)
}
