//! The persister of an update on the service: the snapshot manager's entries are kept until the
//! engine syncs, then made into batches of at most what the service takes, numbered from 1
//! without gaps, so that the engine's writer never waits on the network: a batching thread seals
//! the secrets of those that hold some, in order; one without secrets is taken by whichever
//! thread is awake (the writer handing entries over, a sender just answered), a wakeup sooner. Sender threads keep up to as many batches under
//! way as the service takes (the next one goes while the one before commits; what came while
//! they were all under way shares the next); the service stores them in order. A batch retried
//! after a lost answer is stored once. The service rebuilds the state from them; compacting
//! only makes sure every entry was sent.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard};

use plinth_engine::journal::{JournalEntry, PersistError, Persister, SyncWaker};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::SIG_KEY;
use serde_json::Value;

use super::transport::{ServiceError, Transport};
use crate::secrets::{Crypter, SecretsError, seal_tree};
use plinth_state::Begun;
use plinth_state::protocol::journal_batch_body;
use plinth_state::protocol::{JOURNAL_BATCH, JOURNAL_BATCH_MAX, JOURNAL_IN_FLIGHT};

/// Sends the journal of update `update` holding lease `lease`.
pub struct ServicePersister {
    /// What the sender thread needs, until it is started by the first sync.
    batches: Option<Batches>,
    queue: Arc<Queue>,
    /// Entries appended since the last sync, as JSON.
    unsent: Vec<Vec<u8>>,
    /// How many entries were handed to the sender since its last failure.
    handed: u64,
    /// For each sync in flight, oldest first: how many entries must be stored for it to settle.
    in_flight: VecDeque<u64>,
    /// Names the update in errors.
    origin: PathBuf,
    /// The operations begun, for sending a create's end as `created-as-begun`: set when the
    /// service takes such entries.
    begun: Option<Begun>,
    /// The most batches under way and the most entries a batch carries, as [`Batches`] has
    /// them.
    window: usize,
    max_batch: usize,
}

/// The sender threads' side: the update's batches on the service.
struct Batches {
    transport: Transport,
    path: String,
    lease: String,
    crypter: Arc<dyn Crypter>,
    /// The most entries a batch carries.
    max_batch: usize,
    /// The most batches under way at once, as the service said it takes (one from a service
    /// that did not say: each sent once the one before was stored).
    window: usize,
    /// The number of the last batch the service acknowledged. The service numbers an update's
    /// batches across its phases, so every phase's persister shares this count.
    sent: Arc<AtomicU64>,
    /// Names the update in errors.
    origin: PathBuf,
}

/// What the persister and its sender share.
#[derive(Default)]
struct Queue {
    state: Mutex<Sending>,
    /// Wakes the sender when there is something to send, and a sync waiting for its outcome
    /// when a batch was answered.
    changed: Condvar,
}

#[derive(Default)]
struct Sending {
    /// Entries handed over and not yet sent, in order.
    entries: VecDeque<Vec<u8>>,
    /// How many entries handed over since the last failure the service stored.
    stored: u64,
    /// Batches whose answer never came, and those sent after them: the service may have stored
    /// them. They are sent again, under their numbers and in order, before anything else, so
    /// that a number never carries other entries.
    in_doubt: VecDeque<Batch>,
    /// A sync was asked for since the batches in doubt failed: they are to be sent again.
    retry: bool,
    /// Why a batch failed, until the persister reports it: nothing is sent meanwhile.
    failure: Option<PersistError>,
    /// Why the update must stop (its lease lost, a batch refused): every later sync fails so.
    stopped: Option<String>,
    waker: Option<SyncWaker>,
    /// The batches under way, oldest first, with the answers that came before those ahead of
    /// them did: an answer counts only once every batch before it was answered.
    flight: VecDeque<Flight>,
    /// Batches sealed and waiting for a sender thread, oldest first.
    ready: VecDeque<Batch>,
    /// The number of the next batch of new entries; 0 until the first is taken.
    next_seq: u64,
    /// The batching thread took a batch and is sealing it: nothing else is taken meanwhile, so
    /// that batches are sealed in order.
    sealing: bool,
    /// The persister is gone: the senders stop.
    closed: bool,
}

