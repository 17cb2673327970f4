//! `plinth preview`, `plinth up`, `plinth destroy` and `plinth refresh`.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use anyhow::{Result, bail};
use clap::Args;
use console::style;
use plinth_backend::{
    AppliedPlan, ConfigKey, HistoryEntry, RunMetadata, UpdateKind, UpdateResult, UsedPlugins,
};
use plinth_backend::{Backend, EventLog, StackRef, Update};
use plinth_engine::deployment::{self, MAX_PARALLEL, Options, Targets};
use plinth_engine::events::{ChangeSummary, Event, EventSink};
use plinth_engine::journal::SnapshotManager;
use plinth_engine::plan::{PlanGuard, PlannedStep};
use plinth_engine::policy::{PackRun, PolicyPacks};
use plinth_engine::program::{EmptyProgram, Program};
use plinth_engine::refresh::{self, RefreshOptions};
use plinth_engine::resource::is_recordable_id;
use plinth_engine::shown::escape_controls;
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::Value;
use plinth_runtime::Runtime;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::build::{built_sha256, program_build};
use crate::compiler::Compiler;
use crate::exit;
use crate::grant_advice::PlinthYamlAdvice;
use crate::home::{artifact_cache, plinth_home};
use crate::json_events::{JsonEvent, JsonStream};
use crate::plan_file::{self, Plan, PlanOptions, StateMark};
use crate::plugin::providers::PluginProviders;
use crate::plugin::resolve::{pins, resolve};
use crate::plugin::{lockfile, registry, store::Store};
use crate::policy::{self, PolicyArgs};
use crate::run_metadata::MetadataArgs;
use crate::run_options::RunOptions;
use crate::secrets::{open_config, unlock_for_update};
use crate::{Workspace, confirm, display, journal_notes, pending, targets};

pub(crate) mod adopt;

#[derive(Args)]
pub struct CommonArgs {
    /// Maximum number of resource operations in flight (1 to 100000).
    #[arg(short, long, default_value_t = DEFAULT_PARALLEL, value_parser = parallel_in_range)]
    parallel: usize,
    /// Also list resources that do not change.
    #[arg(long)]
    show_sames: bool,
    /// List resources one line each, as their steps finish (the default without a terminal).
    #[arg(long, conflicts_with = "tree")]
    flat: bool,
    /// Show resources as a tree: the stack, its components, their children (the default on a
    /// terminal).
    #[arg(long)]
    tree: bool,
    /// Change only this resource (a URN, or the name of a resource in the state); repeatable.
    /// Every other resource is left exactly as it is.
    #[arg(long = "target", value_name = "URN")]
    targets: Vec<String>,
    /// Also target every resource that depends on a targeted one.
    #[arg(long, requires = "targets")]
    target_dependents: bool,
    #[command(flatten)]
    run: RunOptions,
}

impl CommonArgs {
    fn view(&self) -> display::View {
        display::View {
            show_sames: self.show_sames,
            tree: display::tree_wanted(self.flat, self.tree),
            diff: self.run.diff,
        }
    }

    /// The resources `--target` or `--exclude` name, resolved in `snapshot`.
    fn targets(&self, snapshot: &Snapshot) -> Result<Option<Targets>> {
        let (queries, dependents, excluded) = if self.run.exclude.is_empty() {
            (&self.targets, self.target_dependents, false)
        } else {
            (&self.run.exclude, self.run.exclude_dependents, true)
        };
        Ok(targets::resolve(snapshot, queries)?.map(|urns| Targets {
            urns,
            dependents,
            excluded,
        }))
    }
}

#[derive(Args)]
pub struct ChangeArgs {
    /// Replace this resource even if nothing about it changed; repeatable.
    #[arg(long = "replace", value_name = "URN")]
    replace: Vec<String>,
    /// After a failure, go on with every step that does not depend on it, then fail.
    #[arg(long)]
    continue_on_error: bool,
    #[command(flatten)]
    policy: PolicyArgs,
}

/// Provider calls mostly wait on remote APIs (and a Wasm provider's own work takes
/// microseconds), so the bound is not tied to the cores: it keeps an API from being flooded,
/// while each journal flush still carries the starts of many steps at once.
const DEFAULT_PARALLEL: usize = 64;

/// `--parallel`: a count from 1 to [`MAX_PARALLEL`] (a team service holds each update's
/// operations in flight, and refuses more).
fn parallel_in_range(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(count) if (1..=MAX_PARALLEL).contains(&count) => Ok(count),
        _ => Err(format!("expected a whole number from 1 to {MAX_PARALLEL}")),
    }
}

#[derive(Args)]
pub struct PreviewArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    change: ChangeArgs,
    /// Preview a refresh first, and the update against what it finds.
    #[arg(long)]
    refresh: bool,
    /// Exit with an error if the preview finds any change (for CI).
    #[arg(long)]
    expect_no_changes: bool,
    /// Save the plan to FILE, for `plinth up --plan FILE` to apply exactly that or nothing
    /// (with the targets or exclusions of this preview).
    #[arg(long, value_name = "FILE")]
    save_plan: Option<PathBuf>,
}

