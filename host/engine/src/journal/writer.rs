//! The snapshot manager's one writer: a thread that applies each entry to the state in memory
//! and appends it to the persister, keeping the two in step.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::entry::JournalEntry;
use super::error::SnapshotError;
use super::persist::{PersistError, Persister, SyncWaker};
use super::state::JournalState;
use super::undo::Savepoint;
use crate::resource::ResourceState;
use crate::snapshot::{PendingKind, Snapshot};

enum Request {
    Record(
        Vec<JournalEntry>,
        oneshot::Sender<Result<(), SnapshotError>>,
    ),
    /// Record one entry unless it would carry over a base resource with an operation in flight,
    /// other than those listed.
    RecordUnlessCarrying(
        Box<JournalEntry>,
        Vec<usize>,
        oneshot::Sender<Result<(), SnapshotError>>,
    ),
    Finish(oneshot::Sender<Result<Snapshot, SnapshotError>>),
    /// A sync in flight may have settled.
    Settled,
}

/// Records mutations through one writer thread. Requests that arrive while a flush is under
/// way share the next one (group commit), so parallel steps do not pay one fsync each.
///
/// Only the start of a provider call (a `Begin`) must be durable before the call goes on: a crash
/// must leave it visible as pending. Every other entry is acknowledged once it is applied and
/// appended, and made durable by the next flush: a start's, or, if none comes within
/// a few milliseconds, one of its own. Since the journal is made durable in order, no entry
/// recorded after it (a dependent's start, say) is durable without it.
///
/// A persister whose syncs wait on the network keeps them in flight (see
/// [`Persister::start_sync`]) while the writer goes on applying, appending and acknowledging
/// entries; a start is answered when the sync that carries it settles. The state in memory
/// commits what a settled sync made durable; a failed one takes the state back to the last
/// successful one, with the entries of the syncs in flight after it.
#[derive(Clone)]
pub struct SnapshotManager {
    /// Shared by the clones: the writer's waker holds it weakly, so that the writer stops when
    /// every clone is gone.
    tx: Arc<mpsc::Sender<Request>>,
    next_seq: Arc<AtomicU64>,
}

