//! `plinth-serve`: runs the service (`plinth serve` execs it), or creates an access token.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;

use axum::serve::ListenerExt;
use plinth_service::{
    AuditFilter, DatabaseUrlError, Level, MasterKey, MasterKeys, Metrics, OidcConfig, Options,
    RemovedStack, Revoke, Scope, TokenInfo, connect, create_token, has_password, list_audit,
    list_stacks, list_tokens, metrics_router, parse_since, purge_periodically, purge_removed,
    read_database_file, readable_by_others, repair, restore, revoke_tokens, rotate, router,
};

mod audit_print;
mod policy_command;

#[derive(Parser)]
#[command(
    name = "plinth serve",
    bin_name = "plinth serve",
    version,
    about = "The plinth team backend: stacks in PostgreSQL, any number of stateless replicas",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Args)]
struct ServeArgs {
    #[command(flatten)]
    database: Database,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The address to answer `GET /metrics` on (Prometheus's text format), without a token:
    /// bind it where only the monitoring can reach it. Without it, no metrics are served.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// How log lines are written on standard error: `text` for people, `json` (one object a
    /// line) for log collectors. Each request is logged at level info (RUST_LOG to change).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// How long an update's lease lasts unless its client renews it (at half of it).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    lease: std::time::Duration,
    /// The largest request body accepted, in bytes; larger ones are answered 413.
    #[arg(long, default_value_t = Options::default().body_limit)]
    body_limit: usize,
    /// The most request body bytes held at once (at least --body-limit); a body beyond it is
    /// answered 503 with Retry-After until others are done, bounding the replica's memory.
    #[arg(long, default_value_t = Options::default().bodies_in_flight)]
    bodies_in_flight: usize,
    /// How long a removed stack (`plinth stack rm`) is kept, restorable with `plinth serve
    /// stack restore`, before it is purged with everything it held (at start, then hourly).
    #[arg(long, default_value = "30d", value_parser = humantime::parse_duration)]
    removed_stack_retention: std::time::Duration,
    /// The master key file (from `plinth serve key create`) that seals each stack's data key;
    /// without one, service-managed secrets are refused. Give it twice, old and new, while
    /// rotating (`plinth serve key rotate`); a list in the environment is comma-separated.
    #[arg(long, env = "PLINTH_MASTER_KEY_FILE", value_delimiter = ',')]
    master_key: Vec<PathBuf>,
    /// Record the last address of X-Forwarded-For as a request's source in the audit log, with
    /// the peer's. Only behind a proxy that appends it: otherwise any client could name any
    /// address. Without it, the peer's address, which a client cannot forge.
    #[arg(long)]
    trust_forwarded_for: bool,
    /// A YAML file naming the OIDC issuers (GitHub Actions, GitLab, …) whose ID tokens are
    /// exchanged for short-lived access tokens (`POST /api/v1/oidc/exchange`), and the rules
    /// mapping their claims to grants. Checked at start; without it, no token is exchanged.
    #[arg(long, env = "PLINTH_OIDC_CONFIG", value_name = "FILE")]
    oidc_config: Option<PathBuf>,
}

/// The database, given so that its password stays off the command line (which every user of the
/// machine can read): in the environment or in a file.
#[derive(clap::Args)]
pub(crate) struct Database {
    /// The PostgreSQL database: postgres://USER:PASSWORD@HOST:PORT/DB. Prefer the environment
    /// or --database-file: a password on the command line is visible to every user of the machine.
    #[arg(
        long,
        env = "PLINTH_DATABASE_URL",
        hide_env_values = true,
        conflicts_with = "database_file"
    )]
    database: Option<String>,
    /// A file holding the database URL on one line (readable by the service's user only).
    #[arg(long, env = "PLINTH_DATABASE_FILE", value_name = "FILE")]
    database_file: Option<PathBuf>,
}

impl Database {
    /// The URL, warning if it carries a password and came from the command line.
    fn url(self, on_command_line: bool) -> Result<String> {
        let url = match (self.database, self.database_file) {
            (Some(url), _) => url,
            (None, Some(file)) => {
                if readable_by_others(&file) {
                    tracing::warn!(
                        "{} holds the database password and other users may read it: \
                         chmod 600 it",
                        file.display()
                    );
                }
                read_database_file(&file)?
            }
            (None, None) => return Err(DatabaseUrlError::Missing.into()),
        };
        if on_command_line && has_password(&url) {
            tracing::warn!(
                "the database password is on the command line, where every user of this machine \
                 can read it (ps, /proc): set PLINTH_DATABASE_URL or pass --database-file FILE instead"
            );
        }
        Ok(url)
    }
}

