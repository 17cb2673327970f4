//! `plinth logs`: the events of one of the stack's updates, as recorded while it ran.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::Workspace;
use crate::display::local_time;

#[derive(Args)]
pub struct LogsArgs {
    /// The update to show, as `plinth stack history` counts them (the first is 1); default:
    /// the latest.
    #[arg(long = "update", value_name = "N")]
    number: Option<u64>,
    /// Print the events as JSON.
    #[arg(long)]
    json: bool,
}

pub fn logs(ws: &Workspace, args: LogsArgs) -> Result<ExitCode> {
    let stack = ws.stack()?;
    let Some(log) = ws.backend.logs(&stack, args.number)? else {
        match args.number {
            Some(n) => {
                bail!("stack `{stack}` has no update {n}; `plinth stack history` lists its updates")
            }
            None => {
                println!("Stack `{stack}` has no updates yet.");
                return Ok(ExitCode::SUCCESS);
            }
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&log)?);
        return Ok(ExitCode::SUCCESS);
    }
    let entry = &log.entry;
    println!(
        "Update {} of stack `{stack}`: {} {}, started {}",
        log.number,
        entry.kind,
        entry.result,
        local_time(entry.started)
    );
    if log.events.is_empty() {
        println!("It recorded no events.");
    }
    for event in &log.events {
        println!("{}", event.line());
    }
    Ok(ExitCode::SUCCESS)
}
