//! `plinth preview`, `plinth up` and `plinth destroy`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use clap::Args;
use console::style;
use plinth_backend::{HistoryEntry, OperationKind, OperationResult};
use plinth_engine::deployment::{self, Options, Outcome};
use plinth_engine::events::EventSink;
use plinth_engine::journal::SnapshotManager;
use plinth_engine::program::{EmptyProgram, Program};
use plinth_engine::value::Value;
use plinth_runtime::{Limits, Runtime};
use tokio_util::sync::CancellationToken;

use crate::build::component_path;
use crate::plugins::PluginProviders;
use crate::secrets::open_config;
use crate::{Workspace, confirm, display};

#[derive(Args)]
pub struct CommonArgs {
    /// Maximum number of resource operations in flight.
    #[arg(short, long, default_value_t = default_parallel())]
    parallel: usize,
    /// Also list resources that do not change.
    #[arg(long)]
    show_sames: bool,
}

fn default_parallel() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get() * 4)
}

#[derive(Args)]
pub struct PreviewArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Exit with an error if the preview finds any change (for CI).
    #[arg(long)]
    expect_no_changes: bool,
}

#[derive(Args)]
pub struct UpArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    yes: bool,
    /// Do not show a preview first.
    #[arg(long)]
    skip_preview: bool,
}

#[derive(Args)]
pub struct DestroyArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    yes: bool,
    /// Do not show a preview first.
    #[arg(long)]
    skip_preview: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Update,
    Destroy,
}

/// The plinth home: plugin and compiled-artifact caches live here.
fn plinth_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("PLINTH_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .context("cannot find a home directory; set PLINTH_HOME")?;
    Ok(PathBuf::from(home).join(".plinth"))
}

