//! One deployment (`up`, `preview` or `destroy`): runs the program, turns each registration into
//! a step as soon as everything it refers to is known, runs independent steps in parallel, and
//! finally deletes what the program no longer declares, dependents first.

mod unclaimed;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::events::{ChangeSummary, Event, EventSink, Severity};
use crate::journal::{JournalEntry, SnapshotManager};
use crate::program::{Monitor, Program, ProgramError, Registration, StackInfo};
use crate::provider::ProviderSource;
use crate::provider_step::reference;
use crate::snapshot::{OperationKind, Snapshot};
use crate::step::{ProviderBinding, ResourceStep, StepContext, StepError, StepResult};
use crate::target::TargetSet;
use crate::urn::{Urn, package_of, provided_package, provider_type};
use crate::value::{OutputField, OutputRef, PropertyMap, Value};

/// How a deployment runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub project: String,
    pub stack: String,
    /// Plan only: providers are asked to preview, nothing is recorded.
    pub preview: bool,
    /// Upper bound on provider calls in flight.
    pub parallel: usize,
    /// Stack configuration, keyed `namespace:key`: strings, or secrets holding strings.
    pub config: BTreeMap<String, Value>,
    /// Change only these resources (`--target`); everything when `None`.
    pub targets: Option<Targets>,
    /// Replace these resources even if their inputs did not change (`--replace`).
    pub replace: HashSet<Urn>,
    /// After a failure, keep running every step that does not depend on it.
    pub continue_on_error: bool,
}

/// The resources an operation may change; the others are left exactly as they were.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    pub urns: HashSet<Urn>,
    /// Also target every resource that depends on a targeted one, transitively.
    pub dependents: bool,
}

/// What a deployment did (or, in preview, would do).
#[derive(Debug)]
pub struct Outcome {
    pub changes: ChangeSummary,
    pub outputs: PropertyMap,
    pub errors: Vec<String>,
    /// The new checkpoint; `None` in preview.
    pub snapshot: Option<Snapshot>,
}

/// Runs a deployment of `program` against `base`. With a `recorder`, every mutation is recorded
/// and the final snapshot written as the new checkpoint.
pub async fn run(
    options: Options,
    base: Snapshot,
    program: Box<dyn Program>,
    providers: Arc<dyn ProviderSource>,
    recorder: Option<SnapshotManager>,
    events: EventSink,
    cancel: CancellationToken,
) -> Outcome {
    let started = Instant::now();
    let mut errors = Vec::new();
    if let Err(e) = drop_interrupted(&base, recorder.as_ref(), &events).await {
        errors.push(e.to_string());
    }
    let base_live = base
        .resources
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.delete)
        .map(|(i, r)| (r.urn.clone(), i))
        .collect();
    let ctx = Arc::new(StepContext {
        preview: options.preview,
        providers: providers.clone(),
        recorder: recorder.clone(),
        events: events.clone(),
        base_dependents: dependents_by_urn(&base.resources),
        base_live,
        claims: Default::default(),
        halted: Default::default(),
        continue_on_error: options.continue_on_error,
        limit: Semaphore::new(options.parallel.max(1)),
        targets: (options.targets.clone()).map(|t| TargetSet::new(t, &base.resources)),
        replace: options.replace.clone(),
        base_providers: providers_by_reference(&base.resources),
        base: base.resources,
        changes: Mutex::new(ChangeSummary::default()),
    });
    let info = StackInfo {
        project: options.project.clone(),
        stack: options.stack.clone(),
        dry_run: options.preview,
    };
    let (monitor, registrations) = Monitor::new(info, options.config.clone(), providers);
    // Cancellation: no new step starts; steps in flight finish and are recorded.
    let watcher = tokio::spawn({
        let (ctx, events, cancel) = (ctx.clone(), events.clone(), cancel.clone());
        async move {
            cancel.cancelled().await;
            ctx.halt();
            events.emit(Event::Cancelled);
        }
    });
    let mut scheduler = Scheduler::new(options, ctx.clone(), events.clone(), cancel);
    scheduler.run_program(program, monitor, registrations).await;
    let clean = scheduler.errors.is_empty();
    if (clean || scheduler.options.continue_on_error) && !scheduler.cancel.is_cancelled() {
        scheduler.delete_unclaimed(clean).await;
    }
    watcher.abort();
    errors.append(&mut scheduler.errors);
    if scheduler.cancel.is_cancelled() {
        errors.push(
            "cancelled: steps in flight finished and were recorded; no new step started".into(),
        );
    }
    let outputs = scheduler.stack_outputs.take().unwrap_or_default();
    if errors.is_empty() && !ctx.preview {
        let outputs = outputs.clone();
        if let Err(e) = ctx
            .record_entry(JournalEntry::StackOutputs { outputs })
            .await
        {
            errors.push(e.to_string());
        }
    }
    events.emit(Event::Outputs(outputs.clone()));
    let snapshot = match recorder {
        Some(recorder) => match recorder.finish().await {
            Ok(snapshot) => Some(snapshot),
            Err(e) => {
                errors.push(e.to_string());
                None
            }
        },
        None => None,
    };
    let changes = ctx.changes.lock().expect("change counter").clone();
    events.emit(Event::Summary {
        changes: changes.clone(),
        duration: started.elapsed(),
        preview: ctx.preview,
        failed: !errors.is_empty(),
    });
    Outcome {
        changes,
        outputs,
        errors,
        snapshot,
    }
}

