//! `refresh`: reads every resource back through its provider and makes the state say what
//! exists. A resource changed out of band takes what the provider reads (drift); one gone out of
//! band leaves the state, and what depended on it stops naming it. Pending operations an
//! interrupted update left are resolved: creates cleared, or adopted by id; updates and deletes
//! dropped, since their resources have just been read back.
//!
//! Reads run in parallel; the journal entries are written afterwards, in state order and with
//! one flush, so every intermediate snapshot is valid (a refresh changes nothing in the real
//! world, so an interrupted one loses nothing).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::deployment::step::base::providers_by_reference;
use crate::deployment::step::unrecordable_read;
use crate::deployment::target::TargetSet;
use crate::deployment::{MAX_PARALLEL, Targets};
use crate::events::{ChangeSummary, Event, EventSink, Severity, StepInfo, StepOp};
use crate::journal::{JournalEntry, JournalState, SnapshotManager};
use crate::provider::{ProviderSource, ReadResult};
use crate::resource::{ResourceState, is_recordable_id};
use crate::shown::escape_controls;
use crate::snapshot::{PendingKind, Snapshot};
use crate::urn::{Urn, is_counted, package_of, provided_package};
use crate::value::PropertyMap;
use crate::write_only;

/// How a refresh runs.
#[derive(Debug, Clone, Default)]
pub struct RefreshOptions {
    /// Show what would change; record nothing.
    pub preview: bool,
    /// Upper bound on reads in flight (at least 1, at most [`MAX_PARALLEL`]).
    pub parallel: usize,
    /// Read only these resources (the others are kept as recorded).
    pub targets: Option<Targets>,
    /// Pending creates to adopt, by URN, with the provider id of what was created.
    pub adopt: BTreeMap<Urn, String>,
}

/// What a refresh found, and the state it leaves.
#[derive(Debug)]
pub struct RefreshOutcome {
    pub changes: ChangeSummary,
    pub errors: Vec<String>,
    /// The refreshed state, also in preview (`None` if it could not be built or recorded).
    pub snapshot: Option<Snapshot>,
}

/// Refreshes `base` (shared with the `recorder`, if it was started on the same one). With a
/// `recorder`, the refreshed state is recorded as the new checkpoint.
pub async fn run(
    options: RefreshOptions,
    base: impl Into<Arc<Snapshot>>,
    providers: Arc<dyn ProviderSource>,
    recorder: Option<SnapshotManager>,
    events: EventSink,
    cancel: CancellationToken,
) -> RefreshOutcome {
    let started = Instant::now();
    let base: Arc<Snapshot> = base.into();
    let mut errors = Vec::new();
    let targets = (options.targets.clone()).map(|t| TargetSet::new(t, &base.resources));
    let wanted = |r: &ResourceState| targets.as_ref().is_none_or(|t| t.contains(&r.urn));
    let by_reference = providers_by_reference(&base.resources);
    let provider = |r: &ResourceState| by_reference.get(r.provider.as_ref()?).copied();
    // Provider resources are nothing real: there is nothing to read back.
    let reads: Vec<Read> = (base.resources.iter().enumerate())
        .filter(|(_, r)| r.custom && !r.delete && wanted(r) && provided_package(&r.ty).is_none())
        .map(|(i, r)| Read::of_base(i, provider(r)))
        .chain(adoptions(&options, &base, &mut errors, provider))
        .collect();
    let mut plan = Plan::new(&base, &events);
    // Each result is taken as it comes: a state read back unchanged is dropped at once.
    let on_result = |read: Read, result: Result<_, String>| match result {
        Ok(found) => plan.found(read, found),
        Err(e) => {
            events.emit(Event::StepFailed {
                step: plan.step_info(StepOp::Same, read.state(&base), None),
                error: e.clone(),
            });
            errors.push(format!("{}: read failed: {e}", read.state(&base).urn));
        }
    };
    let parallel = options.parallel;
    read_all(
        reads, &base, &providers, parallel, &events, &cancel, on_result,
    )
    .await;
    let entries = plan.entries(&options);
    let changes = plan.changes;
    let mut state = JournalState::new(base);
    let valid = entries.iter().try_for_each(|e| state.apply(e));
    let snapshot = match (valid, recorder) {
        (Err(e), _) => {
            errors.push(format!("the refreshed state would be invalid: {e}"));
            None
        }
        (Ok(()), None) => Some(state.into_snapshot()),
        (Ok(()), Some(recorder)) => {
            // The recorder builds the same state: this one only kept an invalid state from
            // being recorded, and is not kept beside it.
            drop(state);
            // All at once: one flush, not one per resource.
            let recorded = recorder.record_all(entries).await;
            match recorded.and(recorder.finish().await) {
                Ok(finished) => Some(finished),
                Err(e) => {
                    errors.push(e.to_string());
                    None
                }
            }
        }
    };
    events.emit(Event::Summary {
        changes: changes.clone(),
        duration: started.elapsed(),
        preview: options.preview,
        failed: !errors.is_empty(),
    });
    RefreshOutcome {
        changes,
        errors,
        snapshot,
    }
}

