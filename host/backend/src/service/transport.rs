//! One request to the service, retried with backoff through what may pass (a dropped connection,
//! 502/503/504, 429), honouring `Retry-After`; every other answer is final and typed, so a caller
//! tells a lost lease from an outage. Bodies over 1 KiB go gzipped, and answers may come so.
//!
//! Riding out an outage is worth about 13 s only while the work may go on. A call given a
//! budget and every call once the transport is told to [`hurry`](Transport::hurry) (the user
//! pressed Ctrl-C) give up sooner; once one call gave up on the service, the others (those
//! under way too) try no more than once until it answers again: the user is not made to wait
//! out the same outage twice.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use plinth_engine::shown::escape_controls;
use serde_json::Value;
use ureq::unversioned::transport::DefaultConnector;

use super::resolver::CachingResolver;
use super::version_check;
use crate::compression::{gunzip, gzip, unzstd};
use plinth_state::protocol::version::VERSION_HEADER;

/// How often a transient failure is tried again, the first wait between tries (doubled at each
/// next) and the longest.
const ATTEMPTS: u32 = 8;
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// The waits between tries, in order, unless the service says how long with `Retry-After`.
fn backoffs() -> impl Iterator<Item = Duration> {
    std::iter::successors(Some(FIRST_BACKOFF), |b| Some((*b * 2).min(MAX_BACKOFF)))
}
/// The longest one attempt may take (a large checkpoint is tens of megabytes).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(60);
/// The least time an attempt is given, even once a budget ran out: a service that is there
/// answers within it.
const LAST_CHANCE: Duration = Duration::from_secs(1);

/// How long calls go on trying once the user asked to stop, or to end an update being left.
pub const SHORT_BUDGET: Duration = Duration::from_millis(2500);

/// Why the service did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The service could not be reached or answered that it could not serve, every time.
    #[error(
        "the service at {url} is unavailable after {attempts} attempt{}: {last}",
        if *attempts == 1 { "" } else { "s" }
    )]
    Unavailable {
        url: String,
        attempts: u32,
        last: String,
    },
    /// Nothing that answers as a plinth service could be reached there, and it never answered:
    /// a name that does not resolve, nothing listening, another protocol. Not retried: no
    /// retry heals it.
    #[error("cannot reach a plinth service at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// It answered, but not as a plinth service does (another server, or a URL with a path).
    #[error(
        "{url} answered {answer}, which is not how a plinth service answers: check the backend \
         URL (the service's root, such as https://plinth.example.com, without a path; a plinth \
         service answers every request with JSON)"
    )]
    NotPlinth { url: String, answer: String },
    /// The message says what to do (log in again, use the update's own lease token).
    #[error("{0}")]
    Unauthorized(String),
    /// The token does not grant what the request needs (a read-only token, another project's).
    #[error("{0}")]
    Forbidden(String),
    /// The update's lease is gone: it must stop, recording nothing more.
    #[error("{0}")]
    LeaseLost(String),
    #[error("{0}")]
    NotFound(String),
    /// Another update holds the stack (`holder` set), or the request conflicts with the state.
    #[error("{message}")]
    Conflict {
        message: String,
        holder: Option<Value>,
    },
    #[error("the service refused the request ({status}): {message}")]
    Refused { status: u16, message: String },
    /// The service answered something this client does not understand (another version?).
    #[error("the service's answer to {request} is not understood: {reason}")]
    Unreadable { request: String, reason: String },
}

/// The largest answer read, as it comes on the wire (gzipped, when the service gzips it): a
/// large stack's checkpoint is tens of megabytes of JSON.
const MAX_ANSWER: u64 = 1 << 30;

/// Request bodies larger than this go gzipped; smaller ones gain too little to be worth it.
const GZIP_ABOVE: usize = 1024;