impl StepContext {
    async fn record_entry(&self, entry: JournalEntry) -> Result<(), crate::journal::SnapshotError> {
        match &self.recorder {
            Some(r) => r.record(entry).await,
            None => Ok(()),
        }
    }
}

/// What a settled registration makes known.
#[derive(Debug, Clone)]
struct Resolved {
    /// A resource's outputs object, or an apply's result.
    value: Value,
    id: Value,
    urn: Option<Urn>,
    /// The recorded resources this value derives from: dependents depend on these.
    dependencies: Vec<Urn>,
    /// The resource's step replaced it (create-before-delete or delete-before-replace).
    replaced: bool,
}

enum Slot {
    Waiting,
    Resolved(Arc<Resolved>),
    /// Failed or skipped; dependents are skipped.
    Failed,
}

/// What a node does once everything it refers to is resolved.
enum Work {
    Resource(crate::program::RegisterRequest),
    Read {
        ty: String,
        name: String,
        id: String,
        inputs: PropertyMap,
        parent: Option<u64>,
        provider: Option<u64>,
    },
    Apply(Vec<Value>),
    /// An apply result that itself refers to other registrations.
    Value {
        value: Value,
        secret: bool,
        dependencies: Vec<Urn>,
    },
    Outputs {
        target: Option<u64>,
        outputs: PropertyMap,
    },
}

struct Node {
    handle: Option<u64>,
    work: Option<Work>,
    missing: usize,
}

enum Completion {
    ProgramDone(Result<(), ProgramError>),
    Resumed {
        node: usize,
        result: Result<Value, ProgramError>,
        secret: bool,
        dependencies: Vec<Urn>,
    },
    Step {
        node: usize,
        urn: Urn,
        record: bool,
        result: Result<StepResult, StepError>,
    },
    ComponentOutputs(Result<(), String>),
}

/// An apply closure to resume, with what its result inherits from its inputs.
struct ResumeRequest {
    node: usize,
    apply: u64,
    inputs: Vec<Value>,
    secret: bool,
    dependencies: Vec<Urn>,
}

struct Scheduler {
    options: Options,
    ctx: Arc<StepContext>,
    events: EventSink,
    cancel: CancellationToken,
    slots: HashMap<u64, Slot>,
    nodes: Vec<Node>,
    waiters: HashMap<u64, Vec<usize>>,
    registered: HashSet<Urn>,
    replaced: Vec<usize>,
    /// Handles of the default provider resources registered so far, by package.
    default_providers: HashMap<String, u64>,
    stack_outputs: Option<PropertyMap>,
    errors: Vec<String>,
    in_flight: usize,
    completions_tx: mpsc::UnboundedSender<Completion>,
    completions: mpsc::UnboundedReceiver<Completion>,
    resume_tx: Option<mpsc::UnboundedSender<ResumeRequest>>,
}