/// A batch as sent: its number and its entries (a JSON array, sealed).
struct Batch {
    seq: u64,
    entries: Vec<u8>,
}

/// A batch under way.
struct Flight {
    seq: u64,
    /// How many entries handed over it stores: none for a batch sent again.
    count: u64,
    /// What was sent, kept for sending again if its answer never comes; none if it could not
    /// be sealed.
    entries: Option<Vec<u8>>,
    outcome: Option<Result<(), Unsent>>,
}

impl Sending {
    /// Whether another batch can be taken: nothing failed, a sender is free, and there is
    /// something to send.
    fn has_work(&self, window: usize) -> bool {
        let failing = (self.flight.iter()).any(|f| matches!(f.outcome, Some(Err(_))));
        self.failure.is_none()
            && !failing
            && self.flight.len() < window
            && match self.in_doubt.is_empty() {
                true => !self.entries.is_empty(),
                false => self.retry,
            }
    }

    /// The next batch of new entries, if one can be taken (see [`Sending::has_work`]) and none
    /// of them holds a secret: it needs no sealing, so whichever thread is awake takes it (the
    /// engine's writer handing entries over, a sender that was answered) rather than waking the
    /// batching thread for it. `None` leaves it to the batching thread.
    fn take_plain(&mut self, window: usize, max_batch: usize) -> Option<Batch> {
        if self.sealing || !self.in_doubt.is_empty() || !self.has_work(window) {
            return None;
        }
        let count = self.entries.len().min(max_batch);
        let finder = memchr::memmem::Finder::new(SIGNATURE.as_bytes());
        if (self.entries.range(..count)).any(|entry| finder.find(entry).is_some()) {
            return None;
        }
        let entries: Vec<Vec<u8>> = self.entries.drain(..count).collect();
        let entries = json_array(&entries);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.flight.push_back(Flight {
            seq,
            count: count as u64,
            entries: Some(entries.clone()),
            outcome: None,
        });
        Some(Batch { seq, entries })
    }

    /// Whether batches in doubt are still to be stored again before a sync can settle.
    fn resending(&self) -> bool {
        self.retry || self.flight.iter().any(|f| f.count == 0)
    }

    /// Takes in the answers that came, in order, up to one still under way; a failure once
    /// nothing after it is under way (the batches after a failed one are never stored before
    /// it, and what they came to is settled).
    fn settle_answers(&mut self, sent: &AtomicU64, origin: &Path) {
        while let Some(Flight {
            outcome: Some(outcome),
            ..
        }) = self.flight.front()
        {
            if outcome.is_err() {
                if self.flight.iter().all(|f| f.outcome.is_some()) {
                    self.failed(origin);
                }
                return;
            }
            let flight = self.flight.pop_front().expect("there is one");
            self.stored += flight.count;
            sent.fetch_max(flight.seq, Ordering::AcqRel);
        }
    }

    /// Takes in that the oldest batch under way failed, nothing being under way any more:
    /// nothing more is sent until the persister reports it.
    fn failed(&mut self, origin: &Path) {
        self.retry = false;
        let mut flights: VecDeque<Flight> = std::mem::take(&mut self.flight);
        let first = flights.pop_front().expect("a batch failed");
        let Some(Err(unsent)) = first.outcome else {
            unreachable!("the oldest batch failed")
        };
        let failure = match unsent {
            Unsent::Refused(error @ ServiceError::Unavailable { .. }) => {
                // Worth trying again later: the service may come back, and may have stored
                // them. Those after it go again too: the service stores none before it.
                let sent = std::iter::once((first.seq, first.entries))
                    .chain((flights.into_iter()).map(|f| (f.seq, f.entries)));
                let mut doubt: VecDeque<Batch> = VecDeque::new();
                for (seq, entries) in sent {
                    match entries {
                        Some(entries) => doubt.push_back(Batch { seq, entries }),
                        // Never sent: its number is free.
                        None => {
                            self.next_seq = seq;
                            break;
                        }
                    }
                }
                doubt.extend(self.in_doubt.drain(..));
                self.in_doubt = doubt;
                let error = std::io::Error::new(std::io::ErrorKind::TimedOut, error.to_string());
                PersistError::io(SENDING, origin, error)
            }
            // A lost lease, a refused batch: the update must stop, recording nothing more.
            Unsent::Refused(error) => {
                self.stopped = Some(error.to_string());
                PersistError::invalid(SENDING, origin, error)
            }
            Unsent::Unsealed(error) => {
                // Sealed in order, it was the last taken: its number is free.
                self.next_seq = first.seq;
                PersistError::invalid("seal the journal entries of", origin, error)
            }
        };
        self.failure = Some(failure);
    }
}

