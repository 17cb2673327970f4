//! Running a registration's step: claiming its base resource, deciding, and carrying out the
//! provider calls, each recorded before it starts and after it ends.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use super::claims::{ClaimGuard, ClaimOutcome, Claimed};
use super::context::StepContext;
use super::plan::{Kind, PlanInput, PlanOptions, StepPlan, ignore_changes, import_mismatch, plan};
use super::request::{ProviderBinding, ResourceStep};
use super::result::{StepError, StepOutputs, StepResult};
use crate::deployment::limit::{Permit, Reservation};
use crate::events::{Event, StepInfo, StepOp};
use crate::journal::{JournalEntry, SnapshotManager};
use crate::program::{CustomTimeouts, ResourceOptions};
use crate::provider::{DiffResult, Provider, ProviderError};
use crate::resource::{ResourceState, is_recordable_id};
use crate::shown::escape_controls;
use crate::snapshot::PendingKind;
use crate::urn::{Urn, package_of};
use crate::value::{PropertyMap, Value};
use crate::write_only;

/// What carrying out a plan acts on.
struct Action<'a> {
    kind: Kind,
    /// The new state, its inputs checked.
    state: ResourceState,
    /// The recorded state the step took charge of, and its place in the base state.
    old: Option<(usize, &'a ResourceState)>,
    /// The provider that manages a custom resource, or that a provider resource configured.
    provider: Option<Arc<dyn Provider>>,
    timeouts: CustomTimeouts,
    /// The write-only inputs a create sends, and those an update sends.
    write_only: (Vec<String>, Vec<String>),
}

impl StepContext {
    /// Runs one registration's step.
    pub(crate) async fn run_resource(
        &self,
        step: ResourceStep,
        turn: Reservation,
    ) -> Result<StepResult, StepError> {
        let mut permit = if self.leaves_out_step(&step) {
            // It calls no provider, so it takes no permit: it waits (for the steps its kept state
            // follows) holding none.
            drop(turn);
            self.after_kept_predecessors(&step).await?;
            None
        } else {
            // The permit comes before the claim: a delete-before-replace holding a permit may
            // wait for a claimed step, which must therefore never wait for a permit.
            Some(turn.acquire().await?)
        };
        if self.is_halted() {
            return Err(StepError::Halted);
        }
        // Boxed: the work after the permit is a large future, and most steps wait for their
        // turn; only the steps running at once hold one.
        let result = Box::pin(self.run_permitted(step, &mut permit)).await;
        self.halt_on_failure(&result);
        drop(permit);
        result
    }

    /// Runs a step holding `permit`, which a successful provider call gives back before its end
    /// is recorded: the step no longer calls anything, and recording waits for the writer.
    async fn run_permitted(
        &self,
        step: ResourceStep,
        permit: &mut Option<Permit>,
    ) -> Result<StepResult, StepError> {
        let aliases = self.aliases(&step)?;
        let (old, mut guard) = match self.claim(&step.urn, &aliases).await? {
            Some(c) => (Some((c.index, c.state)), Some(c.guard)),
            None => (None, None),
        };
        let result = self.run_claimed(step, old, permit).await;
        if let (Some(guard), Ok(result)) = (&mut guard, &result) {
            guard.1 = if result.replaced.is_some() {
                ClaimOutcome::Replaced
            } else {
                ClaimOutcome::Carried
            };
        }
        result
    }

