//! One deployment (`up`, `preview` or `destroy`): runs the program, turns each registration into
//! a step as soon as everything it refers to is known, runs independent steps in parallel, and
//! finally deletes what the program no longer declares, dependents first.

pub(crate) mod limit;
mod node;
pub(crate) mod options;
mod root_registration;
mod scheduler;
mod start;
pub(crate) mod step;
pub(crate) mod target;
mod unclaimed;

pub use options::{MAX_PARALLEL, Options};
use scheduler::Scheduler;
pub use target::Targets;

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::events::{ChangeSummary, Event, EventSink, Severity};
use crate::journal::{JournalEntry, SnapshotManager};
use crate::policy::PackRun;
use crate::program::{Monitor, Program, StackInfo};
use crate::provider::ProviderSource;
use crate::snapshot::{PendingKind, Snapshot};
use crate::urn::stack_urn;
use crate::value::PropertyMap;
use step::StepContext;

/// What a deployment did (or, in preview, would do).
#[derive(Debug)]
pub struct Outcome {
    pub changes: ChangeSummary,
    pub outputs: PropertyMap,
    pub errors: Vec<String>,
    /// The policy packs that ran and what they found.
    pub policies: Vec<PackRun>,
    /// The new checkpoint; `None` in preview.
    pub snapshot: Option<Snapshot>,
}

/// Runs a deployment of `program` against `base` (shared with the `recorder`, if it was started
/// on the same one). With a `recorder`, every mutation is recorded and the final snapshot
/// written as the new checkpoint.
pub async fn run(
    options: Options,
    base: impl Into<Arc<Snapshot>>,
    program: Box<dyn Program>,
    providers: Arc<dyn ProviderSource>,
    recorder: Option<SnapshotManager>,
    events: EventSink,
    cancel: CancellationToken,
) -> Outcome {
    let started = Instant::now();
    let base: Arc<Snapshot> = base.into();
    let mut errors = Vec::new();
    let old_outputs = base.outputs().clone();
    if let Err(e) = drop_interrupted(&base, recorder.as_ref(), &events).await {
        errors.push(e.to_string());
    }
    let ctx = Arc::new(StepContext::new(
        &options,
        base,
        providers.clone(),
        recorder.clone(),
        events.clone(),
        cancel.clone(),
    ));
    let info = StackInfo {
        project: options.project.clone(),
        stack: options.stack.clone(),
        dry_run: options.preview,
    };
    let (monitor, registrations) =
        Monitor::new(info, options.config.clone(), providers, options.budget);
    // Cancellation: no new step starts; steps in flight finish and are recorded.
    // It holds the context weakly: an aborted task is dropped later, and must not keep the
    // base alive when the final snapshot is built.
    let watcher = tokio::spawn({
        let (ctx, events, cancel) = (Arc::downgrade(&ctx), events.clone(), cancel.clone());
        async move {
            cancel.cancelled().await;
            if let Some(ctx) = ctx.upgrade() {
                ctx.halt();
            }
            events.emit(Event::Cancelled);
        }
    });
    let mut scheduler = Scheduler::new(options, ctx.clone(), events.clone(), cancel);
    scheduler.run_program(program, monitor, registrations).await;
    if scheduler.errors.is_empty() && !scheduler.cancel.is_cancelled() {
        let mut violated = ctx.check_stack_policies().await;
        scheduler.errors.append(&mut violated);
    }
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
    // The stack's outputs are its root's: the ones the program registered, or none.
    let outputs = match scheduler.stack_outputs.take() {
        Some(outputs) => outputs,
        // A targeted destroy keeps the root, and with it the outputs.
        None if !scheduler.has_root && scheduler.options.targets.is_some() => old_outputs.clone(),
        None => PropertyMap::new(),
    };
    if scheduler.has_root && errors.is_empty() && !ctx.preview() {
        let entry = JournalEntry::ComponentOutputs {
            urn: stack_urn(&scheduler.options.project, &scheduler.options.stack),
            outputs: outputs.clone(),
        };
        if let Err(e) = ctx.record(|| entry).await {
            errors.push(e.to_string());
        }
    }
    let policies = ctx.policy_runs();
    if !policies.is_empty() {
        events.emit(Event::PolicySummary(policies.clone()));
    }
    // A failed run records no stack output, and its program may have failed before it
    // registered any: the outputs it shows are the ones the stack keeps, not removals.
    let shown = if errors.is_empty() {
        outputs.clone()
    } else {
        old_outputs.clone()
    };
    events.emit(Event::Outputs {
        old: old_outputs,
        new: shown,
    });
    let changes = ctx.changes();
    let preview = ctx.preview();
    // Every step is done and let go of the context: dropping it and the scheduler frees what
    // they kept per resource, and leaves the snapshot manager alone with the base, so the
    // final snapshot takes the base's states instead of copying them. A preview has no final
    // snapshot: what they hold, the base with it, is freed aside from the command's end.
    if recorder.is_some() {
        drop(scheduler);
        drop(ctx);
    } else {
        free_aside((scheduler, ctx));
    }
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
    events.emit(Event::Summary {
        changes: changes.clone(),
        duration: started.elapsed(),
        preview,
        failed: !errors.is_empty(),
    });
    Outcome {
        changes,
        outputs,
        errors,
        policies,
        snapshot,
    }
}

/// Frees `value` on a thread of its own. The context of a preview of 100,000 resources took a
/// tenth of a second to free, on one thread, between the last step and the summary; a process
/// that ends meanwhile need not wait for it. (A thread that cannot start frees it here.)
fn free_aside<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("plinth-free".into())
        .spawn(move || drop(value));
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
            PendingKind::Creating => continue,
            PendingKind::Updating => "update",
            PendingKind::Deleting => "delete",
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