impl Scheduler {
    fn new(
        options: Options,
        ctx: Arc<StepContext>,
        events: EventSink,
        cancel: CancellationToken,
    ) -> Scheduler {
        let (completions_tx, completions) = mpsc::unbounded_channel();
        Scheduler {
            options,
            ctx,
            events,
            cancel,
            slots: HashMap::new(),
            nodes: Vec::new(),
            waiters: HashMap::new(),
            registered: HashSet::new(),
            replaced: Vec::new(),
            default_providers: HashMap::new(),
            stack_outputs: None,
            errors: Vec::new(),
            in_flight: 0,
            completions_tx,
            completions,
            resume_tx: None,
        }
    }

    /// Runs the program to completion, with every step it causes.
    async fn run_program(
        &mut self,
        mut program: Box<dyn Program>,
        monitor: Monitor,
        mut registrations: mpsc::UnboundedReceiver<Registration>,
    ) {
        // The program runs in its own task, one call at a time: its body, then apply closures
        // as their inputs resolve. It never waits for the engine, nor the engine for it.
        let (resume_tx, mut resumes) = mpsc::unbounded_channel::<ResumeRequest>();
        self.resume_tx = Some(resume_tx);
        let done = self.completions_tx.clone();
        let actor = tokio::spawn(async move {
            let result = program.run(&monitor).await;
            let _ = done.send(Completion::ProgramDone(result));
            while let Some(request) = resumes.recv().await {
                let result = program
                    .resume(&monitor, request.apply, request.inputs)
                    .await;
                let _ = done.send(Completion::Resumed {
                    node: request.node,
                    result,
                    secret: request.secret,
                    dependencies: request.dependencies,
                });
            }
        });
        self.in_flight += 1; // the program's body
        loop {
            if self.in_flight == 0 && registrations.is_empty() {
                break;
            }
            tokio::select! {
                Some(registration) = registrations.recv() => self.on_registration(registration),
                Some(completion) = self.completions.recv() => {
                    self.in_flight -= 1;
                    self.on_completion(completion);
                }
            }
        }
        self.resume_tx = None;
        let _ = actor.await;
        let skipped = self
            .nodes
            .iter()
            .filter(|n| n.work.is_some() && n.handle.is_some())
            .count();
        if skipped > 0 && self.errors.is_empty() && !self.cancel.is_cancelled() {
            self.errors.push(format!(
                "{skipped} registrations never resolved: the program refers to outputs that are never produced"
            ));
        }
    }

    fn on_registration(&mut self, registration: Registration) {
        match registration {
            Registration::Resource {
                handle,
                mut request,
            } => {
                if request.custom && request.options.provider.is_none() {
                    request.options.provider = self.default_provider(&request.ty);
                }
                let mut refs = Vec::new();
                request
                    .inputs
                    .values()
                    .for_each(|v| collect_handles(v, &mut refs));
                refs.extend(&request.options.depends_on);
                refs.extend(request.options.parent);
                refs.extend(request.options.provider);
                self.add_node(Some(handle), Work::Resource(request), refs);
            }
            Registration::Read {
                handle,
                ty,
                name,
                id,
                inputs,
                options,
            } => {
                let provider = options.provider.or_else(|| self.default_provider(&ty));
                let mut refs = Vec::new();
                inputs.values().for_each(|v| collect_handles(v, &mut refs));
                refs.extend(options.parent);
                refs.extend(provider);
                let parent = options.parent;
                self.add_node(
                    Some(handle),
                    Work::Read {
                        ty,
                        name,
                        id,
                        inputs,
                        parent,
                        provider,
                    },
                    refs,
                );
            }
            Registration::Apply { handle, inputs } => {
                let mut refs = Vec::new();
                inputs.iter().for_each(|v| collect_handles(v, &mut refs));
                self.add_node(Some(handle), Work::Apply(inputs), refs);
            }
            Registration::Outputs { handle, outputs } => {
                let mut refs = Vec::new();
                outputs.values().for_each(|v| collect_handles(v, &mut refs));
                refs.extend(handle);
                self.add_node(
                    None,
                    Work::Outputs {
                        target: handle,
                        outputs,
                    },
                    refs,
                );
            }
            Registration::Log { severity, message } => {
                self.events.diagnostic(None, severity, message);
            }
        }
    }

