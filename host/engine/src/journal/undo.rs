//! The tables a [`JournalState`](super::state::JournalState) keeps, and taking back what its
//! `apply` did: each change to them is logged with what undoes it, until the changes are
//! committed. An entry refused halfway leaves no trace, and the snapshot manager takes back
//! entries its persister could not store.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashSet};

use crate::resource::ResourceState;
use crate::snapshot::PendingOperation;
use crate::urn::Urn;
use crate::value::PropertyMap;

/// What became of a base resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    Untouched,
    Carried,
    /// Carried over as it was recorded, ahead of a recorded state that depends on it (see
    /// `JournalState::pull_forward`): it can no longer change in this operation.
    Pulled,
    MarkedForDeletion,
    Deleted,
}

/// An operation begun in this journal and not ended.
#[derive(Debug, Clone)]
pub(super) struct InFlight {
    pub(super) op: PendingOperation,
    /// The base resource it operates on, or that its create replaces.
    pub(super) old: Option<usize>,
}

/// The tables of a journal state that entries change, each change logged to be undone.
#[derive(Debug)]
pub(super) struct Tables {
    pub(super) fate: Vec<Fate>,
    pub(super) recorded: Vec<ResourceState>,
    pub(super) recorded_index: HashMap<Urn, usize>,
    /// Base resources that are live (not marked for deletion), by URN.
    pub(super) base_live: HashMap<Urn, usize>,
    /// How many states in the snapshot name a URN as parent or dependency.
    pub(super) referrers: HashMap<Urn, usize>,
    pub(super) carried_pending: Vec<PendingOperation>,
    pub(super) pending: BTreeMap<u64, InFlight>,
    /// Base URNs carried over under a new URN (an alias): references to the old one in states
    /// not recorded yet mean the new one.
    pub(super) renamed: HashMap<Urn, Urn>,
    /// URNs of resources found gone: references to them are dropped.
    pub(super) forgotten: HashSet<Urn>,
    /// The changes made since the last commit, to roll back.
    pub(super) undo: Vec<Undo>,
}

/// One change to the [`Tables`], as what it replaced.
#[derive(Debug)]
pub(super) enum Undo {
    /// The pending operation `seq` was `previous`.
    Pending(u64, Option<InFlight>),
    Fate(usize, Fate),
    /// A URN's live base resource was removed.
    BaseLive(Urn, usize),
    /// How many states referred to a URN.
    Referrers(Urn, Option<usize>),
    /// A state was appended to the recorded part.
    Recorded,
    /// A base URN was renamed; before, it was renamed to `previous`.
    Renamed(Urn, Option<Urn>),
    /// A URN was added to the forgotten ones.
    Forgotten(Urn),
    ComponentOutputs(usize, PropertyMap),
    /// A carried pending operation was resolved (removed at this index).
    ResolvedPending(usize, PendingOperation),
}

/// A point in the uncommitted changes of the [`Tables`] to roll back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Savepoint(usize);

impl Savepoint {
    /// The last commit.
    pub(super) const COMMITTED: Savepoint = Savepoint(0);

    /// This savepoint once the changes up to `committed`, an earlier one, are committed.
    pub(super) fn after_commit_of(self, committed: Savepoint) -> Savepoint {
        Savepoint(self.0 - committed.0)
    }
}

impl Tables {
    pub(super) fn savepoint(&self) -> Savepoint {
        Savepoint(self.undo.len())
    }

    /// Makes the changes so far permanent: they can no longer be rolled back.
    pub(super) fn commit(&mut self) {
        self.undo.clear();
    }

    /// Makes the changes up to `savepoint` permanent, keeping those since to roll back. Later
    /// savepoints move: see [`Savepoint::after_commit_of`].
    pub(super) fn commit_to(&mut self, savepoint: Savepoint) {
        self.undo.drain(..savepoint.0.min(self.undo.len()));
    }

    /// Takes back every change made since `savepoint`, newest first.
    pub(super) fn roll_back_to(&mut self, savepoint: Savepoint) {
        let changes = self.undo.split_off(savepoint.0.min(self.undo.len()));
        for change in changes.into_iter().rev() {
            self.undo_one(change);
        }
    }

    fn undo_one(&mut self, change: Undo) {
        match change {
            Undo::Pending(seq, previous) => match previous {
                Some(op) => {
                    self.pending.insert(seq, op);
                }
                None => {
                    self.pending.remove(&seq);
                }
            },
            Undo::Fate(i, fate) => self.fate[i] = fate,
            Undo::BaseLive(urn, i) => {
                self.base_live.insert(urn, i);
            }
            Undo::Referrers(urn, previous) => match previous {
                Some(n) => {
                    self.referrers.insert(urn, n);
                }
                None => {
                    self.referrers.remove(&urn);
                }
            },
            Undo::Recorded => {
                if let Some(state) = self.recorded.pop() {
                    self.recorded_index.remove(&state.urn);
                }
            }
            Undo::Renamed(urn, previous) => match previous {
                Some(new) => {
                    self.renamed.insert(urn, new);
                }
                None => {
                    self.renamed.remove(&urn);
                }
            },
            Undo::Forgotten(urn) => {
                self.forgotten.remove(&urn);
            }
            Undo::ComponentOutputs(i, outputs) => self.recorded[i].outputs = outputs,
            Undo::ResolvedPending(at, op) => self.carried_pending.insert(at, op),
        }
    }

    // The changes `apply` makes, each logged.

    pub(super) fn set_pending(&mut self, seq: u64, op: Option<InFlight>) {
        let previous = match op {
            Some(op) => self.pending.insert(seq, op),
            None => self.pending.remove(&seq),
        };
        self.undo.push(Undo::Pending(seq, previous));
    }

    pub(super) fn set_fate(&mut self, i: usize, fate: Fate) {
        let previous = std::mem::replace(&mut self.fate[i], fate);
        self.undo.push(Undo::Fate(i, previous));
    }

    pub(super) fn remove_base_live(&mut self, urn: &Urn) {
        if let Some(previous) = self.base_live.remove(urn) {
            self.undo.push(Undo::BaseLive(urn.clone(), previous));
        }
    }

    /// Sets how many states refer to `urn` (`None`: forgets the count); returns the old count.
    pub(super) fn set_referrers(&mut self, urn: &Urn, count: Option<usize>) -> Option<usize> {
        let previous = match count {
            Some(n) => self.referrers.insert(urn.clone(), n),
            None => self.referrers.remove(urn),
        };
        self.undo.push(Undo::Referrers(urn.clone(), previous));
        previous
    }

    pub(super) fn push_recorded(&mut self, state: ResourceState) {
        self.recorded_index
            .insert(state.urn.clone(), self.recorded.len());
        self.recorded.push(state);
        self.undo.push(Undo::Recorded);
    }

    pub(super) fn rename(&mut self, old: Urn, new: Urn) {
        let previous = self.renamed.insert(old.clone(), new);
        self.undo.push(Undo::Renamed(old, previous));
    }

    pub(super) fn add_forgotten(&mut self, urn: Urn) {
        if self.forgotten.insert(urn.clone()) {
            self.undo.push(Undo::Forgotten(urn));
        }
    }

    pub(super) fn set_component_outputs(&mut self, i: usize, outputs: PropertyMap) {
        let previous = std::mem::replace(&mut self.recorded[i].outputs, outputs);
        self.undo.push(Undo::ComponentOutputs(i, previous));
    }

    pub(super) fn resolve_carried_pending(&mut self, at: usize) {
        let op = self.carried_pending.remove(at);
        self.undo.push(Undo::ResolvedPending(at, op));
    }
}
