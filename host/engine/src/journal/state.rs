//! The snapshot a base and a sequence of journal entries describe, and its replay. Entries
//! refer to resources of the base by index; a refused entry changes nothing.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

// URNs key the maps the state of a journal is kept in, tens of thousands of lookups in a
// replay: hashed with foldhash, which is several times faster than the standard SipHash on them.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use super::entry::JournalEntry;
use super::error::SnapshotError;
use super::undo::{Fate, InFlight, Savepoint, Tables};
use crate::resource::ResourceState;
use crate::snapshot::{IntegrityError, PendingKind, PendingOperation, Snapshot};
use crate::urn::Urn;

/// The snapshot a base and a sequence of journal entries describe.
#[derive(Debug)]
pub struct JournalState {
    /// Shared with the engine's steps, which read the same base.
    pub(super) base: Arc<Snapshot>,
    /// What the entries applied so far changed.
    tables: Tables,
    /// The stack's root in the base, if it has one.
    root: Option<Urn>,
    /// Whether each state an entry records must pass [`ResourceState::check_fields`]: always,
    /// but when a state an older plinth wrote is read to be exported or repaired.
    check_fields: bool,
}

impl JournalState {
    pub fn new(base: impl Into<Arc<Snapshot>>) -> JournalState {
        let base: Arc<Snapshot> = base.into();
        let mut referrers = HashMap::new();
        for r in &base.resources {
            for p in r.predecessors() {
                *referrers.entry(p.clone()).or_insert(0) += 1;
            }
        }
        let root = base.root().map(|r| r.urn.clone());
        let base_live = base
            .resources
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.delete)
            .map(|(i, r)| (r.urn.clone(), i))
            .collect();
        JournalState {
            tables: Tables {
                fate: base
                    .resources
                    .iter()
                    .map(|r| {
                        if r.delete {
                            Fate::MarkedForDeletion
                        } else {
                            Fate::Untouched
                        }
                    })
                    .collect(),
                recorded: Vec::new(),
                recorded_index: HashMap::new(),
                base_live,
                referrers,
                carried_pending: base.pending_operations.clone(),
                pending: BTreeMap::new(),
                renamed: HashMap::new(),
                forgotten: HashSet::new(),
                undo: Vec::new(),
            },
            root,
            check_fields: true,
            base,
        }
    }

    /// [`JournalState::new`], without checking the fields of the states entries record (see
    /// [`replay_unchecked`]).
    pub fn unchecked(base: impl Into<Arc<Snapshot>>) -> JournalState {
        JournalState {
            check_fields: false,
            ..JournalState::new(base)
        }
    }

    /// The snapshot the entries applied describe, its integrity verified: what [`replay`] of
    /// them gives.
    pub fn replayed(self) -> Result<Snapshot, SnapshotError> {
        let snapshot = self.into_snapshot();
        snapshot.verify_integrity()?;
        Ok(snapshot)
    }

    /// A point in the changes not committed yet, to roll back to.
    pub(super) fn savepoint(&self) -> Savepoint {
        self.tables.savepoint()
    }

    /// Makes the changes up to `savepoint` permanent (see [`Tables::commit_to`]).
    pub(super) fn commit_to(&mut self, savepoint: Savepoint) {
        self.tables.commit_to(savepoint);
    }

    /// Takes back every change made since `savepoint`, newest first.
    pub(super) fn roll_back_to(&mut self, savepoint: Savepoint) {
        self.tables.roll_back_to(savepoint);
    }

    /// Applies one entry, refusing any that would make the snapshot invalid; a refused entry
    /// changes nothing.
    pub fn apply(&mut self, entry: &JournalEntry) -> Result<(), SnapshotError> {
        self.apply_uncommitted(entry)?;
        self.tables.commit();
        Ok(())
    }

    /// [`apply`](Self::apply), of an entry it may keep the states of rather than copy them.
    pub fn apply_owned(&mut self, entry: JournalEntry) -> Result<(), SnapshotError> {
        self.apply_owned_uncommitted(entry)?;
        self.tables.commit();
        Ok(())
    }

    /// [`apply`](Self::apply), keeping the changes it makes open to being rolled back.
    pub(super) fn apply_uncommitted(&mut self, entry: &JournalEntry) -> Result<(), SnapshotError> {
        // An entry's bulk is the state it records, which the snapshot keeps: copying the
        // entry copies only that.
        self.apply_owned_uncommitted(entry.clone())
    }

    fn apply_owned_uncommitted(&mut self, entry: JournalEntry) -> Result<(), SnapshotError> {
        let savepoint = self.savepoint();
        let applied = self.apply_entry(entry);
        if applied.is_err() {
            self.roll_back_to(savepoint);
        }
        applied
    }

    fn apply_entry(&mut self, entry: JournalEntry) -> Result<(), SnapshotError> {
        if let Some(state) = entry.state().filter(|_| self.check_fields) {
            state.check_fields()?;
        }
        match entry {
            JournalEntry::Begin {
                seq,
                kind,
                resource,
                old,
            } => {
                // Refuse what the snapshot could not record *before* the provider acts.
                match (kind, old) {
                    (PendingKind::Deleting, Some(old)) => self.check_deletable(old)?,
                    (PendingKind::Updating, Some(old)) => self.expect_live_base(old)?,
                    (PendingKind::Creating, replaces) => {
                        self.check_creatable(&resource.urn, replaces)?
                    }
                    (_, None) if !self.knows(&resource.urn) => {
                        return Err(IntegrityError::DanglingPendingOperation {
                            kind,
                            urn: resource.urn,
                        }
                        .into());
                    }
                    _ => {}
                }
                let op = PendingOperation { kind, resource };
                self.tables.set_pending(seq, Some(InFlight { op, old }));
            }
            JournalEntry::Created {
                seq,
                resource,
                replaces,
            } => {
                self.end(seq)?;
                if let Some(old) = replaces {
                    self.expect_live_base(old)?;
                    self.tables
                        .remove_base_live(&self.base.resources[old].urn.clone());
                    self.tables.set_fate(old, Fate::MarkedForDeletion);
                }
                self.record(resource)?;
            }
            JournalEntry::Updated { seq, old, resource } => {
                self.end(seq)?;
                self.carry(old, resource)?;
            }
            JournalEntry::Same { old, resource } => {
                let state = match resource {
                    Some(state) => state,
                    None => self.renaming(self.base.resources.get(old).ok_or_else(|| {
                        SnapshotError::Inconsistent(format!("base resource #{old}"))
                    })?),
                };
                self.carry(old, state)?;
            }
            JournalEntry::Deleted { seq, old } => {
                if let Some(seq) = seq {
                    self.end(seq)?;
                }
                self.delete(old)?;
            }
            JournalEntry::Failed { seq } => self.end(seq)?,
            JournalEntry::Forgotten { old } => self.forget(old)?,
            JournalEntry::ComponentOutputs { urn, outputs } => {
                let i = *self
                    .tables
                    .recorded_index
                    .get(&urn)
                    .ok_or_else(|| SnapshotError::Inconsistent(urn.to_string()))?;
                self.tables.set_component_outputs(i, outputs);
            }
            JournalEntry::ResolvePending { kind, urn } => {
                let at = (self.tables.carried_pending.iter())
                    .position(|op| op.kind == kind && op.resource.urn == urn)
                    .ok_or_else(|| {
                        SnapshotError::Inconsistent(format!("pending {kind:?} {urn}"))
                    })?;
                self.tables.resolve_carried_pending(at);
            }
        }
        Ok(())
    }

    fn knows(&self, urn: &Urn) -> bool {
        self.tables.recorded_index.contains_key(urn) || self.tables.base_live.contains_key(urn)
    }

    fn end(&mut self, seq: u64) -> Result<(), SnapshotError> {
        if !self.tables.pending.contains_key(&seq) {
            return Err(SnapshotError::Inconsistent(format!("operation {seq}")));
        }
        self.tables.set_pending(seq, None);
        Ok(())
    }

    fn expect_live_base(&self, old: usize) -> Result<(), SnapshotError> {
        match self.tables.fate.get(old) {
            Some(Fate::Untouched) => Ok(()),
            Some(Fate::Pulled) => Err(self.kept_as_recorded(old)),
            _ => Err(SnapshotError::Inconsistent(format!("base resource #{old}"))),
        }
    }

    /// Why pulled base resource `old` cannot change: the first recorded state that names it
    /// is the one whose recording pulled it (none before it could: it was not there yet).
    fn kept_as_recorded(&self, old: usize) -> SnapshotError {
        let urn = self.base.resources[old].urn.clone();
        let by = (self.tables.recorded.iter())
            .find(|r| r.predecessors().any(|p| *p == urn))
            .map_or_else(|| urn.clone(), |r| r.urn.clone());
        SnapshotError::KeptAsRecorded { urn, by }
    }

    /// What the snapshot manager journals to record `entry`, if anything. Component outputs
    /// are journaled only when they change the component's outputs as they stand (the base's,
    /// or those an earlier entry recorded): an update that changes nothing journals nothing.
    /// Those of a base component nothing recorded yet carry it over with them, as a `Same`
    /// with the new outputs (a component unchanged is not recorded, as any state unchanged).
    /// Any other entry is journaled as it is.
    pub(super) fn journaled<'e>(&self, entry: &'e JournalEntry) -> Option<Cow<'e, JournalEntry>> {
        let JournalEntry::ComponentOutputs { urn, outputs } = entry else {
            return Some(Cow::Borrowed(entry));
        };
        if let Some(&i) = self.tables.recorded_index.get(urn) {
            return (self.tables.recorded[i].outputs != *outputs).then_some(Cow::Borrowed(entry));
        }
        let Some(&old) = self.tables.base_live.get(urn) else {
            // Refused when applied, naming the component.
            return Some(Cow::Borrowed(entry));
        };
        let base = &self.base.resources[old];
        (base.outputs != *outputs).then(|| {
            let resource = ResourceState {
                outputs: outputs.clone(),
                ..self.renaming(base)
            };
            Cow::Owned(JournalEntry::Same {
                old,
                resource: Some(resource),
            })
        })
    }

    /// The base resource with an operation in flight (other than those in `except`) that
    /// recording `entry` would carry over as it was recorded, ahead of the state it records
    /// (see [`pull_forward`](Self::pull_forward)). Changes nothing.
    pub(super) fn carries_in_flight(
        &self,
        entry: &JournalEntry,
        except: &[usize],
    ) -> Option<usize> {
        let entry = self.journaled(entry)?;
        let in_flight: Vec<usize> = (self.tables.pending.values())
            .filter_map(|f| {
                f.old
                    .or_else(|| self.tables.base_live.get(&f.op.resource.urn).copied())
            })
            .filter(|i| !except.contains(i))
            .collect();
        if in_flight.is_empty() {
            return None;
        }
        let state = match &*entry {
            JournalEntry::Created { resource, .. }
            | JournalEntry::Updated { resource, .. }
            | JournalEntry::Same {
                resource: Some(resource),
                ..
            } => resource,
            JournalEntry::Same {
                old,
                resource: None,
            } => self.base.resources.get(*old)?,
            _ => return None,
        };
        // The walk `pull_forward` makes: through the untouched base states, by their recorded
        // predecessors (a renamed or forgotten one is no longer live under its old URN).
        let mut seen = HashSet::new();
        let mut next: Vec<&Urn> = state.predecessors().collect();
        while let Some(urn) = next.pop() {
            if self.tables.recorded_index.contains_key(urn) {
                continue;
            }
            let Some(&i) = self.tables.base_live.get(urn) else {
                continue;
            };
            if self.tables.fate[i] != Fate::Untouched || !seen.insert(i) {
                continue;
            }
            if in_flight.contains(&i) {
                return Some(i);
            }
            next.extend(self.base.resources[i].predecessors());
        }
        None
    }

    /// Moves base resource `old` into the recorded part of the snapshot as `state`, which may
    /// have a new URN (the resource was renamed, with an alias).
    fn carry(&mut self, old: usize, state: ResourceState) -> Result<(), SnapshotError> {
        self.carry_as(old, state, Fate::Carried)
    }

    /// [`carry`](Self::carry), leaving base resource `old` with `fate`.
    fn carry_as(
        &mut self,
        old: usize,
        state: ResourceState,
        fate: Fate,
    ) -> Result<(), SnapshotError> {
        self.expect_live_base(old)?;
        let old_urn = self.base.resources[old].urn.clone();
        if state.urn != old_urn && self.knows(&state.urn) {
            return Err(IntegrityError::DuplicateUrn { urn: state.urn }.into());
        }
        self.tables.set_fate(old, fate);
        self.tables.remove_base_live(&old_urn);
        self.forget_references(old);
        if state.urn != old_urn {
            if let Some(n) = self.tables.set_referrers(&old_urn, None) {
                self.add_referrers(&state.urn, n);
            }
            self.tables.rename(old_urn, state.urn.clone());
        }
        self.record(state)
    }

    /// Carries over, as they are, the untouched base resources `state` depends on (and theirs):
    /// recorded states come first in the snapshot, so what they depend on must be recorded
    /// before them. An operation leaves such a resource untouched when it does not change it
    /// (`--target` left it out). Once pulled, it can no longer change: a change would have to
    /// come before what depends on it, which is recorded already.
    fn pull_forward(&mut self, state: &ResourceState) -> Result<(), SnapshotError> {
        let untouched: Vec<usize> = (state.predecessors())
            .filter(|p| !self.tables.recorded_index.contains_key(*p))
            .filter_map(|p| self.tables.base_live.get(p).copied())
            .filter(|&i| self.tables.fate[i] == Fate::Untouched)
            .collect();
        for i in untouched {
            // Pulling an earlier one forward may have pulled this one already.
            if self.tables.fate[i] == Fate::Untouched {
                let carried = self.renaming(&self.base.resources[i]);
                self.carry_as(i, carried, Fate::Pulled)?;
            }
        }
        Ok(())
    }

    /// Drops base resource `old`, gone out of band, whatever still names it.
    fn forget(&mut self, old: usize) -> Result<(), SnapshotError> {
        match self.tables.fate.get(old) {
            Some(Fate::Untouched | Fate::MarkedForDeletion) => {}
            _ => return Err(SnapshotError::Inconsistent(format!("base resource #{old}"))),
        }
        let urn = self.base.resources[old].urn.clone();
        if self.tables.fate[old] == Fate::Untouched {
            self.tables.remove_base_live(&urn);
        }
        self.tables.set_fate(old, Fate::Deleted);
        self.forget_references(old);
        // References mean the live resource: they drop unless another live state has the URN.
        // (A replaced copy awaiting deletion does not keep them: what depended on the gone
        // resource depends on nothing there now.)
        let still_live = self.tables.recorded_index.contains_key(&urn)
            || self.tables.base_live.contains_key(&urn);
        if !still_live {
            self.tables.add_forgotten(urn);
        }
        Ok(())
    }

    /// A base state with its references to renamed resources updated, and those to forgotten
    /// ones dropped.
    fn renaming(&self, state: &ResourceState) -> ResourceState {
        self.renamed_state(state.clone())
    }

    /// [`renaming`](Self::renaming), of a state it may change in place.
    fn renamed_state(&self, mut state: ResourceState) -> ResourceState {
        if !self.tables.forgotten.is_empty() {
            state
                .dependencies
                .retain(|d| !self.tables.forgotten.contains(d));
            if state
                .parent
                .as_ref()
                .is_some_and(|p| self.tables.forgotten.contains(p))
            {
                // What had a parent that is gone now stands directly under the stack.
                state.parent = self.root.clone();
            }
            if (state.provider.as_ref()).is_some_and(|p| self.tables.forgotten.contains(&p.urn)) {
                state.provider = None;
            }
        }
        if self.tables.renamed.is_empty() {
            return state;
        }
        let rename = |u: &mut Urn| {
            if let Some(new) = self.tables.renamed.get(u) {
                *u = new.clone();
            }
        };
        (state.parent.iter_mut())
            .chain(state.dependencies.iter_mut())
            .chain(state.provider.iter_mut().map(|p| &mut p.urn))
            .for_each(rename);
        state
    }

    fn forget_references(&mut self, old: usize) {
        let predecessors: Vec<Urn> = self.base.resources[old].predecessors().cloned().collect();
        for p in predecessors {
            if let Some(&n) = self.tables.referrers.get(&p) {
                self.tables.set_referrers(&p, Some(n.saturating_sub(1)));
            }
        }
    }

    fn add_referrers(&mut self, urn: &Urn, n: usize) {
        let count = self.tables.referrers.get(urn).copied().unwrap_or(0);
        self.tables.set_referrers(urn, Some(count + n));
    }

    /// Appends a state to the recorded part; its predecessors must already be recorded.
    fn record(&mut self, state: ResourceState) -> Result<(), SnapshotError> {
        if self.tables.recorded_index.contains_key(&state.urn)
            || self.tables.base_live.contains_key(&state.urn)
        {
            return Err(IntegrityError::DuplicateUrn { urn: state.urn }.into());
        }
        self.pull_forward(&state)?;
        for (relation, p) in state.relations() {
            if !self.tables.recorded_index.contains_key(p) {
                return Err(IntegrityError::MissingPredecessor {
                    urn: state.urn.clone(),
                    missing: p.clone(),
                    relation,
                }
                .into());
            }
        }
        if state.custom && state.id.is_empty() {
            return Err(IntegrityError::MissingId { urn: state.urn }.into());
        }
        for p in state.predecessors() {
            self.add_referrers(p, 1);
        }
        self.tables.push_recorded(state);
        Ok(())
    }

    /// A resource may be created unless a live state already has its URN (other than the base
    /// resource it replaces).
    fn check_creatable(&self, urn: &Urn, replaces: Option<usize>) -> Result<(), SnapshotError> {
        if let Some(old) = replaces
            && self.tables.fate.get(old) == Some(&Fate::Pulled)
        {
            return Err(self.kept_as_recorded(old));
        }
        let taken = self.tables.recorded_index.contains_key(urn)
            || self
                .tables
                .base_live
                .get(urn)
                .is_some_and(|&live| Some(live) != replaces);
        if taken {
            return Err(IntegrityError::DuplicateUrn { urn: urn.clone() }.into());
        }
        Ok(())
    }

    /// A base resource may go if it is still in the snapshot and nothing left depends on it (or
    /// another state with its URN stays to satisfy those that do).
    fn check_deletable(&self, old: usize) -> Result<(), SnapshotError> {
        match self.tables.fate.get(old) {
            Some(Fate::Untouched | Fate::MarkedForDeletion) => {}
            Some(Fate::Pulled) => return Err(self.kept_as_recorded(old)),
            _ => return Err(SnapshotError::Inconsistent(format!("base resource #{old}"))),
        }
        let urn = &self.base.resources[old].urn;
        let was_live = self.tables.fate[old] == Fate::Untouched;
        let still_named = self.tables.recorded_index.contains_key(urn)
            || (!was_live && self.tables.base_live.contains_key(urn));
        if !still_named && self.tables.referrers.get(urn).copied().unwrap_or(0) > 0 {
            return Err(SnapshotError::StillDependedOn(urn.clone()));
        }
        Ok(())
    }

    fn delete(&mut self, old: usize) -> Result<(), SnapshotError> {
        self.check_deletable(old)?;
        let urn = self.base.resources[old].urn.clone();
        let was_live = self.tables.fate[old] == Fate::Untouched;
        if was_live {
            self.tables.remove_base_live(&urn);
        }
        self.tables.set_fate(old, Fate::Deleted);
        self.forget_references(old);
        Ok(())
    }

    /// The snapshot as of the last applied entry.
    pub fn snapshot(&self) -> Snapshot {
        let base = self.base.resources.iter().map(Cow::Borrowed);
        self.snapshot_with(self.tables.recorded.clone(), base)
    }

    /// Whether the snapshot is still its base, exactly: no entry left a change (an operation
    /// that changed nothing journals nothing, or only creates begun and failed), and no
    /// operation its base left pending is moot.
    pub fn is_base(&self) -> bool {
        let t = &self.tables;
        let untouched = (t.fate.iter().zip(&self.base.resources)).all(|(fate, r)| {
            matches!(
                (fate, r.delete),
                (Fate::Untouched, false) | (Fate::MarkedForDeletion, true)
            )
        });
        untouched
            && t.recorded.is_empty()
            && t.pending.is_empty()
            && t.renamed.is_empty()
            && t.forgotten.is_empty()
            && t.carried_pending == self.base.pending_operations
            && !self.drops_moot_pending()
    }

    /// Whether building the snapshot drops an interrupted update or delete of the base whose
    /// resource is not in it (see [`snapshot_with`](Self::snapshot_with)).
    fn drops_moot_pending(&self) -> bool {
        let pending = &self.base.pending_operations;
        if pending.iter().all(|op| op.kind == PendingKind::Creating) {
            return false;
        }
        let urns: HashSet<&Urn> = self.base.resources.iter().map(|r| &r.urn).collect();
        (pending.iter())
            .any(|op| op.kind != PendingKind::Creating && !urns.contains(&op.resource.urn))
    }

    /// The snapshot as of the last applied entry, taking the recorded states rather than
    /// copying them, and the base's too unless something else still shares the base.
    pub fn into_snapshot(mut self) -> Snapshot {
        let recorded = std::mem::take(&mut self.tables.recorded);
        match Arc::try_unwrap(std::mem::take(&mut self.base)) {
            Ok(base) => self.snapshot_with(recorded, base.resources.into_iter().map(Cow::Owned)),
            Err(shared) => {
                let base = shared.resources.iter().map(Cow::Borrowed);
                self.snapshot_with(recorded, base)
            }
        }
    }

    /// The snapshot whose recorded part is `resources`, and whose base resources are `base`.
    fn snapshot_with<'a>(
        &self,
        mut resources: Vec<ResourceState>,
        base: impl Iterator<Item = Cow<'a, ResourceState>>,
    ) -> Snapshot {
        let kept = (self.tables.fate.iter())
            .filter(|f| matches!(f, Fate::Untouched | Fate::MarkedForDeletion))
            .count();
        resources.reserve_exact(kept);
        for (r, fate) in base.zip(&self.tables.fate) {
            match fate {
                Fate::Untouched => resources.push(self.renamed_state(r.into_owned())),
                Fate::MarkedForDeletion => resources.push(ResourceState {
                    delete: true,
                    ..self.renamed_state(r.into_owned())
                }),
                Fate::Carried | Fate::Pulled | Fate::Deleted => {}
            }
        }
        let mut pending_operations = self.tables.carried_pending.clone();
        pending_operations.extend(self.tables.pending.values().map(|f| f.op.clone()));
        // An interrupted update or delete is moot once its resource has left the state (a
        // later delete finished it): only the record of an interrupted create outlives that.
        if pending_operations
            .iter()
            .any(|op| op.kind != PendingKind::Creating)
        {
            let urns: HashSet<&Urn> = resources.iter().map(|r| &r.urn).collect();
            pending_operations
                .retain(|op| op.kind == PendingKind::Creating || urns.contains(&op.resource.urn));
        }
        Snapshot {
            resources,
            pending_operations,
        }
    }
}