/// A service and the access token requests carry. Clones share the connection pool, the
/// counts and what is known of the service's reach.
#[derive(Clone)]
pub struct Transport {
    base: String,
    token: String,
    agent: ureq::Agent,
    resolver: CachingResolver,
    traffic: Arc<Counters>,
    reach: Arc<Reach>,
}

/// What a transport sent and received, retries included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    pub requests: u64,
    /// Request body bytes as they went on the wire (gzipped when they were).
    pub body_bytes: u64,
    /// Answer body bytes as they came on the wire (compressed when they were).
    pub answer_bytes: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    body_bytes: AtomicU64,
    answer_bytes: AtomicU64,
}

/// What the transport's calls know of the service, which sets how long they go on trying.
#[derive(Default)]
struct Reach {
    /// A call gave up on the service, and none had an answer since.
    unreachable: AtomicBool,
    /// The service answered a call once: a connection it refuses later is an outage that may
    /// pass (a restart), not a wrong URL.
    known: AtomicBool,
    /// When calls stop retrying, once told to hurry.
    hurry_until: Mutex<Option<Instant>>,
    /// Wakes the calls waiting to try again when either of the above is set.
    changed: Condvar,
}

impl Reach {
    fn hurry_until(&self) -> MutexGuard<'_, Option<Instant>> {
        self.hurry_until.lock().expect("never poisoned")
    }

    /// When a call with its own `deadline` stops retrying, given `hurry_until`.
    fn deadline(deadline: Option<Instant>, hurry_until: Option<Instant>) -> Option<Instant> {
        match (deadline, hurry_until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn hurry(&self) {
        self.hurry_until()
            .get_or_insert_with(|| Instant::now() + SHORT_BUDGET);
        self.changed.notify_all();
    }

    fn gave_up(&self) {
        let _waking = self.hurry_until();
        self.unreachable.store(true, Ordering::Relaxed);
        self.changed.notify_all();
    }

    fn answered(&self) {
        self.unreachable.store(false, Ordering::Relaxed);
        self.known.store(true, Ordering::Relaxed);
    }

    /// Waits until `resume` to try again; false, at once, if the call should give up instead:
    /// its `deadline` (or the hurry) falls before `resume`, or a call gave up on the service
    /// (this one does not ride out the same outage again).
    fn pause(&self, resume: Instant, deadline: Option<Instant>) -> bool {
        let mut hurry_until = self.hurry_until();
        loop {
            let deadline = Reach::deadline(deadline, *hurry_until);
            if self.unreachable.load(Ordering::Relaxed) || deadline.is_some_and(|d| resume >= d) {
                return false;
            }
            let now = Instant::now();
            if now >= resume {
                return true;
            }
            hurry_until = (self.changed.wait_timeout(hurry_until, resume - now))
                .expect("never poisoned")
                .0;
        }
    }
}

impl Transport {
    /// The service at `base` (`https://host[:port]`), acting with `token`.
    pub fn new(base: &str, token: &str) -> Transport {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(ATTEMPT_TIMEOUT))
            .build();
        let resolver = CachingResolver::default();
        let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), resolver.clone());
        Transport {
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            agent,
            resolver,
            traffic: Arc::default(),
            reach: Arc::default(),
        }
    }

    /// The service's URL, as given.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// From now on, calls of this transport and its clones (those under way too) stop retrying
    /// after [`SHORT_BUDGET`]: the user asked to stop, and would rather leave an update to
    /// expire than wait out an outage.
    pub fn hurry(&self) {
        self.reach.hurry();
    }

    /// What this transport and its clones sent so far.
    pub fn traffic(&self) -> Traffic {
        Traffic {
            requests: self.traffic.requests.load(Ordering::Relaxed),
            body_bytes: self.traffic.body_bytes.load(Ordering::Relaxed),
            answer_bytes: self.traffic.answer_bytes.load(Ordering::Relaxed),
        }
    }

    /// `method` on `/api/v1/{path}` with a JSON `body`, on an update's behalf with `lease`;
    /// the JSON answer.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        lease: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, ServiceError> {
        self.call_until(method, path, lease, body, None)
    }

    /// [`call`](Self::call), trying again only within `budget`.
    pub fn call_within(
        &self,
        method: &str,
        path: &str,
        lease: Option<&str>,
        body: Option<&Value>,
        budget: Duration,
    ) -> Result<Value, ServiceError> {
        self.call_until(method, path, lease, body, Some(Instant::now() + budget))
    }

    fn call_until(
        &self,
        method: &str,
        path: &str,
        lease: Option<&str>,
        body: Option<&Value>,
        deadline: Option<Instant>,
    ) -> Result<Value, ServiceError> {
        let body = body.map(|b| serde_json::to_vec(b).expect("JSON serializes"));
        let text = self.send_until(method, path, lease, body, deadline)?;
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|_| ServiceError::NotPlinth {
            url: format!("{}/api/v1/{path}", self.base),
            answer: format!("{method} with {} bytes that are not JSON", text.len()),
        })
    }

    /// `GET /api/v1/{path}`: the answer as it came (once ungzipped), for an answer the caller
    /// parses itself, such as a checkpoint, rather than through a JSON tree first.
    pub fn get_bytes(&self, path: &str) -> Result<Vec<u8>, ServiceError> {
        Ok(self.send("GET", path, None, None)?.into_bytes())
    }

    /// `method` on `/api/v1/{path}` with `json` as the body; the answer's text if it succeeded.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        lease: Option<&str>,
        json: Option<Vec<u8>>,
    ) -> Result<String, ServiceError> {
        self.send_until(method, path, lease, json, None)
    }

    fn send_until(
        &self,
        method: &str,
        path: &str,
        lease: Option<&str>,
        json: Option<Vec<u8>>,
        deadline: Option<Instant>,
    ) -> Result<String, ServiceError> {
        let url = format!("{}/api/v1/{path}", self.base);
        let (body, gzipped) = encode(json.unwrap_or_default());
        let mut last = String::new();
        let mut attempts = 0;
        for (attempt, backoff) in (1..=ATTEMPTS).zip(backoffs()) {
            attempts = attempt;
            // Read at each turn: the transport may be told to hurry meanwhile.
            let until = Reach::deadline(deadline, *self.reach.hurry_until());
            let timeout = until.map_or(ATTEMPT_TIMEOUT, |d| {
                (d.saturating_duration_since(Instant::now())).clamp(LAST_CHANCE, ATTEMPT_TIMEOUT)
            });
            let mut request = ureq::http::Request::builder()
                .method(method)
                .uri(&url)
                .header("Authorization", format!("token {}", self.token))
                .header("Content-Type", "application/json")
                .header("Accept-Encoding", ACCEPT_ENCODING);
            if let Some(lease) = lease {
                request = request.header("X-Plinth-Lease", lease);
            }
            if gzipped {
                request = request.header("Content-Encoding", "gzip");
            }
            self.traffic.requests.fetch_add(1, Ordering::Relaxed);
            (self.traffic.body_bytes).fetch_add(body.len() as u64, Ordering::Relaxed);
            let request = request.body(&body[..]).map_err(|e| ServiceError::Refused {
                status: 0,
                message: format!("an invalid request to {url}: {e}"),
            })?;
            let request = (self.agent.configure_request(request))
                .timeout_global(Some(timeout))
                .build();
            let wait = match self.agent.run(request) {
                // Never answered: the URL is wrong, or names no plinth service. Waiting heals
                // neither.
                Err(e) if !self.reach.known.load(Ordering::Relaxed) => {
                    return Err(ServiceError::Unreachable {
                        url: self.base.clone(),
                        reason: unreachable(&e),
                    });
                }
                Err(e) => {
                    // The service may have moved: its address is looked up again.
                    self.resolver.forget();
                    last = e.to_string();
                    backoff
                }
                Ok(mut response) => 'answer: {
                    let status = response.status().as_u16();
                    let version = response.headers().get(VERSION_HEADER);
                    version_check::note(&self.base, version.map(|v| v.as_bytes()));
                    let retry_after = (response.headers().get("Retry-After"))
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    // A connection dropped mid-answer is tried again like one that never
                    // answered, rather than read as an empty answer.
                    let body = response.body_mut().with_config().limit(MAX_ANSWER);
                    let raw = match body.read_to_vec() {
                        Ok(raw) => raw,
                        Err(e) => {
                            last = format!("reading the answer: {e}");
                            break 'answer backoff;
                        }
                    };
                    (self.traffic.answer_bytes).fetch_add(raw.len() as u64, Ordering::Relaxed);
                    // A whole answer that cannot be decoded will not decode the next time.
                    let text = decode(response.headers(), raw).map_err(|reason| {
                        ServiceError::Unreadable {
                            request: format!("{method} {url}"),
                            reason,
                        }
                    })?;
                    if !matches!(status, 429 | 502..=504) {
                        self.reach.answered();
                    }
                    if (200..=299).contains(&status) {
                        return Ok(text);
                    }
                    let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    let message = match json["message"].as_str() {
                        // The service's words, on one line where they enter: plinth adds lines
                        // of its own to an error, and a hostile service could fake them.
                        Some(message) => escape_controls(message).into_owned(),
                        // A proxy in front of a service that restarts answers so: retried.
                        None if matches!(status, 429 | 502..=504) => {
                            format!("{} bytes", text.len())
                        }
                        None => {
                            let kind = (response.headers().get("Content-Type"))
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("no content type");
                            return Err(ServiceError::NotPlinth {
                                url,
                                answer: format!(
                                    "{status} with {} bytes of {}",
                                    text.len(),
                                    kind.chars()
                                        .filter(|c| !c.is_control())
                                        .take(60)
                                        .collect::<String>()
                                ),
                            });
                        }
                    };
                    match status {
                        429 | 502..=504 => {
                            last = format!("{status}: {message}");
                            retry_after.unwrap_or(backoff).min(MAX_BACKOFF)
                        }
                        401 => return Err(ServiceError::Unauthorized(message)),
                        403 if json["forbidden"] == true => {
                            return Err(ServiceError::Forbidden(message));
                        }
                        403 => return Err(ServiceError::LeaseLost(message)),
                        404 => return Err(ServiceError::NotFound(message)),
                        409 => {
                            let holder = json.get("holder").cloned();
                            return Err(ServiceError::Conflict { message, holder });
                        }
                        _ => return Err(ServiceError::Refused { status, message }),
                    }
                }
            };
            if attempt == ATTEMPTS || !self.reach.pause(Instant::now() + wait, deadline) {
                break;
            }
        }
        self.reach.gave_up();
        Err(ServiceError::Unavailable {
            url,
            attempts,
            last,
        })
    }
}