/// What a failure to send the journal says was being done.
const SENDING: &str = "send the journal of";

/// Why a batch was not stored.
enum Unsent {
    /// The service did not store the batch (or its answer never came).
    Refused(ServiceError),
    /// Its secrets could not be sealed: it was not sent.
    Unsealed(SecretsError),
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Sending> {
        self.state
            .lock()
            .expect("never poisoned: nothing panics holding it")
    }
}

impl ServicePersister {
    pub fn new(
        transport: Transport,
        update: &str,
        lease: &str,
        crypter: Arc<dyn Crypter>,
    ) -> ServicePersister {
        let origin = PathBuf::from(format!("update {update}"));
        ServicePersister {
            batches: Some(Batches {
                transport,
                path: format!("updates/{update}/journal"),
                lease: lease.to_owned(),
                crypter,
                max_batch: JOURNAL_BATCH,
                window: 1,
                sent: Arc::new(AtomicU64::new(0)),
                origin: origin.clone(),
            }),
            queue: Arc::default(),
            unsent: Vec::new(),
            handed: 0,
            in_flight: VecDeque::new(),
            origin,
            begun: None,
            window: 1,
            max_batch: JOURNAL_BATCH,
        }
    }

    /// Sends the end of a create that left the resource as begun as a short
    /// `created-as-begun` entry, which the service completes from the `begin` entry: about a
    /// third fewer bytes for an update that creates.
    pub fn shortening_creates(mut self) -> ServicePersister {
        self.begun = Some(Begun::default());
        self
    }

    /// Numbers batches after those counted by `sent`, and counts its own there: a later phase of
    /// the same update goes on from where this one stopped.
    pub fn continuing(mut self, sent: Arc<AtomicU64>) -> ServicePersister {
        if let Some(batches) = &mut self.batches {
            batches.sent = sent;
        }
        self
    }

    /// Sends batches of at most `max` entries (1 to [`JOURNAL_BATCH_MAX`]), as the service
    /// said it takes, rather than the [`JOURNAL_BATCH`] every service takes.
    pub fn in_batches_of(mut self, max: usize) -> ServicePersister {
        self.max_batch = max.clamp(1, JOURNAL_BATCH_MAX);
        if let Some(batches) = &mut self.batches {
            batches.max_batch = self.max_batch;
        }
        self
    }

    /// Keeps up to `window` batches under way at once (1 to [`JOURNAL_IN_FLIGHT`]), as the
    /// service said it takes: the next batch goes while the one before commits.
    pub fn in_flight(mut self, window: usize) -> ServicePersister {
        self.window = window.clamp(1, JOURNAL_IN_FLIGHT);
        if let Some(batches) = &mut self.batches {
            batches.window = self.window;
        }
        self
    }

    /// Hands what was appended since the last sync to the sender, as a sync now in flight.
    fn hand_over(&mut self, sending: &mut Sending) {
        let entries = std::mem::take(&mut self.unsent);
        self.handed += entries.len() as u64;
        self.in_flight.push_back(self.handed);
        sending.entries.extend(entries);
        sending.retry |= !sending.in_doubt.is_empty();
        if let Some(stopped) = &sending.stopped {
            let stopped = PersistError::invalid(SENDING, &self.origin, stopped.clone());
            sending.failure.get_or_insert(stopped);
            if sending.flight.is_empty()
                && let Some(waker) = &sending.waker
            {
                // No sender will answer: the sync has its outcome already.
                waker.wake();
            }
        }
        if let Some(batches) = self.batches.take() {
            sending.next_seq = batches.sent.load(Ordering::Acquire) + 1;
            let batches = Arc::new(batches);
            for sender in 0..batches.window {
                let (queue, batches) = (self.queue.clone(), batches.clone());
                std::thread::Builder::new()
                    .name(format!("plinth-journal-{sender}"))
                    .spawn(move || batches.send_ready(&queue))
                    .expect("a thread can be started");
            }
            let queue = self.queue.clone();
            std::thread::Builder::new()
                .name("plinth-journal".into())
                .spawn(move || batches.run(&queue))
                .expect("a thread can be started");
        }
        if let Some(batch) = sending.take_plain(self.window, self.max_batch) {
            sending.ready.push_back(batch);
        }
        self.queue.changed.notify_all();
    }

