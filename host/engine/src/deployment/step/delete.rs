//! Deletes: of base resources the program no longer declares or that were replaced, and of the
//! dependents a delete-before-replace must delete first. Protect and retain-on-delete are honored
//! here; a provider resource is only forgotten.

use std::time::Instant;

use foldhash::{HashSet, HashSetExt};
use tokio::sync::watch;

use super::claims::{ClaimOutcome, mark_deleted};
use super::context::StepContext;
use super::plan::{DeletePlan, plan_delete};
use super::result::StepError;
use crate::deployment::limit::{Permit, Reservation};
use crate::events::{Event, StepInfo, StepOp};
use crate::journal::JournalEntry;
use crate::provider::ProviderError;
use crate::snapshot::PendingKind;
use crate::value::PropertyMap;

/// One thing a delete-before-replace cascade does about a dependent, at that dependent's place
/// in the base state.
enum Cascade {
    /// Unclaimed: this cascade deletes it, and tells its registration how that went.
    Delete(watch::Sender<Option<bool>>),
    /// Its step runs already: wait for it; if it replaced the resource, delete the old copy.
    AwaitStep(watch::Receiver<Option<ClaimOutcome>>),
    /// Another cascade deletes it: wait for that.
    AwaitDelete(watch::Receiver<Option<bool>>),
}

impl StepContext {
    /// Before a delete-before-replace of base resource `index`: deletes every base resource that
    /// depends on it, transitively, dependents first. Their registrations, when they come,
    /// re-create them.
    ///
    /// The waiting protocol that keeps cascades and claimed steps from waiting on each other in
    /// a cycle: a cascade handles its dependents one at a time, from the last in the base state
    /// to the first (dependents come after what they depend on), and whatever it does at one
    /// place (delete, wait for a step, wait for another cascade's delete) only waits for work
    /// at later places: a claimed step's own cascade only reaches later places, and every other
    /// cascade goes last to first too. So the work at the last unfinished place can always go
    /// on, and no wait is ever part of a cycle.
    pub(super) async fn delete_dependents(&self, index: usize) -> Result<(), StepError> {
        let mut work = self.plan_cascade(index)?;
        work.sort_unstable_by_key(|(j, _)| std::cmp::Reverse(*j));
        let mut work = work.into_iter();
        while let Some((j, step)) = work.next() {
            let result = match step {
                Cascade::Delete(done) => self.delete_marked(j, done).await,
                Cascade::AwaitStep(mut outcome) => {
                    let ended = self
                        .unless_cancelled(outcome.wait_for(Option::is_some))
                        .await?
                        .map(|o| *o);
                    // A dependent that was replaced keeps its old copy, which still names
                    // this resource: that copy goes too, unless another cascade that waited
                    // for the same step deletes it already.
                    if let Ok(Some(ClaimOutcome::Replaced)) = ended {
                        let (ours, theirs) = {
                            let mut claims = self.claims.lock().expect("claims");
                            let theirs = claims.deleted.get(&j).cloned();
                            let ours = theirs.is_none().then(|| mark_deleted(&mut claims, j).1);
                            (ours, theirs)
                        };
                        match (ours, theirs) {
                            (Some(done), _) => self.delete_marked(j, done).await,
                            (None, Some(deletion)) => self.await_delete(deletion).await,
                            (None, None) => Ok(()),
                        }
                    } else {
                        Ok(())
                    }
                }
                Cascade::AwaitDelete(deletion) => self.await_delete(deletion).await,
            };
            if result.is_err() {
                // What is left will not be deleted: its registrations fail instead of waiting.
                for (_, step) in work {
                    if let Cascade::Delete(done) = step {
                        done.send_replace(Some(false));
                    }
                }
                return result;
            }
        }
        Ok(())
    }

    /// Finds the dependents of base resource `index` and marks the unclaimed ones deleted, in
    /// one critical section, so that no registration can take charge of one in between.
    fn plan_cascade(&self, index: usize) -> Result<Vec<(usize, Cascade)>, StepError> {
        let mut claims = self.claims.lock().expect("claims");
        let mut doomed = Vec::new();
        let mut work = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![index];
        while let Some(i) = stack.pop() {
            let dependents = self.base.dependents(&self.base.resources()[i].urn);
            for &j in dependents {
                if j <= i || !seen.insert(j) {
                    continue;
                }
                if let Some(deletion) = claims.deleted.get(&j) {
                    work.push((j, Cascade::AwaitDelete(deletion.clone())));
                } else if let Some(outcome) = claims.claimed.get(&j) {
                    work.push((j, Cascade::AwaitStep(outcome.clone())));
                } else {
                    doomed.push(j);
                    stack.push(j);
                }
            }
        }
        if let Some(&p) = doomed.iter().find(|&&j| self.base.resources()[j].protect) {
            return Err(self.fail(
                &self.base.resources()[index].urn,
                format!(
                    "cannot replace it (delete first): it would delete {}, which is protected",
                    self.base.resources()[p].urn
                ),
            ));
        }
        if let Some(targets) = &self.targets
            && let Some(&u) = doomed
                .iter()
                .find(|&&j| !targets.contains(&self.base.resources()[j].urn))
        {
            let other = &self.base.resources()[u].urn;
            return Err(self.fail(
                &self.base.resources()[index].urn,
                format!(
                    "cannot replace it (delete first): it would delete {other}, which is {}; {}",
                    targets.left_out_word(),
                    targets.how_to_include(other)
                ),
            ));
        }
        for j in doomed {
            let (_, done) = mark_deleted(&mut claims, j);
            work.push((j, Cascade::Delete(done)));
        }
        Ok(work)
    }