impl SnapshotManager {
    /// Starts the writer for an operation on `base`, which it shares rather than copies.
    pub fn start(base: impl Into<Arc<Snapshot>>, persister: Box<dyn Persister>) -> SnapshotManager {
        let base = base.into();
        let (tx, rx) = mpsc::channel();
        let tx = Arc::new(tx);
        let writer = Writer::new(
            JournalState::new(base),
            persister,
            waker(Arc::downgrade(&tx)),
        );
        std::thread::Builder::new()
            .name("plinth-snapshot-writer".into())
            .spawn(move || run(writer, rx))
            .expect("spawning the snapshot writer thread");
        SnapshotManager {
            tx,
            next_seq: Arc::new(AtomicU64::new(1)),
        }
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Records `entry`: when this returns it is applied and appended, and durable if it is a
    /// `Begin`; any other entry becomes durable with the writer's next flush (see
    /// [`SnapshotManager`]).
    pub async fn record(&self, entry: JournalEntry) -> Result<(), SnapshotError> {
        self.record_all(vec![entry]).await
    }

    /// Records `entries`, in order, as [`record`](Self::record) does, with one flush. They are
    /// recorded up to the first that cannot be (which is recorded nowhere, and whose error is
    /// returned): each entry must leave a valid state on its own.
    pub async fn record_all(&self, entries: Vec<JournalEntry>) -> Result<(), SnapshotError> {
        let (reply, done) = oneshot::channel();
        self.tx
            .send(Request::Record(entries, reply))
            .map_err(|_| SnapshotError::Stopped)?;
        done.await.map_err(|_| SnapshotError::Stopped)?
    }

    /// Records `entry` as [`record`](Self::record) does, unless recording it would carry into
    /// the snapshot, as it was recorded, a base resource (other than those in `except`) that an
    /// operation in flight is changing: then it records nothing and fails with
    /// [`SnapshotError::CarriesInFlight`], naming that resource. Once carried over, the
    /// resource could not change (see [`SnapshotError::KeptAsRecorded`]): the end of that
    /// operation, after the provider acted, would be refused. The check and the recording are
    /// one step of the writer, so no operation can begin in between.
    pub async fn record_after_in_flight(
        &self,
        entry: JournalEntry,
        except: Vec<usize>,
    ) -> Result<(), SnapshotError> {
        let (reply, done) = oneshot::channel();
        self.tx
            .send(Request::RecordUnlessCarrying(
                Box::new(entry),
                except,
                reply,
            ))
            .map_err(|_| SnapshotError::Stopped)?;
        done.await.map_err(|_| SnapshotError::Stopped)?
    }

    /// Durably records the start of a provider call, returning its sequence number.
    pub async fn begin(
        &self,
        kind: PendingKind,
        resource: &ResourceState,
        old: Option<usize>,
    ) -> Result<u64, SnapshotError> {
        let seq = self.next_seq();
        self.record(JournalEntry::Begin {
            seq,
            kind,
            resource: resource.clone(),
            old,
        })
        .await?;
        Ok(seq)
    }

    /// Waits for every flush under way, verifies the final snapshot and writes it as the new
    /// checkpoint.
    pub async fn finish(self) -> Result<Snapshot, SnapshotError> {
        let (reply, done) = oneshot::channel();
        self.tx
            .send(Request::Finish(reply))
            .map_err(|_| SnapshotError::Stopped)?;
        done.await.map_err(|_| SnapshotError::Stopped)?
    }
}

/// Wakes the writer of channel `tx` while some manager still uses it.
fn waker(tx: Weak<mpsc::Sender<Request>>) -> SyncWaker {
    SyncWaker::new(move || {
        if let Some(tx) = tx.upgrade() {
            let _ = tx.send(Request::Settled);
        }
    })
}

/// How long the ends of provider calls wait for a start to share its flush with, before they are
/// flushed on their own: the steps that depend on them usually start within that time.
const END_FLUSH_DELAY: Duration = Duration::from_millis(5);

/// A start recorded and waiting for its flush.
type Waiting = oneshot::Sender<Result<(), SnapshotError>>;

fn run(mut writer: Writer, rx: mpsc::Receiver<Request>) {
    let min_interval = writer.persister.min_sync_interval();
    let mut last_flush: Option<Instant> = None;
    let mut next = rx.recv();
    while let Ok(first) = next {
        // What came while the last flush was under way shares the next one.
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        loop {
            let mut requests = std::mem::take(&mut batch).into_iter();
            while let Some(request) = requests.next() {
                if let Some(finished) = writer.handle(request) {
                    let flushed = writer.flush_all(requests, &rx);
                    let _ = finished.send(flushed.and_then(|()| writer.finish()));
                    return;
                }
            }
            // Starts wait for a flush: until the persister's interval since the last one is
            // over, more requests may come to share it.
            let wait = last_flush
                .and_then(|at| (at + min_interval).checked_duration_since(Instant::now()));
            let (false, Some(wait)) = (writer.waiting.is_empty(), wait) else {
                break;
            };
            match rx.recv_timeout(wait) {
                Ok(request) => {
                    batch.push(request);
                    batch.extend(rx.try_iter());
                }
                Err(_) => break,
            }
        }
        if !writer.waiting.is_empty() {
            last_flush = Some(Instant::now());
            // A failure is answered to the starts it fails.
            let _ = writer.flush();
        }
        next = match rx.recv_timeout(END_FLUSH_DELAY) {
            Ok(request) => Ok(request),
            Err(_) => {
                // Nothing came: what was acknowledged is made durable now. A failure is kept
                // in `lost` for whatever is recorded next.
                let _ = writer.flush();
                rx.recv()
            }
        };
    }
}

/// The state in memory and the persister, kept in step.
struct Writer {
    state: JournalState,
    persister: Box<dyn Persister>,
    waker: SyncWaker,
    /// Entries were appended since the last flush started.
    unflushed: bool,
    /// Some of them were acknowledged.
    acknowledged: bool,
    /// The starts recorded since the last flush started.
    waiting: Vec<Waiting>,
    /// The syncs started and not settled, oldest first.
    in_flight: VecDeque<SyncInFlight>,
    /// Why entries that were acknowledged were lost: nothing more can be recorded, since the
    /// steps that recorded them went on as if they were.
    lost: Option<SnapshotError>,
}

/// A sync under way, and what waits on it.
struct SyncInFlight {
    /// The state as it makes it durable.
    end: Savepoint,
    waiting: Vec<Waiting>,
    /// Some of its entries were acknowledged before it settled.
    acknowledged: bool,
}

impl Writer {
    fn new(state: JournalState, persister: Box<dyn Persister>, waker: SyncWaker) -> Writer {
        Writer {
            state,
            persister,
            waker,
            unflushed: false,
            acknowledged: false,
            waiting: Vec::new(),
            in_flight: VecDeque::new(),
            lost: None,
        }
    }

    /// Handles `request`: a start joins `waiting` for the next flush, any other entry is
    /// acknowledged at once, settled syncs answer their starts. A request to finish is handed
    /// back.
    fn handle(
        &mut self,
        request: Request,
    ) -> Option<oneshot::Sender<Result<Snapshot, SnapshotError>>> {
        match request {
            Request::Record(entries, reply) => self.record_request(entries, reply),
            Request::RecordUnlessCarrying(entry, except, reply) => {
                match self.state.carries_in_flight(&entry, &except) {
                    Some(old) if self.lost.is_none() => {
                        let urn = self.state.base.resources[old].urn.clone();
                        let _ = reply.send(Err(SnapshotError::CarriesInFlight { old, urn }));
                    }
                    _ => self.record_request(vec![*entry], reply),
                }
            }
            // A failure is answered to the starts it fails.
            Request::Settled => drop(self.collect_settled()),
            Request::Finish(reply) => return Some(reply),
        }
        None
    }