    /// The outcome of the oldest sync in flight, if it has one; see [`Persister::settled`].
    fn outcome(&mut self, sending: &mut Sending) -> Option<Result<(), PersistError>> {
        let &needed = self.in_flight.front()?;
        if sending.stored >= needed && !sending.resending() {
            self.in_flight.pop_front();
            return Some(Ok(()));
        }
        if !sending.flight.is_empty() {
            // A failure is reported once nothing is under way, its count of stored entries
            // settled.
            return None;
        }
        let failure = sending.failure.take()?;
        // It fails every later sync in flight, and what was appended since is dropped.
        self.in_flight.clear();
        self.unsent.clear();
        sending.entries.clear();
        sending.stored = 0;
        self.handed = 0;
        self.queue.changed.notify_all();
        Some(Err(failure))
    }
}

impl Drop for ServicePersister {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.changed.notify_all();
    }
}

impl Batches {
    /// Takes what the persister hands over, in order, into batches, sealed, for the senders,
    /// until it is gone; after a failure, only once the persister reported it.
    fn run(&self, queue: &Queue) {
        let mut sending = queue.lock();
        loop {
            while !sending.closed && !sending.has_work(self.window) {
                sending = queue.changed.wait(sending).expect("never poisoned");
            }
            if sending.closed {
                return;
            }
            // Batches in doubt go first, alone; then what is queued, up to a full batch.
            if let Some(batch) = sending.in_doubt.pop_front() {
                sending.retry = !sending.in_doubt.is_empty();
                sending.flight.push_back(Flight {
                    seq: batch.seq,
                    count: 0,
                    entries: Some(batch.entries.clone()),
                    outcome: None,
                });
                sending.ready.push_back(batch);
                queue.changed.notify_all();
                continue;
            }
            let count = sending.entries.len().min(self.max_batch);
            let mut entries: Vec<Vec<u8>> = sending.entries.drain(..count).collect();
            let seq = sending.next_seq;
            sending.next_seq += 1;
            sending.flight.push_back(Flight {
                seq,
                count: count as u64,
                entries: None,
                outcome: None,
            });
            sending.sealing = true;
            drop(sending);
            // Sealed in order, here: a batch is handed to a sender only after the one before.
            let sealed = seal_entries(&mut entries, self.crypter.as_ref());
            sending = queue.lock();
            sending.sealing = false;
            let flight = (sending.flight.iter_mut().find(|f| f.seq == seq))
                .expect("a batch stays under way until answered");
            match sealed {
                Ok(()) => {
                    let entries = json_array(&entries);
                    flight.entries = Some(entries.clone());
                    sending.ready.push_back(Batch { seq, entries });
                    queue.changed.notify_all();
                }
                Err(error) => self.answered(&mut sending, queue, seq, Err(Unsent::Unsealed(error))),
            }
        }
    }

    /// Sends the batches sealed, one at a time, until the persister is gone.
    fn send_ready(&self, queue: &Queue) {
        let mut sending = queue.lock();
        loop {
            while !sending.closed && sending.ready.is_empty() {
                if let Some(batch) = sending.take_plain(self.window, self.max_batch) {
                    sending.ready.push_back(batch);
                    break;
                }
                sending = queue.changed.wait(sending).expect("never poisoned");
            }
            if sending.closed {
                return;
            }
            let batch = sending.ready.pop_front().expect("there is a batch ready");
            drop(sending);
            let body = journal_batch_body(batch.seq, &batch.entries);
            let outcome = (self.transport)
                .send("POST", &self.path, Some(&self.lease), Some(body))
                .map(drop)
                .map_err(Unsent::Refused);
            sending = queue.lock();
            self.answered(&mut sending, queue, batch.seq, outcome);
        }
    }