/// Rebuilds the snapshot a base and its journal describe. A base the caller still shares is
/// left as it is: the states kept from it untouched are copied.
pub fn replay(
    base: impl Into<Arc<Snapshot>>,
    entries: impl IntoIterator<Item = JournalEntry>,
) -> Result<Snapshot, SnapshotError> {
    replay_with(JournalState::new(base), entries)
}

/// [`replay`], without checking the fields of the states the entries record: for a journal an
/// older plinth wrote, read only to be exported or to have the resource that fails them removed
/// (whose fields are checked before anything is written back).
pub fn replay_unchecked(
    base: impl Into<Arc<Snapshot>>,
    entries: impl IntoIterator<Item = JournalEntry>,
) -> Result<Snapshot, SnapshotError> {
    replay_with(JournalState::unchecked(base), entries)
}

fn replay_with(
    mut state: JournalState,
    entries: impl IntoIterator<Item = JournalEntry>,
) -> Result<Snapshot, SnapshotError> {
    for entry in entries {
        state.apply_owned(entry)?;
    }
    state.replayed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::tests::{state, urn};

    fn base() -> Snapshot {
        Snapshot {
            resources: vec![state("a", &[]), state("b", &["a"])],
            ..Default::default()
        }
    }

    #[test]
    fn replay_of_a_replacement_keeps_the_old_state_marked() {
        let mut new_a = state("a", &[]);
        new_a.id = "id-a2".into();
        let snap = replay(
            base(),
            [
                JournalEntry::Begin {
                    seq: 1,
                    kind: PendingKind::Creating,
                    resource: new_a.clone(),
                    old: Some(0),
                },
                JournalEntry::Created {
                    seq: 1,
                    resource: new_a,
                    replaces: Some(0),
                },
                JournalEntry::Same {
                    old: 1,
                    resource: None,
                },
            ],
        )
        .unwrap();
        let ids: Vec<_> = snap
            .resources
            .iter()
            .map(|r| (r.id.as_str(), r.delete))
            .collect();
        assert_eq!(ids, [("id-a2", false), ("id-b", false), ("id-a", true)]);
    }

    #[test]
    fn an_unfinished_operation_stays_pending() {
        let snap = replay(
            base(),
            [JournalEntry::Begin {
                seq: 7,
                kind: PendingKind::Creating,
                resource: state("c", &[]),
                old: None,
            }],
        )
        .unwrap();
        assert_eq!(snap.pending_operations.len(), 1);
        assert_eq!(snap.resources.len(), 2);
    }

    #[test]
    fn an_interrupted_delete_is_forgotten_once_its_resource_is_deleted() {
        let interrupted = |kind, name| PendingOperation {
            kind,
            resource: state(name, &[]),
        };
        let base = Snapshot {
            pending_operations: vec![
                interrupted(PendingKind::Deleting, "b"),
                interrupted(PendingKind::Updating, "a"),
                interrupted(PendingKind::Creating, "c"),
            ],
            ..base()
        };
        let snap = replay(
            base,
            [
                JournalEntry::Begin {
                    seq: 1,
                    kind: PendingKind::Deleting,
                    resource: state("b", &["a"]),
                    old: None,
                },
                JournalEntry::Deleted {
                    seq: Some(1),
                    old: 1,
                },
            ],
        )
        .unwrap();
        let kinds: Vec<_> = snap
            .pending_operations
            .iter()
            .map(|op| (op.kind, op.resource.urn.name()))
            .collect();
        assert_eq!(
            kinds,
            [(PendingKind::Updating, "a"), (PendingKind::Creating, "c")]
        );
    }

    #[test]
    fn a_state_the_loaders_would_refuse_is_never_recorded() {
        let with_id = |name: &str, id: &str| ResourceState {
            id: id.into(),
            ..state(name, &[])
        };
        let bad = with_id("c", "a\tb");
        let mut journal = JournalState::new(base());
        let begin = |seq, resource| JournalEntry::Begin {
            seq,
            kind: PendingKind::Creating,
            resource,
            old: None,
        };
        // A begin whose state holds what a program named (a control character in its name).
        let named = with_id("c\x1b[2K", "");
        let refused = journal.apply(&begin(1, named)).unwrap_err();
        assert!(
            refused.to_string().contains(r"c\u{1b}[2K"),
            "escaped in the message: {refused}"
        );
        journal.apply(&begin(2, with_id("c", ""))).unwrap();
        let before = journal.snapshot();
        let offered = [
            JournalEntry::Created {
                seq: 2,
                resource: bad.clone(),
                replaces: None,
            },
            JournalEntry::Same {
                old: 0,
                resource: Some(with_id("a", "x\ny")),
            },
        ];
        for entry in &offered {
            let error = journal.apply(entry).unwrap_err();
            assert!(matches!(error, SnapshotError::Field(_)), "{error}");
            assert_eq!(journal.snapshot(), before, "{entry:?}");
        }
        assert!(!error_text(&bad).contains('\t'));
    }

    #[test]
    fn a_journal_an_older_plinth_wrote_replays_unchecked_for_export_and_repair() {
        let mut carried = state("a", &[]);
        carried.id = "x\ny".into();
        let entries = || {
            [JournalEntry::Same {
                old: 0,
                resource: Some(carried.clone()),
            }]
        };
        let refused = replay(base(), entries()).unwrap_err();
        assert!(matches!(refused, SnapshotError::Field(_)), "{refused}");
        let snapshot = replay_unchecked(base(), entries()).unwrap();
        assert_eq!(snapshot.resources[0].id, "x\ny");
    }

    fn error_text(state: &ResourceState) -> String {
        state.check_fields().unwrap_err().to_string()
    }

    #[test]
    fn an_entry_refused_halfway_changes_nothing() {
        // Each of these passes its first checks and changes the state before it is refused.
        let mut new_a = state("a", &[]);
        new_a.id = "id-a2".into();
        let mut renamed_b = state("b2", &["a"]);
        renamed_b.dependencies.push(urn("missing"));
        let refused = [
            // Ends operation 1, then finds base resource #9 is not there.
            JournalEntry::Created {
                seq: 1,
                resource: new_a.clone(),
                replaces: Some(9),
            },
            // Ends operation 1 and marks `a` replaced, then finds the new state's dependency
            // missing.
            JournalEntry::Created {
                seq: 1,
                resource: state("a", &["missing"]),
                replaces: Some(0),
            },
            // Carries `b` under a new name (renaming it, moving its referrers, carrying `a`
            // first), then finds a dependency missing.
            JournalEntry::Same {
                old: 1,
                resource: Some(renamed_b),
            },
        ];
        let begin = JournalEntry::Begin {
            seq: 1,
            kind: PendingKind::Creating,
            resource: new_a.clone(),
            old: Some(0),
        };
        let mut journal = JournalState::new(base());
        journal.apply(&begin).unwrap();
        let before = journal.snapshot();
        for entry in &refused {
            journal.apply(entry).unwrap_err();
            assert_eq!(journal.snapshot(), before, "{entry:?}");
        }
        // And the state goes on as if they had never been offered.
        let accepted = vec![
            begin,
            JournalEntry::Created {
                seq: 1,
                resource: new_a,
                replaces: Some(0),
            },
            JournalEntry::Same {
                old: 1,
                resource: Some(state("b2", &["a"])),
            },
            JournalEntry::Deleted { seq: None, old: 0 },
        ];
        for entry in &accepted[1..] {
            journal.apply(entry).unwrap();
        }
        assert_eq!(journal.snapshot(), replay(base(), accepted).unwrap());
    }

    #[test]
    fn the_final_snapshot_is_the_same_whether_the_base_is_shared_or_taken() {
        // `a` is carried under a new name (so the untouched `b` that depends on it is renamed in
        // the snapshot) and `c` is replaced, its old state kept marked for deletion.
        let base = Snapshot {
            resources: vec![state("a", &[]), state("b", &["a"]), state("c", &[])],
            ..Default::default()
        };
        let mut new_c = state("c", &[]);
        new_c.id = "id-c2".into();
        let entries = [
            JournalEntry::Same {
                old: 0,
                resource: Some(state("a2", &[])),
            },
            JournalEntry::Begin {
                seq: 1,
                kind: PendingKind::Creating,
                resource: new_c.clone(),
                old: Some(2),
            },
            JournalEntry::Created {
                seq: 1,
                resource: new_c,
                replaces: Some(2),
            },
        ];
        let shared = Arc::new(base.clone());
        let mut sharing = JournalState::new(shared.clone());
        let mut owning = JournalState::new(base);
        for entry in &entries {
            sharing.apply(entry).unwrap();
            owning.apply(entry).unwrap();
        }
        let expected = sharing.snapshot();
        let names: Vec<_> = (expected.resources.iter())
            .map(|r| (r.urn.name(), r.dependencies.len(), r.delete))
            .collect();
        assert_eq!(
            names,
            [
                ("a2", 0, false),
                ("c", 0, false),
                ("b", 1, false),
                ("c", 0, true)
            ]
        );
        assert_eq!(expected.resources[2].dependencies, [urn("a2")]);
        assert_eq!(sharing.into_snapshot(), expected);
        assert_eq!(owning.into_snapshot(), expected);
        // The shared base is left as it was.
        assert_eq!(shared.resources[1].dependencies, [urn("a")]);
    }

    #[test]
    fn refuses_to_delete_a_resource_others_depend_on() {
        let err = replay(base(), [JournalEntry::Deleted { seq: None, old: 0 }]).unwrap_err();
        assert!(err.to_string().contains("depend"), "{err}");
    }

    #[test]
    fn refuses_a_delete_others_depend_on_before_the_provider_is_called() {
        let err = replay(
            base(),
            [JournalEntry::Begin {
                seq: 1,
                kind: PendingKind::Deleting,
                resource: state("a", &[]),
                old: Some(0),
            }],
        )
        .unwrap_err();
        assert!(err.to_string().contains("depend"), "{err}");
    }

    #[test]
    fn refuses_a_resource_whose_dependency_is_not_in_the_state() {
        let c = state("c", &["missing"]);
        let err = replay(
            base(),
            [
                JournalEntry::Begin {
                    seq: 1,
                    kind: PendingKind::Creating,
                    resource: c.clone(),
                    old: None,
                },
                JournalEntry::Created {
                    seq: 1,
                    resource: c,
                    replaces: None,
                },
            ],
        )
        .unwrap_err();
        assert!(matches!(
            err,
            SnapshotError::Integrity(IntegrityError::MissingPredecessor { .. })
        ));
    }

    #[test]
    fn carrying_a_resource_carries_what_it_depends_on_first() {
        // `b` is recorded while `a`, which it depends on, is left untouched (not targeted).
        let snapshot = replay(
            base(),
            [JournalEntry::Same {
                old: 1,
                resource: None,
            }],
        )
        .unwrap();
        let names: Vec<&str> = snapshot.resources.iter().map(|r| r.urn.name()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn a_state_carried_over_as_recorded_can_no_longer_change() {
        // `c` depends on `b`, left untouched, which depends on `a`, whose update is in flight:
        // recording `c` would carry `b` and the old `a` over as recorded.
        let begin = JournalEntry::Begin {
            seq: 1,
            kind: PendingKind::Updating,
            resource: state("a", &[]),
            old: Some(0),
        };
        let created = JournalEntry::Created {
            seq: 2,
            resource: state("c", &["b"]),
            replaces: None,
        };
        let mut journal = JournalState::new(base());
        journal.apply(&begin).unwrap();
        journal
            .apply(&JournalEntry::Begin {
                seq: 2,
                kind: PendingKind::Creating,
                resource: state("c", &["b"]),
                old: None,
            })
            .unwrap();
        assert_eq!(journal.carries_in_flight(&created, &[]), Some(0));
        assert_eq!(journal.carries_in_flight(&created, &[0]), None);
        // Recorded all the same (the snapshot manager records it so only when asked to, once
        // the update's step has ended), it carries them; the update's end is then refused,
        // naming the kept state that depends on `a`.
        journal.apply(&created).unwrap();
        let updated = JournalEntry::Updated {
            seq: 1,
            old: 0,
            resource: state("a", &[]),
        };
        let err = journal.apply(&updated).unwrap_err();
        assert!(
            matches!(&err, SnapshotError::KeptAsRecorded { urn: u, by } if *u == urn("a") && *by == urn("b")),
            "{err}"
        );
        assert!(err.to_string().contains("target urn:"), "{err}");
        // So is a replacement or a delete of it, before the provider acts.
        let replacing = JournalEntry::Begin {
            seq: 3,
            kind: PendingKind::Creating,
            resource: state("a", &[]),
            old: Some(0),
        };
        let deleting = JournalEntry::Begin {
            seq: 3,
            kind: PendingKind::Deleting,
            resource: state("a", &[]),
            old: Some(0),
        };
        for entry in [replacing, deleting] {
            let err = journal.apply(&entry).unwrap_err();
            assert!(matches!(err, SnapshotError::KeptAsRecorded { .. }), "{err}");
        }
        let snapshot = journal.snapshot();
        let names: Vec<&str> = snapshot.resources.iter().map(|r| r.urn.name()).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn an_entry_carries_nothing_in_flight_once_that_operation_has_ended() {
        let mut journal = JournalState::new(base());
        let carried = JournalEntry::Same {
            old: 1,
            resource: None,
        };
        journal
            .apply(&JournalEntry::Begin {
                seq: 1,
                kind: PendingKind::Updating,
                resource: state("a", &[]),
                old: Some(0),
            })
            .unwrap();
        assert_eq!(journal.carries_in_flight(&carried, &[]), Some(0));
        journal
            .apply(&JournalEntry::Updated {
                seq: 1,
                old: 0,
                resource: state("a", &[]),
            })
            .unwrap();
        assert_eq!(journal.carries_in_flight(&carried, &[]), None);
        journal.apply(&carried).unwrap();
    }

    #[test]
    fn deletes_in_reverse_order_empty_the_snapshot() {
        let snap = replay(
            base(),
            [
                JournalEntry::Deleted { seq: None, old: 1 },
                JournalEntry::Deleted { seq: None, old: 0 },
            ],
        )
        .unwrap();
        assert!(snap.resources.is_empty());
    }
}
