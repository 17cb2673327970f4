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

use crate::deployment::{Targets, providers_by_reference};
use crate::events::{ChangeSummary, Event, EventSink, Severity, StepInfo, StepOp};
use crate::journal::{JournalEntry, JournalState, SnapshotManager};
use crate::provider::{ProviderSource, ReadResult};
use crate::resource::ResourceState;
use crate::snapshot::{PendingKind, Snapshot};
use crate::target::TargetSet;
use crate::urn::{Urn, is_counted, package_of, provided_package};
use crate::value::PropertyMap;

/// How a refresh runs.
#[derive(Debug, Clone, Default)]
pub struct RefreshOptions {
    /// Show what would change; record nothing.
    pub preview: bool,
    /// Upper bound on reads in flight.
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

/// Refreshes `base`. With a `recorder`, the refreshed state is recorded as the new checkpoint.
pub async fn run(
    options: RefreshOptions,
    base: Snapshot,
    providers: Arc<dyn ProviderSource>,
    recorder: Option<SnapshotManager>,
    events: EventSink,
    cancel: CancellationToken,
) -> RefreshOutcome {
    let started = Instant::now();
    let mut errors = Vec::new();
    let targets = (options.targets.clone()).map(|t| TargetSet::new(t, &base.resources));
    let wanted = |r: &ResourceState| targets.as_ref().is_none_or(|t| t.contains(&r.urn));
    let by_reference = providers_by_reference(&base.resources);
    let config = |r: &ResourceState| {
        let &i = by_reference.get(r.provider.as_ref()?)?;
        Some(base.resources[i].outputs.clone())
    };
    // Provider resources are nothing real: there is nothing to read back.
    let reads: Vec<Read> = (base.resources.iter().enumerate())
        .filter(|(_, r)| r.custom && !r.delete && wanted(r) && provided_package(&r.ty).is_none())
        .map(|(i, r)| Read::of_state(i, r, config(r)))
        .chain(adoptions(&options, &base, &mut errors, config))
        .collect();
    let results = read_all(reads, &providers, options.parallel, &events, &cancel).await;
    let mut plan = Plan::new(&base, &events);
    for (read, result) in results {
        match result {
            Ok(found) => plan.found(read, found),
            Err(e) => {
                events.emit(Event::StepFailed {
                    step: plan.step_info(StepOp::Same, &read.state, None),
                    error: e.clone(),
                });
                errors.push(format!("{}: read failed: {e}", read.state.urn));
            }
        }
    }
    let entries = plan.entries(&options);
    let changes = plan.changes;
    let mut state = JournalState::new(base);
    let mut snapshot = None;
    match entries.iter().try_for_each(|e| state.apply(e)) {
        Err(e) => errors.push(format!("the refreshed state would be invalid: {e}")),
        Ok(()) => snapshot = Some(state.snapshot()),
    }
    if let (Some(recorder), true) = (recorder, snapshot.is_some()) {
        // All at once: one flush, not one per resource.
        let recorded = recorder.record_all(entries).await;
        match recorded.and(recorder.finish().await) {
            Ok(finished) => snapshot = Some(finished),
            Err(e) => {
                errors.push(e.to_string());
                snapshot = None;
            }
        }
    }
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
    /// The base resource, or `None` for a pending create.
    index: Option<usize>,
    state: ResourceState,
    /// The configuration of the provider resource that manages it, if it records one.
    config: Option<PropertyMap>,
}

impl Read {
    fn of_state(index: usize, state: &ResourceState, config: Option<PropertyMap>) -> Read {
        Read {
            index: Some(index),
            state: state.clone(),
            config,
        }
    }
}

/// The pending creates `--import-pending-create` names, with the id to read them by.
fn adoptions(
    options: &RefreshOptions,
    base: &Snapshot,
    errors: &mut Vec<String>,
    config: impl Fn(&ResourceState) -> Option<PropertyMap>,
) -> Vec<Read> {
    let mut reads = Vec::new();
    for (urn, id) in &options.adopt {
        let pending = (base.pending_operations.iter())
            .find(|op| op.kind == PendingKind::Creating && op.resource.urn == *urn);
        match pending {
            Some(op) => reads.push(Read {
                index: None,
                state: ResourceState {
                    id: id.clone(),
                    ..op.resource.clone()
                },
                config: config(&op.resource),
            }),
            None => errors.push(format!(
                "{urn}: there is no pending create of it to adopt (see the pending operations \
                 `plinth stack export` shows)"
            )),
        }
    }
    reads
}

/// Reads every resource of `reads`, at most `parallel` at once; stops starting reads once
/// `cancel` fires.
async fn read_all(
    reads: Vec<Read>,
    providers: &Arc<dyn ProviderSource>,
    parallel: usize,
    events: &EventSink,
    cancel: &CancellationToken,
) -> Vec<(Read, Result<Option<ReadResult>, String>)> {
    let limit = Arc::new(Semaphore::new(parallel.max(1)));
    let mut tasks = JoinSet::new();
    for read in reads {
        let (limit, providers, cancel) = (limit.clone(), providers.clone(), cancel.clone());
        tasks.spawn(async move {
            let _permit = tokio::select! {
                permit = limit.acquire_owned() => permit.expect("read limiter closed"),
                () = cancel.cancelled() => return None,
            };
            let r = &read.state;
            let package = package_of(&r.ty);
            let provider = match &read.config {
                Some(config) => providers.configured(package, config).await,
                None => providers.provider(package).await,
            };
            let result = match provider {
                Err(e) => Err(e.to_string()),
                Ok(provider) => (provider.read(&r.urn, &r.id, &r.inputs, &r.outputs))
                    .await
                    .map_err(|e| format!("plugin `{}`: {e}", package_of(&r.ty))),
            };
            Some((read, result))
        });
    }
    let mut results = Vec::new();
    let mut cancelled = false;
    while let Some(joined) = tasks.join_next().await {
        match joined.expect("read task panicked") {
            Some(done) => results.push(done),
            None if !cancelled => {
                cancelled = true;
                events.emit(Event::Cancelled);
            }
            None => {}
        }
    }
    results
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
        match read.index {
            Some(i) => {
                self.found.insert(i, found);
            }
            None => match found {
                Some(found) => self.adopted.push(ResourceState {
                    id: found.id,
                    outputs: found.outputs,
                    ..read.state
                }),
                None => self.events.diagnostic(
                    Some(&read.state.urn),
                    Severity::Warning,
                    format!(
                        "cannot adopt it: its provider finds no resource with id `{}`; its \
                         pending create is cleared",
                        read.state.id
                    ),
                ),
            },
        }
    }

    /// Inputs and outputs together, as a refresh shows them: what exists.
    fn step_info(&self, op: StepOp, old: &ResourceState, new: Option<&ReadResult>) -> StepInfo {
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
            let read = self.found.get(&i).cloned().flatten();
            if let Some(read) = &read {
                state.id = read.id.clone();
                state.inputs = read.inputs.clone();
                state.outputs = read.outputs.clone();
            }
            let drifted =
                read.is_some() && (state.inputs != old.inputs || state.outputs != old.outputs);
            let op = if drifted { StepOp::Drift } else { StepOp::Same };
            let info = self.step_info(op, old, read.as_ref());
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