    /// Takes in the answer to batch `seq`, and tells whoever waits.
    fn answered(
        &self,
        sending: &mut Sending,
        queue: &Queue,
        seq: u64,
        outcome: Result<(), Unsent>,
    ) {
        if let Some(flight) = sending.flight.iter_mut().find(|f| f.seq == seq) {
            flight.outcome = Some(outcome);
        }
        sending.settle_answers(&self.sent, &self.origin);
        queue.changed.notify_all();
        if let Some(waker) = &sending.waker {
            waker.wake();
        }
    }
}

/// How an entry holding a secret is told from others: the secret's signature key, quoted.
static SIGNATURE: LazyLock<String> = LazyLock::new(|| format!("\"{SIG_KEY}\""));

/// Seals the secrets of `entries` (each one's JSON) in place, all in one batch. Entries
/// without a secret, most of them, are left as they are, never parsed.
fn seal_entries(entries: &mut [Vec<u8>], crypter: &dyn Crypter) -> Result<(), SecretsError> {
    let finder = memchr::memmem::Finder::new(SIGNATURE.as_bytes());
    let secret: Vec<usize> = (0..entries.len())
        .filter(|&i| finder.find(&entries[i]).is_some())
        .collect();
    if secret.is_empty() {
        return Ok(());
    }
    let malformed = |e: serde_json::Error| SecretsError::MalformedState(e.to_string());
    let trees = (secret.iter())
        .map(|&i| serde_json::from_slice(&entries[i]))
        .collect::<Result<Vec<Value>, _>>()
        .map_err(malformed)?;
    let mut trees = Value::Array(trees);
    seal_tree(&mut trees, crypter)?;
    let Value::Array(trees) = trees else {
        unreachable!("sealing keeps an array an array")
    };
    for (i, tree) in secret.into_iter().zip(trees) {
        entries[i] = serde_json::to_vec(&tree).map_err(malformed)?;
    }
    Ok(())
}

/// `entries` as one JSON array.
fn json_array(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut array = Vec::with_capacity(2 + entries.iter().map(|e| e.len() + 1).sum::<usize>());
    array.push(b'[');
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            array.push(b',');
        }
        array.extend_from_slice(entry);
    }
    array.push(b']');
    array
}

impl Persister for ServicePersister {
    fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError> {
        let short = (self.begun.as_ref()).and_then(|begun| begun.shorten(entry));
        let json = match short {
            Some(short) => serde_json::to_vec(&short),
            None => serde_json::to_vec(entry),
        }
        .map_err(|e| PersistError::invalid("encode a journal entry of", &self.origin, e))?;
        self.unsent.push(json);
        if let Some(begun) = &mut self.begun {
            begun.follow(entry);
        }
        Ok(())
    }

    /// Sends what was appended, and waits for every sync in flight.
    fn sync(&mut self) -> Result<(), PersistError> {
        let queue = self.queue.clone();
        let mut sending = queue.lock();
        self.hand_over(&mut sending);
        loop {
            match self.outcome(&mut sending) {
                Some(Ok(())) if self.in_flight.is_empty() => return Ok(()),
                Some(Ok(())) => continue,
                Some(Err(failure)) => return Err(failure),
                None => sending = queue.changed.wait(sending).expect("never poisoned"),
            }
        }
    }

    fn start_sync(&mut self, waker: &SyncWaker) -> Option<Result<(), PersistError>> {
        let queue = self.queue.clone();
        let mut sending = queue.lock();
        sending.waker.get_or_insert_with(|| waker.clone());
        self.hand_over(&mut sending);
        None
    }

    fn settled(&mut self) -> Option<Result<(), PersistError>> {
        let queue = self.queue.clone();
        let mut sending = queue.lock();
        self.outcome(&mut sending)
    }

    fn compact(&mut self, _: &Snapshot) -> Result<(), PersistError> {
        self.sync()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;

    /// Seals `X` as `sealed:X` and remembers each batch it was given.
    #[derive(Default)]
    struct Recording(Mutex<Vec<Vec<String>>>);

    impl Crypter for Recording {
        fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
            Ok(format!("sealed:{plaintext}"))
        }
        fn open(&self, _: &str) -> Result<String, SecretsError> {
            unreachable!("the persister never opens")
        }
        fn seal_all(&self, plaintexts: &[String]) -> Result<Vec<String>, SecretsError> {
            self.0.lock().unwrap().push(plaintexts.to_vec());
            plaintexts.iter().map(|text| self.seal(text)).collect()
        }
    }