/// One resource to read: a state's, or a pending create's to adopt.
struct Read {
    subject: Subject,
    /// The base's provider resource that manages it, if it records one: its outputs are the
    /// provider's configuration.
    provider: Option<usize>,
}

enum Subject {
    /// The base resource at this index (read from the base, not copied).
    Base(usize),
    /// A pending create, with the id to read it by.
    Pending(Box<ResourceState>),
}

impl Read {
    fn of_base(index: usize, provider: Option<usize>) -> Read {
        Read {
            subject: Subject::Base(index),
            provider,
        }
    }

    /// The state it reads.
    fn state<'a>(&'a self, base: &'a Snapshot) -> &'a ResourceState {
        match &self.subject {
            Subject::Base(i) => &base.resources[*i],
            Subject::Pending(state) => state,
        }
    }
}

/// The pending creates `--import-pending-create` names, with the id to read them by.
fn adoptions(
    options: &RefreshOptions,
    base: &Snapshot,
    errors: &mut Vec<String>,
    provider: impl Fn(&ResourceState) -> Option<usize>,
) -> Vec<Read> {
    let mut reads = Vec::new();
    for (urn, id) in &options.adopt {
        let pending = (base.pending_operations.iter())
            .find(|op| op.kind == PendingKind::Creating && op.resource.urn == *urn);
        match pending {
            Some(_) if !is_recordable_id(id) => errors.push(format!(
                "{urn}: cannot adopt it by the id \"{}\": it contains control characters, which \
                 no id plinth records may hold",
                escape_controls(id)
            )),
            Some(op) => reads.push(Read {
                subject: Subject::Pending(Box::new(ResourceState {
                    id: id.clone(),
                    ..op.resource.clone()
                })),
                provider: provider(&op.resource),
            }),
            None => errors.push(format!(
                "{urn}: there is no pending create of it to adopt (see the pending operations \
                 `plinth stack export` shows)"
            )),
        }
    }
    reads
}

/// Reads every resource of `reads` (from `base`, through `providers`), at most `parallel` at
/// once, handing each result to `on_result` as it comes; stops starting reads once `cancel`
/// fires.
async fn read_all(
    reads: Vec<Read>,
    base: &Arc<Snapshot>,
    providers: &Arc<dyn ProviderSource>,
    parallel: usize,
    events: &EventSink,
    cancel: &CancellationToken,
    mut on_result: impl FnMut(Read, Result<Option<ReadResult>, String>),
) {
    let limit = Arc::new(Semaphore::new(parallel.clamp(1, MAX_PARALLEL)));
    let mut tasks = JoinSet::new();
    for read in reads {
        let (limit, providers, cancel) = (limit.clone(), providers.clone(), cancel.clone());
        let base = base.clone();
        tasks.spawn(async move {
            let _permit = tokio::select! {
                permit = limit.acquire_owned() => permit.expect("read limiter closed"),
                () = cancel.cancelled() => return None,
            };
            let r = read.state(&base);
            let package = package_of(&r.ty);
            let provider = match read.provider {
                Some(i) => (providers.configured(package, &base.resources[i].outputs)).await,
                None => providers.provider(package).await,
            };
            let result = match provider {
                Err(e) => Err(e.to_string()),
                Ok(provider) => (provider.read(&r.urn, &r.id, &r.inputs, &r.outputs))
                    .await
                    .map_err(|e| format!("plugin `{}`: {e}", package_of(&r.ty)))
                    .and_then(|found| match found {
                        Some(f) if !is_recordable_id(&f.id) => Err(unrecordable_read(&r.ty, &f.id)),
                        // A write-only input is never recorded, whatever the provider reads.
                        Some(mut f) => {
                            write_only::strip(provider.info(), &r.ty, &mut f.inputs);
                            write_only::strip(provider.info(), &r.ty, &mut f.outputs);
                            Ok(Some(f))
                        }
                        None => Ok(None),
                    }),
            };
            Some((read, result))
        });
    }
    let mut cancelled = false;
    while let Some(joined) = tasks.join_next().await {
        match joined.expect("read task panicked") {
            Some((read, result)) => on_result(read, result),
            None if !cancelled => {
                cancelled = true;
                events.emit(Event::Cancelled);
            }
            None => {}
        }
    }
}

