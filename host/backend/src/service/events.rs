//! An update's engine events on the service, for `plinth logs`. Recording gathers each event
//! for a sender thread, so it never waits on the network; the sender sends batches of as many
//! events as the service takes, or what 4 s gathered, numbered from 1, with at most [`IN_FLIGHT`] requests
//! at once (batch N goes only once batch N − 3 is answered, which is what the service checks).
//! After a failure nothing more is sent, and `finish` reports it.
//!
//! The sender is woken once a batch is full, not for each event: an update of 10,000 resources
//! records 20,000 events, and waking a thread for each cost more than sending them.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use plinth_engine::events::Event;
use plinth_engine::names::{ProjectName, StackName};

use super::transport::{ServiceError, Transport};
use crate::api::EventLog;
use crate::error::BackendError;
use plinth_state::protocol::{
    EVENTS_BATCH_MAX, EVENTS_IN_FLIGHT as IN_FLIGHT, EventBatch, LogPage,
};
use plinth_state::{EventNumbering, LogEntry, UpdateLog};

/// The longest an event waits for its batch to fill.
const BATCH_WAIT: Duration = Duration::from_secs(4);

/// The event log of update `update` on the service.
pub struct ServiceEventLog {
    /// Names the update in errors.
    origin: String,
    numbering: EventNumbering,
    gathered: Arc<Gathered>,
    sender: Option<JoinHandle<Option<ServiceError>>>,
}

/// The events recorded and not yet taken into a batch, shared by the log and its sender.
struct Gathered {
    /// The most events a batch carries.
    batch: usize,
    state: Mutex<Gathering>,
    /// Wakes the sender when a batch is full or the log ends.
    changed: Condvar,
}

#[derive(Default)]
struct Gathering {
    events: Vec<LogEntry>,
    /// When the oldest of `events` was gathered (about: see [`Gathered::next_batch`]).
    since: Option<Instant>,
    /// The log ended: what is left goes, then the sender stops.
    ended: bool,
    /// The sender stopped after a failure: events are dropped.
    stopped: bool,
}

