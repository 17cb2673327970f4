//! What `--target` leaves out: an existing resource stays exactly as recorded, a new one is not
//! created.
//!
//! A kept state still names what it depended on. Nothing records it; whatever is recorded later
//! and depends on it carries it into the new snapshot, together with those of its predecessors
//! not recorded yet (the journal's `pull_forward`). So its step ends only once the steps of this
//! run that decide those predecessors have: carried before, an old predecessor would go in as
//! it was, and that step's replacement or update of it would then be refused, after the
//! provider acted. (Pulumi likewise orders a `same` step after its dependencies' steps.)
//!
//! The order is kept in the engine rather than repaired in the journal: once the kept state is
//! in the snapshot, a replacement of what it depends on could only come after it, and the old
//! copy, deleted at the end, would leave it depending on a resource recorded later.
//!
//! Only steps already under way are waited for. They have every input, so none of them waits
//! for this resource, even when the new program reverses a dependency; and this step waits
//! holding no permit and no claim, so they can get both (a delete-before-replace among them
//! fails at once, rather than wait, on an untargeted dependent). A step for such a predecessor
//! that starts only after this one has ended (registered late) is not waited for here: see
//! [`StepContext::record_after_in_flight`], which every recording of a targeted run goes
//! through.

use std::time::Instant;

use foldhash::{HashSet, HashSetExt};
use tokio::sync::watch;

use super::context::StepContext;
use super::request::ResourceStep;
use super::result::{StepError, StepOutputs, StepResult};
use crate::events::{Event, Severity, StepOp};
use crate::journal::{JournalEntry, SnapshotError, SnapshotManager};
use crate::resource::ResourceState;
use crate::urn::{Urn, is_stack_type, provided_package};
use crate::value::{PropertyMap, Value};