#[derive(Args)]
pub struct UpArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    change: ChangeArgs,
    /// Refresh the state from the providers first, then update against what exists.
    #[arg(long)]
    refresh: bool,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    yes: bool,
    /// Do not show a preview first.
    #[arg(long)]
    skip_preview: bool,
    /// Apply exactly the plan `plinth preview --save-plan` saved in FILE, or nothing: the
    /// preview that checks it cannot be skipped, and its options are the plan's.
    #[arg(long, value_name = "FILE", conflicts_with_all = PLAN_FIXES)]
    plan: Option<PathBuf>,
    #[command(flatten)]
    metadata: MetadataArgs,
}

/// What a saved plan fixes, which `up --plan` therefore does not take.
const PLAN_FIXES: [&str; 7] = [
    "targets",
    "target_dependents",
    "exclude",
    "exclude_dependents",
    "replace",
    "refresh",
    "skip_preview",
];

#[derive(Args)]
pub struct DestroyArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// After a failure, go on deleting everything that does not depend on it, then fail.
    #[arg(long)]
    continue_on_error: bool,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    yes: bool,
    /// Do not show a preview first.
    #[arg(long)]
    skip_preview: bool,
    #[command(flatten)]
    metadata: MetadataArgs,
}

#[derive(Args)]
pub struct RefreshArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    yes: bool,
    /// Do not show a preview first.
    #[arg(long)]
    skip_preview: bool,
    /// Exit with an error if the refresh finds any drift (for CI drift detection); records
    /// nothing.
    #[arg(long)]
    expect_no_changes: bool,
    /// Adopt what an interrupted create made, by its provider id, instead of clearing the
    /// pending create; repeatable.
    #[arg(long = "import-pending-create", value_name = "URN=ID", value_parser = parse_adoption)]
    adopt: Vec<(String, String)>,
    #[command(flatten)]
    metadata: MetadataArgs,
}

fn parse_adoption(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((_, id)) if !is_recordable_id(id) => Err(format!(
            "the id `{}` contains control characters, which no id plinth records may hold",
            escape_controls(id)
        )),
        Some((urn, id)) if !urn.is_empty() && !id.is_empty() => Ok((urn.to_owned(), id.to_owned())),
        _ => Err(format!("expected URN=ID, got `{}`", escape_controls(arg))),
    }
}

/// What a run asks of the engine beyond its kind.
#[derive(Default)]
struct Request {
    /// Refresh before the update.
    refresh_first: bool,
    replace: Vec<String>,
    continue_on_error: bool,
    /// Pending creates to adopt, as given: URN (or name) and id.
    adopt: Vec<(String, String)>,
    /// The targets or exclusions (with their dependents or not, excluded or not) instead of
    /// the command line's: a plan's.
    targets: Option<(Vec<String>, bool, bool)>,
    /// Keep what a saved plan needs: each step, the state's mark, the program's digest.
    capture: bool,
    /// The plan the state and the program must still match before anything runs.
    plan: Option<Rc<Plan>>,
    /// The policy packs to run, beside the project's.
    policy: PolicyArgs,
    /// Recorded with the history entry of each recorded phase.
    metadata: RunMetadata,
    /// Makes the program to run instead of the project's: `plinth import`'s.
    program: Option<Rc<dyn Fn() -> Box<dyn Program>>>,
}

impl Request {
    fn change(change: &ChangeArgs, refresh_first: bool) -> Request {
        Request {
            refresh_first,
            replace: change.replace.clone(),
            continue_on_error: change.continue_on_error,
            policy: change.policy.clone(),
            ..Request::default()
        }
    }
}

/// What a run did, across its phases (a refresh, then an update).
#[derive(Default)]
struct Ran {
    changes: ChangeSummary,
    /// With [`Request::capture`]: the last phase's steps, the state it started from, the
    /// program's digest.
    steps: Vec<PlannedStep>,
    state: Option<StateMark>,
    program: Option<String>,
}

/// `plinth preview`, in the workspace `open` opens.
pub async fn preview(
    open: impl FnOnce() -> Result<Workspace>,
    args: PreviewArgs,
) -> Result<ExitCode> {
    streamed(&args.common.run, open, async |ws, json| {
        preview_with(ws, &args, json).await
    })
    .await
}