/// Whether `--database` was given on the command line (not through the environment), in
/// whichever subcommand parsed it.
fn database_on_command_line(matches: &ArgMatches) -> bool {
    let mut leaf = matches;
    while let Some((_, sub)) = leaf.subcommand() {
        leaf = sub;
    }
    leaf.ids().any(|id| id.as_str() == "database")
        && leaf.value_source("database") == Some(ValueSource::CommandLine)
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Manage access tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Manage the master key of service-managed secrets.
    #[command(subcommand)]
    Key(KeyCommand),
    /// List, restore, purge and repair stacks.
    #[command(subcommand)]
    Stack(StackCommand),
    /// Manage the policy packs the service enforces on sets of stacks.
    #[command(subcommand)]
    Policy(policy_command::PolicyCommand),
    /// Show the audit log: every change made through the API or an admin command, newest
    /// first, with who made it, with which token, when and from where.
    Audit {
        #[command(flatten)]
        database: Database,
        /// Only this stack's rows (PROJECT/STACK), or a project's (PROJECT).
        #[arg(long)]
        stack: Option<String>,
        /// Only this user's rows.
        #[arg(long)]
        user: Option<String>,
        /// Only rows since then: a duration back from now (7d, 12h) or a time (RFC 3339).
        #[arg(long, value_parser = parse_since)]
        since: Option<std::time::SystemTime>,
        /// At most this many rows.
        #[arg(long, default_value_t = 1000)]
        limit: i64,
        /// One JSON object a line instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum StackCommand {
    /// Free a stack an update holds and cannot end: end the update as failed, record what its
    /// journal rebuilds as a version (as far as it rebuilds), and keep the journal for
    /// inspection.
    Repair {
        #[command(flatten)]
        database: Database,
        /// The stack, as PROJECT/STACK.
        stack: String,
    },
    /// List the stacks (id, project, name, versions), or with --removed the removed ones that
    /// are kept until purged (also when and by whom they were removed).
    Ls {
        #[command(flatten)]
        database: Database,
        /// The removed stacks instead of the live ones.
        #[arg(long)]
        removed: bool,
        /// Only this project's stacks.
        #[arg(long)]
        project: Option<String>,
    },
    /// Bring a removed stack back, with its versions, history, logs and secrets. Refused while
    /// a live stack holds its name.
    Restore {
        #[command(flatten)]
        database: Database,
        /// The stack, as PROJECT/STACK.
        stack: String,
        /// Which one, if several stacks of that name were removed (`stack ls --removed`).
        #[arg(long)]
        id: Option<i64>,
    },
    /// Delete for good the stacks removed longer ago than the retention period (which the
    /// service also does at start and hourly).
    Purge {
        #[command(flatten)]
        database: Database,
        /// How long a removed stack is kept.
        #[arg(long, default_value = "30d", value_parser = humantime::parse_duration)]
        removed_stack_retention: std::time::Duration,
    },
}

/// `PROJECT/STACK` as its two names.
fn project_and_stack(stack: &str) -> Result<(&str, &str)> {
    stack
        .split_once('/')
        .context("name the stack as PROJECT/STACK")
}

/// Prints stacks as a table; `removed`: with when and by whom they were removed.
fn print_stacks(stacks: &[RemovedStack], removed: bool) {
    let row = |t: [&str; 6]| {
        let [id, project, name, versions, when, by] = t;
        match removed {
            true => println!("{id:<8}  {project:<20}  {name:<20}  {versions:>8}  {when:<19}  {by}"),
            false => println!("{id:<8}  {project:<20}  {name:<20}  {versions:>8}"),
        }
    };
    row(["ID", "PROJECT", "STACK", "VERSIONS", "REMOVED (UTC)", "BY"]);
    for s in stacks {
        row([
            &s.id.to_string(),
            &s.project,
            &s.name,
            &s.versions.to_string(),
            &s.removed,
            s.removed_by.as_deref().unwrap_or("-"),
        ]);
    }
}

async fn stack_command(command: StackCommand, on_command_line: bool) -> Result<()> {
    match command {
        StackCommand::Repair { database, stack } => {
            let (project, name) = project_and_stack(&stack)?;
            let pool = connect(&database.url(on_command_line)?).await?;
            let repaired = repair(&pool, project, name).await?;
            match repaired.ended {
                Some(update) => println!(
                    "Ended update {update} of {stack} as failed; the stack is free. Its journal \
                     is kept: GET /api/v1/updates/{update}/journal."
                ),
                None => println!("No update held {stack}; it is free."),
            }
            if repaired.salvaged {
                println!(
                    "Its journal could not be rebuilt whole: the new version holds what could \
                     be (`plinth stack history` says where it stopped)."
                );
            }
        }
        StackCommand::Ls {
            database,
            removed,
            project,
        } => {
            let pool = connect(&database.url(on_command_line)?).await?;
            print_stacks(
                &list_stacks(&pool, project.as_deref(), removed).await?,
                removed,
            );
        }
        StackCommand::Restore {
            database,
            stack,
            id,
        } => {
            let (project, name) = project_and_stack(&stack)?;
            let pool = connect(&database.url(on_command_line)?).await?;
            let restored = restore(&pool, project, name, id).await?;
            println!(
                "Restored {stack} (id {}, removed {} UTC) with its {} versions.",
                restored.id, restored.removed, restored.versions
            );
        }
        StackCommand::Purge {
            database,
            removed_stack_retention,
        } => {
            let pool = connect(&database.url(on_command_line)?).await?;
            let purged = purge_removed(&pool, removed_stack_retention).await?;
            println!(
                "Purged {purged} stacks removed more than {} ago.",
                humantime::format_duration(removed_stack_retention)
            );
        }
    }
    Ok(())
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Write a new random master key to FILE (readable by its owner only); never overwrites.
    Create { file: PathBuf },
    /// Re-seal every stack's data key with a new master key and make it the database's
    /// current one, in one transaction. Run it while every replica holds both keys (`--master-key
    /// OLD --master-key NEW`), then restart them with the new key only.
    Rotate {
        #[command(flatten)]
        database: Database,
        /// The key the data keys are sealed with now (more than one if an earlier rotation
        /// was never finished).
        #[arg(long = "from", required = true)]
        from: Vec<PathBuf>,
        /// The new key (from `plinth serve key create`).
        #[arg(long = "to")]
        to: PathBuf,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create an access token for a user (created if new) and print it; it is shown only once.
    Create {
        #[command(flatten)]
        database: Database,
        #[arg(long)]
        user: String,
        /// What the token is for ("alice's laptop", "CI of repo X"), shown by `token list`.
        #[arg(long, default_value = "")]
        description: String,
        /// What it may do: `read-no-secrets` (see stacks, their history, logs and exports,
        /// secrets sealed), `read` (also open their secrets), `write` (also create stacks, run
        /// updates, cancel them, seal secrets) or `admin` (also remove stacks, read the audit
        /// log).
        #[arg(long, default_value = "write", value_parser = parse_level)]
        level: Level,
        /// How long it lasts (`90d`, `12h`); after that, requests carrying it are refused (401)
        /// saying it expired. Without it, until revoked.
        #[arg(long, value_parser = parse_lifetime)]
        expires: Option<std::time::Duration>,
        /// Only the stacks of this project.
        #[arg(long)]
        project: Option<String>,
        /// Only this stack (of `--project`).
        #[arg(long, requires = "project")]
        stack: Option<String>,
    },
    /// List the tokens (ids, users, grants, status, last use, descriptions), revoked and expired
    /// ones included, never the tokens themselves.
    List {
        #[command(flatten)]
        database: Database,
        /// Only this user's tokens.
        #[arg(long)]
        user: Option<String>,
    },
    /// Revoke a token by its id (from `token list`), or every token of a user: their requests
    /// are refused from now on.
    Revoke {
        #[command(flatten)]
        database: Database,
        /// The id of the token, as `token list` shows it.
        #[arg(required_unless_present = "user", conflicts_with = "user")]
        id: Option<String>,
        /// Revoke every token of this user.
        #[arg(long)]
        user: Option<String>,
    },
}

/// The longest a token may last: a longer one is a token without expiry in disguise.
const LONGEST_LIFETIME: std::time::Duration = std::time::Duration::from_secs(10 * 366 * 86_400);

fn parse_lifetime(text: &str) -> Result<std::time::Duration, String> {
    let lifetime = humantime::parse_duration(text)
        .map_err(|e| format!("`{text}` is not a duration like 90d or 12h: {e}"))?;
    if lifetime.is_zero() || lifetime > LONGEST_LIFETIME {
        return Err(format!(
            "a token lasts more than 0s and at most 10 years, not `{text}`: leave --expires out \
             for one that lasts until revoked"
        ));
    }
    Ok(lifetime)
}

fn parse_level(name: &str) -> Result<Level, String> {
    Level::parse(name)
        .ok_or_else(|| format!("`{name}` is not a level: read-no-secrets, read, write or admin"))
}

/// Prints tokens as a table.
fn print_tokens(tokens: &[TokenInfo]) {
    let row = |t: [&str; 7]| {
        // From the database: shown escaped, as every stored string.
        let [id, created, user, grants, status, used, description] = t.map(audit_print::escaped);
        println!(
            "{id:<12}  {created:<19}  {user:<16}  {grants:<32}  {status:<24}  {used:<16}  {description}"
        )
    };
    row([
        "ID",
        "CREATED (UTC)",
        "USER",
        "GRANTS",
        "STATUS",
        "LAST USED",
        "DESCRIPTION",
    ]);
    for t in tokens {
        row([
            &t.id,
            &t.created,
            &t.user,
            &t.scope,
            &t.status,
            &t.last_used,
            &t.description,
        ]);
    }
}

async fn token_command(command: TokenCommand, on_command_line: bool) -> Result<()> {
    match command {
        TokenCommand::Create {
            database,
            user,
            description,
            level,
            project,
            stack,
            expires,
        } => {
            let pool = connect(&database.url(on_command_line)?).await?;
            let scope = Scope {
                level,
                project,
                stack,
            };
            let (token, id) = create_token(&pool, &user, &description, &scope, expires).await?;
            // The token alone on stdout, for scripts; what to know about it on stderr.
            println!("{token}");
            eprintln!(
                "Created token {id} for {user}, granting {}{}; it is shown only this once.",
                scope.describe(),
                expires.map_or(String::new(), |d| format!(
                    ", for {}",
                    humantime::format_duration(d)
                ))
            );
        }
        TokenCommand::List { database, user } => {
            let pool = connect(&database.url(on_command_line)?).await?;
            print_tokens(&list_tokens(&pool, user.as_deref()).await?);
        }
        TokenCommand::Revoke { database, id, user } => {
            let pool = connect(&database.url(on_command_line)?).await?;
            let what = match (&id, &user) {
                (Some(id), _) => Revoke::Id(id),
                (None, user) => Revoke::User(user.as_deref().context("give a token id or --user")?),
            };
            let revoked = revoke_tokens(&pool, what).await?;
            println!("Revoked {} token(s):", revoked.len());
            print_tokens(&revoked);
        }
    }
    Ok(())
}

/// Runs `cli`; `on_command_line`: whether `--database` was given on the command line.
async fn run(cli: Cli, on_command_line: bool) -> Result<()> {
    match cli.command {
        Some(Command::Token(command)) => token_command(command, on_command_line).await,
        Some(Command::Audit {
            database,
            stack,
            user,
            since,
            limit,
            json,
        }) => {
            let (project, stack) = match stack {
                Some(named) => match named.split_once('/') {
                    Some((p, s)) => (Some(p.to_owned()), Some(s.to_owned())),
                    None => (Some(named), None),
                },
                None => (None, None),
            };
            let filter = AuditFilter {
                project,
                stack,
                user,
                since,
                before: None,
                limit: limit.max(1),
            };
            let pool = connect(&database.url(on_command_line)?).await?;
            let entries = list_audit(&pool, &filter)
                .await
                .context("cannot read the audit log")?;
            audit_print::print(&entries, json);
            Ok(())
        }
        Some(Command::Stack(command)) => stack_command(command, on_command_line).await,
        Some(Command::Policy(command)) => policy_command::run(command, on_command_line).await,
        Some(Command::Key(KeyCommand::Create { file })) => {
            MasterKey::create(&file)?;
            println!(
                "Created the master key {}: start the service with `--master-key {}`, and keep \
                 a copy somewhere safe; without it no service-managed secret can be opened.",
                file.display(),
                file.display()
            );
            Ok(())
        }
        Some(Command::Key(KeyCommand::Rotate { database, from, to })) => {
            let from = MasterKeys::load(&from)?;
            let new = MasterKey::load(&to)?;
            let pool = connect(&database.url(on_command_line)?).await?;
            let rotated = rotate(&pool, &from, &new).await?;
            println!(
                "Re-sealed {} stack keys with {} ({} already were); it is now the database's \
                 master key. Restart every replica with `--master-key {}` only.",
                rotated.resealed,
                to.display(),
                rotated.already,
                to.display()
            );
            Ok(())
        }
        None => {
            let args = cli.serve;
            // Before the database: a mistake in it is said at once, whatever else is wrong.
            let oidc = match &args.oidc_config {
                Some(path) => Some(Arc::new(OidcConfig::load(path)?)),
                None => None,
            };
            let pool = connect(&args.database.url(on_command_line)?).await?;
            // Before serving: a stack past its retention is gone once the service answers.
            let retention = args.removed_stack_retention;
            let purged = purge_removed(&pool, retention).await?;
            if purged > 0 {
                tracing::info!("purged {purged} stacks removed more than {retention:?} ago");
            }
            tokio::spawn(purge_periodically(
                pool.clone(),
                retention,
                std::time::Duration::from_secs(3600),
            ));
            let master_keys = if args.master_key.is_empty() {
                None
            } else {
                let keys = MasterKeys::load(&args.master_key)?;
                keys.check(&pool).await?;
                Some(Arc::new(keys))
            };
            let options = Options {
                lease_seconds: args.lease.as_secs_f64(),
                body_limit: args.body_limit,
                master_keys,
                bodies_in_flight: args.bodies_in_flight,
                trust_forwarded_for: args.trust_forwarded_for,
                oidc,
                removed_stack_retention: retention,
            };
            let metrics = Metrics::new();
            if let Some(address) = args.metrics_listen {
                let listener = tokio::net::TcpListener::bind(address)
                    .await
                    .with_context(|| format!("cannot listen for metrics on {address}"))?;
                // Before the line below, which tests and scripts wait for.
                println!("metrics on http://{}/metrics", listener.local_addr()?);
                let metrics = metrics_router(pool.clone(), metrics.clone());
                tokio::spawn(async move {
                    if let Err(e) = axum::serve(listener, metrics).await {
                        tracing::error!("the metrics listener failed: {e}");
                    }
                });
            }
            let listener = tokio::net::TcpListener::bind(args.listen)
                .await
                .with_context(|| format!("cannot listen on {}", args.listen))?;
            let local = listener.local_addr()?;
            // Answers go out at once: an answer written in pieces (a gzipped one is) must not
            // wait for the client's delayed acknowledgement of the first piece (Nagle).
            let listener = listener.tap_io(|tcp| {
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::warn!("cannot set TCP_NODELAY on a connection: {e}");
                }
            });
            // Tests and scripts read the address from this line (useful with port 0).
            println!("listening on http://{local}");
            // The peer's address is each request's source in the audit log.
            let app =
                router(pool, options, metrics).into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await
                .context("the service failed")
        }
    }
}

#[global_allocator]
static GLOBAL: plinth_alloc::MiMalloc = plinth_alloc::MiMalloc;

/// How long freed pages wait before they go back to the system: a second, mimalloc v3's
/// default, against v2's 10 ms. Folding an update into a version allocates a checkpoint's size
/// several times over (5 MB at 10,000 resources); with 10 ms every fold met fresh pages, which
/// the kernel zeroed for three quarters of its time, and a fold of 10,000 creates took 78 ms
/// (median of 9) against 66 ms kept a second, an `up` on the service 0.81 s against 0.73 s.
/// A service runs for days: what a burst took is given back a second after it.
const KEEP_FREED_PAGES_MS: std::ffi::c_long = 1000;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    plinth_alloc::keep_freed_pages(KEEP_FREED_PAGES_MS);
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // Warnings, and a line per request the service answers.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,plinth_service::request=info")
    });
    // Colours only for a terminal: a file or a log collector would get escape codes.
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match cli.serve.log_format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().flatten_event(true).init(),
    }
    match run(cli, database_on_command_line(&matches)).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