impl StepContext {
    /// Whether `--target` leaves the resource `urn` (of type `ty`, with these predecessors) out.
    /// Provider resources are always targeted: they change nothing in the real world; nor does
    /// the stack's root, which no target needs to name.
    pub(super) fn leaves_out<'a>(
        &self,
        urn: &Urn,
        ty: &str,
        predecessors: impl Iterator<Item = &'a Urn>,
    ) -> bool {
        self.targets.as_ref().is_some_and(|targets| {
            provided_package(ty).is_none()
                && !is_stack_type(ty)
                && !targets.includes(urn, predecessors)
        })
    }

    /// [`leaves_out`](Self::leaves_out) for a registration's step.
    pub(super) fn leaves_out_step(&self, step: &ResourceStep) -> bool {
        let provider = step.provider.iter().map(|b| &b.reference.urn);
        let predecessors = (step.parent.iter())
            .chain(&step.dependencies)
            .chain(provider);
        self.leaves_out(&step.urn, &step.request.ty, predecessors)
    }

    /// Notes that `step`'s step has started, when the run has targets (only then does anything
    /// wait for it) and it takes charge of a base resource. Called as the step is started, in
    /// the order steps become ready, not when its task first runs. The step's task holds the
    /// sender: the step has ended once it is dropped.
    pub(crate) fn under_way(&self, step: &ResourceStep) -> Option<watch::Sender<()>> {
        self.targets.as_ref()?;
        let index = self.live_base_index(step)?;
        let (ended, watcher) = watch::channel(());
        let mut claims = self.claims.lock().expect("claims");
        claims.under_way.insert(index, watcher);
        Some(ended)
    }

    /// The live base resource a registration's step takes charge of, if any (claiming nothing).
    fn live_base_index(&self, step: &ResourceStep) -> Option<usize> {
        let aliases = self.aliases(step).ok()?;
        self.live_base_index_of(&step.urn, &aliases)
    }

    /// Before an untargeted step takes charge of its base resource: waits until the steps
    /// under way that decide what its kept state depends on (directly, or through kept states
    /// no step takes charge of) have ended. A step that waits shows as started meanwhile.
    pub(super) async fn after_kept_predecessors(
        &self,
        step: &ResourceStep,
    ) -> Result<(), StepError> {
        let Some(index) = self.live_base_index(step) else {
            return Ok(());
        };
        let waits = self.steps_deciding_predecessors(index);
        if waits.is_empty() {
            return Ok(());
        }
        let old = &self.base.resources()[index];
        let info = self.info(StepOp::Same, old, Some(old), Vec::new(), Vec::new());
        self.events.emit(Event::StepStarted(info.clone()));
        for mut step in waits {
            // The sender never sends: `changed` fails once the step has ended.
            let ended = async { while step.changed().await.is_ok() {} };
            if let Err(error) = self.unless_cancelled(ended).await {
                self.failed(info, &error);
                return Err(error);
            }
        }
        Ok(())
    }

    /// The unfinished steps that take charge of base resource `index`'s predecessors, looking
    /// through those no step takes charge of (kept as they are, and carried with it).
    fn steps_deciding_predecessors(&self, index: usize) -> Vec<watch::Receiver<()>> {
        let live_predecessors = |i: usize| {
            let state = &self.base.resources()[i];
            (state.predecessors()).filter_map(|p| self.base.live(p))
        };
        let claims = self.claims.lock().expect("claims");
        let mut waits = Vec::new();
        let mut seen = HashSet::new();
        let mut next: Vec<usize> = live_predecessors(index).collect();
        while let Some(i) = next.pop() {
            if !seen.insert(i) {
                continue;
            }
            match claims.under_way.get(&i) {
                // `has_changed` fails once the sender is gone: that step has ended.
                Some(step) if step.has_changed().is_ok() => waits.push(step.clone()),
                Some(_) => {}
                None => next.extend(live_predecessors(i)),
            }
        }
        waits
    }

    /// With `--target`, records `entry` once no operation in flight changes a base resource
    /// that recording it would carry over as recorded.
    ///
    /// Recording a state carries over, as they were recorded, the kept states it depends on and
    /// what those depend on, transitively (the journal's `pull_forward`); a state carried so can
    /// no longer change in this operation. So a state that depends on a kept state whose
    /// recorded state depends on a resource another step is changing records after that step
    /// has ended: recorded first, it would make that step's end be refused after the provider
    /// acted, leaving a pending operation. The journal checks and records in one step, so that
    /// no operation can begin in between, and names such a resource; this waits for its step
    /// and tries again.
    ///
    /// Only operations already begun are waited for. Their steps wait for nothing but their
    /// provider and, before they record, for other steps as this one does: those waits form a
    /// cycle only when each state depends on a kept state that depends on the next one's old
    /// state, which no order of the snapshot could hold; the step that would close the cycle
    /// does not wait. A step that ended without recording its operation's end (its call timed
    /// out) leaves that resource carried over as it was, with the operation pending.
    ///
    /// A change that begins after its resource was carried over is refused before its provider
    /// call, naming the kept state to target too (`SnapshotError::KeptAsRecorded`), as Pulumi
    /// refuses a targeted resource that depends on one `--target` left uncreated ("depends on
    /// … which was not specified in --target list") before any provider call. Waiting for that
    /// change instead cannot be done safely: it may not be registered yet, or depend on this
    /// very state (the new `a` depends on `c`, which depends on the kept `b`, which depends on
    /// the old `a`).
    pub(super) async fn record_after_in_flight(
        &self,
        recorder: &SnapshotManager,
        entry: JournalEntry,
    ) -> Result<(), SnapshotError> {
        // The base resource this entry decides, whose step others may wait for.
        let (waiter, urn) = match &entry {
            JournalEntry::Created {
                resource, replaces, ..
            } => (*replaces, resource.urn.clone()),
            JournalEntry::Updated { old, resource, .. } => (Some(*old), resource.urn.clone()),
            JournalEntry::Same { old, resource } => {
                let state = resource.as_ref().unwrap_or(&self.base.resources()[*old]);
                (Some(*old), state.urn.clone())
            }
            // They carry over the component, if nothing recorded it yet.
            JournalEntry::ComponentOutputs { urn, .. } => (self.base.live(urn), urn.clone()),
            // Nothing else records a state.
            _ => return recorder.record(entry).await,
        };
        let mut not_waited_for = Vec::new();
        loop {
            let attempt = entry.clone();
            match recorder
                .record_after_in_flight(attempt, not_waited_for.clone())
                .await
            {
                Err(SnapshotError::CarriesInFlight { old, urn: changing }) => {
                    let Some(mut step) = self.wait_for_step(waiter, old) else {
                        not_waited_for.push(old);
                        continue;
                    };
                    self.events.diagnostic(
                        Some(&urn),
                        Severity::Debug,
                        format!(
                            "waits for the change of {changing} in flight to be recorded \
                             first: a state this one depends on, kept as recorded (not \
                             targeted), depends on it"
                        ),
                    );
                    // The sender never sends: `changed` fails once the step has ended.
                    while step.changed().await.is_ok() {}
                    if let Some(waiter) = waiter {
                        self.claims
                            .lock()
                            .expect("claims")
                            .record_waits
                            .remove(&waiter);
                    }
                }
                recorded => return recorded,
            }
        }
    }

    /// The step under way for base resource `awaited`, if it has not ended and waiting for it
    /// closes no cycle of steps waiting to record; notes that the step for base resource
    /// `waiter` (if any: a new resource's step is waited for by none) waits for it.
    fn wait_for_step(&self, waiter: Option<usize>, awaited: usize) -> Option<watch::Receiver<()>> {
        let mut claims = self.claims.lock().expect("claims");
        // `has_changed` fails once the sender is gone: that step has ended.
        let step = (claims.under_way.get(&awaited))
            .filter(|step| step.has_changed().is_ok())?
            .clone();
        let mut next = Some(awaited);
        while let Some(at) = next {
            if Some(at) == waiter {
                return None;
            }
            next = claims.record_waits.get(&at).copied();
        }
        if let Some(waiter) = waiter {
            claims.record_waits.insert(waiter, awaited);
        }
        Some(step)
    }

    /// With `--target`, a state that `state` (replacing or updating a base resource with its URN)
    /// depends on, kept as recorded, whose recorded state depends on that base resource, directly
    /// or through other kept states. No order of the snapshot holds both: each would have to come
    /// before the other. Found before the provider acts, it fails the step.
    pub(super) fn kept_dependent(&self, state: &ResourceState) -> Option<StepError> {
        let targets = self.targets.as_ref()?;
        let mut seen = HashSet::new();
        let mut next: Vec<&Urn> = state.predecessors().collect();
        while let Some(urn) = next.pop() {
            // A targeted one is recorded anew by its step, which has ended (the program
            // resolved it before this registration).
            if !seen.insert(urn) || targets.contains(urn) {
                continue;
            }
            let Some(i) = self.base.live(urn) else {
                continue;
            };
            let kept = &self.base.resources()[i];
            if kept.predecessors().any(|p| *p == state.urn) {
                let (urn, kept) = (&state.urn, &kept.urn);
                return Some(self.fail(
                    urn,
                    format!(
                        "{kept}, not targeted, is kept as recorded, and its recorded state \
                         depends on {urn}, which now depends on it: neither could be recorded \
                         before the other; target {kept} too"
                    ),
                ));
            }
            next.extend(kept.predecessors());
        }
        None
    }

    /// A registration `--target` leaves out: an existing resource stays exactly as recorded; a
    /// new one is not created, and what depends on it sees unknowns.
    pub(super) async fn untargeted(
        &self,
        state: ResourceState,
        old: Option<(usize, &ResourceState)>,
    ) -> Result<StepResult, StepError> {
        let Some((old_index, old)) = old else {
            self.events.diagnostic(
                Some(&state.urn),
                Severity::Info,
                "not targeted: not created",
            );
            return Ok(StepResult {
                id: Value::Unknown,
                outputs: StepOutputs::Own(PropertyMap::new()),
                replaced: None,
                absent: true,
            });
        };
        // Nothing is recorded: the state stays where it is in the snapshot, after what it
        // depends on, even if the program no longer declares those.
        let info = self.info(StepOp::Same, old, Some(old), Vec::new(), Vec::new());
        self.done(info, &old.outputs, Instant::now());
        Ok(StepResult {
            id: Value::String(old.id.clone()),
            outputs: StepOutputs::Base(old_index),
            replaced: None,
            absent: false,
        })
    }
}