    fn add_node(&mut self, handle: Option<u64>, work: Work, refs: Vec<u64>) {
        let index = self.nodes.len();
        if let Some(h) = handle {
            self.slots.insert(h, Slot::Waiting);
        }
        self.nodes.push(Node {
            handle,
            work: Some(work),
            missing: 0,
        });
        let mut seen = HashSet::new();
        for r in refs {
            if !seen.insert(r) {
                continue;
            }
            match self.slots.get(&r) {
                Some(Slot::Resolved(_)) => {}
                Some(Slot::Waiting) if Some(r) != handle => {
                    self.waiters.entry(r).or_default().push(index);
                    self.nodes[index].missing += 1;
                }
                Some(Slot::Failed) => return self.skip(index),
                _ => {
                    self.errors.push(format!(
                        "the program refers to an unknown registration #{r}"
                    ));
                    return self.skip(index);
                }
            }
        }
        if self.nodes[index].missing == 0 {
            self.start(index);
        }
    }

    /// Marks a node failed, and everything waiting on it that has not run skipped.
    fn skip(&mut self, index: usize) {
        let mut stack = vec![index];
        while let Some(i) = stack.pop() {
            let node = &mut self.nodes[i];
            if node.work.take().is_none() && i != index {
                continue;
            }
            if let Some(h) = node.handle {
                self.slots.insert(h, Slot::Failed);
                stack.extend(self.waiters.remove(&h).unwrap_or_default());
            }
        }
    }

    fn resolve(&mut self, index: usize, resolved: Resolved) {
        let Some(handle) = self.nodes[index].handle else {
            return;
        };
        self.slots
            .insert(handle, Slot::Resolved(Arc::new(resolved)));
        for waiter in self.waiters.remove(&handle).unwrap_or_default() {
            let node = &mut self.nodes[waiter];
            if node.work.is_none() {
                continue;
            }
            node.missing -= 1;
            if node.missing == 0 {
                self.start(waiter);
            }
        }
    }

    /// Records an error once, however many steps hit it.
    fn error(&mut self, error: String) {
        if !self.errors.contains(&error) {
            self.errors.push(error);
        }
    }

    /// A node failed: what depends on it is skipped, and unless `--continue-on-error` was given
    /// no new step starts.
    fn fail(&mut self, index: usize, error: String) {
        self.error(error);
        if !self.options.continue_on_error {
            self.ctx.halt();
        }
        self.skip(index);
    }

    /// Substitutes resolved values for output references, collecting what they derive from.
    fn substitute(&self, value: Value, dependencies: &mut Vec<Urn>) -> Value {
        value.resolve_outputs(&mut |r: &OutputRef| {
            let Some(Slot::Resolved(res)) = self.slots.get(&r.handle) else {
                return Value::Unknown;
            };
            dependencies.extend(res.dependencies.iter().cloned());
            match &r.field {
                OutputField::Property(path) => res.value.at_path(path),
                OutputField::Id => res.id.clone(),
                OutputField::Urn => res
                    .urn
                    .as_ref()
                    .map_or(Value::Null, |u| Value::String(u.to_string())),
            }
        })
    }