async fn preview_with(
    ws: &Workspace,
    args: &PreviewArgs,
    json: Option<Arc<JsonStream>>,
) -> Result<ExitCode> {
    let request = Request {
        capture: args.save_plan.is_some(),
        ..Request::change(&args.change, args.refresh)
    };
    let deployer = Deployer::for_preview(ws, &args.common.run, json).await?;
    let outcome = (deployer.run(UpdateKind::Update, true, &args.common, &request)).await?;
    if args.expect_no_changes && outcome.changes.changes() > 0 {
        return Err(exit::error(
            exit::CHANGES,
            format!(
                "the preview found {} changes, but --expect-no-changes was given",
                outcome.changes.changes()
            ),
        ));
    }
    if let Some(path) = &args.save_plan {
        let options = PlanOptions {
            refresh: args.refresh,
            targets: args.common.targets.clone(),
            target_dependents: args.common.target_dependents,
            exclude: args.common.run.exclude.clone(),
            exclude_dependents: args.common.run.exclude_dependents,
            replace: args.change.replace.clone(),
        };
        deployer.save_plan(path, options, outcome)?;
        println!(
            "Saved the plan to {}: `plinth up --plan {0}` applies exactly it, or nothing.",
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `plinth up`, in the workspace `open` opens.
pub async fn up(open: impl FnOnce() -> Result<Workspace>, args: UpArgs) -> Result<ExitCode> {
    streamed(&args.common.run, open, async |ws, json| {
        up_with(ws, &args, json).await
    })
    .await
}

async fn up_with(ws: &Workspace, args: &UpArgs, json: Option<Arc<JsonStream>>) -> Result<ExitCode> {
    if let Some(path) = &args.plan {
        return apply_plan(ws, args, path, json).await;
    }
    let request = Request {
        metadata: args.metadata.metadata(&ws.project.dir)?,
        ..Request::change(&args.change, args.refresh)
    };
    let confirm = Confirm {
        command: "up",
        question: "Do you want to perform this update?",
        yes: args.yes,
        skip_preview: args.skip_preview,
    };
    run_confirmed(
        ws,
        UpdateKind::Update,
        &args.common,
        &request,
        confirm,
        json,
    )
    .await
}

/// `plinth destroy`, in the workspace `open` opens.
pub async fn destroy(
    open: impl FnOnce() -> Result<Workspace>,
    args: DestroyArgs,
) -> Result<ExitCode> {
    streamed(&args.common.run, open, async |ws, json| {
        destroy_with(ws, &args, json).await
    })
    .await
}

async fn destroy_with(
    ws: &Workspace,
    args: &DestroyArgs,
    json: Option<Arc<JsonStream>>,
) -> Result<ExitCode> {
    let request = Request {
        continue_on_error: args.continue_on_error,
        metadata: args.metadata.metadata(&ws.project.dir)?,
        ..Request::default()
    };
    let question = if args.common.targets.is_empty() && args.common.run.exclude.is_empty() {
        "Do you want to delete every resource of this stack?"
    } else {
        "Do you want to delete the targeted resources?"
    };
    let confirm = Confirm {
        command: "destroy",
        question,
        yes: args.yes,
        skip_preview: args.skip_preview,
    };
    run_confirmed(
        ws,
        UpdateKind::Destroy,
        &args.common,
        &request,
        confirm,
        json,
    )
    .await
}

/// `plinth refresh`, in the workspace `open` opens.
pub async fn refresh(
    open: impl FnOnce() -> Result<Workspace>,
    args: RefreshArgs,
) -> Result<ExitCode> {
    streamed(&args.common.run, open, async |ws, json| {
        refresh_with(ws, &args, json).await
    })
    .await
}

async fn refresh_with(
    ws: &Workspace,
    args: &RefreshArgs,
    json: Option<Arc<JsonStream>>,
) -> Result<ExitCode> {
    let request = Request {
        adopt: args.adopt.clone(),
        metadata: args.metadata.metadata(&ws.project.dir)?,
        ..Request::default()
    };
    if args.expect_no_changes {
        let outcome = Deployer::for_preview(ws, &args.common.run, json)
            .await?
            .run(UpdateKind::Refresh, true, &args.common, &request)
            .await?;
        if outcome.changes.changes() > 0 {
            return Err(exit::error(
                exit::CHANGES,
                format!(
                    "the refresh found {} resources that drifted or are gone, but \
                     --expect-no-changes was given",
                    outcome.changes.changes()
                ),
            ));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let confirm = Confirm {
        command: "refresh",
        question: "Do you want to record what the refresh found?",
        yes: args.yes,
        skip_preview: args.skip_preview,
    };
    run_confirmed(
        ws,
        UpdateKind::Refresh,
        &args.common,
        &request,
        confirm,
        json,
    )
    .await
}

/// Runs a command in the workspace `open` opens, with `--json`'s stream if asked for. With
/// `--json`, an error (opening the workspace included) is the stream's last line; it is shown on
/// stderr too.
async fn streamed(
    run: &RunOptions,
    open: impl FnOnce() -> Result<Workspace>,
    command: impl AsyncFnOnce(&Workspace, Option<Arc<JsonStream>>) -> Result<ExitCode>,
) -> Result<ExitCode> {
    if run.skip_typecheck {
        crate::guest::skip_typecheck();
    }
    let json = run.json_stream()?;
    let result = match open() {
        Ok(ws) => command(&ws, json.clone()).await,
        Err(e) => Err(e),
    };
    if let (Some(json), Err(error)) = (json.as_deref(), &result) {
        json.write(&JsonEvent::Error {
            message: format!("{error:#}"),
        });
    }
    result
}

/// `up --plan`: a preview first, compared with the plan; then, if nothing differs, the update,
/// which again refuses to start unless its state is the plan's. See docs/ci.md.
async fn apply_plan(
    ws: &Workspace,
    args: &UpArgs,
    path: &Path,
    json: Option<Arc<JsonStream>>,
) -> Result<ExitCode> {
    let stack = ws.stack()?;
    let (project, name, url) = (
        ws.project.name().to_string(),
        stack.name.to_string(),
        ws.backend.url(),
    );
    let crypter = ws.backend.crypter(&stack);
    let plan = Plan::read(path, (&project, &name, &url), crypter.as_ref())?;
    let deployer = Deployer::for_update(ws, "up", &args.common.run, json).await?;
    plan.check_config(&deployer.config)?;
    let request = Request {
        refresh_first: plan.options.refresh,
        replace: plan.options.replace.clone(),
        continue_on_error: args.change.continue_on_error,
        targets: Some(plan.options.selection()),
        capture: true,
        plan: Some(Rc::new(plan)),
        metadata: args.metadata.metadata(&ws.project.dir)?,
        ..Request::default()
    };
    let plan = request.plan.clone().expect("set above");
    let now = (deployer.run(UpdateKind::Update, true, &args.common, &request)).await?;
    plan.check_plugins(&deployer.used.list())?;
    plan.check_steps(&now.steps)?;
    println!("The plan {} matches the preview.", path.display());
    if now.changes.changes() == 0 {
        println!("No changes to make.");
    }
    let asked = Instant::now();
    if !args.yes && !confirm("Do you want to apply this plan?", "--yes")? {
        println!("Cancelled; nothing was changed.");
        return Ok(crate::exit::cancelled());
    }
    (deployer.started).set(deployer.started.get() + asked.elapsed());
    let request = Request {
        capture: false,
        ..request
    };
    deployer
        .run(UpdateKind::Update, false, &args.common, &request)
        .await?;
    Ok(ExitCode::SUCCESS)
}

/// How a command that changes the stack asks before it does.
struct Confirm {
    /// The command, as the stack's lock names it while it runs.
    command: &'static str,
    question: &'static str,
    yes: bool,
    skip_preview: bool,
}

async fn run_confirmed(
    ws: &Workspace,
    kind: UpdateKind,
    common: &CommonArgs,
    request: &Request,
    how: Confirm,
    json: Option<Arc<JsonStream>>,
) -> Result<ExitCode> {
    let deployer = Deployer::for_update(ws, how.command, &common.run, json).await?;
    if !how.skip_preview {
        let plan = deployer.run(kind, true, common, request).await?;
        if plan.changes.changes() == 0 {
            println!("No changes to make.");
        }
    }
    let asked = Instant::now();
    if !how.yes && !confirm(how.question, "--yes")? {
        println!("Cancelled; nothing was changed.");
        return Ok(crate::exit::cancelled());
    }
    // Time spent waiting for an answer is not the command's work.
    deployer
        .started
        .set(deployer.started.get() + asked.elapsed());
    deployer.run(kind, false, common, request).await?;
    Ok(ExitCode::SUCCESS)
}

/// Everything one deployment needs, set up once per command.
struct Deployer<'a> {
    ws: &'a Workspace,
    /// The command it runs for, as the stack's lock names it.
    command: &'static str,
    stack: StackRef,
    config: std::collections::BTreeMap<String, Value>,
    runtime: Arc<Runtime>,
    compiler: Compiler,
    providers: Arc<PluginProviders>,
    /// The plugins the run loads, for the checkpoint and the history.
    used: UsedPlugins,
    /// Where the reported duration counts from: the command's start, less any wait for a
    /// confirmation.
    started: Cell<Instant>,
    /// With `--json`, where the events go instead of the display.
    json: Option<Arc<JsonStream>>,
}

impl<'a> Deployer<'a> {
    /// For runs that only preview: they record nothing, so they need the stack's secrets only
    /// to open those its configuration or state holds.
    async fn for_preview(
        ws: &'a Workspace,
        run: &RunOptions,
        json: Option<Arc<JsonStream>>,
    ) -> Result<Deployer<'a>> {
        Deployer::new(ws, "preview", ws.stack()?, run, json).await
    }

    /// For runs that record what they do: the stack's secrets must work before anything
    /// starts.
    async fn for_update(
        ws: &'a Workspace,
        command: &'static str,
        run: &RunOptions,
        json: Option<Arc<JsonStream>>,
    ) -> Result<Deployer<'a>> {
        let stack = ws.stack()?;
        unlock_for_update(ws.backend.as_ref(), &stack)?;
        Deployer::new(ws, command, stack, run, json).await
    }

    async fn new(
        ws: &'a Workspace,
        command: &'static str,
        stack: StackRef,
        run: &RunOptions,
        json: Option<Arc<JsonStream>>,
    ) -> Result<Deployer<'a>> {
        let config = ws.project.stack_config(&stack.name).values()?;
        let config = open_config(config, ws.backend.crypter(&stack).as_ref())?;
        let options = registry::Options {
            accept_capabilities: run.accept_capabilities,
            ..registry::Options::default()
        };
        let mut resolved = resolve(&ws.project, &Store::in_home(&plinth_home()?), &options).await?;
        crate::plugin::trusted::check(&ws.project, &mut resolved)?;
        if let Some(note) = lockfile::verify(&ws.project.dir, &pins(&resolved))? {
            // Under `--json`, stdout carries only the event stream.
            match json {
                Some(_) => eprintln!("{note}"),
                None => println!("{note}"),
            }
        }
        let runtime = Arc::new(
            Runtime::new(artifact_cache()?)?.with_grant_advice(Arc::new(PlinthYamlAdvice)),
        );
        let used = UsedPlugins::default();
        let providers = Arc::new(PluginProviders::new(
            runtime.clone(),
            &ws.project,
            &resolved,
            config.clone(),
            used.clone(),
            run.compiler,
        ));
        Ok(Deployer {
            ws,
            command,
            stack,
            config,
            runtime,
            compiler: run.compiler,
            providers,
            used,
            started: Cell::new(ws.started),
            json,
        })
    }

    /// The program to run; with a plan's request, its digest is kept in `ran` and checked
    /// against the plan's before it is loaded.
    async fn program(
        &self,
        kind: UpdateKind,
        request: &Request,
        ran: &mut Ran,
    ) -> Result<Box<dyn Program>> {
        if kind == UpdateKind::Destroy {
            return Ok(Box::new(EmptyProgram));
        }
        let spec = &self.ws.project.file.program;
        let source = self.ws.project.resolve(&spec.path);
        let tier = self.compiler.tier(source.is_dir());
        let built =
            tokio::task::spawn_blocking(move || program_build(&source, "program")).await??;
        if request.capture || request.plan.is_some() {
            let digest = built_sha256(&built)?;
            if let Some(plan) = &request.plan {
                plan.check_program(&digest)?;
            }
            ran.program = Some(digest);
        }
        let program = (self.runtime)
            .load_program_with(&built.component, built.code.as_ref(), spec.limits, tier)
            .await?;
        Ok(program)
    }

    /// Which state `snapshot` is, for a saved plan.
    fn state_mark(&self, snapshot: &Snapshot) -> Result<StateMark> {
        let version = self.ws.backend.history(&self.stack)?.len() as u64;
        let digest = plan_file::state_digest(snapshot)?;
        Ok(StateMark { version, digest })
    }

    /// Writes what a preview found as a plan to `path`.
    fn save_plan(&self, path: &Path, options: PlanOptions, ran: Ran) -> Result<()> {
        let (Some(state), Some(program)) = (ran.state, ran.program) else {
            bail!("internal error: the preview kept nothing for the plan");
        };
        let plan = Plan {
            format: plan_file::FORMAT,
            plinth: env!("CARGO_PKG_VERSION").to_owned(),
            project: self.ws.project.name().to_string(),
            stack: self.stack.name.to_string(),
            backend: self.ws.backend.url(),
            state,
            program,
            plugins: self.used.list(),
            config: self.config.clone(),
            options,
            steps: ran.steps,
        };
        plan.write(path, self.ws.backend.crypter(&self.stack).as_ref())
    }

    async fn run(
        &self,
        kind: UpdateKind,
        preview: bool,
        common: &CommonArgs,
        request: &Request,
    ) -> Result<Ran> {
        let project = self.ws.project.name();
        let backend = &self.ws.backend;
        let mut ran = Ran::default();
        let program = match kind {
            UpdateKind::Refresh => None,
            _ => match &request.program {
                Some(make) => Some(make()),
                None => Some(self.program(kind, request, &mut ran).await?),
            },
        };
        // Loaded before the stack is taken: a pack that does not load changes nothing. The
        // packs the backend enforces run whatever the project names. An import is judged too.
        let (policies, enforced) = match kind {
            UpdateKind::Update | UpdateKind::Import => {
                let enforced = backend.policy_packs(&self.stack)?;
                let packs = policy::load(
                    &self.runtime,
                    &self.ws.project,
                    &request.policy,
                    &enforced,
                    self.compiler,
                )
                .await?;
                (packs, enforced)
            }
            _ => (PolicyPacks::default(), Vec::new()),
        };
        // One call takes the stack and returns the state to start from; a preview takes
        // nothing.
        let mut update = if preview {
            None
        } else {
            let config = config_keys(&self.config);
            Some(backend.begin_update_with_config(&self.stack, self.command, config)?)
        };
        if let (Some(update), UpdateKind::Update | UpdateKind::Import) = (&update, kind) {
            policy::check_enforced(&enforced, update.policy_packs())?;
        }
        let mut loaded = match &mut update {
            // Handed over, not copied: the engine and the snapshot manager share this one.
            Some(update) => update.take_base()?,
            None => backend.load(&self.stack)?,
        };
        journal_notes::warn_journal(&self.stack.to_string(), &loaded);
        learn_secrets(&loaded.snapshot);
        // Before anything runs: an update under a plan starts from the plan's state or not at
        // all.
        if request.capture || request.plan.is_some() {
            let mark = self.state_mark(&loaded.snapshot)?;
            if let Some(plan) = &request.plan {
                plan.check_state(&mark)?;
            }
            ran.state = Some(mark);
        }
        let running = loaded.running.is_some();
        let targets = match &request.targets {
            // A saved plan's targets, instead of the command line's.
            Some((names, dependents, excluded)) => {
                targets::resolve(&loaded.snapshot, names)?.map(|urns| Targets {
                    urns,
                    dependents: *dependents,
                    excluded: *excluded,
                })
            }
            None => common.targets(&loaded.snapshot)?,
        };
        // Resolved before anything runs: a misspelt name must not leave a refresh done.
        let replace = (request.replace.iter())
            .map(|urn| targets::resolve_one(&loaded.snapshot, urn))
            .collect::<Result<_>>()?;
        let cancel = CancellationToken::new();
        let interrupts = tokio::spawn(watch_interrupts(cancel.clone(), backend.clone()));
        let mut errors = Vec::new();
        let mut shown = Vec::new();
        if kind == UpdateKind::Refresh || request.refresh_first {
            let adopt = (request.adopt.iter())
                .map(|(urn, id)| Ok((targets::resolve_one(&loaded.snapshot, urn)?, id.clone())))
                .collect::<Result<_>>()?;
            let options = RefreshOptions {
                preview,
                parallel: common.parallel,
                targets: targets.clone(),
                adopt,
            };
            // One copy of the state, shared by the engine and the snapshot manager.
            let base = Arc::new(std::mem::take(&mut loaded.snapshot));
            let phase = self.phase(UpdateKind::Refresh, preview, running, &mut update, &base)?;
            let (outcome, shown_now) = phase
                .run(common.view(), |events| {
                    refresh::run(
                        options,
                        base,
                        self.providers.clone(),
                        phase.recorder.clone(),
                        events,
                        cancel.clone(),
                    )
                })
                .await;
            self.ended(
                &mut update,
                &phase,
                &outcome.changes,
                &outcome.errors,
                &[],
                request,
            )?;
            ran.changes = outcome.changes;
            errors = outcome.errors;
            shown = shown_now;
            // The update goes on from the refreshed state: recorded, it is the checkpoint the
            // refresh wrote, so it need not be read back. (Without it, the refresh failed, and
            // no update follows.)
            loaded.snapshot = outcome.snapshot.unwrap_or_default();
        }
        if let (Some(program), true) = (program, errors.is_empty()) {
            let options = Options {
                project: project.to_string(),
                stack: self.stack.to_string(),
                preview,
                parallel: common.parallel,
                config: self.config.clone(),
                targets,
                replace,
                continue_on_error: request.continue_on_error,
                budget: self.ws.project.file.program.budget,
                // The update under a plan: a step the plan does not have is refused before it
                // runs, even from a program that registered it only outside a preview.
                plan: (request.plan.as_ref())
                    .filter(|_| !preview)
                    .map(|plan| Arc::new(PlanGuard::new(&plan.steps))),
                policies,
            };
            // The last phase: the engine and the snapshot manager share the loaded state
            // rather than each taking a copy of it.
            let base = Arc::new(std::mem::take(&mut loaded.snapshot));
            let mut phase = self.phase(kind, preview, running, &mut update, &base)?;
            phase.capture = request.capture.then(Default::default);
            let (outcome, shown_now) = phase
                .run(common.view(), |events| {
                    let providers = self.providers.clone();
                    deployment::run(
                        options,
                        base,
                        program,
                        providers,
                        phase.recorder.clone(),
                        events,
                        cancel.clone(),
                    )
                })
                .await;
            self.ended(
                &mut update,
                &phase,
                &outcome.changes,
                &outcome.errors,
                &outcome.policies,
                request,
            )?;
            // The last phase: the update ends (on the service, a request) before the states are
            // freed, megabytes of small allocations, not after.
            drop(update.take());
            ran.changes = outcome.changes;
            errors = outcome.errors;
            shown = shown_now;
            if let Some(steps) = phase.capture {
                let mut steps = steps.lock().unwrap_or_else(|e| e.into_inner());
                ran.steps = std::mem::take(&mut *steps);
            }
        }
        interrupts.abort();
        drop(update);
        let what = if preview {
            format!("the preview of the {kind}")
        } else {
            format!("the {kind}")
        };
        if let Some(error) = failure(&what, &errors, &shown) {
            return Err(error);
        }
        Ok(ran)
    }

    /// Announces one phase of a run and, outside preview, starts recording it. The operations
    /// an update still `running` has in flight are no interrupted ones to warn about.
    fn phase(
        &self,
        kind: UpdateKind,
        preview: bool,
        running: bool,
        update: &mut Option<Box<dyn Update>>,
        base: &Arc<Snapshot>,
    ) -> Result<Phase> {
        let project = self.ws.project.name();
        println!(
            "{} stack {} (project {}):\n",
            Phase::heading(kind, preview),
            style(&self.stack).bold(),
            style(project).bold()
        );
        if !running {
            pending::warn_pending(base);
        }
        if let Some(json) = &self.json {
            json.write(&JsonEvent::PhaseStarted {
                command: self.command.to_owned(),
                project: project.to_string(),
                stack: self.stack.to_string(),
                kind: kind.to_string(),
                preview,
            });
        }
        let (recorder, log) = match update {
            None => (None, None),
            Some(update) => {
                let recording = update.record(self.used.clone())?;
                let recorder = SnapshotManager::start(base.clone(), recording.persister);
                (Some(recorder), Some(recording.events))
            }
        };
        Ok(Phase {
            kind,
            preview,
            capture: None,
            recorder,
            log: std::sync::Mutex::new(log),
            started: SystemTime::now(),
            command_started: self.started.get(),
            json: self.json.clone(),
        })
    }

    /// Appends a recorded phase to the stack's history.
    fn ended(
        &self,
        update: &mut Option<Box<dyn Update>>,
        phase: &Phase,
        changes: &ChangeSummary,
        errors: &[String],
        policies: &[PackRun],
        request: &Request,
    ) -> Result<()> {
        let Some(update) = update else {
            return Ok(());
        };
        let result = if errors.is_empty() {
            UpdateResult::Succeeded
        } else {
            UpdateResult::Failed
        };
        let entry = HistoryEntry::ended_now(phase.kind, phase.started, result, changes.clone())
            .with_plugins(self.used.list())
            .with_metadata(&request.metadata)
            .with_policy_packs(policies.to_vec())
            .with_plan(applied_plan(phase.kind, request));
        Ok(update.complete(&entry)?)
    }
}

/// The stack's configuration keys as a backend may show them: a secret's (or a value holding
/// one) without its value.
fn config_keys(config: &std::collections::BTreeMap<String, Value>) -> Vec<ConfigKey> {
    (config.iter())
        .map(|(key, value)| {
            let secret = value.contains_secrets();
            let value = (!secret).then(|| match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            });
            ConfigKey {
                key: key.clone(),
                secret,
                value,
            }
        })
        .collect()
}

