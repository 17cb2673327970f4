//! Running a registration's step: claiming its base resource, deciding, and carrying out the
//! provider calls, each recorded before it starts and after it ends.

use std::time::Instant;

use super::claims::ClaimOutcome;
use super::{ProviderBinding, ResourceStep, StepContext, StepError, StepOutputs, StepResult};
use crate::deployment::limit::{Permit, Reservation};
use crate::events::{Event, StepInfo, StepOp};
use crate::journal::{JournalEntry, SnapshotManager};
use crate::property_path::PropertyPath;
use crate::provider::{Provider, ProviderError};
use crate::resource::{ResourceState, is_recordable_id};
use crate::shown::escape_controls;
use crate::snapshot::PendingKind;
use crate::urn::{Urn, package_of, provided_package};
use crate::value::{PropertyMap, Value};

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
        if self.leaves_out(&state.urn, &state.ty, state.predecessors()) {
            return self.untargeted(state, old).await;
        }
        if old.is_some()
            && let Some(error) = self.kept_dependent(&state)
        {
            return Err(error);
        }
        let is_provider = provided_package(&state.ty).is_some();
        if !state.custom {
            return self.run_component(state, old).await;
        }
        if is_provider {
            return self.run_provider_resource(state, old).await;
        }
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
        let binding = step.provider.as_ref();
        let provider = self
            .provider_for(&state, binding.map(|b| &b.config))
            .await?;
        // A misspelt type fails here, naming the types there are, before the provider's check.
        if let Some(message) = provider.info().unknown_resource_type(&state.ty) {
            return Err(self.fail(&urn, message));
        }
        let timeouts = opts.custom_timeouts.unwrap_or_default();
        if let Some((_, old)) = old {
            for path in &opts.ignore_changes {
                let path = PropertyPath::parse(path)
                    .map_err(|e| self.fail(&urn, format!("ignore_changes: {e}")))?;
                path.keep_old(&old.inputs, &mut state.inputs);
            }
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

        let Some((old_index, old)) = old else {
            if let Some(id) = &opts.import_id {
                return self.import(&*provider, state, id).await;
            }
            let info = self.info(StepOp::Create, &state, None, Vec::new(), Vec::new());
            let timeout = timeouts.create_seconds;
            return (self.create(&*provider, state, info, None, timeout, permit)).await;
        };
        let diff = provider
            .diff(&urn, &old.id, &old.inputs, &old.outputs, &state.inputs)
            .await
            .map_err(|e| self.provider_error(&urn, "diff", e))?;
        let mut replaces = diff.replaces;
        for key in &diff.changed {
            if opts.replace_on_changes.contains(key) && !replaces.contains(key) {
                replaces.push(key.clone());
            }
        }
        state.id = old.id.clone();
        let forced = self.replace.contains(&urn) || self.provider_replaced(old, binding);
        if diff.changed.is_empty() && !forced {
            state.outputs = old.outputs.clone();
            let info = self.info(StepOp::Same, &state, Some(old), Vec::new(), Vec::new());
            return self.same(old_index, old, state, info).await;
        }
        if replaces.is_empty() && !forced {
            let info = self.info(StepOp::Update, &state, Some(old), diff.changed, Vec::new());
            let limit = timeouts.update_seconds;
            return self
                .update(&*provider, (old_index, old), state, info, limit, permit)
                .await;
        }
        if old.protect {
            let why = if replaces.is_empty() {
                "--replace asks for it".to_owned()
            } else {
                format!("changes to {} require it", replaces.join(", "))
            };
            return Err(self.fail(
                &urn,
                format!(
                    "cannot replace protected resource ({why}); remove `protect` first \
                     (`plinth state unprotect {urn}`)"
                ),
            ));
        }
        let info = self.info(StepOp::Replace, &state, Some(old), diff.changed, replaces);
        if diff.delete_before_replace || opts.delete_before_replace {
            self.delete_dependents(old_index).await?;
            // The create that follows still needs the permit.
            let timeout = timeouts.delete_seconds;
            (self.delete_base(old_index, &info, timeout, &mut None)).await?;
            let timeout = timeouts.create_seconds;
            (self.create(&*provider, state, info, None, timeout, permit)).await
        } else {
            let replaces = Some(old_index);
            let timeout = timeouts.create_seconds;
            (self.create(&*provider, state, info, replaces, timeout, permit)).await
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
            let read = (provider.read(&urn, id, &state.inputs, &PropertyMap::new()))
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
            let diff = provider
                .diff(&urn, &read.id, &read.inputs, &read.outputs, &state.inputs)
                .await
                .map_err(|e| self.provider_error(&urn, "import (diff)", e))?;
            if !diff.changed.is_empty() {
                let differences: Vec<String> = (diff.changed.iter())
                    .map(|k| {
                        let show =
                            |m: &PropertyMap| m.get(k).map_or("(none)".into(), Value::to_string);
                        format!(
                            "{k}: existing {} vs program {}",
                            show(&read.inputs),
                            show(&state.inputs)
                        )
                    })
                    .collect();
                return Err(self.fail(
                    &urn,
                    format!(
                        "cannot import `{id}`: the program's inputs differ from the existing \
                         resource ({}); make the program match, then run again",
                        differences.join("; ")
                    ),
                ));
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
    ) -> Result<StepResult, StepError> {
        let started = Instant::now();
        let op = if old.is_some() {
            StepOp::Same
        } else {
            StepOp::Create
        };
        let info = self.info(op, &state, old.map(|(_, o)| o), Vec::new(), Vec::new());
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

    pub(crate) async fn same(
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