    /// Gathers what the plan of a registration's step needs (asking the provider only when it
    /// decides anything), plans it, and carries the plan out.
    async fn run_claimed(
        &self,
        step: ResourceStep,
        old: Option<(usize, &ResourceState)>,
        permit: &mut Option<Permit>,
    ) -> Result<StepResult, StepError> {
        let opts = &step.request.options;
        let mut state = ResourceState {
            urn: step.urn.clone(),
            ty: step.request.ty.clone(),
            custom: step.request.custom,
            id: String::new(),
            inputs: step.inputs,
            outputs: PropertyMap::new(),
            parent: step.parent,
            dependencies: step.dependencies,
            protect: opts.protect,
            retain_on_delete: opts.retain_on_delete,
            delete: false,
            provider: step.provider.as_ref().map(|b| b.reference.clone()),
            custom_timeouts: opts.custom_timeouts,
        };
        let kind = Kind::of(&state);
        let targeted = !self.leaves_out(&state.urn, &state.ty, state.predecessors());
        if targeted
            && old.is_some()
            && let Some(error) = self.kept_dependent(&state)
        {
            return Err(error);
        }
        let binding = step.provider.as_ref();
        let mut write_only = Default::default();
        let (provider, diff) = match kind {
            Kind::Custom if targeted => {
                let (provider, diff, sent) =
                    self.check_and_diff(&mut state, old, binding, opts).await?;
                write_only = (sent.created(), sent.updated());
                (Some(sent.through(provider)), diff)
            }
            Kind::Provider if targeted => {
                let (provider, diff) = self.configure_provider(&mut state, old).await?;
                (Some(provider), diff)
            }
            _ => (None, None),
        };
        let no_diff = DiffResult::default();
        let options = PlanOptions {
            targeted,
            replace: self.replace.contains(&state.urn),
            provider_changed: old.is_some_and(|(_, o)| self.provider_replaced(o, binding)),
            import_id: opts.import_id.as_deref(),
            replace_on_changes: &opts.replace_on_changes,
            delete_before_replace: opts.delete_before_replace,
        };
        let input = PlanInput {
            kind,
            urn: &state.urn,
            old: old.map(|(_, o)| (o, diff.as_ref().unwrap_or(&no_diff))),
            options,
        };
        let plan = plan(&input).map_err(|e| self.fail(&state.urn, e.to_string()))?;
        (self.check_policies(&plan, kind, &state, old.map(|(_, o)| o))).await?;
        let timeouts = opts.custom_timeouts.unwrap_or_default();
        let action = Action {
            kind,
            state,
            old,
            provider,
            timeouts,
            write_only,
        };
        self.execute(plan, action, permit).await
    }

    /// What a custom resource's plan takes from its provider: the provider that manages it,
    /// having checked the program's inputs (`ignore_changes` applied), which `state` then
    /// holds but for the write-only ones (returned apart), and its diff of the recorded state
    /// and those, if there is one.
    async fn check_and_diff(
        &self,
        state: &mut ResourceState,
        old: Option<(usize, &ResourceState)>,
        binding: Option<&ProviderBinding>,
        opts: &ResourceOptions,
    ) -> Result<(Arc<dyn Provider>, Option<DiffResult>, write_only::Sent), StepError> {
        let urn = state.urn.clone();
        if !self.preview {
            let unknown: Vec<&str> = (state.inputs.iter())
                .filter(|(_, v)| v.contains_unknowns())
                .map(|(k, _)| k.as_str())
                .collect();
            if !unknown.is_empty() {
                return Err(self.fail(
                    &urn,
                    format!(
                        "inputs {} are unknown: they come from resources that do not exist (not \
                         targeted, or from an apply on unknown values); target those too",
                        unknown.join(", ")
                    ),
                ));
            }
        }
        let provider = self.provider_for(state, binding.map(|b| &b.config)).await?;
        // A misspelt type fails here, naming the types there are, before the provider's check.
        if let Some(message) = provider.info().unknown_resource_type(&state.ty) {
            return Err(self.fail(&urn, message));
        }
        if let Some((_, old)) = old {
            ignore_changes(&old.inputs, &mut state.inputs, &opts.ignore_changes)
                .map_err(|e| self.fail(&urn, e.to_string()))?;
        }
        let checked = provider
            .check(&urn, old.map(|(_, o)| &o.inputs), &state.inputs)
            .await
            .map_err(|e| self.provider_error(&urn, "check", e))?;
        if !checked.failures.is_empty() {
            return Err(self.provider_error(
                &urn,
                "check",
                ProviderError::Invalid(checked.failures),
            ));
        }
        state.inputs = checked.inputs;
        // Taken out before anything records, diffs or shows the inputs.
        let old_inputs = old.map(|(_, o)| &o.inputs);
        let sent =
            write_only::Sent::take(provider.info(), &state.ty, old_inputs, &mut state.inputs)
                .map_err(|e| self.fail(&urn, e))?;
        let Some((_, old)) = old else {
            return Ok((provider, None, sent));
        };
        let diff = provider
            .diff(&urn, &old.id, &old.inputs, &old.outputs, &state.inputs)
            .await
            .map_err(|e| self.provider_error(&urn, "diff", e))?;
        // Whatever it becomes, the resource keeps its id until a create gives it a new one.
        state.id = old.id.clone();
        Ok((provider, Some(diff), sent))
    }

