//! `plinth logs`: the events of one of the stack's updates, as recorded while it ran.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use plinth_backend::{LogEntry, LoggedEvent};
use plinth_engine::shown::escape_controls;

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
        println!("{}", line(event));
    }
    Ok(ExitCode::SUCCESS)
}

/// One event, after its time since the update's start.
fn line(entry: &LogEntry) -> String {
    let at = format!("+{}.{:03}s", entry.at_ms / 1000, entry.at_ms % 1000);
    let what = match &entry.event {
        LoggedEvent::StepStarted { op, urn } => format!("{op} {urn} started"),
        LoggedEvent::StepDone {
            op,
            urn,
            duration_ms,
        } => format!("{op} {urn} done in {duration_ms}ms"),
        LoggedEvent::StepFailed { op, urn, error } => format!("{op} {urn} failed: {error}"),
        LoggedEvent::Diagnostic {
            urn,
            severity,
            message,
        } => match urn {
            Some(urn) => format!("{severity}: {urn}: {message}"),
            None => format!("{severity}: {message}"),
        },
        LoggedEvent::Summary {
            changes,
            duration_ms,
            failed,
        } => format!(
            "{} after {duration_ms}ms: {} created, {} updated, {} replaced, {} deleted, {} unchanged",
            if *failed { "failed" } else { "done" },
            changes.create,
            changes.update,
            changes.replace,
            changes.delete,
            changes.same
        ),
        LoggedEvent::PolicyViolation {
            pack,
            policy,
            level,
            urn,
            message,
            property,
        } => {
            let on = urn.as_ref().map_or(String::new(), |urn| format!("{urn}: "));
            let at = if property.is_empty() {
                String::new()
            } else {
                format!(" (property `{property}`)")
            };
            format!("policy violation: {on}[{level}] policy `{pack}/{policy}`: {message}{at}")
        }
        LoggedEvent::PolicySummary { packs } => {
            let packs: Vec<String> = (packs.iter())
                .map(|p| {
                    format!(
                        "{} {} (sha256 {}): {} mandatory, {} advisory",
                        p.name, p.version, p.digest, p.mandatory, p.advisory
                    )
                })
                .collect();
            format!("policy packs ran: {}", packs.join("; "))
        }
        LoggedEvent::Cancelled => "cancelled: no new steps started".to_owned(),
    };
    // One line per event: what a guest or the log file supplied cannot start another.
    format!("{at:>10}  {}", escape_controls(&what))
}