    fn secret(value: &str) -> Value {
        json!({ SIG_KEY: "secret", "value": value })
    }

    #[test]
    fn only_entries_with_secrets_are_sealed_all_in_one_batch() {
        let plain = br#"{"entry":"begin","note":"\"plinth:sig\" in a string is no secret"}"#;
        let mut entries = vec![
            plain.to_vec(),
            serde_json::to_vec(&json!({ "a": secret("one") })).unwrap(),
            br#"{"entry":"end"}"#.to_vec(),
            serde_json::to_vec(&json!({ "b": [secret("two"), secret("three")] })).unwrap(),
        ];
        let crypter = Recording::default();
        seal_entries(&mut entries, &crypter).unwrap();
        assert_eq!(
            crypter.0.into_inner().unwrap(),
            [[r#""one""#, r#""two""#, r#""three""#]],
            "one batch, in the entries' order"
        );
        assert_eq!(
            entries[0], plain,
            "an entry without a secret is kept as it was"
        );
        assert_eq!(entries[2], br#"{"entry":"end"}"#);
        let sealed = |v: &str| json!({ SIG_KEY: "secret", "ciphertext": format!("sealed:{v}") });
        let array: Value = serde_json::from_slice(&json_array(&entries)).unwrap();
        assert_eq!(array[1], json!({ "a": sealed(r#""one""#) }));
        assert_eq!(
            array[3],
            json!({ "b": [sealed(r#""two""#), sealed(r#""three""#)] })
        );
    }

    fn flight(seq: u64, count: u64) -> Flight {
        let entries = Some(format!("[{seq}]").into_bytes());
        Flight {
            seq,
            count,
            entries,
            outcome: None,
        }
    }

    fn answer(sending: &mut Sending, sent: &AtomicU64, seq: u64, outcome: Result<(), Unsent>) {
        let flight = sending.flight.iter_mut().find(|f| f.seq == seq).unwrap();
        flight.outcome = Some(outcome);
        sending.settle_answers(sent, Path::new("update u"));
    }

    fn unavailable() -> Unsent {
        Unsent::Refused(ServiceError::Unavailable {
            url: "http://service".into(),
            attempts: 8,
            last: "connection refused".into(),
        })
    }

    #[test]
    fn answers_count_in_order_and_a_lost_one_puts_it_and_those_after_it_in_doubt() {
        let sent = AtomicU64::new(4);
        let mut sending = Sending {
            flight: [flight(5, 10), flight(6, 20), flight(7, 30)].into(),
            next_seq: 8,
            ..Sending::default()
        };
        // Batch 6 answered before 5: nothing counts until 5 is.
        answer(&mut sending, &sent, 6, Ok(()));
        assert_eq!((sending.stored, sent.load(Ordering::Acquire)), (0, 4));
        // 5's answer never came, while 7 is still under way: no failure until it is settled.
        answer(&mut sending, &sent, 5, Err(unavailable()));
        assert!(sending.failure.is_none());
        assert!(
            !sending.has_work(4),
            "nothing more goes after a failed batch"
        );
        answer(&mut sending, &sent, 7, Ok(()));
        let failure = sending
            .failure
            .take()
            .expect("the failure, once nothing is under way");
        assert!(failure.is_transient(), "{failure}");
        assert_eq!((sending.stored, sent.load(Ordering::Acquire)), (0, 4));
        // All three go again, under their numbers, in order, before any new batch.
        let doubt: Vec<(u64, &[u8])> = (sending.in_doubt.iter())
            .map(|b| (b.seq, b.entries.as_slice()))
            .collect();
        assert_eq!(
            doubt,
            [(5, &b"[5]"[..]), (6, &b"[6]"[..]), (7, &b"[7]"[..])]
        );
        assert_eq!(sending.next_seq, 8);
        sending.entries.push_back(b"{}".to_vec());
        assert!(!sending.has_work(4), "not before a sync asks for it");
        sending.retry = true;
        assert!(sending.has_work(4) && sending.resending());
    }

    #[test]
    fn a_refused_batch_stops_the_update_and_a_batch_never_sent_frees_its_number() {
        let sent = AtomicU64::new(0);
        let mut sending = Sending {
            flight: [flight(1, 1), flight(2, 1)].into(),
            next_seq: 3,
            ..Sending::default()
        };
        let lost = ServiceError::LeaseLost("the update no longer holds its stack".into());
        answer(&mut sending, &sent, 2, Err(unavailable()));
        answer(&mut sending, &sent, 1, Err(Unsent::Refused(lost)));
        assert!(sending.failure.take().is_some());
        assert!(sending.stopped.is_some(), "every later sync fails");
        assert!(sending.in_doubt.is_empty(), "nothing is sent again");

        // Batch 2 could not be sealed after batch 1 was lost: 2 is the next number.
        let mut sending = Sending {
            flight: [
                flight(1, 1),
                Flight {
                    entries: None,
                    ..flight(2, 1)
                },
            ]
            .into(),
            next_seq: 3,
            ..Sending::default()
        };
        let unsealed = Unsent::Unsealed(SecretsError::MalformedState("no".into()));
        answer(&mut sending, &sent, 2, Err(unsealed));
        answer(&mut sending, &sent, 1, Err(unavailable()));
        assert!(sending.failure.is_some());
        assert_eq!(
            sending.in_doubt.iter().map(|b| b.seq).collect::<Vec<_>>(),
            [1]
        );
        assert_eq!(sending.next_seq, 2);
    }

    #[test]
    fn a_batch_without_secrets_is_taken_by_whoever_is_awake_unless_one_is_being_sealed() {
        let plain = |n: usize| -> Vec<Vec<u8>> {
            (0..n)
                .map(|i| format!(r#"{{"entry":"failed","seq":{i}}}"#).into_bytes())
                .collect()
        };
        let mut sending = Sending {
            next_seq: 7,
            ..Sending::default()
        };
        sending.entries.extend(plain(3));
        let batch = sending.take_plain(2, 2).expect("a plain batch");
        assert_eq!(batch.seq, 7);
        assert_eq!(
            batch.entries,
            br#"[{"entry":"failed","seq":0},{"entry":"failed","seq":1}]"#
        );
        let flight = sending.flight.back().unwrap();
        assert_eq!(flight.count, 2);
        assert_eq!(
            flight.entries.as_deref(),
            Some(&batch.entries[..]),
            "kept to be sent again"
        );
        let next = sending
            .take_plain(2, 2)
            .expect("the rest, within the window");
        assert_eq!((next.seq, sending.next_seq), (8, 9));
        sending.entries.extend(plain(1));
        assert!(sending.take_plain(2, 2).is_none(), "the window is full");
        assert!(sending.take_plain(3, 2).is_some());

        // Left to the batching thread: a batch with a secret, or any while it seals one (the
        // batches are sealed in order), or while batches in doubt go again.
        let secret = serde_json::to_vec(&json!({ "a": secret("x") })).unwrap();
        for blocked in [
            Sending {
                entries: [plain(1)[0].clone(), secret].into(),
                ..Sending::default()
            },
            Sending {
                entries: plain(1).into(),
                sealing: true,
                ..Sending::default()
            },
            Sending {
                entries: plain(1).into(),
                in_doubt: [Batch {
                    seq: 1,
                    entries: b"[]".to_vec(),
                }]
                .into(),
                retry: true,
                ..Sending::default()
            },
        ] {
            let mut blocked = blocked;
            assert!(blocked.take_plain(2, 10).is_none());
            assert!(blocked.flight.is_empty());
        }
    }

    #[test]
    fn a_batch_without_secrets_never_reaches_the_crypter() {
        let mut entries = vec![br#"{"entry":"begin"}"#.to_vec()];
        let crypter = Recording::default();
        seal_entries(&mut entries, &crypter).unwrap();
        assert!(crypter.0.into_inner().unwrap().is_empty());
        assert_eq!(json_array(&entries), br#"[{"entry":"begin"}]"#);
        assert_eq!(json_array(&[]), b"[]");
    }
}