    /// Carries out `plan` for `action`'s resource.
    async fn execute(
        &self,
        plan: StepPlan,
        action: Action<'_>,
        permit: &mut Option<Permit>,
    ) -> Result<StepResult, StepError> {
        let Action {
            kind,
            mut state,
            old,
            provider,
            timeouts,
            write_only,
        } = action;
        let info = |state: &ResourceState| {
            let (changed, replaces) = plan.changes();
            let op = plan.op().unwrap_or(StepOp::Same);
            let write_only = match op {
                StepOp::Create | StepOp::Replace => write_only.0.clone(),
                StepOp::Update => write_only.1.clone(),
                _ => Vec::new(),
            };
            StepInfo {
                write_only,
                ..self.info(
                    op,
                    state,
                    old.map(|(_, o)| o),
                    changed.to_vec(),
                    replaces.to_vec(),
                )
            }
        };
        self.planned(|| info(&state))?;
        match (&plan, kind, provider, old) {
            (StepPlan::Kept | StepPlan::NotCreated, ..) => self.untargeted(state, old).await,
            (StepPlan::Same | StepPlan::Create, Kind::Component, ..) => {
                let info = info(&state);
                self.run_component(state, old, info).await
            }
            (StepPlan::Same, _, _, Some((old_index, old))) => {
                state.id = old.id.clone();
                if kind == Kind::Custom {
                    state.outputs = old.outputs.clone();
                }
                let info = info(&state);
                self.same(old_index, old, state, info).await
            }
            (StepPlan::Create, Kind::Provider, ..) => {
                let info = info(&state);
                self.record_provider(state, info, None).await
            }
            (StepPlan::Create, _, Some(provider), _) => {
                let info = info(&state);
                let timeout = timeouts.create_seconds;
                (self.create(&*provider, state, info, None, timeout, permit)).await
            }
            (StepPlan::Import { id }, _, Some(provider), _) => {
                self.import(&*provider, state, id).await
            }
            (StepPlan::Update { .. }, Kind::Provider, _, Some(old)) => {
                state.id = old.1.id.clone();
                let info = info(&state);
                self.update_provider(old, state, info).await
            }
            (StepPlan::Update { .. }, _, Some(provider), Some(old)) => {
                let info = info(&state);
                let limit = timeouts.update_seconds;
                (self.update(&*provider, old, state, info, limit, permit)).await
            }
            (StepPlan::Replace { .. }, Kind::Provider, _, Some((old_index, _))) => {
                let info = info(&state);
                self.record_provider(state, info, Some(old_index)).await
            }
            (StepPlan::Replace { delete_first, .. }, _, Some(provider), Some((old_index, _))) => {
                let info = info(&state);
                let timeout = timeouts.create_seconds;
                if *delete_first {
                    self.delete_dependents(old_index).await?;
                    // The create that follows still needs the permit.
                    let delete = timeouts.delete_seconds;
                    (self.delete_base(old_index, &info, delete, &mut None)).await?;
                    (self.create(&*provider, state, info, None, timeout, permit)).await
                } else {
                    let replaces = Some(old_index);
                    (self.create(&*provider, state, info, replaces, timeout, permit)).await
                }
            }
            // The plan never asks for these: a component is only ever same or created; every
            // other step of a custom or provider resource has its provider, and an update or a
            // replacement its recorded state.
            (plan, kind, ..) => Err(self.fail(
                &state.urn,
                format!("internal error: no way to carry out {plan:?} for a {kind:?} resource"),
            )),
        }
    }