pub async fn preview(ws: &Workspace, args: PreviewArgs) -> Result<ExitCode> {
    let outcome = Deployer::new(ws)?
        .run(Kind::Update, true, &args.common)
        .await?;
    if args.expect_no_changes && outcome.changes.changes() > 0 {
        bail!(
            "the preview found {} changes, but --expect-no-changes was given",
            outcome.changes.changes()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn up(ws: &Workspace, args: UpArgs) -> Result<ExitCode> {
    run_confirmed(ws, Kind::Update, &args.common, args.yes, args.skip_preview).await
}

pub async fn destroy(ws: &Workspace, args: DestroyArgs) -> Result<ExitCode> {
    run_confirmed(ws, Kind::Destroy, &args.common, args.yes, args.skip_preview).await
}

async fn run_confirmed(
    ws: &Workspace,
    kind: Kind,
    common: &CommonArgs,
    yes: bool,
    skip_preview: bool,
) -> Result<ExitCode> {
    let deployer = Deployer::new(ws)?;
    // A stack that has held secrets needs its passphrase before anything starts, not at the
    // first secret the update records.
    let stack = &deployer.stack;
    if ws.project.stack_config(stack).encryption_salt()?.is_some() {
        ws.backend.crypter(stack).unlock()?;
    }
    if !skip_preview {
        let plan = deployer.run(kind, true, common).await?;
        if plan.changes.changes() == 0 {
            println!("No changes to make.");
        }
    }
    if !yes {
        let question = match kind {
            Kind::Update => "Do you want to perform this update?",
            Kind::Destroy => "Do you want to delete every resource of this stack?",
        };
        if !confirm(question, "--yes")? {
            println!("Cancelled; nothing was changed.");
            return Ok(ExitCode::FAILURE);
        }
    }
    deployer.run(kind, false, common).await?;
    Ok(ExitCode::SUCCESS)
}

/// Everything one deployment needs, set up once per command.
struct Deployer<'a> {
    ws: &'a Workspace,
    stack: String,
    config: std::collections::BTreeMap<String, Value>,
    runtime: Arc<Runtime>,
    providers: Arc<PluginProviders>,
}

impl<'a> Deployer<'a> {
    fn new(ws: &'a Workspace) -> Result<Deployer<'a>> {
        let stack = ws.stack()?;
        let config = ws.project.stack_config(&stack).values()?;
        let config = open_config(config, ws.backend.crypter(&stack).as_ref())?;
        let runtime = Arc::new(Runtime::new(plinth_home()?.join("cache"))?);
        let providers = Arc::new(PluginProviders::new(
            runtime.clone(),
            &ws.project,
            config.clone(),
        ));
        Ok(Deployer {
            ws,
            stack,
            config,
            runtime,
            providers,
        })
    }

    async fn program(&self, kind: Kind) -> Result<Box<dyn Program>> {
        if kind == Kind::Destroy {
            return Ok(Box::new(EmptyProgram));
        }
        let source = self.ws.project.resolve(&self.ws.project.file.program);
        let path =
            tokio::task::spawn_blocking(move || component_path(&source, "program")).await??;
        Ok(self.runtime.load_program(&path, Limits::default()).await?)
    }

    async fn run(&self, kind: Kind, preview: bool, common: &CommonArgs) -> Result<Outcome> {
        let project = self.ws.project.name();
        let backend = &self.ws.backend;
        let program = self.program(kind).await?;
        // Lock before loading: a snapshot loaded outside the lock could be overtaken by the
        // update holding it, and written back over that update's work.
        let lock = if preview {
            None
        } else {
            let command = if kind == Kind::Destroy {
                "destroy"
            } else {
                "up"
            };
            Some(backend.lock(project, &self.stack, command)?)
        };
        let loaded = backend.load(project, &self.stack)?;
        if loaded.recovered {
            eprintln!(
                "{} stack `{}` had an interrupted update; its journal was replayed",
                style("warning:").yellow().bold(),
                self.stack
            );
        }
        let action = match (kind, preview) {
            (Kind::Update, true) => "Previewing update of",
            (Kind::Update, false) => "Updating",
            (Kind::Destroy, true) => "Previewing destroy of",
            (Kind::Destroy, false) => "Destroying",
        };
        println!(
            "{} stack {} (project {}):\n",
            action,
            style(&self.stack).bold(),
            style(project).bold()
        );
        let recorder = match &lock {
            None => None,
            Some(lock) => {
                let persister = backend.begin_update(project, &self.stack, &loaded, lock)?;
                Some(SnapshotManager::start(loaded.snapshot.clone(), persister))
            }
        };
        let started = SystemTime::now();
        let (events, receiver) = EventSink::new();
        let display = tokio::spawn(display::render(receiver, preview, common.show_sames));
        let cancel = CancellationToken::new();
        let interrupts = tokio::spawn(watch_interrupts(cancel.clone()));
        let options = Options {
            project: project.to_owned(),
            stack: self.stack.clone(),
            preview,
            parallel: common.parallel,
            config: self.config.clone(),
        };
        let outcome = deployment::run(
            options,
            loaded.snapshot,
            program,
            self.providers.clone(),
            recorder,
            events,
            cancel,
        )
        .await;
        interrupts.abort();
        let _ = display.await;
        if lock.is_some() {
            let kind = match kind {
                Kind::Update => OperationKind::Update,
                Kind::Destroy => OperationKind::Destroy,
            };
            let result = if outcome.errors.is_empty() {
                OperationResult::Succeeded
            } else {
                OperationResult::Failed
            };
            let entry = HistoryEntry::ended_now(kind, started, result, outcome.changes.clone());
            backend.append_history(project, &self.stack, &entry)?;
        }
        drop(lock);
        let what = action.to_lowercase();
        let what = what.trim_end_matches(" of");
        match outcome.errors.as_slice() {
            [] => {}
            [one] => bail!("{what} failed: {one}"),
            many => bail!(
                "{what} failed with {} errors:\n  {}",
                many.len(),
                many.join("\n  ")
            ),
        }
        Ok(outcome)
    }
}

/// First Ctrl-C: stop starting new steps. Second: abort at once; pending operations stay
/// recorded in the journal.
async fn watch_interrupts(cancel: CancellationToken) {
    if tokio::signal::ctrl_c().await.is_ok() {
        cancel.cancel();
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("aborted");
            std::process::exit(130);
        }
    }
}