    /// The handle of the default provider resource of `ty`'s package, registered on first use
    /// with the stack configuration of that package (`random:seed` configures `random`).
    /// Provider resources themselves have none.
    fn default_provider(&mut self, ty: &str) -> Option<u64> {
        if provided_package(ty).is_some() {
            return None;
        }
        let package = package_of(ty);
        if let Some(&handle) = self.default_providers.get(package) {
            return Some(handle);
        }
        // Program handles count up from 1; these count down from the top.
        let handle = u64::MAX - self.default_providers.len() as u64;
        self.default_providers.insert(package.to_owned(), handle);
        let prefix = format!("{package}:");
        let inputs = (self.options.config.iter())
            .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.to_owned(), v.clone())))
            .collect();
        let request = crate::program::RegisterRequest {
            ty: provider_type(package),
            name: "default".to_owned(),
            custom: true,
            inputs,
            options: Default::default(),
        };
        self.add_node(Some(handle), Work::Resource(request), Vec::new());
        Some(handle)
    }

    /// What the provider resource registered as `handle` binds its resources to.
    fn binding(&self, handle: u64) -> Option<ProviderBinding> {
        let Some(Slot::Resolved(resolved)) = self.slots.get(&handle) else {
            return None;
        };
        let config = match &resolved.value {
            Value::Object(config) => config.clone(),
            _ => PropertyMap::new(),
        };
        Some(ProviderBinding {
            reference: reference(resolved.urn.clone()?, &resolved.id),
            config,
            replaced: resolved.replaced,
        })
    }

    fn handle_urn(&self, handle: u64) -> Option<Urn> {
        match self.slots.get(&handle) {
            Some(Slot::Resolved(r)) => r.urn.clone(),
            _ => None,
        }
    }

    fn handle_dependencies(&self, handle: u64) -> Vec<Urn> {
        match self.slots.get(&handle) {
            Some(Slot::Resolved(r)) => r.dependencies.clone(),
            _ => Vec::new(),
        }
    }

    fn start(&mut self, index: usize) {
        let Some(work) = self.nodes[index].work.take() else {
            return;
        };
        let is_step = matches!(work, Work::Resource(_) | Work::Read { .. });
        if self.ctx.is_halted() && is_step {
            return self.skip(index);
        }
        match work {
            Work::Resource(request) => self.start_resource(index, request),
            Work::Read {
                ty,
                name,
                id,
                inputs,
                parent,
                provider,
            } => {
                let binding = provider.and_then(|h| self.binding(h));
                let mut deps = Vec::new();
                let inputs = self.substitute_map(inputs, &mut deps);
                let parent_type = parent
                    .and_then(|p| self.handle_urn(p))
                    .map(|u| u.qualified_type().to_owned());
                let urn = Urn::new(
                    &self.options.stack,
                    &self.options.project,
                    parent_type.as_deref(),
                    &ty,
                    &name,
                );
                // A URN that would not read back must never reach the state.
                if let Err(e) = urn.validate() {
                    return self.fail(index, e.to_string());
                }
                let ctx = self.ctx.clone();
                let done = self.completions_tx.clone();
                self.in_flight += 1;
                tokio::spawn(async move {
                    let result = ctx.run_read(&urn, &id, &inputs, binding).await;
                    let _ = done.send(Completion::Step {
                        node: index,
                        urn,
                        record: false,
                        result,
                    });
                });
            }
            Work::Apply(inputs) => {
                let mut deps = Vec::new();
                let values: Vec<Value> = inputs
                    .into_iter()
                    .map(|v| self.substitute(v, &mut deps))
                    .collect();
                let secret = values.iter().any(Value::contains_secrets);
                if values.iter().any(Value::contains_unknowns) {
                    // The closure cannot run on unknown inputs: its result is unknown too.
                    return self.resolve(index, resolved_value(Value::Unknown, deps));
                }
                let apply = self.nodes[index].handle.expect("applies have handles");
                let values = values.into_iter().map(reveal).collect();
                if let Some(tx) = &self.resume_tx {
                    self.in_flight += 1;
                    let _ = tx.send(ResumeRequest {
                        node: index,
                        apply,
                        inputs: values,
                        secret,
                        dependencies: deps,
                    });
                }
            }
            Work::Value {
                value,
                secret,
                mut dependencies,
            } => {
                let value = self.substitute(value, &mut dependencies);
                let value = if secret { make_secret(value) } else { value };
                self.resolve(index, resolved_value(value, dependencies));
            }
            Work::Outputs { target, outputs } => {
                let mut deps = Vec::new();
                let outputs = self.substitute_map(outputs, &mut deps);
                match target.and_then(|h| self.handle_urn(h)) {
                    None if target.is_none() => self.stack_outputs = Some(outputs),
                    None => {}
                    Some(urn) => {
                        if self.ctx.preview {
                            return;
                        }
                        let ctx = self.ctx.clone();
                        let done = self.completions_tx.clone();
                        self.in_flight += 1;
                        tokio::spawn(async move {
                            let entry = JournalEntry::ComponentOutputs { urn, outputs };
                            let result = ctx.record_entry(entry).await.map_err(|e| e.to_string());
                            let _ = done.send(Completion::ComponentOutputs(result));
                        });
                    }
                }
            }
        }
    }

    fn substitute_map(&self, map: PropertyMap, deps: &mut Vec<Urn>) -> PropertyMap {
        map.into_iter()
            .map(|(k, v)| (k, self.substitute(v, deps)))
            .collect()
    }

    fn start_resource(&mut self, index: usize, request: crate::program::RegisterRequest) {
        let parent = request.options.parent.and_then(|p| self.handle_urn(p));
        if request.options.parent.is_some() && parent.is_none() {
            return self.fail(
                index,
                format!("{}: its parent is not a resource", request.name),
            );
        }
        let urn = Urn::new(
            &self.options.stack,
            &self.options.project,
            parent.as_ref().map(|p| p.qualified_type()),
            &request.ty,
            &request.name,
        );
        if let Err(e) = urn.validate() {
            return self.fail(index, e.to_string());
        }
        let provider = request.options.provider.and_then(|h| self.binding(h));
        if request.options.provider.is_some() && provider.is_none() {
            return self.fail(
                index,
                format!("{urn}: its provider is not a provider resource"),
            );
        }
        if let Some(b) = &provider
            && package_of(b.reference.urn.ty()) != package_of(&request.ty)
        {
            return self.fail(
                index,
                format!(
                    "{urn}: its provider {} provides another package",
                    b.reference.urn
                ),
            );
        }
        if !self.registered.insert(urn.clone()) {
            return self.fail(
                index,
                format!("{urn}: registered twice; resource names must be unique per type"),
            );
        }
        let mut dependencies = Vec::new();
        let inputs = self.substitute_map(request.inputs.clone(), &mut dependencies);
        for h in &request.options.depends_on {
            dependencies.extend(self.handle_dependencies(*h));
        }
        dependencies.retain(|d| Some(d) != parent.as_ref() && *d != urn);
        dedup_in_order(&mut dependencies);
        let step = ResourceStep {
            urn: urn.clone(),
            request,
            inputs,
            parent,
            dependencies,
            provider,
        };
        let ctx = self.ctx.clone();
        let done = self.completions_tx.clone();
        self.in_flight += 1;
        tokio::spawn(async move {
            let result = ctx.run_resource(step).await;
            let _ = done.send(Completion::Step {
                node: index,
                urn,
                record: true,
                result,
            });
        });
    }

    fn on_completion(&mut self, completion: Completion) {
        match completion {
            Completion::ProgramDone(Ok(())) => {}
            Completion::ProgramDone(Err(e)) => {
                self.error(format!("the program failed: {e}"));
                self.ctx.halt();
            }
            Completion::Resumed {
                node,
                result: Ok(value),
                secret,
                dependencies,
            } => {
                let mut refs = Vec::new();
                collect_handles(&value, &mut refs);
                let handle = self.nodes[node].handle;
                // Re-enter the result as a node of its own that waits on what it refers to.
                self.slots.remove(&handle.expect("applies have handles"));
                self.nodes[node].work = None;
                self.add_node(
                    handle,
                    Work::Value {
                        value,
                        secret,
                        dependencies,
                    },
                    refs,
                );
            }
            Completion::Resumed {
                node,
                result: Err(e),
                ..
            } => self.fail(node, format!("an apply closure failed: {e}")),
            Completion::Step {
                node,
                urn,
                record,
                result: Ok(result),
            } => {
                if let Some(old) = result.replaced {
                    self.replaced.push(old);
                }
                // What depends on a resource that exists depends on its state; an absent one
                // (not created because not targeted) is no dependency, and its outputs unknown.
                let (value, dependencies) = if result.absent {
                    (Value::Unknown, Vec::new())
                } else if record {
                    (Value::Object(result.outputs), vec![urn.clone()])
                } else {
                    (Value::Object(result.outputs), Vec::new())
                };
                self.resolve(
                    node,
                    Resolved {
                        value,
                        id: result.id,
                        urn: Some(urn),
                        dependencies,
                        replaced: result.replaced.is_some(),
                    },
                );
            }
            Completion::Step {
                node,
                result: Err(StepError::Halted),
                ..
            } => self.skip(node),
            Completion::Step {
                node,
                result: Err(e),
                ..
            } => self.fail(node, e.to_string()),
            Completion::ComponentOutputs(Ok(())) => {}
            Completion::ComponentOutputs(Err(e)) => {
                self.error(e);
                self.ctx.halt();
            }
        }
    }
}

