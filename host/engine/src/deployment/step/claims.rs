//! Which base resources the steps of a deployment took charge of: a registration's step claims
//! the base resource with its URN (or an alias), a delete-before-replace marks the dependents it
//! deletes first, and each tells those waiting for it how it ended.

use foldhash::HashMap;
use tokio::sync::watch;

use crate::resource::ResourceState;

/// How a registration's step ended for the base resource it took charge of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClaimOutcome {
    /// Carried over (same or updated): the old state is gone from the snapshot.
    Carried,
    /// Replaced create-before-delete: the old state stays, marked for deletion.
    Replaced,
    Failed,
}

/// Reports a claim's outcome when dropped: `Failed` unless told otherwise.
pub(super) struct ClaimGuard(
    pub(super) watch::Sender<Option<ClaimOutcome>>,
    pub(super) ClaimOutcome,
);

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        self.0.send_replace(Some(self.1));
    }
}

/// Marks base resource `index` as deleted ahead of a delete-before-replace; the sender tells
/// waiting registrations when (and whether) the delete happened.
pub(super) fn mark_deleted(
    claims: &mut Claims,
    index: usize,
) -> (usize, watch::Sender<Option<bool>>) {
    let (done, deletion) = watch::channel(None);
    claims.deleted.insert(index, deletion);
    (index, done)
}

/// A base resource a step took charge of.
pub(super) struct Claimed<'a> {
    pub(super) index: usize,
    pub(super) state: &'a ResourceState,
    pub(super) guard: ClaimGuard,
}

/// Which base resources this deployment has already decided about.
#[derive(Default)]
pub(crate) struct Claims {
    /// A registration's step took charge of it; the flag tells how that step ended.
    pub(super) claimed: HashMap<usize, watch::Receiver<Option<ClaimOutcome>>>,
    /// Deleted ahead of the delete-before-replace of a resource it depends on; the flag turns
    /// to `Some(deleted)` when that delete is over.
    pub(super) deleted: HashMap<usize, watch::Receiver<Option<bool>>>,
    /// With `--target`: base resources a started step (even one still waiting for a permit)
    /// will take charge of; its sender is dropped when that step ends.
    pub(super) under_way: HashMap<usize, watch::Receiver<()>>,
    /// With `--target`: steps (by the base resource they take charge of) waiting, before they
    /// record, for the step under way for another base resource (see
    /// [`StepContext::record_after_in_flight`]). Each waits for one at a time.
    pub(super) record_waits: HashMap<usize, usize>,
}

impl Claims {
    pub(crate) fn is_deleted(&self, index: usize) -> bool {
        self.deleted.contains_key(&index)
    }

    /// A registration's step took charge of it (possibly under an alias).
    pub(crate) fn is_claimed(&self, index: usize) -> bool {
        self.claimed.contains_key(&index)
    }
}
