//! `plinth`: infrastructure as code with sandboxed WebAssembly providers and programs.

mod about;
mod build;
mod cli_reference;
mod compiler;
mod config_path;
mod deploy;
mod display;
mod exit;
mod gen_sdk;
mod grant_advice;
mod guest;
mod home;
mod import;
mod journal_notes;
mod json_events;
mod limits_spec;
mod log_writer;
mod login;
mod logs;
mod new;
mod pending;
mod plan_file;
mod plugin;
mod policy;
mod program_spec;
mod project;
mod rollback;
mod run_metadata;
mod run_options;
mod secrets;
mod serve;
mod stack;
mod stack_config;
mod stack_graph;
mod stack_transfer;
mod state;
mod targets;
mod token;
mod version;
mod yaml_file;

use plinth_engine::names::StackName;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use plinth_backend::{Backend, StackRef};
use plinth_engine::shown::{escape_controls, escape_controls_keeping_lines};

use crate::project::Project;

#[derive(Parser)]
#[command(
    name = "plinth",
    version,
    long_version = version::LONG_VERSION.as_str(),
    about = "Infrastructure as code with sandboxed WebAssembly plugins"
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct GlobalArgs {
    /// Run as if started in this directory.
    #[arg(short = 'C', long, global = true, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The stack to operate on (default: the selected stack).
    #[arg(short, long, global = true, env = "PLINTH_STACK")]
    stack: Option<StackName>,
    /// Log verbosely (also: RUST_LOG).
    #[arg(short, long, global = true)]
    verbose: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Make a project from a template (`plinth new --list` shows them), with its first stack:
    /// `plinth new rust my-project`, then `plinth up` in it.
    New(new::NewArgs),
    /// Manage stacks.
    #[command(subcommand)]
    Stack(stack::StackCommand),
    /// Show the stack's configuration (secrets masked), or manage it.
    Config(stack::ConfigArgs),
    /// Show what `up` would change, without changing anything.
    Preview(deploy::PreviewArgs),
    /// Create or update the stack's resources to match the program.
    Up(deploy::UpArgs),
    /// Delete every resource of the stack (or the targeted ones).
    Destroy(deploy::DestroyArgs),
    /// Read every resource back through its provider and record what exists: drift, resources
    /// gone out of band, interrupted operations.
    Refresh(deploy::RefreshArgs),
    /// Adopt resources that already exist: read each through its provider, add it to the
    /// stack (after a preview, confirmed), and print the code that declares it in the program's
    /// language: `plinth import postgresql:Role app app_user`, or many with `--file`.
    Import(import::ImportArgs),
    /// Install, list, inspect and remove plugins; pin the project's in Plinth.lock.
    #[command(subcommand)]
    Plugin(plugin::PluginCommand),
    /// Choose the backend that stores stacks: `file://<directory>` (default `file://~/.plinth`),
    /// or a `plinth serve` service at `http(s)://HOST[:PORT]` (with `--token`,
    /// PLINTH_ACCESS_TOKEN, or a token asked for).
    Login(login::LoginArgs),
    /// Forget a backend chosen with `plinth login`; commands fall back to the default.
    Logout(login::LogoutArgs),
    /// Show the current user and backend.
    Whoami,
    /// Make, list and revoke your own access tokens on a plinth service.
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Run the team backend: stacks in PostgreSQL behind any number of stateless replicas
    /// (`plinth serve --database postgres://… [--listen ADDR] [--lease 5m]`,
    /// `plinth serve token create --database postgres://… --user NAME`).
    #[command(disable_help_flag = true)]
    Serve {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Show the events of the stack's latest update (or of `--update N`).
    Logs(logs::LogsArgs),
    /// Generate a typed SDK for a provider from its schema: a crate with a typed builder per
    /// resource type.
    GenSdk(gen_sdk::GenSdkArgs),
    /// Edit the stack's state by hand: forget a resource, protect or unprotect one.
    #[command(subcommand)]
    State(state::StateCommand),
    /// What a bug report needs: plinth's version, the backend, the project's and the installed
    /// plugins (with their digests), and the toolchains that build guests.
    About(about::AboutArgs),
    /// Print the shell completion script for `plinth`: e.g. `plinth completion bash >
    /// ~/.local/share/bash-completion/completions/plinth`, or `source <(plinth completion zsh)`.
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Remove the stack's update lock: one left by an update that is gone, or, with
    /// confirmation, one a running update holds.
    Cancel {
        /// Do not ask for confirmation.
        #[arg(short, long)]
        yes: bool,
    },
    /// Print the book's CLI reference (docs/cli-reference.md), written from these definitions.
    #[command(hide = true)]
    CliReference,
}

/// What every command needs: the project, the backend, the chosen stack.
pub struct Workspace {
    pub project: Project,
    pub backend: std::sync::Arc<dyn Backend>,
    /// The providers of the stacks' secrets (the backend seals with them too).
    pub secrets: std::sync::Arc<secrets::ProjectSecrets>,
    stack_flag: Option<StackName>,
    /// When the command started: the duration it reports counts from here, builds included.
    pub started: std::time::Instant,
}

impl GlobalArgs {
    /// The directory plinth runs in: `--cwd`, or the current one.
    fn start_dir(&self) -> Result<PathBuf> {
        match &self.cwd {
            Some(dir) => Ok(dir.clone()),
            None => std::env::current_dir().context("cannot read the current directory"),
        }
    }
}

impl Workspace {
    fn open(global: &GlobalArgs) -> Result<Workspace> {
        Workspace::open_in(&global.start_dir()?, global.stack.clone())
    }

    /// The workspace of the project in (or above) `dir`, on the stack `stack` if named.
    fn open_in(dir: &std::path::Path, stack: Option<StackName>) -> Result<Workspace> {
        let started = std::time::Instant::now();
        let project = Project::find(dir)?;
        let service = login::current_service()?;
        let secrets = std::sync::Arc::new(secrets::ProjectSecrets::new(&project, service.clone()));
        let backend = login::open_backend(service.as_ref(), secrets.clone())?;
        Ok(Workspace {
            project,
            backend,
            secrets,
            stack_flag: stack,
            started,
        })
    }

    /// The stack named by `--stack`, or the selected one; it must exist.
    pub fn stack(&self) -> Result<StackRef> {
        let project = self.project.name();
        let stack = match &self.stack_flag {
            Some(s) => s.clone(),
            None => self.backend.selected_stack(project).with_context(|| {
                format!(
                    "no stack selected for project `{project}`; run `plinth stack init NAME` or `plinth stack select NAME`"
                )
            })?,
        };
        Ok(self.backend.get_stack(project, &stack)?)
    }
}

/// Asks a yes/no question on the terminal; without one, fails naming `flag`.
pub fn confirm(question: &str, flag: &str) -> Result<bool> {
    if !std::io::stdin().is_terminal() {
        return Err(exit::error(
            exit::REFUSED,
            format!("no terminal to confirm on: pass {flag} to proceed without a prompt"),
        ));
    }
    print!("{question} [y/N] ");
    std::io::Write::flush(&mut std::io::stdout())?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}

fn init_logging(verbose: bool) {
    let default = if verbose { "plinth=debug,info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Log lines carry what guests print: written escaped, so plinth's own colours are off.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(log_writer::EscapingStderr)
        .with_target(false)
        .init();
}

async fn run(cli: Cli) -> Result<ExitCode> {
    // Plugins are managed outside any project: only `plugin lock` looks for one.
    let open = || Workspace::open(&cli.global);
    match cli.command {
        Command::New(args) => new::run(&cli.global, args).await,
        Command::Stack(cmd) => stack::run_stack(&open()?, cmd),
        Command::Config(cmd) => stack::run_config(&open()?, cmd),
        Command::Preview(args) => deploy::preview(open, args).await,
        Command::Up(args) => deploy::up(open, args).await,
        Command::Destroy(args) => deploy::destroy(open, args).await,
        Command::Refresh(args) => deploy::refresh(open, args).await,
        Command::Import(args) => import::run(&cli.global.start_dir()?, open, args).await,
        Command::Login(args) => login::login(args, &cli.global.start_dir()?),
        Command::Logout(args) => login::logout(args, &cli.global.start_dir()?),
        Command::Whoami => login::whoami(),
        Command::Completion { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "plinth", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::About(args) => about::about(&cli.global.start_dir()?, args),
        Command::Token(cmd) => token::run(cmd),
        Command::Serve { args } => serve::serve(args),
        Command::Logs(args) => logs::logs(&open()?, args),
        Command::State(cmd) => state::run_state(&open()?, cmd),
        Command::Cancel { yes } => cancel(&open()?, yes),
        Command::CliReference => {
            let command = <Cli as clap::CommandFactory>::command();
            print!("{}", cli_reference::markdown(command));
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugin(cmd) => plugin::run(&cli.global.start_dir()?, cmd).await,
        Command::GenSdk(args) => gen_sdk::run(&cli.global.start_dir()?, args).await,
    }
}

fn cancel(ws: &Workspace, yes: bool) -> Result<ExitCode> {
    let stack = ws.stack()?;
    let Some(holder) = ws.backend.holder(&stack)? else {
        println!("Stack `{stack}` is not locked.");
        return Ok(ExitCode::SUCCESS);
    };
    // The lock file (or the service) says who holds it: shown escaped.
    let who = holder.info.map_or_else(
        || "an unknown process".to_owned(),
        |info| escape_controls(&info.to_string()).into_owned(),
    );
    if !holder.running {
        ws.backend.cancel(&stack)?;
        println!("Removed the lock of stack `{stack}` left by {who}, which no longer runs.");
        return Ok(ExitCode::SUCCESS);
    }
    println!("Stack `{stack}` is locked by {who}, which is still running.");
    if !yes
        && !confirm(
            "Break the lock anyway? Another update could then run alongside it.",
            "--yes",
        )?
    {
        println!("Left the lock in place.");
        return Ok(exit::cancelled());
    }
    ws.backend.cancel(&stack)?;
    println!("Broke the lock of stack `{stack}`.");
    Ok(ExitCode::SUCCESS)
}

#[global_allocator]
static GLOBAL: plinth_alloc::MiMalloc = plinth_alloc::MiMalloc;

/// How long freed pages wait before they go back to the system: mimalloc's default, 10 ms, is
/// long against the steps of an update, whose pages are mostly not reused by the next, and an
/// update of 10,000 resources peaked at 135 to 150 MB; with 2 ms it peaks at 120 to 130 MB for
/// no measurable time (0 ms: about 85 MB, but 20-25% slower from page faults).
const KEEP_FREED_PAGES_MS: std::ffi::c_long = 2;

fn main() -> ExitCode {
    plinth_alloc::keep_freed_pages(KEEP_FREED_PAGES_MS);
    // `plinth stack history | head`: a closed pipe ends plinth quietly, as it does other Unix
    // tools, instead of making `println!` panic.
    // SAFETY: restoring the default disposition of SIGPIPE at startup, before any thread runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // An argument may hold control characters, and clap's message repeats it.
        Err(e) if e.use_stderr() => {
            eprint!("{}", escape_controls_keeping_lines(&e.render().to_string()));
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
        Err(e) => e.exit(),
    };
    init_logging(cli.global.verbose);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            // Its lines are plinth's: what a guest or a state file put in them is escaped.
            let message = escape_controls_keeping_lines(&format!("{e:#}")).into_owned();
            eprintln!("{} {message}", console::style("error:").red().bold());
            exit::code_of(&e)
        }
    }
}
