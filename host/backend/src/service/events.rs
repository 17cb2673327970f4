//! An update's engine events on the service, for `plinth logs`. Recording hands each event to a
//! sender thread through an unbounded channel, so it never waits on the network; the sender
//! sends batches of [`BATCH_EVENTS`], or what 4 s gathered, numbered from 1, with at
//! most [`IN_FLIGHT`] requests at once (batch N goes only once batch N − 3 is answered, which is
//! what the service checks). After a failure nothing more is sent, and `finish` reports it.

use std::collections::VecDeque;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use plinth_engine::events::Event;
use plinth_engine::names::{ProjectName, StackName};
use serde::{Deserialize, Serialize};

use super::transport::{ServiceError, Transport};
use crate::api::EventLog;
use crate::error::BackendError;
use crate::history::HistoryEntry;
use crate::logs::{EventNumbering, LogEntry, UpdateLog};

/// The most events one batch carries.
pub const BATCH_EVENTS: usize = 50;
/// The longest an event waits for its batch to fill.
const BATCH_WAIT: Duration = Duration::from_secs(4);
/// The most batches being sent at once.
pub const IN_FLIGHT: usize = 3;

/// The event log of update `update` on the service.
pub struct ServiceEventLog {
    /// Names the update in errors.
    origin: String,
    numbering: EventNumbering,
    events: Option<mpsc::Sender<LogEntry>>,
    sender: Option<JoinHandle<Option<ServiceError>>>,
}

impl ServiceEventLog {
    /// Starts sending the events of update `update`, which holds lease `lease`.
    pub fn start(transport: Transport, update: &str, lease: &str) -> ServiceEventLog {
        let (events, received) = mpsc::channel();
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
            .spawn(move || sender.run(received))
            .expect("a thread can be started");
        ServiceEventLog {
            origin: format!("update {update}"),
            numbering: EventNumbering::default(),
            events: Some(events),
            sender: Some(sender),
        }
    }
}

impl EventLog for ServiceEventLog {
    fn record(&mut self, event: &Event) {
        let Some(entry) = self.numbering.entry(event) else {
            return;
        };
        if let Some(events) = &self.events {
            // The sender stopped after a failure, which `finish` reports: the event is dropped.
            let _ = events.send(entry);
        }
    }

    fn finish(mut self: Box<Self>) -> Result<(), BackendError> {
        // Ends the channel: the sender sends what is left and waits for every answer.
        drop(self.events.take());
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
        drop(self.events.take());
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
    /// Sends what comes through `events` until it ends; the first failure, if any.
    fn run(mut self, events: mpsc::Receiver<LogEntry>) -> Option<ServiceError> {
        let mut batch = Vec::with_capacity(BATCH_EVENTS);
        let mut due: Option<Instant> = None;
        loop {
            let next = match due {
                None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(due) => events.recv_timeout(due.saturating_duration_since(Instant::now())),
            };
            match next {
                Ok(entry) => {
                    if batch.is_empty() {
                        due = Some(Instant::now() + BATCH_WAIT);
                    }
                    batch.push(entry);
                    if batch.len() < BATCH_EVENTS {
                        continue;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            due = None;
            if !self.send(&batch) {
                break;
            }
            batch.clear();
        }
        if !batch.is_empty() {
            self.send(&batch);
        }
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
        #[derive(Serialize)]
        struct Batch<'a> {
            seq: u64,
            events: &'a [LogEntry],
        }
        let body = serde_json::to_vec(&Batch {
            seq: self.sent,
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

/// One page of a log as the service answers it.
#[derive(Deserialize)]
struct Page {
    number: u64,
    entry: HistoryEntry,
    events: Vec<LogEntry>,
    next: Option<u64>,
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
        let answer = match transport.call("GET", &path, None, None) {
            Ok(answer) => answer,
            // No such update, unless the stack itself is gone.
            Err(ServiceError::NotFound(_)) if log.is_none() => {
                return transport
                    .call("GET", &format!("stacks/{project}/{stack}"), None, None)
                    .map(|_| None);
            }
            Err(e) => return Err(e),
        };
        let page: Page = serde_json::from_value(answer).map_err(|e| ServiceError::Unreadable {
            request: format!("the log of stack `{stack}`"),
            reason: e.to_string(),
        })?;
        let next = page.next;
        match &mut log {
            None => {
                log = Some(UpdateLog {
                    number: page.number,
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