    /// Adopts the existing resource with provider id `id` (the `import` option): reads it and
    /// records it, without creating anything, if the program's inputs match what exists.
    async fn import(
        &self,
        provider: &dyn Provider,
        mut state: ResourceState,
        id: &str,
    ) -> Result<StepResult, StepError> {
        let started = Instant::now();
        let urn = state.urn.clone();
        let info = self.info(StepOp::Import, &state, None, Vec::new(), Vec::new());
        self.events.emit(Event::StepStarted(info.clone()));
        let outcome = async {
            if !is_recordable_id(id) {
                return Err(self.fail(
                    &urn,
                    format!(
                        "cannot import \"{}\": the import id contains control characters, \
                         which no id plinth records may hold",
                        escape_controls(id)
                    ),
                ));
            }
            let mut read = (provider.read(&urn, id, &state.inputs, &PropertyMap::new()))
                .await
                .map_err(|e| self.provider_error(&urn, "import (read)", e))?
                .ok_or_else(|| {
                    self.fail(
                        &urn,
                        format!(
                            "cannot import `{id}`: the provider finds no resource with that id"
                        ),
                    )
                })?;
            if !is_recordable_id(&read.id) {
                return Err(self.fail(&urn, unrecordable_read(urn.ty(), &read.id)));
            }
            write_only::strip(provider.info(), urn.ty(), &mut read.inputs);
            write_only::strip(provider.info(), urn.ty(), &mut read.outputs);
            let diff = provider
                .diff(&urn, &read.id, &read.inputs, &read.outputs, &state.inputs)
                .await
                .map_err(|e| self.provider_error(&urn, "import (diff)", e))?;
            if let Some(mismatch) = import_mismatch(id, &diff, &read.inputs, &state.inputs) {
                return Err(self.fail(&urn, mismatch.to_string()));
            }
            Ok(read)
        }
        .await;
        let read = outcome.inspect_err(|error| self.failed(info.clone(), error))?;
        state.id = read.id;
        state.outputs = read.outputs;
        let end = |seq, resource| JournalEntry::Created {
            seq,
            resource,
            replaces: None,
        };
        let subject = state.clone();
        let begun = (PendingKind::Creating, &subject, None);
        (self.record_done(begun, state, end, (info, started), None)).await
    }

    async fn run_component(
        &self,
        state: ResourceState,
        old: Option<(usize, &ResourceState)>,
        info: StepInfo,
    ) -> Result<StepResult, StepError> {
        let started = Instant::now();
        self.events.emit(Event::StepStarted(info.clone()));
        let urn = state.urn.clone();
        let outputs = old.map(|(_, o)| o.outputs.clone()).unwrap_or_default();
        let state = ResourceState {
            outputs: outputs.clone(),
            ..state
        };
        // As in `same`, an unchanged state is not journaled (nor are the outputs the program
        // registers for it, unless they change: see `JournalState::journaled`).
        let unchanged = old.filter(|(_, o)| **o == state).map(|(i, _)| i);
        let recorded = match old {
            _ if unchanged.is_some() => Ok(()),
            Some((i, _)) => {
                self.record(|| JournalEntry::Same {
                    old: i,
                    resource: Some(state),
                })
                .await
            }
            None => {
                let seq = self.recorder.as_ref().map_or(0, SnapshotManager::next_seq);
                self.record(|| JournalEntry::Begin {
                    seq,
                    kind: PendingKind::Creating,
                    resource: state.clone(),
                    old: None,
                })
                .await
                .and(
                    self.record(|| JournalEntry::Created {
                        seq,
                        resource: state,
                        replaces: None,
                    })
                    .await,
                )
            }
        };
        recorded.map_err(|e| self.persist_error(&urn, e))?;
        self.done(info, &outputs, started);
        Ok(StepResult {
            id: Value::Null,
            outputs: unchanged.map_or(StepOutputs::Own(outputs), StepOutputs::Base),
            replaced: None,
            absent: false,
        })
    }

    pub(super) async fn same(
        &self,
        old_index: usize,
        old: &ResourceState,
        state: ResourceState,
        info: StepInfo,
    ) -> Result<StepResult, StepError> {
        let started = Instant::now();
        // An unchanged state is not journaled: it stays where it is in the snapshot, and is
        // carried forward if something recorded later depends on it.
        let changed = *old != state;
        if changed {
            self.record(|| JournalEntry::Same {
                old: old_index,
                resource: Some(state.clone()),
            })
            .await
            .map_err(|e| self.persist_error(&state.urn, e))?;
        }
        self.done(info, &state.outputs, started);
        let outputs = if changed {
            StepOutputs::Own(state.outputs)
        } else {
            StepOutputs::Base(old_index)
        };
        Ok(StepResult {
            id: Value::String(state.id),
            outputs,
            replaced: None,
            absent: false,
        })
    }

