//! `plinth serve policy add|ls|rm`: the policy packs the service enforces, run by every
//! update and preview of the stacks their pattern matches, whatever the project names.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use plinth_service::{
    MAX_PACK_BYTES, NewPack, add_policy_pack, connect, list_policy_packs, remove_policy_pack,
};
use plinth_state::protocol::policy::PackLimits;

use crate::Database;
use crate::audit_print::escaped;

/// The largest configuration file read: a few settings per policy.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

#[derive(Subcommand)]
pub(crate) enum PolicyCommand {
    /// Store a policy pack (a built `.wasm` component) for the stacks `--stacks` matches;
    /// replaces the pack of that name for the same pattern.
    Add {
        #[command(flatten)]
        database: Database,
        /// The pack's component.
        pack: PathBuf,
        /// The stacks it applies to: a glob on PROJECT/STACK (`shop/*`, `*/prod`, `*/*`).
        #[arg(long)]
        stacks: String,
        /// Its name, as `policy ls` and `policy rm` take it (default: the file's name).
        #[arg(long)]
        name: Option<String>,
        /// Its version, as recorded (default: none).
        #[arg(long, default_value = "")]
        version: String,
        /// The configuration of its policies, in --policy-pack-config's format; it wins over
        /// whatever configuration a client gives.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The most memory its instance may use, e.g. `64MiB` (default: the client's, 256 MiB).
        #[arg(long, value_name = "SIZE")]
        memory: Option<bytesize::ByteSize>,
        /// How long one call into it may take, e.g. `5s` (default: the client's, 60 s).
        #[arg(long, value_name = "DURATION")]
        call_timeout: Option<humantime::Duration>,
    },
    /// List the stored packs.
    Ls {
        #[command(flatten)]
        database: Database,
    },
    /// Remove a pack by name (for every pattern, or only `--stacks`).
    Rm {
        #[command(flatten)]
        database: Database,
        name: String,
        #[arg(long)]
        stacks: Option<String>,
    },
}

/// Reads at most `most` bytes of `path`; an error naming it if it is larger.
fn read_bounded(path: &PathBuf, most: u64, what: &str) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the {what} {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(most + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read the {what} {}", path.display()))?;
    if bytes.len() as u64 > most {
        bail!(
            "the {what} {} is larger than {} KiB: is it the right file?",
            path.display(),
            most >> 10
        );
    }
    Ok(bytes)
}

pub(crate) async fn run(command: PolicyCommand, on_command_line: bool) -> Result<()> {
    match command {
        PolicyCommand::Add {
            database,
            pack,
            stacks,
            name,
            version,
            config,
            memory,
            call_timeout,
        } => {
            let bytes = read_bounded(&pack, MAX_PACK_BYTES as u64, "policy pack")?;
            let config = match config {
                Some(path) => {
                    let text = read_bounded(&path, MAX_CONFIG_BYTES, "configuration")?;
                    Some(serde_json::from_slice(&text).with_context(|| {
                        format!("the configuration {} is not JSON", path.display())
                    })?)
                }
                None => None,
            };
            let name = match name {
                Some(name) => name,
                None => (pack.file_stem())
                    .map(|s| s.to_string_lossy().into_owned())
                    .context("give the pack a --name")?,
            };
            let pool = connect(&database.url(on_command_line)?).await?;
            let limits = PackLimits {
                memory_bytes: memory.map(|m| m.as_u64()),
                call_timeout_ms: call_timeout.map(|t| {
                    u64::try_from(std::time::Duration::from(t).as_millis()).unwrap_or(u64::MAX)
                }),
            };
            let new = NewPack {
                name: &name,
                version: &version,
                stacks: &stacks,
                config,
                limits,
            };
            let digest = add_policy_pack(&pool, new, &bytes)
                .await
                .with_context(|| format!("cannot store the policy pack {}", pack.display()))?;
            println!(
                "Stored the policy pack {} (sha256 {digest}) for the stacks {}: every run of \
                 them runs it.",
                escaped(&name),
                escaped(&stacks)
            );
        }
        PolicyCommand::Ls { database } => {
            let pool = connect(&database.url(on_command_line)?).await?;
            let packs = list_policy_packs(&pool).await?;
            if packs.is_empty() {
                println!(
                    "No policy packs: add one with `plinth serve policy add PACK.wasm --stacks 'PROJECT/*'`."
                );
            }
            for p in packs {
                // From the database: shown escaped, as every stored string.
                let mut notes = Vec::new();
                if p.config.is_some() {
                    notes.push("configured".to_owned());
                }
                if let Some(memory) = p.memory_bytes {
                    let memory = bytesize::ByteSize(memory as u64).display().iec();
                    notes.push(format!("memory {memory}"));
                }
                if let Some(timeout) = p.call_timeout_ms {
                    let timeout = std::time::Duration::from_millis(timeout as u64);
                    notes.push(format!(
                        "call timeout {}",
                        humantime::format_duration(timeout)
                    ));
                }
                println!(
                    "{:<24}  {:<10}  {:<24}  sha256 {}  added {} by {}{}",
                    escaped(&p.name),
                    escaped(&p.version),
                    escaped(&p.stacks),
                    p.digest,
                    p.added,
                    escaped(&p.added_by),
                    match notes.is_empty() {
                        true => String::new(),
                        false => format!("  ({})", notes.join(", ")),
                    }
                );
            }
        }
        PolicyCommand::Rm {
            database,
            name,
            stacks,
        } => {
            let pool = connect(&database.url(on_command_line)?).await?;
            let removed = remove_policy_pack(&pool, &name, stacks.as_deref()).await?;
            if removed == 0 {
                bail!(
                    "no policy pack is named `{}`{}: `plinth serve policy ls` lists them",
                    escaped(&name),
                    stacks.map_or(String::new(), |s| format!(" for {}", escaped(&s)))
                );
            }
            println!("Removed {removed} policy pack(s) named {}.", escaped(&name));
        }
    }
    Ok(())
}