    /// Waits until another cascade's delete is over.
    async fn await_delete(
        &self,
        mut deletion: watch::Receiver<Option<bool>>,
    ) -> Result<(), StepError> {
        let _ = self
            .unless_cancelled(deletion.wait_for(Option::is_some))
            .await?;
        Ok(())
    }

    /// Deletes base resource `j`, marked deleted, and tells whoever waits for it how it went.
    async fn delete_marked(
        &self,
        j: usize,
        done: watch::Sender<Option<bool>>,
    ) -> Result<(), StepError> {
        // Under the permit of the replacement that cascades, which still needs it.
        let result = self
            .run_delete_permitted(j, StepOp::Delete, &mut None)
            .await;
        done.send_replace(Some(result.is_ok()));
        result
    }

    /// Deletes base resource `index` through the provider that manages it, honoring protect,
    /// retain-on-delete and the delete timeout (`timeout`, the registration's, or else the one
    /// recorded with the resource). A provider resource is only forgotten: it is nothing real.
    /// A successful delete gives `permit` back before its end is recorded.
    pub(super) async fn delete_base(
        &self,
        index: usize,
        info: &StepInfo,
        timeout: Option<u32>,
        permit: &mut Option<Permit>,
    ) -> Result<(), StepError> {
        let old = &self.base.resources()[index];
        let urn = &old.urn;
        match plan_delete(old, self.preview) {
            DeletePlan::Refused => {
                let error = self.fail(
                    urn,
                    format!(
                        "cannot delete protected resource; run `plinth state unprotect {urn}` \
                         (and drop the program's `protect` option) first"
                    ),
                );
                self.failed(info.clone(), &error);
                return Err(error);
            }
            DeletePlan::Nothing => return Ok(()),
            DeletePlan::Forget => return self.forget(index).await,
            DeletePlan::Delete => {}
        }
        let provider = self.provider_for(old, None).await?;
        let seq = self
            .begin(PendingKind::Deleting, old, Some(index))
            .await
            .map_err(|e| self.persist_error(urn, e))?;
        let timeout = timeout.or(old.custom_timeouts.and_then(|t| t.delete_seconds));
        let call = provider.delete(urn, &old.id, &old.inputs, &old.outputs);
        let result = self
            .timed(urn, "delete", timeout, call)
            .await
            .inspect_err(|error| {
                self.failed(info.clone(), error);
            })?;
        match result {
            Ok(()) | Err(ProviderError::NotFound) => {
                permit.take();
                self.record(|| JournalEntry::Deleted {
                    seq: Some(seq),
                    old: index,
                })
                .await
                .map_err(|e| self.persist_error(urn, e))
            }
            Err(e) => {
                let error = self.provider_error(urn, "delete", e);
                self.record(|| JournalEntry::Failed { seq })
                    .await
                    .map_err(|e| self.persist_error(urn, e))?;
                self.failed(info.clone(), &error);
                Err(error)
            }
        }
    }

    /// Deletes a base resource that the program no longer declares, or that was replaced.
    pub(crate) async fn run_delete(
        &self,
        index: usize,
        op: StepOp,
        turn: Reservation,
    ) -> Result<(), StepError> {
        let mut permit = Some(turn.acquire().await?);
        if self.is_halted() {
            return Err(StepError::Halted);
        }
        let result = self.run_delete_permitted(index, op, &mut permit).await;
        self.halt_on_failure(&result);
        drop(permit);
        result
    }

    async fn run_delete_permitted(
        &self,
        index: usize,
        op: StepOp,
        permit: &mut Option<Permit>,
    ) -> Result<(), StepError> {
        let old = &self.base.resources()[index];
        let started = Instant::now();
        let info = StepInfo {
            op,
            urn: old.urn.clone(),
            parent: old.parent.clone(),
            custom: old.custom,
            old_inputs: Some(old.inputs.clone()),
            new_inputs: None,
            changed: Vec::new(),
            replaces: Vec::new(),
            write_only: Vec::new(),
        };
        self.planned(|| info.clone())?;
        self.events.emit(Event::StepStarted(info.clone()));
        if old.custom {
            self.delete_base(index, &info, None, permit).await?;
        } else if plan_delete(old, self.preview) == DeletePlan::Forget {
            self.forget(index).await?;
        }
        self.done(info, &PropertyMap::new(), started);
        Ok(())
    }

    /// Drops base resource `index` from the state without a provider call.
    async fn forget(&self, index: usize) -> Result<(), StepError> {
        self.record(|| JournalEntry::Deleted {
            seq: None,
            old: index,
        })
        .await
        .map_err(|e| self.persist_error(&self.base.resources()[index].urn, e))
    }
}