impl Gathered {
    /// Gathers batches of at most `batch` events (1 to [`EVENTS_BATCH_MAX`]).
    fn new(batch: usize) -> Gathered {
        Gathered {
            batch: batch.clamp(1, EVENTS_BATCH_MAX),
            state: Mutex::default(),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Gathering> {
        self.state
            .lock()
            .expect("never poisoned: nothing panics holding it")
    }

    fn gather(&self, entry: LogEntry) {
        let mut gathering = self.lock();
        if gathering.stopped {
            return;
        }
        gathering.since.get_or_insert_with(Instant::now);
        gathering.events.push(entry);
        if gathering.events.len() == self.batch {
            self.changed.notify_one();
        }
    }

    fn end(&self) {
        self.lock().ended = true;
        self.changed.notify_one();
    }

    /// The next batch to send: a full batch, or fewer once the oldest waited
    /// [`BATCH_WAIT`] or the log ended; `None` once it ended and nothing is left.
    fn next_batch(&self) -> Option<Vec<LogEntry>> {
        let mut gathering = self.lock();
        loop {
            let due = gathering.since.map(|since| since + BATCH_WAIT);
            let waited = gathering.ended || due.is_some_and(|due| due <= Instant::now());
            let count = gathering.events.len();
            if count >= self.batch || (count > 0 && waited) {
                let batch: Vec<LogEntry> =
                    gathering.events.drain(..count.min(self.batch)).collect();
                // Those left count from now: they wait a little longer than 4 s at worst.
                gathering.since = (!gathering.events.is_empty()).then(Instant::now);
                return Some(batch);
            }
            if gathering.ended {
                return None;
            }
            // Nothing wakes the sender for the first event of a batch: it looks again when the
            // batch it knows of is due, or every 4 s.
            let wait = due.map_or(BATCH_WAIT, |due| {
                due.saturating_duration_since(Instant::now())
            });
            gathering = (self.changed.wait_timeout(gathering, wait))
                .expect("never poisoned")
                .0;
        }
    }

    /// The sender stopped: nothing gathered from now on will be sent.
    fn stop(&self) {
        let mut gathering = self.lock();
        gathering.stopped = true;
        gathering.events = Vec::new();
    }
}

impl ServiceEventLog {
    /// Starts sending the events of update `update`, which holds lease `lease`, in batches of
    /// at most `batch` events (what the service said it takes when the update began).
    pub fn start(transport: Transport, update: &str, lease: &str, batch: usize) -> ServiceEventLog {
        let gathered = Arc::new(Gathered::new(batch));
        let path = format!("updates/{update}/events");
        let failure = Arc::new(Mutex::new(None));
        let sender = Sender {
            requests: Requests::start(&transport, &path, lease, &failure),
            sent: 0,
            in_flight: VecDeque::new(),
            failure,
        };
        let sender = std::thread::Builder::new()
            .name("plinth-events".into())
            .spawn({
                let gathered = gathered.clone();
                move || sender.run(&gathered)
            })
            .expect("a thread can be started");
        ServiceEventLog {
            origin: format!("update {update}"),
            numbering: EventNumbering::default(),
            gathered,
            sender: Some(sender),
        }
    }
}

impl EventLog for ServiceEventLog {
    fn record(&mut self, event: &Event) {
        let Some(entry) = self.numbering.entry(event) else {
            return;
        };
        // Once the sender stopped after a failure, which `finish` reports, it is dropped.
        self.gathered.gather(entry);
    }

    fn finish(mut self: Box<Self>) -> Result<(), BackendError> {
        // The sender sends what is left and waits for every answer.
        self.gathered.end();
        let failure = match self.sender.take().map(JoinHandle::join) {
            Some(Ok(failure)) => failure,
            Some(Err(_)) => Some(ServiceError::Refused {
                status: 0,
                message: "the thread sending the update's events panicked".to_owned(),
            }),
            None => None,
        };
        failure.map_or(Ok(()), |e| {
            Err(BackendError::io("sending the events of", &self.origin)(
                std::io::Error::other(e),
            ))
        })
    }
}

impl Drop for ServiceEventLog {
    /// A log dropped unfinished lets its sender go on alone: nothing waits for it.
    fn drop(&mut self) {
        self.gathered.end();
    }
}

/// The thread that batches the events and hands each batch to a request thread.
struct Sender {
    /// The number of the last batch sent.
    sent: u64,
    /// The [`IN_FLIGHT`] threads that make the requests.
    requests: Requests,
    /// The answers awaited, oldest first: each is told when its request ended.
    in_flight: VecDeque<mpsc::Receiver<()>>,
    /// The first failure of any request.
    failure: Arc<Mutex<Option<ServiceError>>>,
}

/// A batch's request body, and where to say that its request ended.
type Job = (Vec<u8>, mpsc::Sender<()>);

/// Threads that make requests, each taking the next job: a thread per batch would be started
/// hundreds of times an update.
struct Requests {
    jobs: mpsc::Sender<Job>,
    threads: Vec<JoinHandle<()>>,
}

impl Requests {
    /// Starts threads that post the request bodies to `path` on an update's behalf with
    /// `lease`, keeping the first failure in `failure`.
    fn start(
        transport: &Transport,
        path: &str,
        lease: &str,
        failure: &Arc<Mutex<Option<ServiceError>>>,
    ) -> Requests {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let threads = (0..IN_FLIGHT)
            .map(|_| {
                let queue = queue.clone();
                let (transport, path, lease) =
                    (transport.clone(), path.to_owned(), lease.to_owned());
                let failure = failure.clone();
                std::thread::Builder::new()
                    .name("plinth-events-request".into())
                    .spawn(move || post_each(&queue, &transport, &path, &lease, &failure))
                    .expect("a thread can be started")
            })
            .collect();
        Requests { jobs, threads }
    }

    /// Ends the threads once the jobs given are done.
    fn finish(self) {
        drop(self.jobs);
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

/// Posts each body `queue` gives to `path` until it ends, saying when each request ended; the
/// first failure goes to `failure`.
fn post_each(
    queue: &Mutex<mpsc::Receiver<Job>>,
    transport: &Transport,
    path: &str,
    lease: &str,
    failure: &Mutex<Option<ServiceError>>,
) {
    loop {
        // The lock is held while waiting for a job, never during a request.
        let job = (queue.lock().map_err(drop)).and_then(|jobs| jobs.recv().map_err(drop));
        let Ok((body, done)) = job else { return };
        if let Err(e) = transport.send("POST", path, Some(lease), Some(body)) {
            let mut first = failure.lock().expect("the failure is never poisoned");
            first.get_or_insert(e);
        }
        let _ = done.send(());
    }
}

impl Sender {
    /// Sends what is gathered until the log ends; the first failure, if any.
    fn run(mut self, gathered: &Gathered) -> Option<ServiceError> {
        while let Some(batch) = gathered.next_batch() {
            if !self.send(&batch) {
                break;
            }
        }
        gathered.stop();
        self.requests.finish();
        self.failure
            .lock()
            .map_or(None, |mut failure| failure.take())
    }

    /// Sends `batch` as the next batch once a request may start; false once a request failed.
    fn send(&mut self, batch: &[LogEntry]) -> bool {
        if self.in_flight.len() == IN_FLIGHT {
            let oldest = self.in_flight.pop_front().expect("requests are in flight");
            // An error here means its thread ended, which only a failure makes it do.
            let _ = oldest.recv();
        }
        if self.failed() {
            return false;
        }
        self.sent += 1;
        let body = serde_json::to_vec(&EventBatch {
            seq: i64::try_from(self.sent).unwrap_or(i64::MAX),
            events: batch,
        })
        .expect("log entries serialize");
        let (done, answered) = mpsc::channel();
        if self.requests.jobs.send((body, done)).is_err() {
            return false;
        }
        self.in_flight.push_back(answered);
        true
    }

    fn failed(&self) -> bool {
        self.failure
            .lock()
            .map_or(true, |failure| failure.is_some())
    }
}

/// The events of update `number` of a stack on the service (as history counts them, the first
/// being 1), or of its latest update if `None`; `None` when the stack has no such update.
pub fn fetch_log(
    transport: &Transport,
    project: &ProjectName,
    stack: &StackName,
    number: Option<u64>,
) -> Result<Option<UpdateLog>, ServiceError> {
    let mut log: Option<UpdateLog> = None;
    let mut after = 0;
    loop {
        // Once the first page named the update, later pages ask for it: a newer update that
        // ends meanwhile does not change which log is read.
        let wanted = log.as_ref().map(|log| log.number).or(number);
        let mut path = format!("stacks/{project}/{stack}/logs?after={after}");
        if let Some(wanted) = wanted {
            path.push_str(&format!("&update={wanted}"));
        }
        // Read from the answer's text, straight into log entries: a page holds up to 20,000.
        let answer = match transport.send("GET", &path, None, None) {
            Ok(answer) => answer,
            // No such update, unless the stack itself is gone.
            Err(ServiceError::NotFound(_)) if log.is_none() => {
                return transport
                    .call("GET", &format!("stacks/{project}/{stack}"), None, None)
                    .map(|_| None);
            }
            Err(e) => return Err(e),
        };
        let unreadable = |reason: String| ServiceError::Unreadable {
            request: format!("the log of stack `{stack}`"),
            reason,
        };
        let page: LogPage = serde_json::from_str(&answer).map_err(|e| unreadable(e.to_string()))?;
        let count = |n: i64| u64::try_from(n).map_err(|e| unreadable(format!("{n}: {e}")));
        let next = page.next.map(count).transpose()?;
        match &mut log {
            None => {
                log = Some(UpdateLog {
                    number: count(page.number)?,
                    entry: page.entry,
                    events: page.events,
                })
            }
            Some(log) => log.events.extend(page.events),
        }
        match next {
            Some(next) => after = next,
            None => return Ok(log),
        }
    }
}

#[cfg(test)]
mod tests {
    use plinth_engine::events::Severity;

    use super::*;

    fn diagnostic(message: String) -> Event {
        Event::Diagnostic {
            urn: None,
            severity: Severity::Info,
            message,
        }
    }

    fn gathered(count: usize) -> Gathered {
        let gathered = Gathered::new(50);
        let mut numbering = EventNumbering::default();
        for n in 0..count {
            gathered.gather(numbering.entry(&diagnostic(format!("event {n}"))).unwrap());
        }
        gathered
    }

    fn seqs(batch: Option<Vec<LogEntry>>) -> Vec<u64> {
        batch.unwrap().iter().map(|entry| entry.seq).collect()
    }

    #[test]
    fn full_batches_go_at_once_and_the_rest_once_its_oldest_waited() {
        let gathered_at = Instant::now();
        let gathered = gathered(120);
        assert_eq!(seqs(gathered.next_batch()), (1..=50).collect::<Vec<_>>());
        assert_eq!(seqs(gathered.next_batch()), (51..=100).collect::<Vec<_>>());
        // 20 left: they go once they waited the batch's time, not before.
        assert_eq!(seqs(gathered.next_batch()), (101..=120).collect::<Vec<_>>());
        assert!(gathered_at.elapsed() >= BATCH_WAIT);
    }

    #[test]
    fn once_the_log_ends_what_is_left_goes_in_batches_then_nothing() {
        let gathered = gathered(70);
        gathered.end();
        assert_eq!(seqs(gathered.next_batch()).len(), 50);
        assert_eq!(seqs(gathered.next_batch()), (51..=70).collect::<Vec<_>>());
        assert!(gathered.next_batch().is_none());
        // Once the sender stopped, nothing more is kept.
        gathered.stop();
        let late = EventNumbering::default().entry(&diagnostic("late".into()));
        gathered.gather(late.unwrap());
        assert!(gathered.lock().events.is_empty());
    }
}