/// Drops the pending updates and deletes an interrupted operation left: the resource's recorded
/// state stays, and this deployment diffs against it. Pending creates stay until `refresh`
/// resolves them, since only it can tell whether something was created (the CLI warns about
/// them before every command).
async fn drop_interrupted(
    base: &Snapshot,
    recorder: Option<&SnapshotManager>,
    events: &EventSink,
) -> Result<(), crate::journal::SnapshotError> {
    for op in &base.pending_operations {
        let urn = &op.resource.urn;
        let what = match op.kind {
            OperationKind::Creating => continue,
            OperationKind::Updating => "update",
            OperationKind::Deleting => "delete",
        };
        let Some(recorder) = recorder else { continue };
        events.diagnostic(
            Some(urn),
            Severity::Warning,
            format!(
                "an earlier {what} of it was interrupted; dropping that record (its state may \
                 be stale: `plinth refresh` reads it back)"
            ),
        );
        recorder
            .record(JournalEntry::ResolvePending {
                kind: op.kind,
                urn: urn.clone(),
            })
            .await?;
    }
    Ok(())
}

/// The provider resources of a state, by the reference resources record to them.
pub(crate) fn providers_by_reference(
    resources: &[crate::resource::ResourceState],
) -> HashMap<crate::resource::ProviderRef, usize> {
    (resources.iter().enumerate())
        .filter(|(_, r)| provided_package(&r.ty).is_some())
        .map(|(i, r)| (reference(r.urn.clone(), &Value::String(r.id.clone())), i))
        .collect()
}

