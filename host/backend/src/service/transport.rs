//! One request to the service, retried with backoff through what may pass (a dropped connection,
//! 502/503/504, 429), honouring `Retry-After`; every other answer is final and typed, so a caller
//! tells a lost lease from an outage. Bodies over 1 KiB go gzipped, and answers may come so.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flate2::Compression;
use flate2::write::GzEncoder;

use serde_json::Value;

/// How often a transient failure is tried again, and the longest wait between tries.
const ATTEMPTS: u32 = 8;
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Why the service did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The service could not be reached or answered that it could not serve, every time.
    #[error("the service at {url} is unavailable after {attempts} attempts: {last}")]
    Unavailable {
        url: String,
        attempts: u32,
        last: String,
    },
    #[error("{0}; log in again with `plinth login`")]
    Unauthorized(String),
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

/// A service and the access token requests carry.
#[derive(Clone)]
pub struct Transport {
    base: String,
    token: String,
    agent: ureq::Agent,
    traffic: Arc<Counters>,
}

/// What a transport sent, retries included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    pub requests: u64,
    /// Request body bytes as they went on the wire (gzipped when they were).
    pub body_bytes: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    body_bytes: AtomicU64,
}

impl Transport {
    /// The service at `base` (`https://host[:port]`), acting with `token`.
    pub fn new(base: &str, token: &str) -> Transport {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Transport {
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            agent,
            traffic: Arc::default(),
        }
    }

    /// What this transport and its clones sent so far.
    pub fn traffic(&self) -> Traffic {
        Traffic {
            requests: self.traffic.requests.load(Ordering::Relaxed),
            body_bytes: self.traffic.body_bytes.load(Ordering::Relaxed),
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
        let body = body.map(|b| serde_json::to_vec(b).expect("JSON serializes"));
        let text = self.send(method, path, lease, body)?;
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
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
        let url = format!("{}/api/v1/{path}", self.base);
        let (body, gzipped) = encode(json.unwrap_or_default());
        let mut backoff = Duration::from_millis(100);
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            let mut request = ureq::http::Request::builder()
                .method(method)
                .uri(&url)
                .header("Authorization", format!("token {}", self.token))
                .header("Content-Type", "application/json");
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
            let wait = match self.agent.run(request) {
                Err(e) => {
                    last = e.to_string();
                    backoff
                }
                Ok(mut response) => 'answer: {
                    let status = response.status().as_u16();
                    let retry_after = (response.headers().get("Retry-After"))
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    // A connection dropped mid-answer is tried again like one that never
                    // answered, rather than read as an empty answer.
                    let read = (response.body_mut().with_config())
                        .limit(MAX_ANSWER)
                        .lossy_utf8(true)
                        .read_to_string();
                    let text = match read {
                        Ok(text) => text,
                        Err(e) => {
                            last = format!("reading the answer: {e}");
                            break 'answer backoff;
                        }
                    };
                    if (200..=299).contains(&status) {
                        return Ok(text);
                    }
                    let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    let message = json["message"].as_str().unwrap_or(&text).to_owned();
                    match status {
                        429 | 502..=504 => {
                            last = format!("{status}: {message}");
                            retry_after.unwrap_or(backoff).min(MAX_BACKOFF)
                        }
                        401 => return Err(ServiceError::Unauthorized(message)),
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
            if attempt < ATTEMPTS {
                std::thread::sleep(wait);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
        Err(ServiceError::Unavailable {
            url,
            attempts: ATTEMPTS,
            last,
        })
    }
}

/// The request body: JSON, gzipped (and said so) when large enough to gain from it.
fn encode(json: Vec<u8>) -> (Vec<u8>, bool) {
    if json.len() <= GZIP_ABOVE {
        return (json, false);
    }
    // The fastest level: JSON compresses well at any level, and the CPU is the update's.
    let mut encoder = GzEncoder::new(Vec::with_capacity(json.len() / 4), Compression::fast());
    let gzipped = encoder.write_all(&json).and_then(|()| encoder.finish());
    (gzipped.expect("writing to memory never fails"), true)
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read};
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
        let server = std::thread::spawn(move || {
            let mut requests = Vec::new();
            // The first answer ends after ten of its hundred bytes; the second is whole.
            for answer in [
                "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"cut\": sh",
                "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}",
            ] {
                let (mut stream, _) = listener.accept().unwrap();
                requests.push(read_request(&stream));
                stream.write_all(answer.as_bytes()).unwrap();
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
        assert!(head.contains("accept-encoding: gzip"), "{head}");
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(&sent[..])
            .read_to_end(&mut json)
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&json).unwrap(), body);
        let traffic = transport.traffic();
        assert_eq!(traffic.requests, 2);
        assert_eq!(traffic.body_bytes, 2 * sent.len() as u64);
        assert!(sent.len() < 200, "4 KiB of one letter gzip small");
    }

    #[test]
    fn small_bodies_go_as_they_are() {
        let (body, gzipped) = encode(br#"{"kind":"update"}"#.to_vec());
        assert!(!gzipped);
        assert_eq!(body, br#"{"kind":"update"}"#);
        assert_eq!(encode(Vec::new()), (Vec::new(), false));
    }
}
