//! `plinth stack …` and `plinth config …`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Subcommand;

use crate::Workspace;
use crate::display::render_value;

#[derive(Subcommand)]
pub enum StackCommand {
    /// Create a stack and select it.
    Init { name: String },
    /// List the project's stacks.
    Ls,
    /// Select the stack later commands operate on.
    Select { name: String },
    /// Remove a stack; one with resources only with --force.
    Rm {
        name: String,
        /// Remove even if the stack still has resources (they are forgotten, not deleted).
        #[arg(long)]
        force: bool,
    },
    /// Show the stack's outputs.
    Output {
        /// Print one output only.
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Print the stack's state (checkpoint JSON) on stdout.
    Export,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Set a configuration value (`key` is in the project's namespace; `ns:key` in another).
    Set { key: String, value: String },
    /// Print a configuration value.
    Get { key: String },
    /// Remove a configuration value.
    Rm { key: String },
}

pub fn run_stack(ws: &Workspace, cmd: StackCommand) -> Result<ExitCode> {
    let project = ws.project.name();
    match cmd {
        StackCommand::Init { name } => {
            ws.backend.create_stack(project, &name)?;
            println!("Created stack `{name}` (selected).");
        }
        StackCommand::Ls => {
            let selected = ws.backend.selected_stack(project);
            let stacks = ws.backend.stacks(project)?;
            if stacks.is_empty() {
                println!("No stacks; create one with `plinth stack init NAME`.");
            }
            println!("{:24} {:>9}  LOCKED", "NAME", "RESOURCES");
            for s in stacks {
                let mark = if selected.as_deref() == Some(&s.name) {
                    "*"
                } else {
                    ""
                };
                let name = format!("{}{mark}", s.name);
                let locked = if s.locked { "yes" } else { "" };
                println!("{name:24} {:>9}  {locked}", s.resources);
            }
        }
        StackCommand::Select { name } => {
            ws.backend.select_stack(project, &name)?;
            println!("Selected stack `{name}`.");
        }
        StackCommand::Rm { name, force } => {
            ws.backend.remove_stack(project, &name, force)?;
            println!("Removed stack `{name}`.");
        }
        StackCommand::Output { name, json } => {
            let stack = ws.stack()?;
            let outputs = ws.backend.load(project, &stack)?.snapshot.outputs;
            let outputs = match name {
                Some(name) => {
                    let value = outputs
                        .get(&name)
                        .with_context(|| format!("stack `{stack}` has no output `{name}`"))?;
                    if json {
                        println!("{}", serde_json::to_string_pretty(&masked(value))?);
                    } else {
                        println!("{}", plain(value));
                    }
                    return Ok(ExitCode::SUCCESS);
                }
                None => outputs,
            };
            if json {
                let masked: serde_json::Map<_, _> = outputs
                    .iter()
                    .map(|(k, v)| (k.clone(), masked(v)))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&masked)?);
            } else {
                let width = outputs.keys().map(String::len).max().unwrap_or(0);
                for (k, v) in &outputs {
                    println!("{k:width$}  {}", render_value(v));
                }
            }
        }
        StackCommand::Export => {
            let stack = ws.stack()?;
            std::io::stdout().write_all(&ws.backend.export(project, &stack)?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An output as JSON with secrets replaced by `"[secret]"`.
fn masked(value: &plinth_engine::value::Value) -> serde_json::Value {
    use plinth_engine::value::Value;
    match value {
        Value::Secret(_) => serde_json::Value::String("[secret]".into()),
        Value::Array(items) => items.iter().map(masked).collect(),
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), masked(v))).collect(),
        other => serde_json::to_value(other).unwrap_or(serde_json::Value::Null),
    }
}

/// An output for scripts: strings bare, everything else as JSON.
fn plain(value: &plinth_engine::value::Value) -> String {
    match masked(value) {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}

pub fn run_config(ws: &Workspace, cmd: ConfigCommand) -> Result<ExitCode> {
    let stack = ws.stack()?;
    match cmd {
        ConfigCommand::Set { key, value } => {
            if key.is_empty() || key.starts_with(':') || key.ends_with(':') {
                bail!("invalid config key `{key}`: use `key` or `namespace:key`");
            }
            ws.project.set_config(&stack, &key, &value)?;
        }
        ConfigCommand::Rm { key } => {
            if !ws.project.remove_config(&stack, &key)? {
                bail!("stack `{stack}` has no config value `{key}`");
            }
        }
        ConfigCommand::Get { key } => {
            let config = ws.project.stack_config(&stack)?;
            let value = config
                .get(&ws.project.qualify_key(&key))
                .with_context(|| format!("stack `{stack}` has no config value `{key}`"))?;
            println!("{value}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