/// For each URN, the resources that name it as parent or dependency.
fn dependents_by_urn(resources: &[crate::resource::ResourceState]) -> HashMap<Urn, Vec<usize>> {
    let mut dependents: HashMap<Urn, Vec<usize>> = HashMap::new();
    for (i, r) in resources.iter().enumerate() {
        for p in r.predecessors() {
            dependents.entry(p.clone()).or_default().push(i);
        }
    }
    dependents
}

fn resolved_value(value: Value, dependencies: Vec<Urn>) -> Resolved {
    Resolved {
        value,
        id: Value::Null,
        urn: None,
        dependencies,
        replaced: false,
    }
}

fn collect_handles(value: &Value, out: &mut Vec<u64>) {
    value.for_each_output(&mut |r| out.push(r.handle));
}

fn dedup_in_order(urns: &mut Vec<Urn>) {
    let mut seen = HashSet::new();
    urns.retain(|u| seen.insert(u.clone()));
}

/// Closures see plaintext; secrecy is restored on their result.
fn reveal(value: Value) -> Value {
    match value {
        Value::Secret(inner) => reveal(*inner),
        Value::Array(items) => Value::Array(items.into_iter().map(reveal).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, reveal(v))).collect()),
        other => other,
    }
}

fn make_secret(value: Value) -> Value {
    match value {
        Value::Secret(_) | Value::Unknown => value,
        other => Value::Secret(Box::new(other)),
    }
}