/// The saved plan a phase of `kind` applied, for its history entry: the update phase of
/// `up --plan` (not the refresh before it).
fn applied_plan(kind: UpdateKind, request: &Request) -> Option<AppliedPlan> {
    let plan = request
        .plan
        .as_ref()
        .filter(|_| kind == UpdateKind::Update)?;
    Some(AppliedPlan {
        made_against: plan.state.version,
        state_digest: plan.state.digest.clone(),
        steps: plan.steps.len() as u64,
    })
}

/// The error a run ends with: the step failures the display already showed are counted, not
/// repeated; every other error is given in full.
fn failure(what: &str, errors: &[String], shown: &[String]) -> Option<anyhow::Error> {
    let (repeated, new): (Vec<&String>, Vec<&String>) =
        errors.iter().partition(|e| shown.contains(e));
    let above = match repeated.len() {
        0 => None,
        1 => Some("1 resource failed (shown above)".to_owned()),
        n => Some(format!("{n} resources failed (shown above)")),
    };
    let reasons: Vec<String> = above.into_iter().chain(new.into_iter().cloned()).collect();
    let message = match reasons.as_slice() {
        [] => return None,
        [one] => format!("{what} failed: {one}"),
        many => format!(
            "{what} failed with {} errors:\n  {}",
            errors.len(),
            many.join("\n  ")
        ),
    };
    let hints: String = errors.iter().filter_map(|e| config_hint(e)).collect();
    Some(anyhow::anyhow!("{message}{hints}"))
}

