//! The snapshot manager's one writer: a thread that applies each entry to the state in memory
//! and appends it to the persister, keeping the two in step.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::undo::Savepoint;
use super::{JournalEntry, JournalState, Persister, SnapshotError};
use crate::resource::ResourceState;
use crate::snapshot::{PendingKind, Snapshot};

enum Request {
    Record(
        Vec<JournalEntry>,
        oneshot::Sender<Result<(), SnapshotError>>,
    ),
    Finish(oneshot::Sender<Result<Snapshot, SnapshotError>>),
}

/// Records mutations through one writer thread. Requests that arrive while a flush is under
/// way share the next one (group commit), so parallel steps do not pay one fsync each.
///
/// Only the start of a provider call (a `Begin`) must be durable before the call goes on: a crash
/// must leave it visible as pending. Every other entry is acknowledged once it is applied and
/// appended, and made durable by the next flush: a start's, or, if none comes within
/// a few milliseconds, one of its own. Since the journal is made durable in order, no entry
/// recorded after it (a dependent's start, say) is durable without it.
#[derive(Clone)]
pub struct SnapshotManager {
    tx: mpsc::Sender<Request>,
    next_seq: Arc<AtomicU64>,
}

impl SnapshotManager {
    /// Starts the writer for an operation on `base`, which it shares rather than copies.
    pub fn start(base: impl Into<Arc<Snapshot>>, persister: Box<dyn Persister>) -> SnapshotManager {
        let base = base.into();
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("plinth-snapshot-writer".into())
            .spawn(move || writer(JournalState::new(base), persister, rx))
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

    /// Verifies the final snapshot and writes it as the new checkpoint.
    pub async fn finish(self) -> Result<Snapshot, SnapshotError> {
        let (reply, done) = oneshot::channel();
        self.tx
            .send(Request::Finish(reply))
            .map_err(|_| SnapshotError::Stopped)?;
        done.await.map_err(|_| SnapshotError::Stopped)?
    }
}

/// How long the ends of provider calls wait for a start to share its flush with, before they are
/// flushed on their own: the steps that depend on them usually start within that time.
const END_FLUSH_DELAY: Duration = Duration::from_millis(5);

/// A start recorded and waiting for its flush.
type Waiting = oneshot::Sender<Result<(), SnapshotError>>;

fn writer(state: JournalState, persister: Box<dyn Persister>, rx: mpsc::Receiver<Request>) {
    let mut writer = Writer {
        state,
        persister,
        unflushed: false,
        acknowledged: false,
        lost: None,
    };
    let min_interval = writer.persister.min_sync_interval();
    let mut last_flush: Option<Instant> = None;
    let mut waiting = Vec::new();
    let mut next = rx.recv();
    while let Ok(first) = next {
        // What came while the last flush was under way shares the next one.
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        loop {
            for request in batch.drain(..) {
                if let Some(finished) = writer.handle(request, &mut waiting) {
                    let flushed = writer.flush();
                    flush_replies(&mut waiting, &flushed);
                    let _ = finished.send(flushed.and_then(|()| writer.finish()));
                    return;
                }
            }
            // Starts wait for a flush: until the persister's interval since the last one is
            // over, more requests may come to share it.
            let wait = last_flush
                .and_then(|at| (at + min_interval).checked_duration_since(Instant::now()));
            let (false, Some(wait)) = (waiting.is_empty(), wait) else {
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
        if !waiting.is_empty() {
            last_flush = Some(Instant::now());
            let flushed = writer.flush();
            flush_replies(&mut waiting, &flushed);
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
    /// Entries were appended since the last flush.
    unflushed: bool,
    /// Some of them were acknowledged before that flush.
    acknowledged: bool,
    /// Why entries that were acknowledged were lost: nothing more can be recorded, since the
    /// steps that recorded them went on as if they were.
    lost: Option<SnapshotError>,
}

impl Writer {
    /// Records what `request` asks: a start joins `waiting` for the next flush, any other entry
    /// is acknowledged at once. A request to finish is handed back.
    fn handle(
        &mut self,
        request: Request,
        waiting: &mut Vec<Waiting>,
    ) -> Option<oneshot::Sender<Result<Snapshot, SnapshotError>>> {
        match request {
            Request::Record(entries, reply) => match self.record(&entries) {
                Ok(()) if entries.iter().any(JournalEntry::is_begin) => waiting.push(reply),
                Ok(()) => {
                    self.acknowledged = true;
                    let _ = reply.send(Ok(()));
                }
                // What the request recorded before the failure is flushed all the same.
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            Request::Finish(reply) => return Some(reply),
        }
        None
    }

    /// Applies and appends `entries` in order, up to the first that cannot be: that one
    /// changes neither the state in memory nor the persister's journal.
    fn record(&mut self, entries: &[JournalEntry]) -> Result<(), SnapshotError> {
        if let Some(lost) = &self.lost {
            return Err(lost.clone());
        }
        for entry in entries {
            let before = self.state.savepoint();
            self.state.apply_uncommitted(entry)?;
            if let Err(e) = self.persister.append(entry) {
                self.state.roll_back_to(before);
                return Err(e.into());
            }
            self.unflushed = true;
        }
        Ok(())
    }

    /// Makes what was appended since the last flush durable. If that fails, the persister
    /// drops those entries, and so does the state in memory: both stay at what the last flush
    /// made durable.
    fn flush(&mut self) -> Result<(), SnapshotError> {
        if let Some(lost) = &self.lost {
            return Err(lost.clone());
        }
        if !std::mem::take(&mut self.unflushed) {
            return Ok(());
        }
        let acknowledged = std::mem::take(&mut self.acknowledged);
        match self.persister.sync() {
            Ok(()) => {
                self.state.commit();
                Ok(())
            }
            Err(e) => {
                self.state.roll_back_to(Savepoint::COMMITTED);
                let error = SnapshotError::from(e);
                if acknowledged {
                    self.lost = Some(error.clone());
                }
                Err(error)
            }
        }
    }

    /// Verifies the final snapshot and writes it as the new checkpoint.
    fn finish(self) -> Result<Snapshot, SnapshotError> {
        let Writer {
            state,
            mut persister,
            ..
        } = self;
        let snapshot = state.into_snapshot();
        snapshot.verify_integrity()?;
        persister.compact(&snapshot)?;
        Ok(snapshot)
    }
}

fn flush_replies(waiting: &mut Vec<Waiting>, synced: &Result<(), SnapshotError>) {
    for reply in waiting.drain(..) {
        let _ = reply.send(synced.clone());
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Range;
    use std::sync::{Mutex, mpsc as std_mpsc};

    use super::*;
    use crate::journal::{PersistError, replay};
    use crate::snapshot::tests::state;

    /// What a [`Flaky`] persister holds, shared with the test.
    #[derive(Default)]
    struct Store {
        /// Entries made durable by a sync.
        durable: Vec<JournalEntry>,
        syncs: usize,
        checkpoint: Option<Snapshot>,
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
        let store = Arc::new(Mutex::new(Store::default()));
        let persister = Flaky {
            store: store.clone(),
            appended: Vec::new(),
            refuses,
            failing_syncs,
        };
        (SnapshotManager::start(base(), Box::new(persister)), store)
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
}
