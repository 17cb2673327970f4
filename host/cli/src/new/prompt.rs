//! The questions `plinth new` asks on a terminal.

use std::io::Write;

use anyhow::{Context, Result};

/// Asks `question`, showing `default`; an empty answer (or the end of input) takes it.
pub fn ask(question: &str, default: &str) -> Result<String> {
    print!("{question} [{default}]: ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    let answer = answer.trim();
    Ok(if answer.is_empty() { default } else { answer }.to_owned())
}