/// How to set a configuration value the program found missing (the SDK's `require_config`
/// words it "missing required configuration value `KEY`").
fn config_hint(error: &str) -> Option<String> {
    const MISSING: &str = "missing required configuration value `";
    let key = error.split_once(MISSING)?.1.split_once('`')?.0;
    Some(format!(
        "\n  hint: set it with `plinth config set {key} VALUE` (add --secret for a secret)"
    ))
}

/// One engine call of a run, shown by its own display.
struct Phase {
    kind: UpdateKind,
    preview: bool,
    /// Where the steps it plans are kept, for a saved plan.
    capture: Option<Arc<Mutex<Vec<PlannedStep>>>>,
    recorder: Option<SnapshotManager>,
    /// Keeps the phase's events for `plinth logs`; taken when it runs.
    log: std::sync::Mutex<Option<Box<dyn EventLog>>>,
    started: SystemTime,
    /// Where the duration shown at the end counts from.
    command_started: Instant,
    json: Option<Arc<JsonStream>>,
}

impl Phase {
    /// How the phase is announced, before the stack's name.
    fn heading(kind: UpdateKind, preview: bool) -> String {
        if preview {
            return format!("Previewing {kind} of");
        }
        match kind {
            UpdateKind::Update => "Updating",
            UpdateKind::Destroy => "Destroying",
            UpdateKind::Refresh => "Refreshing",
            UpdateKind::Import => "Importing into",
            UpdateKind::StateEdit => "Editing the state of",
            UpdateKind::Rollback => "Rolling back",
        }
        .to_owned()
    }

