//! `plinth token create|ls|revoke`: a signed-in user's own access tokens, made and revoked
//! through the service (no database credentials): never one granting more than the token the
//! command runs with, and a token is shown once, when made.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use plinth_engine::shown::escape_controls;
use serde_json::{Value, json};

use crate::login;

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Make a token of your own and print it (only this once): by default with your token's
    /// grants (at most `write`) and its expiry.
    Create {
        /// What it is for ("laptop", "CI of repo X"), shown by `plinth token ls`.
        #[arg(long, default_value = "")]
        name: String,
        /// `read-no-secrets`, `read`, `write` or `admin`: at most what your token grants.
        #[arg(long)]
        level: Option<String>,
        /// Only this project's stacks, or this one stack (`PROJECT/STACK`), within your token's.
        /// (Not `--stack`: that is every command's stack.)
        #[arg(long, value_name = "PROJECT[/STACK]")]
        scope: Option<String>,
        /// How long it lasts (`90d`, `12h`): no longer than your token does.
        #[arg(long, value_parser = humantime::parse_duration)]
        expires: Option<std::time::Duration>,
    },
    /// List your tokens (revoked and expired ones too), never a token itself.
    Ls,
    /// Revoke one of your tokens by its id (from `plinth token ls`); an administrator may
    /// revoke anyone's.
    Revoke {
        /// The token's id: 12 hex digits.
        id: String,
    },
}

pub fn run(command: TokenCommand) -> Result<ExitCode> {
    let Some(service) = login::current_service()? else {
        bail!(
            "tokens are a plinth service's: log in to one with `plinth login https://…` (or set \
             PLINTH_BACKEND_URL); the file backend has none"
        );
    };
    let transport = &service.transport;
    match command {
        TokenCommand::Create {
            name,
            level,
            scope,
            expires,
        } => {
            let mut body = json!({ "name": name });
            let (project, stack) = match scope.as_deref().map(|s| s.split_once('/')) {
                Some(Some((project, stack))) => (Some(project.to_owned()), Some(stack.to_owned())),
                Some(None) => (scope, None),
                None => (None, None),
            };
            for (key, value) in [("level", level), ("project", project), ("stack", stack)] {
                if let Some(value) = value {
                    body[key] = json!(value);
                }
            }
            if let Some(expires) = expires {
                body["expires_in"] = json!(expires.as_secs().max(1));
            }
            let made = transport.call("POST", "tokens", None, Some(&body))?;
            let text = |key: &str| made[key].as_str().unwrap_or_default().to_owned();
            // The token alone on stdout, for scripts; what to know about it on stderr.
            println!("{}", text("token"));
            let lasting = made["expires_in"].as_u64().map_or(String::new(), |s| {
                format!(
                    ", for {}",
                    humantime::format_duration(std::time::Duration::from_secs(s))
                )
            });
            eprintln!(
                "Created token {} for {}, granting {}{lasting}; it is shown only this once.",
                escape_controls(&text("id")),
                escape_controls(&text("user")),
                escape_controls(&text("grants")),
            );
        }
        TokenCommand::Ls => {
            let listed = transport.call("GET", "tokens", None, None)?;
            let tokens = listed["tokens"]
                .as_array()
                .context("the service's list of tokens is not one")?;
            print_tokens(tokens);
        }
        TokenCommand::Revoke { id } => {
            // Checked here: it goes into the request's path.
            if id.len() != 12 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!(
                    "`{}` is not a token id: 12 hex digits, as `plinth token ls` shows them",
                    escape_controls(&id)
                );
            }
            let id = id.to_ascii_lowercase();
            transport.call("DELETE", &format!("tokens/{id}"), None, None)?;
            println!("Revoked token {id}: requests carrying it are refused from now on.");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The tokens as a table, each string the service sent escaped; `*` marks the token this
/// command ran with.
fn print_tokens(tokens: &[Value]) {
    let row = |cells: [&str; 7]| {
        let [current, id, created, grants, status, used, name] =
            cells.map(|cell| escape_controls(cell).into_owned());
        println!(
            "{current:1} {id:<12}  {created:<19}  {grants:<32}  {status:<24}  {used:<16}  {name}"
        )
    };
    row([
        "",
        "ID",
        "CREATED (UTC)",
        "GRANTS",
        "STATUS",
        "LAST USED",
        "NAME",
    ]);
    for token in tokens {
        let text = |key: &str| token[key].as_str().unwrap_or_default();
        let current = if token["current"].as_bool() == Some(true) {
            "*"
        } else {
            ""
        };
        row([
            current,
            text("id"),
            text("created"),
            text("grants"),
            text("status"),
            text("last_used"),
            text("name"),
        ]);
    }
}