    async fn create(
        &self,
        provider: &dyn Provider,
        mut state: ResourceState,
        info: StepInfo,
        replaces: Option<usize>,
        timeout: Option<u32>,
        permit: &mut Option<Permit>,
    ) -> Result<StepResult, StepError> {
        let started = Instant::now();
        self.events.emit(Event::StepStarted(info.clone()));
        let urn = state.urn.clone();
        let seq = self
            .begin(PendingKind::Creating, &state, replaces)
            .await
            .map_err(|e| self.persist_error(&urn, e))?;
        let call = provider.create(&urn, &state.inputs, self.preview);
        let result = match self.timed(&urn, "create", timeout, call).await {
            Ok(result) => result,
            Err(error) => {
                self.failed(info, &error);
                return Err(error);
            }
        };
        let partial_error = match result {
            Ok(created) => {
                state.id = created.id;
                state.outputs = created.outputs;
                None
            }
            Err(ProviderError::PartiallyCreated(partial)) => {
                state.id = partial.id.clone();
                state.outputs = partial.outputs.clone();
                Some(self.provider_error(&urn, "create", ProviderError::PartiallyCreated(partial)))
            }
            Err(e) => {
                let error = self.provider_error(&urn, "create", e);
                self.record(|| JournalEntry::Failed { seq })
                    .await
                    .map_err(|e| self.persist_error(&urn, e))?;
                self.failed(info, &error);
                return Err(error);
            }
        };
        if !self.preview && state.id.is_empty() {
            let error = self.fail(
                &urn,
                format!(
                    "plugin `{}` created the resource but returned no id",
                    package_of(urn.ty())
                ),
            );
            self.record(|| JournalEntry::Failed { seq })
                .await
                .map_err(|e| self.persist_error(&urn, e))?;
            self.failed(info, &error);
            return Err(error);
        }
        if self.preview && !is_recordable_id(&state.id) {
            // Nothing was created: the id a preview planned is unknown until the create.
            state.id.clear();
        } else if !is_recordable_id(&state.id) {
            // Its create stays recorded as pending: something may exist that the state cannot
            // hold, and every command warns of it until `plinth refresh` clears it.
            let error = self.fail(&urn, created_unrecordable(urn.ty(), &state.id));
            self.failed(info, &error);
            return Err(error);
        }
        let id = if state.id.is_empty() {
            Value::Unknown
        } else {
            Value::String(state.id.clone())
        };
        let outputs = state.outputs.clone();
        if partial_error.is_none() {
            permit.take();
        }
        self.record(|| JournalEntry::Created {
            seq,
            resource: state,
            replaces,
        })
        .await
        .map_err(|e| self.persist_error(&urn, e))?;
        if let Some(error) = partial_error {
            self.failed(info, &error);
            return Err(error);
        }
        self.done(info, &outputs, started);
        Ok(StepResult {
            id,
            outputs: StepOutputs::Own(outputs),
            replaced: replaces,
            absent: false,
        })
    }

    async fn update(
        &self,
        provider: &dyn Provider,
        (old_index, old): (usize, &ResourceState),
        mut state: ResourceState,
        info: StepInfo,
        timeout: Option<u32>,
        permit: &mut Option<Permit>,
    ) -> Result<StepResult, StepError> {
        let started = Instant::now();
        self.events.emit(Event::StepStarted(info.clone()));
        let urn = state.urn.clone();
        let seq = self
            .begin(PendingKind::Updating, old, Some(old_index))
            .await
            .map_err(|e| self.persist_error(&urn, e))?;
        let (id, preview) = (&old.id, self.preview);
        let call = provider.update(&urn, id, &old.inputs, &old.outputs, &state.inputs, preview);
        let result = match self.timed(&urn, "update", timeout, call).await {
            Ok(result) => result,
            Err(error) => {
                self.failed(info, &error);
                return Err(error);
            }
        };
        match result {
            Ok(outputs) => state.outputs = outputs,
            Err(e) => {
                let error = self.provider_error(&urn, "update", e);
                self.record(|| JournalEntry::Failed { seq })
                    .await
                    .map_err(|e| self.persist_error(&urn, e))?;
                self.failed(info, &error);
                return Err(error);
            }
        }
        let outputs = state.outputs.clone();
        permit.take();
        self.record(|| JournalEntry::Updated {
            seq,
            old: old_index,
            resource: state.clone(),
        })
        .await
        .map_err(|e| self.persist_error(&urn, e))?;
        self.done(info, &outputs, started);
        Ok(StepResult {
            id: Value::String(state.id),
            outputs: StepOutputs::Own(outputs),
            replaced: None,
            absent: false,
        })
    }