    /// Runs the engine call `start` makes, rendering its events until it is done; returns its
    /// outcome and the step failures the display showed.
    async fn run<T, F: Future<Output = T>>(
        &self,
        view: display::View,
        start: impl FnOnce(EventSink) -> F,
    ) -> (T, Vec<String>) {
        let (events, receiver) = EventSink::new();
        let log = self.log.lock().ok().and_then(|mut log| log.take());
        let (receiver, logging) = match log {
            Some(log) => {
                let (receiver, logging) = logged(receiver, log);
                (receiver, Some(logging))
            }
            None => (receiver, None),
        };
        let (receiver, capturing) = match &self.capture {
            Some(steps) => {
                let (receiver, capturing) = captured(receiver, steps.clone());
                (receiver, Some(capturing))
            }
            None => (receiver, None),
        };
        let words = match self.kind {
            UpdateKind::Refresh => display::RunKind::Refresh,
            _ => display::RunKind::Change,
        };
        let display = match self.json.clone() {
            Some(json) => {
                let preview = self.preview;
                tokio::spawn(async move { json.render(receiver, preview).await })
            }
            None => tokio::spawn(display::render(
                receiver,
                self.preview,
                view,
                words,
                self.command_started,
            )),
        };
        let outcome = start(events).await;
        if let Some(capturing) = capturing {
            let _ = capturing.await;
        }
        if let Some(logging) = logging {
            // The engine is done, so the events end and the log is made durable.
            let _ = logging.await;
        }
        let shown = display.await.unwrap_or_default();
        (outcome, shown)
    }
}

