//! `plinth stack …` and `plinth config …`.

use plinth_engine::names::StackName;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use clap::Subcommand;

use plinth_backend::{HistoryEntry, UpdateKind, UpdateResult, write_atomically};
use plinth_engine::events::ChangeSummary;
use plinth_engine::shown::escape_controls;

use crate::Workspace;
use crate::config_path::ConfigPath;
use crate::display::{local_time, render_value, whole_seconds};
use crate::plugin::short;
use crate::secrets::unlock_for_update;
use crate::stack_config::ConfigValue;
use crate::stack_config::ProviderKind;
use crate::stack_transfer;

#[derive(Subcommand)]
pub enum StackCommand {
    /// Create a stack and select it.
    Init {
        name: StackName,
        /// What seals the stack's secrets (default: `service` on a service backend,
        /// `passphrase` on files); recorded in its `Plinth.<stack>.yaml`.
        #[arg(long, value_enum)]
        secrets_provider: Option<ProviderKind>,
    },
    /// List the project's stacks.
    Ls,
    /// Select the stack later commands operate on.
    Select {
        name: StackName,
        /// Create the stack first if it does not exist.
        #[arg(short, long)]
        create: bool,
    },
    /// Remove a stack; one with resources only with --force.
    Rm {
        name: StackName,
        /// Remove even if the stack still has resources (they are forgotten, not deleted).
        #[arg(long)]
        force: bool,
    },
    /// Rename the stack: its state (every resource URN names the stack), history, logs, tags
    /// and `Plinth.<stack>.yaml` move to the new name. Refused while an update holds it.
    Rename { new_name: StackName },
    /// The stack's tags: `name: value` labels `plinth stack ls` shows.
    Tag {
        #[command(subcommand)]
        command: TagCommand,
    },
    /// Show the stack's outputs.
    Output {
        /// Print one output only.
        name: Option<String>,
        #[arg(long)]
        json: bool,
        /// Show the plaintext of secret outputs instead of `[secret]`.
        #[arg(long)]
        show_secrets: bool,
    },
    /// The stack's dependency graph as Graphviz DOT (`plinth stack graph | dot -Tsvg`): an
    /// edge from each dependency to what depends on it, a dashed one from parent to child.
    Graph {
        /// Write to this file (atomically) instead of stdout.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Write the stack's state (checkpoint JSON) to stdout or a file.
    Export {
        /// Write to this file (atomically) instead of stdout.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Replace the stack's state with a checkpoint from stdin or a file.
    Import {
        /// Read from this file instead of stdin.
        #[arg(long)]
        file: Option<PathBuf>,
        /// Import a state that fails the integrity checks.
        #[arg(long)]
        force: bool,
    },
    /// List the stack's updates, refreshes, destroys and imports, newest first.
    History {
        #[arg(long)]
        json: bool,
    },
    /// Write the state of an old version (as `stack history` counts them, the oldest being 1)
    /// as the stack's new version, after showing what it changes in the state. Only the state
    /// changes: the next `plinth up` makes the real infrastructure match.
    Rollback {
        version: u64,
        /// Roll back without asking for confirmation.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Subcommand)]
pub enum TagCommand {
    /// Set a tag (a name of letters, digits, `-`, `_`, `.` or `:`; a value of up to 256
    /// characters).
    Set { name: String, value: String },
    /// Remove a tag.
    Rm { name: String },
    /// List the stack's tags.
    Ls {
        #[arg(long)]
        json: bool,
    },
}

/// `plinth config`: with no subcommand, every value of the stack.
#[derive(clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: Option<ConfigCommand>,
    /// Print the values as JSON: `{"project:key": {"value": "…", "secret": false}}`.
    #[arg(long)]
    json: bool,
    /// Show secret values' plaintext instead of `[secret]`.
    #[arg(long)]
    show_secrets: bool,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Set a configuration value (`key` is in the project's namespace; `ns:key` in another).
    Set {
        key: String,
        value: String,
        /// Store the value encrypted; the program receives it as a secret.
        #[arg(long)]
        secret: bool,
        /// `key` is a path into a structured value (`servers[0].port`): the value at the path
        /// is set, objects and arrays made as needed, and the key holds the whole as JSON.
        #[arg(long)]
        path: bool,
    },
    /// Print a configuration value.
    Get {
        key: String,
        /// Print a secret value's plaintext instead of `[secret]`.
        #[arg(long)]
        show_secrets: bool,
        /// `key` is a path into a structured value (`servers[0].port`).
        #[arg(long)]
        path: bool,
    },
    /// Remove a configuration value.
    Rm { key: String },
}

pub fn run_stack(ws: &Workspace, cmd: StackCommand) -> Result<ExitCode> {
    let project = ws.project.name();
    match cmd {
        StackCommand::Init {
            name,
            secrets_provider,
        } => init(ws, &name, secrets_provider)?,
        StackCommand::Ls => {
            let selected = ws.backend.selected_stack(project);
            let stacks = ws.backend.list_stacks(project)?;
            if stacks.is_empty() {
                println!("No stacks; create one with `plinth stack init NAME`.");
            }
            println!("{:24} {:>9}  {:6}  TAGS", "NAME", "RESOURCES", "LOCKED");
            for s in stacks {
                let mark = if selected.as_ref() == Some(&s.name) {
                    "*"
                } else {
                    ""
                };
                // A service lists the names: shown escaped.
                let name = format!("{}{mark}", escape_controls(&s.name));
                let locked = if s.locked { "yes" } else { "" };
                let tags = shown_tags(&s.tags);
                println!("{name:24} {:>9}  {locked:6}  {tags}", s.resources);
            }
        }
        StackCommand::Select { name, create } => {
            let exists = || -> Result<bool> {
                Ok((ws.backend.list_stacks(project)?)
                    .iter()
                    .any(|s| s.name == name))
            };
            if create && !exists()? {
                // Creating selects it.
                init(ws, &name, None)?;
            } else {
                ws.backend
                    .select_stack(&ws.backend.get_stack(project, &name)?)?;
                println!("Selected stack `{name}`.");
            }
        }
        StackCommand::Rm { name, force } => {
            let kept = ws
                .backend
                .remove_stack(&ws.backend.get_stack(project, &name)?, force)?;
            match kept {
                Some(kept) => println!("Removed stack `{name}`; {kept}."),
                None => println!("Removed stack `{name}`."),
            }
        }
        StackCommand::Rename { new_name } => rename(ws, &new_name)?,
        StackCommand::Tag { command } => tag(ws, command)?,
        StackCommand::Output {
            name,
            json,
            show_secrets,
        } => {
            let stack = ws.stack()?;
            // Masked secrets need no passphrase.
            let outputs = if show_secrets {
                let outputs = ws.backend.load(&stack)?.snapshot.outputs().clone();
                outputs.into_iter().map(|(k, v)| (k, revealed(v))).collect()
            } else {
                ws.backend.load_redacted(&stack)?.snapshot.outputs().clone()
            };
            let outputs = match name {
                Some(name) => {
                    let value = outputs
                        .get(&name)
                        .with_context(|| format!("stack `{stack}` has no output `{name}`"))?;
                    if json {
                        println!("{}", serde_json::to_string_pretty(&masked(value))?);
                    } else if std::io::stdout().is_terminal() {
                        // Piped, the value is printed as it is: a script asked for it.
                        println!("{}", escape_controls(&plain(value)));
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
            } else if outputs.is_empty() {
                println!(
                    "Stack `{stack}` has no outputs; a program exports them with `ctx.export(NAME, VALUE)`."
                );
            } else {
                let keys: Vec<_> = outputs.keys().map(|k| escape_controls(k)).collect();
                let width = keys.iter().map(|k| k.chars().count()).max().unwrap_or(0);
                for (k, v) in keys.iter().zip(outputs.values()) {
                    println!("{k:width$}  {}", render_value(v));
                }
            }
        }
        StackCommand::Graph { file } => {
            let stack = ws.stack()?;
            // No secret is needed to draw the graph: the redacted state is enough.
            let loaded = ws.backend.load_redacted(&stack)?;
            let dot = crate::stack_graph::dot(&stack.name, &loaded.snapshot.resources);
            match file {
                Some(file) => write_atomically(&file, dot.as_bytes())
                    .with_context(|| format!("cannot write {}", file.display()))?,
                None => std::io::stdout().write_all(dot.as_bytes())?,
            }
        }
        StackCommand::Export { file } => {
            let stack = ws.stack()?;
            let config = ws.project.stack_config(&stack.name);
            let sealed_by = stack_transfer::sealed_by(&ws.secrets, &config, &stack.name)?;
            let bytes = stack_transfer::stamp(&ws.backend.export(&stack)?, &sealed_by)?;
            match file {
                Some(file) => write_atomically(&file, &bytes)
                    .with_context(|| format!("cannot write {}", file.display()))?,
                None => std::io::stdout().write_all(&bytes)?,
            }
        }
        StackCommand::Import { file, force } => import(ws, file, force)?,
        StackCommand::History { json } => history(ws, json)?,
        StackCommand::Rollback { version, yes } => crate::rollback::rollback(ws, version, yes)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Creates stack `name`, its secrets sealed by `provider` if one is chosen.
pub(crate) fn init(ws: &Workspace, name: &StackName, provider: Option<ProviderKind>) -> Result<()> {
    let config = ws.project.stack_config(name);
    if let Some(kind) = provider {
        stack_transfer::check_available(kind, &ws.secrets)?;
        let current = ws.secrets.kind_of(&config)?;
        let sealed = (config.values()?.values()).any(|v| matches!(v, ConfigValue::Sealed(_)));
        if kind != current && sealed {
            bail!(
                "{} holds config values sealed by the {} provider, which the {} provider cannot \
                 open: remove them (`plinth config rm KEY`) or keep `--secrets-provider {}`",
                config.path().display(),
                current.name(),
                kind.name(),
                current.name()
            );
        }
    }
    let stack = ws.backend.create_stack(ws.project.name(), name)?;
    if let Some(kind) = provider {
        config.set_secrets_provider(kind)?;
    }
    let kind = ws.secrets.kind_of(&config)?;
    println!(
        "Created stack `{stack}` (selected); its secrets are sealed by the {} provider.",
        kind.name()
    );
    Ok(())
}

/// Renames the stack in its backend, then its configuration file. The file is checked first:
/// one of the new name already there would be another stack's configuration.
fn rename(ws: &Workspace, new: &StackName) -> Result<()> {
    let stack = ws.stack()?;
    if stack.name == *new {
        bail!("stack `{new}` has that name already");
    }
    let (from, to) = (
        ws.project.stack_config(&stack.name),
        ws.project.stack_config(new),
    );
    if to.path().exists() {
        bail!(
            "{} exists already, so stack `{stack}` was not renamed: it would take over that \
             configuration; move or remove it first",
            to.path().display()
        );
    }
    ws.backend.rename_stack(&stack, new)?;
    if from.path().exists() {
        std::fs::rename(from.path(), to.path()).with_context(|| {
            format!(
                "stack `{stack}` is renamed `{new}`, but its configuration could not be moved: \
                 move {} to {} by hand",
                from.path().display(),
                to.path().display()
            )
        })?;
    }
    println!(
        "Renamed stack `{stack}` to `{new}`: its state, history and tags moved with it; its \
         configuration is {}.",
        to.path().display()
    );
    Ok(())
}

/// `plinth stack tag …`.
fn tag(ws: &Workspace, command: TagCommand) -> Result<()> {
    let stack = ws.stack()?;
    match command {
        TagCommand::Set { name, value } => {
            ws.backend.set_tag(&stack, &name, &value)?;
            println!(
                "Tagged stack `{stack}` {}.",
                shown_tags(&[(name, value)].into())
            );
        }
        TagCommand::Rm { name } => {
            if !ws.backend.remove_tag(&stack, &name)? {
                bail!(
                    "stack `{stack}` has no tag `{}`; `plinth stack tag ls` lists its tags",
                    escape_controls(&name)
                );
            }
            println!("Removed tag `{name}` of stack `{stack}`.");
        }
        TagCommand::Ls { json } => {
            let tags = ws.backend.tags(&stack)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&tags)?);
            } else if tags.is_empty() {
                println!(
                    "Stack `{stack}` has no tags; set one with `plinth stack tag set NAME VALUE`."
                );
            } else {
                let width = tags
                    .keys()
                    .map(|k| k.chars().count())
                    .max()
                    .unwrap_or(0)
                    .max(4);
                println!("{:width$}  VALUE", "NAME");
                for (name, value) in &tags {
                    // A backend supplied them: shown escaped.
                    println!(
                        "{:width$}  {}",
                        escape_controls(name),
                        escape_controls(value)
                    );
                }
            }
        }
    }
    Ok(())
}

/// Tags on one line, `name=value, …`, escaped (a backend supplied them).
fn shown_tags(tags: &plinth_backend::StackTags) -> String {
    let shown: Vec<String> = (tags.iter())
        .map(|(name, value)| format!("{}={}", escape_controls(name), escape_controls(value)))
        .collect();
    shown.join(", ")
}

fn import(ws: &Workspace, file: Option<PathBuf>, force: bool) -> Result<()> {
    let stack = ws.stack()?;
    let bytes = match &file {
        Some(file) => {
            let what = escape_controls(&file.display().to_string()).into_owned();
            let opened =
                std::fs::File::open(file).with_context(|| format!("cannot read {what}"))?;
            // A regular file's size is known: one too large is refused before a byte is read.
            let size = opened.metadata().map_or(0, |m| m.len());
            stack_transfer::read_import(opened, size, &what)?
        }
        None => stack_transfer::read_import(std::io::stdin(), 0, "standard input")?,
    };
    // Secrets sealed by another provider are opened and sealed again before anything is
    // written: one that does not open leaves the stack as it was.
    let config = ws.project.stack_config(&stack.name);
    let target = stack_transfer::sealed_by(&ws.secrets, &config, &stack.name)?;
    let crypter = ws.backend.crypter(&stack);
    let bytes = stack_transfer::reseal_for(&bytes, &target, crypter.as_ref(), &ws.secrets)?;
    unlock_for_update(ws.backend.as_ref(), &stack)?;
    let started = SystemTime::now();
    let mut update = ws.backend.begin_update(&stack, "stack import")?;
    let entry = HistoryEntry::ended_now(
        UpdateKind::Import,
        started,
        UpdateResult::Succeeded,
        ChangeSummary::default(),
    );
    let report = update.import(&bytes, force, &entry)?;
    println!(
        "Imported {} resources into stack `{stack}`.",
        report.resources
    );
    if report.cleared_pending > 0 {
        println!(
            "Cleared {} pending operations; run `plinth refresh` to reconcile them with the real world.",
            report.cleared_pending
        );
    }
    Ok(())
}

fn history(ws: &Workspace, json: bool) -> Result<()> {
    let stack = ws.stack()?;
    let entries = ws.backend.history(&stack)?;
    // Numbered from the oldest, as `stack rollback` and `logs --update` take them.
    let latest = entries.len();
    if json {
        #[derive(serde::Serialize)]
        struct Numbered<'a> {
            version: usize,
            #[serde(flatten)]
            entry: &'a HistoryEntry,
        }
        let numbered: Vec<Numbered> = (entries.iter().enumerate())
            .map(|(newer, entry)| Numbered {
                version: latest - newer,
                entry,
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&numbered)?);
        return Ok(());
    }
    if entries.is_empty() {
        println!("Stack `{stack}` has no history yet.");
        return Ok(());
    }
    // Who ran each update, where the backend knows (a service does).
    let users = entries.iter().any(|e| e.user.is_some());
    let user = |name: Option<&str>| match users {
        true => format!("{:16} ", escape_controls(name.unwrap_or("-"))),
        false => String::new(),
    };
    println!(
        "{:>7}  {:19}  {}{:10} {:10} {:>8} {:>7} {:>7} {:>8} {:>7}  {:8}  PLUGINS",
        "VERSION",
        "STARTED",
        user(Some("USER")),
        "KIND",
        "RESULT",
        "DURATION",
        "CREATE",
        "UPDATE",
        "REPLACE",
        "DELETE",
        "PLINTH",
    );
    for (newer, e) in entries.into_iter().enumerate() {
        let plugins: Vec<_> = e
            .plugins
            .iter()
            .map(|p| {
                let (name, version) = (escape_controls(&p.name), escape_controls(&p.version));
                format!("{name}@{version} ({})", escape_controls(short(&p.sha256)))
            })
            .collect();
        println!(
            "{:>7}  {:19}  {}{:10} {:10} {:>8} {:>7} {:>7} {:>8} {:>7}  {:8}  {}",
            latest - newer,
            local_time(e.started),
            user(e.user.as_deref()),
            e.kind.to_string(),
            e.result.to_string(),
            whole_seconds(e.ended.saturating_sub(e.started)),
            e.changes.create,
            e.changes.update,
            e.changes.replace,
            e.changes.delete,
            escape_controls(&e.plinth),
            plugins.join(", ")
        );
        if let Some(metadata) = &e.metadata {
            println!("{:9}{}", "", metadata_line(metadata));
        }
        if !e.policy_packs.is_empty() {
            println!("{:9}{}", "", policy_line(&e.policy_packs));
        }
    }
    Ok(())
}

/// The policy packs a run says ran, on one line under its row, escaped (the client wrote it).
fn policy_line(packs: &[plinth_engine::policy::PackRun]) -> String {
    let shown: Vec<String> = (packs.iter())
        .map(|p| {
            format!(
                "{}@{} ({}): {} mandatory, {} advisory",
                escape_controls(&p.name),
                escape_controls(&p.version),
                escape_controls(short(&p.digest)),
                p.mandatory,
                p.advisory
            )
        })
        .collect();
    format!("policy packs: {}", shown.join(", "))
}

/// Where a run came from, on one line under its row: each value escaped (a person, an
/// environment or a client supplied it).
fn metadata_line(metadata: &plinth_backend::RunMetadata) -> String {
    let fields = [
        ("message", &metadata.message),
        ("ci", &metadata.ci),
        ("commit", &metadata.commit),
        ("branch", &metadata.branch),
        ("pull request", &metadata.pull_request),
    ];
    let shown: Vec<String> = (fields.iter())
        .filter_map(|(name, value)| {
            let value = value.as_deref()?;
            Some(format!("{name}: {}", escape_controls(value)))
        })
        .collect();
    shown.join("  ")
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

/// `value` without its secret wrappers.
fn revealed(value: plinth_engine::value::Value) -> plinth_engine::value::Value {
    use plinth_engine::value::Value;
    match value {
        Value::Secret(inner) => revealed(*inner),
        Value::Array(items) => Value::Array(items.into_iter().map(revealed).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, revealed(v))).collect())
        }
        other => other,
    }
}

/// An output for scripts: strings bare, everything else as JSON.
fn plain(value: &plinth_engine::value::Value) -> String {
    match masked(value) {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}

pub fn run_config(ws: &Workspace, args: ConfigArgs) -> Result<ExitCode> {
    let stack = ws.stack()?;
    let config = ws.project.stack_config(&stack.name);
    let open = |value: ConfigValue, show: bool| -> Result<(String, bool)> {
        Ok(match value {
            ConfigValue::Plain(text) => (text, false),
            ConfigValue::Sealed(sealed) if show => {
                (ws.backend.crypter(&stack).open(&sealed)?, true)
            }
            ConfigValue::Sealed(_) => ("[secret]".to_owned(), true),
        })
    };
    let Some(cmd) = args.command else {
        return list_config(config.values()?, args.json, |v| open(v, args.show_secrets));
    };
    match cmd {
        ConfigCommand::Set {
            key,
            value,
            secret,
            path,
        } => {
            let (key, value) = if path {
                if secret {
                    bail!(
                        "--path and --secret together: a structured value cannot hold a \
                         secret; set the secret under a key of its own"
                    );
                }
                let path = ConfigPath::parse(&key)?;
                let qualified = ws.project.qualify_key(&path.key);
                let current = match config.values()?.remove(&qualified) {
                    None => None,
                    Some(ConfigValue::Plain(text)) => {
                        Some(serde_json::from_str(&text).with_context(|| {
                            format!(
                                "`{}` holds a value that is not JSON, so --path cannot set \
                                 inside it; remove it first (`plinth config rm {}`)",
                                path.key, path.key
                            )
                        })?)
                    }
                    Some(ConfigValue::Sealed(_)) => {
                        bail!("`{}` is a secret: --path cannot set inside it", path.key)
                    }
                };
                let whole = path.set(current, serde_json::Value::String(value))?;
                (path.key, serde_json::to_string(&whole)?)
            } else {
                (key, value)
            };
            if key.is_empty() || key.starts_with(':') || key.ends_with(':') {
                bail!("invalid config key `{key}`: use `key` or `namespace:key`");
            }
            let value = if secret {
                ConfigValue::Sealed(ws.backend.crypter(&stack).seal(&value)?)
            } else {
                ConfigValue::Plain(value)
            };
            config.set(ws.project.qualify_key(&key), value)?;
        }
        ConfigCommand::Rm { key } => {
            if !config.remove(&ws.project.qualify_key(&key))? {
                bail!("stack `{stack}` has no config value `{key}`");
            }
        }
        ConfigCommand::Get {
            key,
            show_secrets,
            path,
        } => {
            let path = path.then(|| ConfigPath::parse(&key)).transpose()?;
            let stored = path.as_ref().map_or(key.clone(), |p| p.key.clone());
            let value = config
                .values()?
                .remove(&ws.project.qualify_key(&stored))
                .with_context(|| format!("stack `{stack}` has no config value `{stored}`"))?;
            let (mut text, _) = open(value, show_secrets)?;
            if let Some(path) = path {
                let whole: serde_json::Value = serde_json::from_str(&text).with_context(|| {
                    format!("`{stored}` does not hold a structured (JSON) value")
                })?;
                text = match path.get(&whole) {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => bail!("`{stored}` has nothing at `{key}`"),
                };
            }
            // Piped, the value is printed as it is: a script asked for it. On a terminal, a
            // value from a stack file someone else wrote cannot act on the terminal.
            if std::io::stdout().is_terminal() {
                println!("{}", escape_controls(&text));
            } else {
                println!("{text}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Every value, by key: a table (escaped) or JSON; secrets masked unless `open` shows them.
fn list_config(
    values: std::collections::BTreeMap<String, ConfigValue>,
    json: bool,
    open: impl Fn(ConfigValue) -> Result<(String, bool)>,
) -> Result<ExitCode> {
    let mut shown = serde_json::Map::new();
    let mut rows = Vec::new();
    for (key, value) in values {
        let (text, secret) = open(value)?;
        shown.insert(
            key.clone(),
            serde_json::json!({ "value": text, "secret": secret }),
        );
        rows.push((
            escape_controls(&key).into_owned(),
            escape_controls(&text).into_owned(),
        ));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&shown)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!("No config values; set one with `plinth config set KEY VALUE`.");
        return Ok(ExitCode::SUCCESS);
    }
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(3);
    println!("{:width$}  VALUE", "KEY");
    for (key, text) in rows {
        println!("{key:width$}  {text}");
    }
    Ok(ExitCode::SUCCESS)
}