    /// Reads an existing resource by id for the program, without managing it.
    pub(crate) async fn run_read(
        &self,
        urn: &Urn,
        id: &str,
        inputs: &PropertyMap,
        binding: Option<ProviderBinding>,
        turn: Reservation,
    ) -> Result<StepResult, StepError> {
        let _permit = turn.acquire().await?;
        let package = package_of(urn.ty());
        let provider = match &binding {
            Some(b) => self.providers.configured(package, &b.config).await,
            None => self.providers.provider(package).await,
        }
        .map_err(|cause| StepError::Plugin {
            plugin: package.to_owned(),
            cause,
        })?;
        match provider.read(urn, id, inputs, &PropertyMap::new()).await {
            Ok(Some(read)) => Ok(StepResult {
                id: Value::String(read.id),
                outputs: StepOutputs::Own(read.outputs),
                replaced: None,
                absent: false,
            }),
            Ok(None) => Err(self.fail(
                urn,
                format!("resource with id `{}` does not exist", escape_controls(id)),
            )),
            Err(e) => Err(self.provider_error(urn, "read", e)),
        }
    }
}

/// Why a resource of type `ty` that its plugin created with id `id` is not recorded.
fn created_unrecordable(ty: &str, id: &str) -> String {
    format!(
        "plugin `{}` created the resource but returned the id \"{}\", which contains control \
         characters: plinth cannot record it. What the plugin created exists but is not managed: \
         delete it by that id with the provider's own tools; its create stays recorded as pending \
         until `plinth refresh` clears it",
        package_of(ty),
        escape_controls(id)
    )
}

/// Why a resource of type `ty` that its plugin read back with id `id` is not recorded.
pub(crate) fn unrecordable_read(ty: &str, id: &str) -> String {
    format!(
        "plugin `{}` read the resource back with the id \"{}\", which contains control \
         characters: plinth cannot record it, and keeps what it recorded before",
        package_of(ty),
        escape_controls(id)
    )
}

impl StepContext {
    /// Takes charge of the live base resource with `urn`, or else with one of its `aliases`
    /// (URNs it was known by). One being deleted ahead of a delete-before-replace is waited for,
    /// and then is no longer there.
    pub(super) async fn claim(
        &self,
        urn: &Urn,
        aliases: &[Urn],
    ) -> Result<Option<Claimed<'_>>, StepError> {
        let Some(index) = self.live_base_index_of(urn, aliases) else {
            return Ok(None);
        };
        let deletion = {
            let mut claims = self.claims.lock().expect("claims");
            match claims.deleted.get(&index) {
                Some(deletion) => deletion.clone(),
                None => {
                    let (outcome, watcher) = watch::channel(None);
                    claims.claimed.insert(index, watcher);
                    return Ok(Some(Claimed {
                        index,
                        state: &self.base.resources()[index],
                        guard: ClaimGuard(outcome, ClaimOutcome::Failed),
                    }));
                }
            }
        };
        let mut deletion = deletion;
        let deleted = self
            .unless_cancelled(deletion.wait_for(Option::is_some))
            .await?
            .map(|d| *d == Some(true))
            .unwrap_or(false);
        if deleted {
            Ok(None)
        } else {
            Err(self.fail(
                urn,
                "its previous copy had to be deleted first (a resource it depends on is replaced \
                 delete-before-replace), and that delete did not happen",
            ))
        }
    }
}