/// Events [`logged`] takes from the channel at once: the task wakes once for them all.
const LOGGED_BATCH: usize = 256;

/// Passes events on to the display, keeping each in `log` on the way; the engine sends into
/// an unbounded channel, so a slow log never slows its steps.
fn logged(
    mut events: mpsc::UnboundedReceiver<Event>,
    mut log: Box<dyn EventLog>,
) -> (mpsc::UnboundedReceiver<Event>, tokio::task::JoinHandle<()>) {
    let (forward, display) = mpsc::unbounded_channel();
    let logging = tokio::spawn(async move {
        let mut batch = Vec::with_capacity(LOGGED_BATCH);
        while events.recv_many(&mut batch, LOGGED_BATCH).await > 0 {
            for event in batch.drain(..) {
                log.record(&event);
                // A display that stopped reading leaves the log to go on.
                let _ = forward.send(event);
            }
        }
        drop(forward);
        let finished = tokio::task::spawn_blocking(move || log.finish()).await;
        if let Ok(Err(e)) = finished {
            eprintln!(
                "{} the update's events were not all kept for `plinth logs`: {e:#}",
                style("warning:").yellow().bold()
            );
        }
    });
    (display, logging)
}

/// Passes events on to the display, keeping each step a preview plans in `steps`.
fn captured(
    mut events: mpsc::UnboundedReceiver<Event>,
    steps: Arc<Mutex<Vec<PlannedStep>>>,
) -> (mpsc::UnboundedReceiver<Event>, tokio::task::JoinHandle<()>) {
    let (forward, display) = mpsc::unbounded_channel();
    let capturing = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let Event::StepDone { step, .. } = &event {
                let mut steps = steps.lock().unwrap_or_else(|e| e.into_inner());
                steps.push(PlannedStep::of(step));
            }
            let _ = forward.send(event);
        }
    });
    (display, capturing)
}