/// Why a service that never answered cannot be reached, and what to check.
fn unreachable(error: &ureq::Error) -> String {
    use std::io::ErrorKind;
    match error {
        ureq::Error::HostNotFound => {
            "its host name does not resolve: check the backend URL".to_owned()
        }
        ureq::Error::Io(e) if e.kind() == ErrorKind::ConnectionRefused => {
            "nothing accepts connections there (connection refused): check the URL's port, and \
             that the service runs"
                .to_owned()
        }
        // TLS spoken to a plain HTTP port (rustls says so as an I/O error), or another protocol.
        other => format!(
            "it does not answer HTTP as a plinth service does ({other}): check the URL's scheme \
             (http or https) and port"
        ),
    }
}

/// The encodings answers may come in: zstd first (a service that speaks it compresses and the
/// client inflates a checkpoint several times as fast as with gzip), gzip from one that does not.
const ACCEPT_ENCODING: &str = "zstd, gzip;q=0.5";

/// An answer's body as it came (`raw`) as text, inflated if it came compressed.
fn decode(headers: &ureq::http::HeaderMap, raw: Vec<u8>) -> Result<String, String> {
    let encoding = (headers.get("Content-Encoding"))
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase());
    let bytes = match encoding.as_deref() {
        None | Some("identity") => raw,
        Some("gzip") => {
            gunzip(&raw, MAX_ANSWER).map_err(|e| format!("inflating the gzipped answer: {e}"))?
        }
        Some("zstd") => (unzstd(&raw, MAX_ANSWER))
            .map_err(|e| format!("inflating the zstd-compressed answer: {e}"))?,
        // Only those are asked for: a proxy in the way may have encoded it otherwise.
        Some(other) => return Err(format!("it came encoded as {other:?}, not zstd or gzip")),
    };
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The request body: JSON, gzipped (and said so) when large enough to gain from it.
fn encode(json: Vec<u8>) -> (Vec<u8>, bool) {
    if json.len() <= GZIP_ABOVE {
        return (json, false);
    }
    (gzip(&json), true)
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};

    use serde_json::json;

    use super::*;

    /// Reads one request from `stream`: its head, lowercased, and its body.
    fn read_request(stream: &TcpStream) -> (String, Vec<u8>) {
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            head.push_str(&line.to_ascii_lowercase());
        }
        let length = (head.lines())
            .find_map(|l| l.strip_prefix("content-length: "))
            .map_or(0, |n| n.trim().parse().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        (head, body)
    }

    #[test]
    fn large_bodies_go_gzipped_and_an_answer_cut_short_is_asked_again() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let whole = gzip(br#"{"ok":true}"#);
        let answer_bytes = whole.len() as u64;
        let server = std::thread::spawn(move || {
            let mut requests = Vec::new();
            // The first answer ends after ten of its hundred bytes; the second is whole, gzipped.
            let cut =
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"cut\": sh";
            let mut gzipped = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Encoding: gzip\r\n\
                 Connection: close\r\n\r\n",
                whole.len()
            )
            .into_bytes();
            gzipped.extend_from_slice(&whole);
            for answer in [&cut[..], &gzipped] {
                let (mut stream, _) = listener.accept().unwrap();
                requests.push(read_request(&stream));
                stream.write_all(answer).unwrap();
            }
            requests
        });
        let transport = Transport::new(&base, "t");
        let body = json!({ "padding": "x".repeat(4096) });
        let answer = transport.call("POST", "p", None, Some(&body)).unwrap();
        assert_eq!(answer, json!({ "ok": true }));
        let requests = server.join().unwrap();
        assert_eq!(requests.len(), 2);
        let (head, sent) = &requests[1];
        assert!(head.contains("content-encoding: gzip"), "{head}");
        assert!(head.contains("accept-encoding: zstd, gzip;q=0.5"), "{head}");
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(&sent[..])
            .read_to_end(&mut json)
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&json).unwrap(), body);
        let traffic = transport.traffic();
        assert_eq!(traffic.requests, 2);
        assert_eq!(traffic.body_bytes, 2 * sent.len() as u64);
        assert_eq!(
            traffic.answer_bytes, answer_bytes,
            "the whole answer, as it came"
        );
        assert!(sent.len() < 200, "4 KiB of one letter gzip small");
    }

    /// The URL of a loopback port nobody listens on: every connection is refused.
    fn nobody_listening() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    }

    /// Answers one request on `listener` with `{}`.
    fn answer_once(listener: TcpListener) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            read_request(&stream);
            let answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
            stream.write_all(answer.as_bytes()).unwrap();
        })
    }

    /// A transport to a service that answered once and is gone since: its port refuses
    /// connections, an outage that may pass.
    fn gone_after_answering() -> Transport {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let transport = Transport::new(&format!("http://{}", listener.local_addr().unwrap()), "t");
        let server = answer_once(listener);
        assert_eq!(transport.call("GET", "p", None, None).unwrap(), json!({}));
        server.join().unwrap();
        transport
    }

    #[test]
    fn a_service_that_never_answered_is_not_waited_for() {
        // Each is tried once: nothing is retried, so nothing is waited for.
        let refused = Transport::new(&nobody_listening(), "t");
        let error = refused
            .call("GET", "user", None, None)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("connection refused") && error.contains("port"),
            "{error}"
        );
        assert_eq!(refused.traffic().requests, 1);
        let unresolved = Transport::new("http://plinth.invalid", "t");
        let error = unresolved.call("GET", "user", None, None);
        let error = error.unwrap_err().to_string();
        assert!(error.contains("does not resolve"), "{error}");
        assert_eq!(unresolved.traffic().requests, 1);
        // TLS spoken to a port that answers plain HTTP.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let answer = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
            let _ = stream.write_all(answer.as_bytes());
        });
        let plain = Transport::new(&url, "t");
        let error = plain
            .call("GET", "user", None, None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("scheme (http or https)"), "{error}");
        assert_eq!(plain.traffic().requests, 1);
        server.join().unwrap();
    }

    #[test]
    fn an_answer_that_is_not_a_plinth_services_says_so_without_quoting_it() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/foo", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            for answer in [
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 18\r\n\
                 Connection: close\r\n\r\n<html>\x1b[31m</html>",
            ] {
                let (mut stream, _) = listener.accept().unwrap();
                read_request(&stream);
                stream.write_all(answer.as_bytes()).unwrap();
            }
        });
        let transport = Transport::new(&base, "t");
        for expected in ["404 with 0 bytes", "GET with 18 bytes that are not JSON"] {
            let error = transport
                .call("GET", "user", None, None)
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(expected) && error.contains("without a path"),
                "{error}"
            );
            assert!(
                !error.contains("html") && !error.contains('\u{1b}'),
                "{error}"
            );
        }
        server.join().unwrap();
    }

    fn attempts(error: ServiceError) -> u32 {
        match error {
            ServiceError::Unavailable { attempts, .. } => attempts,
            other => panic!("not an outage: {other}"),
        }
    }

    /// The most tries a call makes when its waits must end within `budget`: a try after a wait
    /// only if the waits so far end before the deadline (however long the tries themselves
    /// take, which only leaves less).
    fn most_tries_within(budget: Duration) -> u32 {
        let waits = backoffs().scan(Duration::ZERO, |waited, wait| {
            *waited += wait;
            Some(*waited)
        });
        1 + waits.take_while(|waited| *waited < budget).count() as u32
    }

    #[test]
    fn the_waits_double_up_to_a_cap_and_ride_out_about_13_s() {
        let waits: Vec<u64> = (backoffs().take(9)).map(|w| w.as_millis() as u64).collect();
        assert_eq!(
            waits,
            [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]
        );
        // The module's promise: a call without a budget rides out 12.7 s of an outage.
        let ridden: Duration = backoffs().take(ATTEMPTS as usize - 1).sum();
        assert_eq!(ridden, Duration::from_millis(12_700));
        assert_eq!(most_tries_within(SHORT_BUDGET), 5);
        assert_eq!(most_tries_within(Duration::ZERO), 1);
        assert_eq!(
            most_tries_within(ridden + Duration::from_millis(1)),
            ATTEMPTS
        );
    }

    #[test]
    fn a_budget_or_a_hurry_bounds_the_retries() {
        let transport = gone_after_answering();
        let error = transport.call_within("POST", "p", None, None, SHORT_BUDGET);
        let tries = attempts(error.unwrap_err());
        assert!(
            (2..=most_tries_within(SHORT_BUDGET)).contains(&tries),
            "{tries} tries"
        );

        let transport = gone_after_answering();
        transport.clone().hurry();
        let error = transport.call("GET", "p", None, None).unwrap_err();
        let tries = attempts(error);
        assert!(tries <= most_tries_within(SHORT_BUDGET), "{tries} tries");
    }

    #[test]
    fn after_a_call_gave_up_the_next_tries_once_until_the_service_answers() {
        let transport = gone_after_answering();
        let base = transport.base().to_owned();
        transport
            .call_within("POST", "p", None, None, Duration::from_millis(300))
            .unwrap_err();
        let before = transport.traffic().requests;
        let error = transport.clone().call("POST", "p", None, None).unwrap_err();
        assert_eq!(attempts(error), 1);
        assert_eq!(transport.traffic().requests, before + 1);

        // The service is back (on the same port): it answers, and retries are as before.
        let listener = TcpListener::bind(base.strip_prefix("http://").unwrap()).unwrap();
        let server = answer_once(listener);
        assert_eq!(transport.call("GET", "p", None, None).unwrap(), json!({}));
        server.join().unwrap();
        let error = transport.call_within("GET", "p", None, None, Duration::from_secs(2));
        assert!(attempts(error.unwrap_err()) > 1);
    }

    #[test]
    fn a_call_riding_out_an_outage_stops_when_another_gives_up_or_when_told_to_hurry() {
        // Another call giving up makes one try of its own; after it, the riding call makes at
        // most the one it may have begun. Told to hurry, it makes at most the tries whose
        // waits fit in the short budget.
        let give_up = |t: &Transport| drop(t.call_within("GET", "q", None, None, Duration::ZERO));
        for (stop, stopper_tries, most_after) in [
            (&give_up as &dyn Fn(&Transport), 1, 1),
            (&Transport::hurry, 0, most_tries_within(SHORT_BUDGET)),
        ] {
            let transport = gone_after_answering();
            let before = transport.traffic().requests;
            let riding = transport.clone();
            let call = std::thread::spawn(move || riding.call("POST", "p", None, None));
            // Once it has tried, it waits between tries.
            while transport.traffic().requests == before {
                std::thread::yield_now();
            }
            stop(&transport);
            let stopped = transport.traffic().requests;
            let tries = attempts(call.join().unwrap().unwrap_err());
            let end = transport.traffic().requests;
            assert_eq!(u64::from(tries), end - before - stopper_tries);
            assert!(end - stopped <= u64::from(most_after), "{tries} tries");
        }
    }

    #[test]
    fn small_bodies_go_as_they_are() {
        let (body, gzipped) = encode(br#"{"kind":"update"}"#.to_vec());
        assert!(!gzipped);
        assert_eq!(body, br#"{"kind":"update"}"#);
        assert_eq!(encode(Vec::new()), (Vec::new(), false));
    }

    #[test]
    fn a_whole_answer_that_cannot_be_decoded_is_not_asked_again() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let answers: [&[u8]; 3] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Encoding: br\r\n\
              Connection: close\r\n\r\n{}",
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Encoding: gzip\r\n\
              Connection: close\r\n\r\n{}{}",
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Encoding: zstd\r\n\
              Connection: close\r\n\r\n{}{}",
        ];
        let server = std::thread::spawn(move || {
            for answer in answers {
                let (mut stream, _) = listener.accept().unwrap();
                read_request(&stream);
                stream.write_all(answer).unwrap();
            }
        });
        let transport = Transport::new(&base, "t");
        for expected in [
            "encoded as \"br\", not zstd or gzip",
            "inflating the gzipped answer",
            "inflating the zstd-compressed answer",
        ] {
            match transport.call("GET", "p", None, None) {
                Err(ServiceError::Unreadable { reason, .. }) => {
                    assert!(reason.contains(expected), "{reason}")
                }
                other => panic!("not refused as unreadable: {other:?}"),
            }
        }
        server.join().unwrap();
        assert_eq!(transport.traffic().requests, 3, "one request each");
        assert_eq!(transport.traffic().answer_bytes, 10);
    }
}