/// What the reads found, turned into journal entries.
struct Plan<'a> {
    base: &'a Snapshot,
    events: &'a EventSink,
    /// Base resources read back, by index: `None` when gone.
    found: HashMap<usize, Option<ReadResult>>,
    adopted: Vec<ResourceState>,
    changes: ChangeSummary,
}

impl<'a> Plan<'a> {
    fn new(base: &'a Snapshot, events: &'a EventSink) -> Plan<'a> {
        Plan {
            base,
            events,
            found: HashMap::new(),
            adopted: Vec::new(),
            changes: ChangeSummary::default(),
        }
    }

    fn found(&mut self, read: Read, found: Option<ReadResult>) {
        match read.subject {
            Subject::Base(i) => {
                // Read back as recorded, it changes nothing, as if it had not been read: it is
                // not kept.
                let old = &self.base.resources[i];
                if let Some(r) = &found
                    && (r.id == old.id && r.inputs == old.inputs && r.outputs == old.outputs)
                {
                    return;
                }
                self.found.insert(i, found);
            }
            Subject::Pending(state) => match found {
                Some(found) => self.adopted.push(ResourceState {
                    id: found.id,
                    outputs: found.outputs,
                    ..*state
                }),
                None => self.events.diagnostic(
                    Some(&state.urn),
                    Severity::Warning,
                    format!(
                        "cannot adopt it: its provider finds no resource with id `{}`; its \
                         pending create is cleared",
                        state.id
                    ),
                ),
            },
        }
    }

    /// Inputs and outputs together, as a refresh shows them: what exists.
    fn step_info(&self, op: StepOp, old: &ResourceState, new: Option<&ReadResult>) -> StepInfo {
        if op == StepOp::Same {
            // Nothing to show: no property trees copied into its event.
            return StepInfo {
                op,
                urn: old.urn.clone(),
                parent: old.parent.clone(),
                custom: old.custom,
                old_inputs: None,
                new_inputs: None,
                changed: Vec::new(),
                replaces: Vec::new(),
                write_only: Vec::new(),
            };
        }
        let view = |inputs: &PropertyMap, outputs: &PropertyMap| {
            let mut all = inputs.clone();
            all.extend(outputs.clone());
            all
        };
        let old_view = view(&old.inputs, &old.outputs);
        let new_view = new.map(|n| view(&n.inputs, &n.outputs));
        let changed = match &new_view {
            Some(new) => (old_view.keys().chain(new.keys()))
                .filter(|k| old_view.get(*k) != new.get(*k))
                .cloned()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
            None => Vec::new(),
        };
        StepInfo {
            op,
            urn: old.urn.clone(),
            parent: old.parent.clone(),
            custom: old.custom,
            old_inputs: Some(old_view),
            new_inputs: new_view,
            changed,
            replaces: Vec::new(),
            write_only: Vec::new(),
        }
    }

    fn show(&mut self, info: StepInfo) {
        if is_counted(info.urn.ty()) {
            self.changes.record(info.op);
        }
        self.events.emit(Event::StepDone {
            step: info,
            outputs: None,
            duration: Default::default(),
        });
    }

    /// The entries that record what was found: the gone resources forgotten (which drops the
    /// references to them), then the resources whose state changed, in state order, then the
    /// pending operations resolved. Unchanged states are not journaled.
    fn entries(&mut self, options: &RefreshOptions) -> Vec<JournalEntry> {
        let base = &self.base.resources;
        let gone: HashSet<usize> = (self.found.iter())
            .filter(|(_, found)| found.is_none())
            .map(|(&i, _)| i)
            .collect();
        let gone_urns: HashSet<&Urn> = gone.iter().map(|&i| &base[i].urn).collect();
        // What had a parent that is gone now stands directly under the stack.
        let root = self.base.root().map(|r| r.urn.clone());
        let mut entries = Vec::new();
        let mut forgotten: Vec<usize> = gone.iter().copied().collect();
        forgotten.sort_unstable_by_key(|&i| std::cmp::Reverse(i));
        for i in forgotten {
            let info = self.step_info(StepOp::Gone, &base[i], None);
            self.show(info);
            entries.push(JournalEntry::Forgotten { old: i });
        }
        for (i, old) in base.iter().enumerate() {
            if old.delete || gone.contains(&i) {
                continue;
            }
            let mut state = old.clone();
            state.dependencies.retain(|d| !gone_urns.contains(d));
            if state.parent.as_ref().is_some_and(|p| gone_urns.contains(p)) {
                state.parent = root.clone();
            }
            let read = self.found.get(&i).and_then(Option::as_ref);
            if let Some(read) = read {
                state.id.clone_from(&read.id);
                state.inputs.clone_from(&read.inputs);
                state.outputs.clone_from(&read.outputs);
            }
            let drifted =
                read.is_some() && (state.inputs != old.inputs || state.outputs != old.outputs);
            let op = if drifted { StepOp::Drift } else { StepOp::Same };
            let info = self.step_info(op, old, read);
            self.show(info);
            if state != *old {
                entries.push(JournalEntry::Same {
                    old: i,
                    resource: Some(state),
                });
            }
        }
        let live: HashSet<Urn> = (base.iter().enumerate())
            .filter(|(i, r)| !r.delete && !gone.contains(i))
            .map(|(_, r)| r.urn.clone())
            .collect();
        self.resolve_pending(options, &live, &mut entries);
        entries
    }

    fn resolve_pending(
        &mut self,
        options: &RefreshOptions,
        live: &HashSet<Urn>,
        entries: &mut Vec<JournalEntry>,
    ) {
        for op in &self.base.pending_operations {
            let urn = &op.resource.urn;
            let message = match op.kind {
                PendingKind::Creating if options.adopt.contains_key(urn) => continue,
                PendingKind::Creating => {
                    "cleared the pending create: if it created something, that is not managed \
                     (adopt it with `--import-pending-create URN=ID`)"
                }
                PendingKind::Updating => "dropped the pending update: the resource was read back",
                PendingKind::Deleting => "dropped the pending delete: the resource was read back",
            };
            self.events
                .diagnostic(Some(urn), Severity::Warning, message);
            entries.push(JournalEntry::ResolvePending {
                kind: op.kind,
                urn: urn.clone(),
            });
        }
        for mut state in std::mem::take(&mut self.adopted) {
            state.dependencies.retain(|d| live.contains(d));
            if state.parent.as_ref().is_some_and(|p| !live.contains(p)) {
                state.parent =
                    (self.base.root().map(|r| r.urn.clone())).filter(|r| live.contains(r));
            }
            let urn = state.urn.clone();
            self.events.emit(Event::StepDone {
                step: StepInfo {
                    op: StepOp::Import,
                    urn: urn.clone(),
                    parent: state.parent.clone(),
                    custom: true,
                    old_inputs: None,
                    new_inputs: Some(state.inputs.clone()),
                    changed: Vec::new(),
                    replaces: Vec::new(),
                    write_only: Vec::new(),
                },
                outputs: None,
                duration: Default::default(),
            });
            self.changes.record(StepOp::Import);
            // Sequence numbers of a refresh's own begin records: none other runs alongside.
            let seq = entries.len() as u64 + 1;
            entries.push(JournalEntry::Begin {
                seq,
                kind: PendingKind::Creating,
                resource: state.clone(),
                old: None,
            });
            entries.push(JournalEntry::Created {
                seq,
                resource: state,
                replaces: None,
            });
            entries.push(JournalEntry::ResolvePending {
                kind: PendingKind::Creating,
                urn,
            });
        }
    }
}
