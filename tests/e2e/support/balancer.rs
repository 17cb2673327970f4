//! A load balancer with failover in front of service replicas, as a team runs them: a TCP
//! forwarder on a free loopback port that sends each new connection to the first replica that
//! accepts it (refused: the next), then copies bytes both ways until either side closes. It
//! knows nothing of HTTP: a client's keep-alive connection stays with its replica, and dies
//! with it. It counts the connections each replica was given, so a test can tell which one
//! served what, and notes the request line of each connection no replica took, so a test can
//! count a client's tries of each call while the service is gone.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A running forwarder; it stops accepting when the test process ends.
pub struct Balancer {
    /// `http://127.0.0.1:PORT`: the URL a CLI reaches the replicas through.
    pub url: String,
    /// Connections forwarded to each replica, in the order the replicas were given.
    forwarded: Arc<Vec<AtomicUsize>>,
    /// The request lines of the connections no replica accepted.
    unserved: Arc<Mutex<Vec<String>>>,
}

impl Balancer {
    /// Forwards to the replicas at `urls` (`http://127.0.0.1:PORT` each), in that order of
    /// preference.
    pub fn new(urls: &[&str]) -> Balancer {
        let replicas: Vec<SocketAddr> = (urls.iter())
            .map(|url| {
                let address = url
                    .strip_prefix("http://")
                    .expect("a replica's URL is http");
                address.parse().expect("a replica listens on an IP address")
            })
            .collect();
        let forwarded: Arc<Vec<AtomicUsize>> =
            Arc::new(replicas.iter().map(|_| AtomicUsize::new(0)).collect());
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let unserved = Arc::default();
        let (counts, noted) = (forwarded.clone(), Arc::clone(&unserved));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                forward(client, &replicas, &counts, &noted);
            }
        });
        Balancer {
            url,
            forwarded,
            unserved,
        }
    }

    /// How many connections replica `i` was given so far.
    pub fn forwarded(&self, i: usize) -> usize {
        self.forwarded[i].load(Ordering::SeqCst)
    }

    /// The request line (`POST /api/v1/…`) of every connection no replica accepted so far, in
    /// the order they came: while every replica is down, one per try of a client's call. A
    /// line is noted before its connection is closed, so a client that saw the failure finds
    /// its try here.
    pub fn unserved(&self) -> Vec<String> {
        self.unserved.lock().unwrap().clone()
    }
}

/// Connects `client` to the first replica that accepts, or closes it if none does (as a
/// balancer with no healthy backend drops the connection) once it has read and noted in
/// `unserved` the request's first line.
fn forward(
    client: TcpStream,
    replicas: &[SocketAddr],
    counts: &[AtomicUsize],
    unserved: &Arc<Mutex<Vec<String>>>,
) {
    let upstream = replicas.iter().enumerate().find_map(|(i, replica)| {
        let stream = TcpStream::connect(replica).ok()?;
        counts[i].fetch_add(1, Ordering::SeqCst);
        Some(stream)
    });
    let Some(upstream) = upstream else {
        let unserved = Arc::clone(unserved);
        // On a thread of its own: a client slow to send must not hold up the others.
        std::thread::spawn(move || {
            let mut line = String::new();
            // A client that sends no line (it gave up first) is noted by an empty one.
            let _ = BufReader::new((&client).take(8 * 1024)).read_line(&mut line);
            let request = line
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ");
            unserved.lock().unwrap().push(request);
            let _ = client.shutdown(Shutdown::Both);
        });
        return;
    };
    let (client_read, upstream_read) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
    std::thread::spawn(move || pipe(client_read, upstream));
    std::thread::spawn(move || pipe(upstream_read, client));
}

/// Copies `from` to `to` until `from` ends, then ends `to` likewise: an end of stream is passed
/// on as one, a reset or a failed write closes both connections.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = [0; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