/// First Ctrl-C: stop starting new steps, and tell `backend` not to wait out an outage for
/// what is left to record. Second: abort at once; pending operations stay recorded in the
/// journal.
async fn watch_interrupts(cancel: CancellationToken, backend: Arc<dyn Backend>) {
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return;
    };
    let mut interrupt = async || {
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.is_ok(),
            r = term.recv() => r.is_some(),
        }
    };
    if interrupt().await {
        cancel.cancel();
        backend.interrupted();
        if interrupt().await {
            eprintln!("aborted: operations in flight stay recorded as pending");
            std::process::exit(130);
        }
    }
}

/// Teaches the masker every secret of the state a run starts from, in one batch: one automaton
/// for all of them, instead of a rebuild each time the run meets the next one (ten thousand
/// generated passwords), and a secret is masked even if no guest is sent it again.
fn learn_secrets(snapshot: &Snapshot) {
    let states = (snapshot.resources.iter())
        .chain(snapshot.pending_operations.iter().map(|op| &op.resource));
    plinth_runtime::secret_masker()
        .learn_all(states.flat_map(|state| state.inputs.values().chain(state.outputs.values())));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_failures_shown_above_are_counted_not_repeated() {
        let errors = ["urn:a: disk full".to_owned()];
        let shown = ["urn:a: disk full".to_owned(), "disk full".to_owned()];
        let message = failure("the update", &errors, &shown).unwrap().to_string();
        assert_eq!(
            message,
            "the update failed: 1 resource failed (shown above)"
        );
        let errors = [errors[0].clone(), "the program failed: boom".to_owned()];
        let message = failure("the update", &errors, &shown).unwrap().to_string();
        assert!(message.contains("1 resource failed (shown above)\n  the program failed: boom"));
        assert!(!message.contains("disk full"), "{message}");
        assert!(failure("the update", &[], &shown).is_none());
    }

    #[test]
    fn config_keys_sent_to_a_backend_carry_no_secret_value() {
        let config: std::collections::BTreeMap<String, Value> = [
            ("region".to_owned(), Value::String("eu-west-1".into())),
            ("replicas".to_owned(), Value::Integer(3)),
            (
                "password".to_owned(),
                Value::Secret(Box::new("hunter2".into())),
            ),
            (
                "nested".to_owned(),
                Value::Array(vec![Value::Secret(Box::new("hunter3".into()))]),
            ),
        ]
        .into_iter()
        .collect();
        let keys = config_keys(&config);
        let shown = serde_json::to_string(&keys).unwrap();
        assert!(!shown.contains("hunter"), "{shown}");
        let found = |key: &str| keys.iter().find(|k| k.key == key).unwrap().clone();
        assert_eq!(found("region").value.as_deref(), Some("eu-west-1"));
        assert_eq!(found("replicas").value.as_deref(), Some("3"));
        assert!(found("password").secret && found("password").value.is_none());
        assert!(found("nested").secret && found("nested").value.is_none());
    }

    #[test]
    fn a_missing_config_value_gets_the_command_that_sets_it() {
        let errors = ["the program failed: missing required configuration value `region`".into()];
        let message = failure("the update", &errors, &[]).unwrap().to_string();
        assert!(
            message.ends_with(
                "hint: set it with `plinth config set region VALUE` (add --secret for a secret)"
            ),
            "{message}"
        );
    }
}