    /// Records `entries`: a start joins `waiting` for the next flush, other entries are
    /// acknowledged at once.
    fn record_request(
        &mut self,
        entries: Vec<JournalEntry>,
        reply: oneshot::Sender<Result<(), SnapshotError>>,
    ) {
        match self.record(&entries) {
            Ok(()) if entries.iter().any(JournalEntry::is_begin) => self.waiting.push(reply),
            Ok(()) => {
                self.acknowledged = true;
                let _ = reply.send(Ok(()));
            }
            // What the request recorded before the failure is flushed all the same.
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Applies and appends `entries` in order (those that change nothing are not journaled:
    /// see [`JournalState::journaled`]), up to the first that cannot be: that one changes
    /// neither the state in memory nor the persister's journal.
    fn record(&mut self, entries: &[JournalEntry]) -> Result<(), SnapshotError> {
        if let Some(lost) = &self.lost {
            return Err(lost.clone());
        }
        for entry in entries {
            let Some(entry) = self.state.journaled(entry) else {
                continue;
            };
            let before = self.state.savepoint();
            self.state.apply_uncommitted(&entry)?;
            if let Err(e) = self.persister.append(&entry) {
                self.state.roll_back_to(before);
                return Err(e.into());
            }
            self.unflushed = true;
        }
        Ok(())
    }

    /// Starts making what was appended since the last flush durable, for the starts waiting;
    /// a persister that syncs at once has settled it on return. Fails if it failed at once, or
    /// if acknowledged entries were lost before.
    fn flush(&mut self) -> Result<(), SnapshotError> {
        let waiting = std::mem::take(&mut self.waiting);
        if let Some(lost) = &self.lost {
            let lost = lost.clone();
            answer(waiting, &Err(lost.clone()));
            return Err(lost);
        }
        if !std::mem::take(&mut self.unflushed) {
            // Their entries are in a sync under way already, if any.
            match self.in_flight.back_mut() {
                Some(sync) => sync.waiting.extend(waiting),
                None => answer(waiting, &Ok(())),
            }
            return Ok(());
        }
        self.in_flight.push_back(SyncInFlight {
            end: self.state.savepoint(),
            waiting,
            acknowledged: std::mem::take(&mut self.acknowledged),
        });
        match self.persister.start_sync(&self.waker) {
            Some(outcome) => self.settle(outcome),
            None => Ok(()),
        }
    }

    /// Settles the syncs whose outcome the persister has; fails if one failed.
    fn collect_settled(&mut self) -> Result<(), SnapshotError> {
        let mut settled = Ok(());
        while !self.in_flight.is_empty() {
            let Some(outcome) = self.persister.settled() else {
                break;
            };
            settled = settled.and(self.settle(outcome));
        }
        settled
    }

    /// Settles the oldest sync in flight. On success the state commits what it made durable.
    /// A failure fails the syncs after it too and drops every entry appended since the last
    /// success, as the persister did: the state goes back to what that one made durable.
    fn settle(&mut self, outcome: Result<(), PersistError>) -> Result<(), SnapshotError> {
        let sync = (self.in_flight.pop_front()).expect("a persister settles only syncs it started");
        match outcome {
            Ok(()) => {
                self.state.commit_to(sync.end);
                for later in &mut self.in_flight {
                    later.end = later.end.after_commit_of(sync.end);
                }
                answer(sync.waiting, &Ok(()));
                Ok(())
            }
            Err(e) => {
                self.state.roll_back_to(Savepoint::COMMITTED);
                let error = SnapshotError::from(e);
                let failed: Vec<SyncInFlight> = std::iter::once(sync)
                    .chain(self.in_flight.drain(..))
                    .collect();
                self.unflushed = false;
                let acknowledged = std::mem::take(&mut self.acknowledged)
                    || failed.iter().any(|sync| sync.acknowledged);
                if acknowledged {
                    self.lost = Some(error.clone());
                }
                let failure = Err(error.clone());
                for sync in failed {
                    answer(sync.waiting, &failure);
                }
                answer(std::mem::take(&mut self.waiting), &failure);
                Err(error)
            }
        }
    }

    /// Flushes what is left and waits for every sync under way (requests to record meanwhile
    /// are refused: the operation is ending). Fails if one of them did, or if acknowledged
    /// entries were lost before.
    /// `after` are the requests that came with the request to finish, after it.
    fn flush_all(
        &mut self,
        after: impl Iterator<Item = Request>,
        rx: &mpsc::Receiver<Request>,
    ) -> Result<(), SnapshotError> {
        let mut flushed = self.flush();
        for request in after {
            flushed = flushed.and(self.handle_finishing(request));
        }
        while !self.in_flight.is_empty() {
            match rx.recv() {
                Ok(request) => flushed = flushed.and(self.handle_finishing(request)),
                Err(_) => return Err(SnapshotError::Stopped),
            }
        }
        match &self.lost {
            Some(lost) => Err(lost.clone()),
            None => flushed,
        }
    }

    /// Handles `request` once the operation is finishing: only settled syncs count.
    fn handle_finishing(&mut self, request: Request) -> Result<(), SnapshotError> {
        match request {
            Request::Settled => return self.collect_settled(),
            Request::Record(_, reply) | Request::RecordUnlessCarrying(_, _, reply) => {
                let _ = reply.send(Err(SnapshotError::Stopped));
            }
            Request::Finish(reply) => {
                let _ = reply.send(Err(SnapshotError::Stopped));
            }
        }
        Ok(())
    }

    /// Verifies the final snapshot and writes it as the new checkpoint. An operation that
    /// changed nothing ends with its base, which was verified when it was read: the persister
    /// may keep the checkpoint it has.
    fn finish(self) -> Result<Snapshot, SnapshotError> {
        let Writer {
            state,
            mut persister,
            ..
        } = self;
        let unchanged = state.is_base();
        let snapshot = state.into_snapshot();
        if unchanged {
            persister.compact_unchanged(&snapshot)?;
        } else {
            snapshot.verify_integrity()?;
            persister.compact(&snapshot)?;
        }
        Ok(snapshot)
    }
}

/// Answers the starts `waiting` with the outcome of the flush that carried them.
fn answer(waiting: Vec<Waiting>, synced: &Result<(), SnapshotError>) {
    for reply in waiting {
        let _ = reply.send(synced.clone());
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::ops::Range;
    use std::pin::Pin;
    use std::sync::{Mutex, mpsc as std_mpsc};
    use std::task::{Context, Poll, Waker};

    use tokio::sync::watch;

    use super::*;
    use crate::journal::{PersistError, replay};
    use crate::snapshot::PendingOperation;
    use crate::snapshot::tests::state;
    use crate::value::PropertyMap;

    /// What a [`Flaky`] persister holds, shared with the test.
    #[derive(Default)]
    struct Store {
        /// Entries made durable by a sync.
        durable: Vec<JournalEntry>,
        syncs: usize,
        checkpoint: Option<Snapshot>,
        /// Whether the checkpoint was written as an operation's that changed nothing.
        unchanged: bool,
    }

    /// Persists in memory; refuses to append the entries `refuses` picks, and fails the syncs
    /// numbered (from 0) in `failing_syncs`.
    struct Flaky {
        store: Arc<Mutex<Store>>,
        appended: Vec<JournalEntry>,
        refuses: fn(&JournalEntry) -> bool,
        failing_syncs: Range<usize>,
    }

    impl Persister for Flaky {
        fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError> {
            if (self.refuses)(entry) {
                return Err(PersistError::invalid("append to", "/j", "refused"));
            }
            self.appended.push(entry.clone());
            Ok(())
        }
        fn sync(&mut self) -> Result<(), PersistError> {
            let mut store = self.store.lock().unwrap();
            store.syncs += 1;
            if self.failing_syncs.contains(&(store.syncs - 1)) {
                self.appended.clear();
                let disk_full = std::io::Error::from(std::io::ErrorKind::StorageFull);
                return Err(PersistError::io("sync", "/j", disk_full));
            }
            store.durable.append(&mut self.appended);
            Ok(())
        }
        fn compact(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
            self.store.lock().unwrap().checkpoint = Some(snapshot.clone());
            Ok(())
        }
        fn compact_unchanged(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
            self.store.lock().unwrap().unchanged = true;
            self.compact(snapshot)
        }
    }

    fn base() -> Snapshot {
        Snapshot {
            resources: vec![state("a", &[])],
            ..Default::default()
        }
    }

    fn start(
        refuses: fn(&JournalEntry) -> bool,
        failing_syncs: Range<usize>,
    ) -> (SnapshotManager, Arc<Mutex<Store>>) {
        start_with(base(), refuses, failing_syncs)
    }

    /// [`start`], from `base`.
    fn start_with(
        base: Snapshot,
        refuses: fn(&JournalEntry) -> bool,
        failing_syncs: Range<usize>,
    ) -> (SnapshotManager, Arc<Mutex<Store>>) {
        let store = Arc::new(Mutex::new(Store::default()));
        let persister = Flaky {
            store: store.clone(),
            appended: Vec::new(),
            refuses,
            failing_syncs,
        };
        (SnapshotManager::start(base, Box::new(persister)), store)
    }

    fn nothing(_: &JournalEntry) -> bool {
        false
    }

    fn begin(seq: u64, name: &str) -> JournalEntry {
        JournalEntry::Begin {
            seq,
            kind: PendingKind::Creating,
            resource: state(name, &[]),
            old: None,
        }
    }

    fn created(seq: u64, name: &str) -> JournalEntry {
        JournalEntry::Created {
            seq,
            resource: state(name, &[]),
            replaces: None,
        }
    }

    /// The snapshot the durable journal describes, which must be the one the manager ends with.
    fn on_disk(store: &Mutex<Store>) -> Snapshot {
        replay(base(), store.lock().unwrap().durable.clone()).unwrap()
    }

    fn pending(snapshot: &Snapshot) -> Vec<&str> {
        (snapshot.pending_operations.iter())
            .map(|op| op.resource.urn.name())
            .collect()
    }

    #[tokio::test]
    async fn component_outputs_are_journaled_only_when_they_change_the_state() {
        let outputs = |v: Option<f64>| -> JournalEntry {
            JournalEntry::ComponentOutputs {
                urn: crate::snapshot::tests::urn("a"),
                outputs: v.map(|v| ("x".to_owned(), v.into())).into_iter().collect(),
            }
        };
        // The base's outputs, as they are: nothing is journaled, nothing synced.
        let (manager, store) = start(nothing, 0..0);
        manager.record(outputs(None)).await.unwrap();
        assert_eq!(manager.finish().await.unwrap(), base());
        assert_eq!(store.lock().unwrap().syncs, 0);
        assert!(
            store.lock().unwrap().unchanged,
            "ends as an operation that changed nothing"
        );

        let (manager, store) = start(nothing, 0..0);
        for v in [Some(1.0), Some(1.0), None, None] {
            manager.record(outputs(v)).await.unwrap();
        }
        let finished = manager.finish().await.unwrap();
        assert_eq!(finished, on_disk(&store));
        assert_eq!(finished, base());
        // Its journal changed the state, if only back: the checkpoint is written as it is now.
        assert!(!store.lock().unwrap().unchanged);
        // Carried over with its new outputs, then put back as they were.
        let mut carried = state("a", &[]);
        carried.outputs.insert("x".into(), 1.0.into());
        let journal = store.lock().unwrap().durable.clone();
        let expected = [
            JournalEntry::Same {
                old: 0,
                resource: Some(carried),
            },
            outputs(None),
        ];
        assert_eq!(journal, expected);

        // Outputs of what the state does not hold are refused, as before.
        let (manager, _) = start(nothing, 0..0);
        let unknown = JournalEntry::ComponentOutputs {
            urn: crate::snapshot::tests::urn("z"),
            outputs: PropertyMap::new(),
        };
        let err = manager.record(unknown).await.unwrap_err();
        assert!(matches!(err, SnapshotError::Inconsistent(_)), "{err}");
    }

    #[tokio::test]
    async fn only_an_operation_that_leaves_its_base_exactly_as_it_was_ends_unchanged() {
        let ends_unchanged = |base: Snapshot, entries: Vec<JournalEntry>| async move {
            let (manager, store) = start_with(base, nothing, 0..0);
            manager.record_all(entries).await.unwrap();
            let finished = manager.finish().await.unwrap();
            let store = store.lock().unwrap();
            assert_eq!(store.checkpoint.as_ref(), Some(&finished));
            store.unchanged
        };
        assert!(ends_unchanged(base(), Vec::new()).await);
        assert!(!ends_unchanged(base(), vec![begin(1, "b")]).await);
        let failed = JournalEntry::Failed { seq: 1 };
        assert!(ends_unchanged(base(), vec![begin(1, "b"), failed]).await);
        assert!(!ends_unchanged(base(), vec![begin(1, "b"), created(1, "b")]).await);
        let deleted = JournalEntry::Deleted { seq: None, old: 0 };
        assert!(!ends_unchanged(base(), vec![deleted]).await);
        // A base marked for deletion, and one left creating, are as they were.
        let mut marked = base();
        marked.resources.push(ResourceState {
            delete: true,
            ..state("a", &[])
        });
        marked.pending_operations.push(PendingOperation {
            kind: PendingKind::Creating,
            resource: state("gone", &[]),
        });
        assert!(ends_unchanged(marked, Vec::new()).await);
        // An update left pending of a resource no longer there is dropped: the state changes.
        let mut moot = base();
        moot.pending_operations.push(PendingOperation {
            kind: PendingKind::Updating,
            resource: state("gone", &[]),
        });
        assert!(!ends_unchanged(moot, Vec::new()).await);
    }

    #[tokio::test]
    async fn a_failed_append_leaves_memory_and_journal_as_they_were() {
        // `b` is created, but its outcome cannot be stored (think: a secret output that cannot
        // be sealed): memory and journal both still say "b is being created".
        let (manager, store) = start(|e| matches!(e, JournalEntry::Created { .. }), 0..0);
        manager.record(begin(1, "b")).await.unwrap();
        let err = manager.record(created(1, "b")).await.unwrap_err();
        assert!(matches!(err, SnapshotError::Persist(_)), "{err}");
        let finished = manager.finish().await.unwrap();
        assert_eq!(finished, on_disk(&store));
        assert_eq!(pending(&finished), ["b"]);
        assert_eq!(finished.resources.len(), 1);
    }

    #[tokio::test]
    async fn a_failed_flush_takes_back_what_it_did_not_make_durable() {
        let (manager, store) = start(nothing, 0..1);
        let err = manager.record(begin(1, "b")).await.unwrap_err();
        let SnapshotError::Persist(e) = &err else {
            panic!("{err}");
        };
        assert!(!e.is_transient());
        manager.record(begin(2, "c")).await.unwrap();
        manager.record(created(2, "c")).await.unwrap();
        let finished = manager.finish().await.unwrap();
        assert_eq!(finished, on_disk(&store));
        assert!(finished.pending_operations.is_empty(), "{finished:?}");
        assert_eq!(store.lock().unwrap().checkpoint.as_ref(), Some(&finished));
    }

    #[tokio::test]
    async fn entries_recorded_together_share_one_flush() {
        let (manager, store) = start(nothing, 0..0);
        let entries = (1..=50)
            .flat_map(|i| {
                let name = format!("r{i}");
                [begin(i, &name), created(i, &name)]
            })
            .collect();
        manager.record_all(entries).await.unwrap();
        assert_eq!(store.lock().unwrap().syncs, 1);
        let finished = manager.finish().await.unwrap();
        assert_eq!(finished.resources.len(), 51);
        assert_eq!(finished, on_disk(&store));
    }

    #[tokio::test]
    async fn entries_recorded_together_stop_at_the_first_refused() {
        let refuses_b = |e: &JournalEntry| matches!(e, JournalEntry::Begin { resource, .. } if resource.urn.name() == "b");
        let (manager, store) = start(refuses_b, 0..0);
        let entries = vec![begin(1, "a2"), begin(2, "b"), begin(3, "c")];
        manager.record_all(entries).await.unwrap_err();
        let finished = manager.finish().await.unwrap();
        assert_eq!(finished, on_disk(&store));
        assert_eq!(pending(&finished), ["a2"]);
    }

    #[tokio::test]
    async fn an_entry_that_would_carry_an_operation_in_flight_over_is_refused_unrecorded() {
        let base = Snapshot {
            resources: vec![state("a", &[]), state("b", &["a"])],
            ..Default::default()
        };
        let (manager, store) = start_with(base.clone(), nothing, 0..0);
        let updating = JournalEntry::Begin {
            seq: 1,
            kind: PendingKind::Updating,
            resource: state("a", &[]),
            old: Some(0),
        };
        manager.record(updating).await.unwrap();
        let c = |seq| JournalEntry::Created {
            seq,
            resource: state("c", &["b"]),
            replaces: None,
        };
        manager.record(begin(2, "c")).await.unwrap();
        let err = manager.record_after_in_flight(c(2), Vec::new()).await;
        assert!(
            matches!(&err, Err(SnapshotError::CarriesInFlight { old: 0, urn }) if urn.name() == "a"),
            "{err:?}"
        );
        // Once the update has ended, it is recorded after it.
        let updated = JournalEntry::Updated {
            seq: 1,
            old: 0,
            resource: state("a", &[]),
        };
        manager.record(updated).await.unwrap();
        manager
            .record_after_in_flight(c(2), Vec::new())
            .await
            .unwrap();
        let finished = manager.finish().await.unwrap();
        assert!(finished.pending_operations.is_empty());
        let names: Vec<&str> = finished.resources.iter().map(|r| r.urn.name()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(
            finished,
            replay(base, store.lock().unwrap().durable.clone()).unwrap()
        );
    }

    /// Lets each sync through only when the test says so.
    struct Gated {
        open: std_mpsc::Receiver<()>,
    }

    impl Persister for Gated {
        fn append(&mut self, _: &JournalEntry) -> Result<(), PersistError> {
            Ok(())
        }
        fn sync(&mut self) -> Result<(), PersistError> {
            self.open.recv().expect("the test keeps the gate");
            Ok(())
        }
        fn compact(&mut self, _: &Snapshot) -> Result<(), PersistError> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn only_a_begin_waits_for_its_flush() {
        let (open, gate) = std_mpsc::channel();
        let manager = SnapshotManager::start(base(), Box::new(Gated { open: gate }));
        open.send(()).unwrap();
        manager.record(begin(1, "b")).await.unwrap();
        // No sync is let through now: were the end of `b` to wait for its flush, this would
        // never return (the timeout only turns a hang into a failure).
        let created = manager.record(created(1, "b"));
        tokio::time::timeout(std::time::Duration::from_secs(60), created)
            .await
            .expect("the end of a provider call waited for its flush")
            .unwrap();
        open.send(()).unwrap();
        let finished = manager.finish().await.unwrap();
        assert_eq!(finished.resources.len(), 2);
        assert!(finished.pending_operations.is_empty());
    }

    /// Counts syncs, and asks for an hour between them.
    struct Spaced {
        syncs: Arc<AtomicU64>,
    }

    impl Persister for Spaced {
        fn append(&mut self, _: &JournalEntry) -> Result<(), PersistError> {
            Ok(())
        }
        fn sync(&mut self) -> Result<(), PersistError> {
            self.syncs.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        fn compact(&mut self, _: &Snapshot) -> Result<(), PersistError> {
            Ok(())
        }
        fn min_sync_interval(&self) -> std::time::Duration {
            std::time::Duration::from_secs(3600)
        }
    }

    #[tokio::test]
    async fn starts_within_the_persisters_interval_share_one_sync() {
        let syncs = Arc::new(AtomicU64::new(0));
        let manager = SnapshotManager::start(
            base(),
            Box::new(Spaced {
                syncs: syncs.clone(),
            }),
        );
        // The first start is flushed at once: no sync came before it.
        manager.record(begin(1, "b")).await.unwrap();
        assert_eq!(syncs.load(Ordering::SeqCst), 1);
        // The next start waits out the interval for more to share its sync (here it would
        // wait an hour: still waiting after a while is no matter of timing).
        let (first, second) = (manager.clone(), manager.clone());
        let mut c = Box::pin(first.record(begin(2, "c")));
        let waited = tokio::time::timeout(std::time::Duration::from_millis(50), &mut c).await;
        assert!(
            waited.is_err(),
            "a start was flushed alone right after another"
        );
        assert_eq!(syncs.load(Ordering::SeqCst), 1);
        // Finishing flushes it at once, with the start that came meanwhile, in one sync.
        let (c, d, finished) = tokio::join!(c, second.record(begin(3, "d")), manager.finish());
        c.unwrap();
        d.unwrap();
        assert_eq!(finished.unwrap().pending_operations.len(), 3);
        assert_eq!(syncs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn losing_an_acknowledged_entry_stops_all_recording() {
        // The first sync (b's begin) succeeds; the second, which was to make b's end durable
        // after it was acknowledged, fails.
        let (manager, store) = start(nothing, 1..2);
        manager.record(begin(1, "b")).await.unwrap();
        manager.record(created(1, "b")).await.unwrap();
        // A step went on as if b were recorded: nothing after may be recorded on top of a
        // journal that lacks it.
        let err = manager.record(begin(2, "c")).await.unwrap_err();
        assert!(matches!(err, SnapshotError::Persist(_)), "{err}");
        let err = manager.finish().await.unwrap_err();
        assert!(matches!(err, SnapshotError::Persist(_)), "{err}");
        let durable = replay(base(), store.lock().unwrap().durable.clone()).unwrap();
        assert_eq!(pending(&durable), ["b"]);
        assert!(store.lock().unwrap().checkpoint.is_none());
    }

    /// Keeps each sync in flight until the test settles it, the oldest first.
    struct Deferred {
        syncs: Arc<Mutex<Syncs>>,
        /// How many entries were handed to syncs.
        started: watch::Sender<usize>,
        appended: Vec<JournalEntry>,
    }

    /// What a [`Deferred`] persister holds, shared with the test.
    #[derive(Default)]
    struct Syncs {
        durable: Vec<JournalEntry>,
        /// The entries of each sync in flight that the test did not settle, oldest first.
        in_flight: VecDeque<Vec<JournalEntry>>,
        /// The outcomes the test gave, not yet reported: whether each sync succeeded.
        outcomes: VecDeque<bool>,
        waker: Option<SyncWaker>,
        checkpoint: Option<Snapshot>,
    }

    impl Persister for Deferred {
        fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError> {
            self.appended.push(entry.clone());
            Ok(())
        }
        fn sync(&mut self) -> Result<(), PersistError> {
            unreachable!("the writer starts syncs")
        }
        fn start_sync(&mut self, waker: &SyncWaker) -> Option<Result<(), PersistError>> {
            let mut syncs = self.syncs.lock().unwrap();
            syncs.waker = Some(waker.clone());
            let entries = std::mem::take(&mut self.appended);
            self.started
                .send_modify(|started| *started += entries.len());
            syncs.in_flight.push_back(entries);
            None
        }
        fn settled(&mut self) -> Option<Result<(), PersistError>> {
            let mut syncs = self.syncs.lock().unwrap();
            if syncs.outcomes.pop_front()? {
                return Some(Ok(()));
            }
            // Every later sync fails with it, and what was appended since is dropped.
            syncs.in_flight.clear();
            syncs.outcomes.clear();
            self.appended.clear();
            let disk_full = std::io::Error::from(std::io::ErrorKind::StorageFull);
            Some(Err(PersistError::io("sync", "/j", disk_full)))
        }
        fn compact(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
            let mut syncs = self.syncs.lock().unwrap();
            assert!(
                syncs.in_flight.is_empty() && syncs.outcomes.is_empty(),
                "compacted with syncs in flight"
            );
            syncs.checkpoint = Some(snapshot.clone());
            Ok(())
        }
    }

    /// The test's side of a [`Deferred`] persister.
    struct Control {
        syncs: Arc<Mutex<Syncs>>,
        started: watch::Receiver<usize>,
    }

    impl Control {
        /// Waits until syncs were started for `entries` entries in all.
        async fn started(&mut self, entries: usize) {
            (self.started.wait_for(|started| *started >= entries))
                .await
                .unwrap();
        }

        /// Settles the oldest sync in flight.
        fn settle(&self, succeeds: bool) {
            let mut syncs = self.syncs.lock().unwrap();
            let entries = syncs.in_flight.pop_front().expect("a sync in flight");
            if succeeds {
                syncs.durable.extend(entries);
            }
            syncs.outcomes.push_back(succeeds);
            let waker = syncs.waker.clone().expect("a sync was started");
            drop(syncs);
            waker.wake();
        }

        fn on_disk(&self) -> Snapshot {
            replay(base(), self.syncs.lock().unwrap().durable.clone()).unwrap()
        }
    }

    fn deferred() -> (SnapshotManager, Control) {
        let syncs = Arc::new(Mutex::new(Syncs::default()));
        let (started, watching) = watch::channel(0);
        let persister = Deferred {
            syncs: syncs.clone(),
            started,
            appended: Vec::new(),
        };
        let control = Control {
            syncs,
            started: watching,
        };
        (SnapshotManager::start(base(), Box::new(persister)), control)
    }

    /// Polls `future` once (sending its request, if it is a manager's).
    fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
        Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[tokio::test]
    async fn an_end_is_acknowledged_while_the_sync_of_its_start_is_in_flight() {
        let (manager, mut control) = deferred();
        let mut b = Box::pin(manager.record(begin(1, "b")));
        assert!(poll_once(&mut b).is_pending());
        control.started(1).await;
        manager.record(created(1, "b")).await.unwrap();
        assert!(
            poll_once(&mut b).is_pending(),
            "a start was answered before its sync settled"
        );
        control.settle(true);
        b.await.unwrap();
        // The end is made durable by a sync of its own (started after a while, or by
        // `finish`), which `finish` waits for.
        let mut finish = Box::pin(manager.finish());
        assert!(poll_once(&mut finish).is_pending());
        control.started(2).await;
        control.settle(true);
        let finished = finish.await.unwrap();
        assert_eq!(finished, control.on_disk());
        assert_eq!(finished.resources.len(), 2);
        assert!(finished.pending_operations.is_empty());
    }

    #[tokio::test]
    async fn each_settled_sync_answers_the_starts_it_carried_in_order() {
        let (manager, mut control) = deferred();
        let mut b = Box::pin(manager.record(begin(1, "b")));
        assert!(poll_once(&mut b).is_pending());
        control.started(1).await;
        let mut c = Box::pin(manager.record(begin(2, "c")));
        assert!(poll_once(&mut c).is_pending());
        control.started(2).await;
        control.settle(true);
        b.await.unwrap();
        assert!(
            poll_once(&mut c).is_pending(),
            "a start was answered when an earlier sync settled"
        );
        control.settle(true);
        c.await.unwrap();
        let finished = manager.finish().await.unwrap();
        assert_eq!(finished, control.on_disk());
        assert_eq!(pending(&finished), ["b", "c"]);
    }

    #[tokio::test]
    async fn a_failed_sync_fails_the_later_ones_and_takes_the_state_back_to_the_last_good_one() {
        let (manager, mut control) = deferred();
        let b = manager.record(begin(1, "b"));
        let (b, ()) = tokio::join!(b, async {
            control.started(1).await;
            control.settle(true);
        });
        b.unwrap();
        let mut c = Box::pin(manager.record(begin(2, "c")));
        assert!(poll_once(&mut c).is_pending());
        control.started(2).await;
        let mut d = Box::pin(manager.record(begin(3, "d")));
        assert!(poll_once(&mut d).is_pending());
        control.started(3).await;
        // c's sync fails: d's, started after it, fails with it.
        control.settle(false);
        for start in [c.await, d.await] {
            let err = start.unwrap_err();
            assert!(matches!(err, SnapshotError::Persist(_)), "{err}");
        }
        // No acknowledged entry was lost: recording goes on from what b's sync made durable.
        let e = manager.record(begin(4, "e"));
        let (e, ()) = tokio::join!(e, async {
            control.started(4).await;
            control.settle(true);
        });
        e.unwrap();
        let finished = manager.finish().await.unwrap();
        assert_eq!(finished, control.on_disk());
        assert_eq!(pending(&finished), ["b", "e"]);
        let checkpoint = control.syncs.lock().unwrap().checkpoint.clone();
        assert_eq!(checkpoint, Some(finished));
    }

    #[tokio::test]
    async fn losing_an_acknowledged_entry_in_flight_stops_all_recording() {
        let (manager, mut control) = deferred();
        let mut b = Box::pin(manager.record(begin(1, "b")));
        assert!(poll_once(&mut b).is_pending());
        control.started(1).await;
        // b's end is acknowledged while its start's sync is in flight, and c starts.
        manager.record(created(1, "b")).await.unwrap();
        let mut c = Box::pin(manager.record(begin(2, "c")));
        assert!(poll_once(&mut c).is_pending());
        control.started(3).await;
        // The start's sync fails: the syncs carrying b's end fail with it.
        control.settle(false);
        for start in [b.await, c.await] {
            let err = start.unwrap_err();
            assert!(matches!(err, SnapshotError::Persist(_)), "{err}");
        }
        // A step went on as if b's end were recorded: nothing more may be.
        let err = manager.record(begin(3, "d")).await.unwrap_err();
        assert!(matches!(err, SnapshotError::Persist(_)), "{err}");
        let err = manager.finish().await.unwrap_err();
        assert!(matches!(err, SnapshotError::Persist(_)), "{err}");
        let syncs = control.syncs.lock().unwrap();
        assert!(syncs.durable.is_empty());
        assert!(syncs.checkpoint.is_none());
    }

    #[tokio::test]
    async fn finish_waits_for_the_syncs_in_flight() {
        let (manager, mut control) = deferred();
        let mut b = Box::pin(manager.record(begin(1, "b")));
        assert!(poll_once(&mut b).is_pending());
        control.started(1).await;
        let mut finish = Box::pin(manager.clone().finish());
        assert!(poll_once(&mut finish).is_pending());
        // Asked after the finish, refused once the writer has it: it is waiting for b's sync
        // (were it not, it would have compacted with a sync in flight, which `Deferred` refuses).
        let late = manager.record(begin(2, "c")).await.unwrap_err();
        assert!(matches!(late, SnapshotError::Stopped), "{late}");
        assert!(poll_once(&mut finish).is_pending());
        control.settle(true);
        b.await.unwrap();
        let finished = finish.await.unwrap();
        assert_eq!(finished, control.on_disk());
        assert_eq!(pending(&finished), ["b"]);
    }
}
