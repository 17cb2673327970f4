//! A counting proxy on loopback between the CLI and the service: every byte each way, and every
//! HTTP request (its head parsed, its body forwarded by `Content-Length` or chunk by chunk), so
//! that the figures are what crossed the wire, whatever either side thinks it sent.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What crossed the proxy since it started (or was last [`take`](Counters::take)n).
#[derive(Debug, Default)]
pub struct Counters {
    requests: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

/// One reading of the counters.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Traffic {
    pub requests: u64,
    /// Bytes from the CLI to the service: request heads and bodies.
    pub bytes_sent: u64,
    /// Bytes from the service to the CLI.
    pub bytes_received: u64,
}

impl Counters {
    /// The counts so far, and zero again.
    pub fn take(&self) -> Traffic {
        Traffic {
            requests: self.requests.swap(0, Ordering::SeqCst),
            bytes_sent: self.sent.swap(0, Ordering::SeqCst),
            bytes_received: self.received.swap(0, Ordering::SeqCst),
        }
    }
}

/// Listens on a free loopback port and forwards every connection to `upstream`; returns the
/// address to give clients and the counters.
pub async fn start(upstream: SocketAddr) -> anyhow::Result<(SocketAddr, Arc<Counters>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let counters = Arc::new(Counters::default());
    let shared = counters.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let counters = shared.clone();
            tokio::spawn(async move {
                if let Err(e) = forward(client, upstream, counters).await {
                    eprintln!("plinth-bench proxy: {e:#}");
                }
            });
        }
    });
    Ok((addr, counters))
}

async fn forward(
    client: TcpStream,
    upstream: SocketAddr,
    counters: Arc<Counters>,
) -> anyhow::Result<()> {
    client.set_nodelay(true)?;
    let server = TcpStream::connect(upstream)
        .await
        .context("connecting to the service")?;
    server.set_nodelay(true)?;
    let (client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let answers = counters.clone();
    let back = tokio::spawn(async move {
        let copied = copy_counting(&mut server_read, &mut client_write, &answers.received).await;
        let _ = client_write.shutdown().await;
        copied
    });
    let requests = requests(BufReader::new(client_read), &mut server_write, &counters).await;
    let _ = server_write.shutdown().await;
    back.await??;
    requests
}

/// Copies everything from `from` to `to`, adding the bytes to `count`.
async fn copy_counting(
    from: &mut (impl AsyncRead + Unpin),
    to: &mut (impl AsyncWrite + Unpin),
    count: &AtomicU64,
) -> anyhow::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        // Counted before it is passed on: whoever reads it may look at the counters next.
        count.fetch_add(n as u64, Ordering::Relaxed);
        to.write_all(&buf[..n]).await?;
    }
}

/// Forwards requests one by one until the client closes the connection.
async fn requests<R: AsyncRead + Unpin>(
    mut from: BufReader<R>,
    to: &mut (impl AsyncWrite + Unpin),
    counters: &Counters,
) -> anyhow::Result<()> {
    loop {
        let mut head = Vec::new();
        loop {
            let start = head.len();
            if from.read_until(b'\n', &mut head).await? == 0 {
                if head.is_empty() {
                    return Ok(());
                }
                bail!("the connection closed inside a request head");
            }
            if head[start..] == *b"\r\n" || head[start..] == *b"\n" {
                break;
            }
        }
        let body = body_framing(&head)?;
        to.write_all(&head).await?;
        let mut sent = head.len() as u64;
        sent += match body {
            Body::Length(n) => copy_exactly(&mut from, to, n).await?,
            Body::Chunked => copy_chunked(&mut from, to).await?,
        };
        counters.requests.fetch_add(1, Ordering::Relaxed);
        counters.sent.fetch_add(sent, Ordering::Relaxed);
    }
}

enum Body {
    Length(u64),
    Chunked,
}

/// How the body after `head` is framed (RFC 9112 §6): chunked, or `Content-Length` bytes
/// (none when neither is given).
fn body_framing(head: &[u8]) -> anyhow::Result<Body> {
    let text = std::str::from_utf8(head).context("a request head that is not UTF-8")?;
    let mut length = 0;
    for line in text.lines().skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked") {
            return Ok(Body::Chunked);
        }
        if name.eq_ignore_ascii_case("content-length") {
            length = value
                .parse()
                .with_context(|| format!("a Content-Length of {value:?}"))?;
        }
    }
    Ok(Body::Length(length))
}

async fn copy_exactly<R: AsyncRead + Unpin>(
    from: &mut BufReader<R>,
    to: &mut (impl AsyncWrite + Unpin),
    n: u64,
) -> anyhow::Result<u64> {
    let copied = tokio::io::copy(&mut from.take(n), to).await?;
    if copied != n {
        bail!("the connection closed inside a request body");
    }
    Ok(n)
}

/// Forwards a chunked body up to and including its last chunk and trailer.
async fn copy_chunked<R: AsyncRead + Unpin>(
    from: &mut BufReader<R>,
    to: &mut (impl AsyncWrite + Unpin),
) -> anyhow::Result<u64> {
    let mut total = 0;
    loop {
        let mut line = Vec::new();
        from.read_until(b'\n', &mut line).await?;
        to.write_all(&line).await?;
        total += line.len() as u64;
        let text = std::str::from_utf8(&line).context("a chunk size that is not UTF-8")?;
        let size = text.trim().split(';').next().unwrap_or_default();
        let size =
            u64::from_str_radix(size, 16).with_context(|| format!("a chunk size of {size:?}"))?;
        if size == 0 {
            // The trailer: header lines up to an empty one.
            loop {
                let mut line = Vec::new();
                if from.read_until(b'\n', &mut line).await? == 0 {
                    bail!("the connection closed inside a chunked trailer");
                }
                to.write_all(&line).await?;
                total += line.len() as u64;
                if line == b"\r\n" || line == b"\n" {
                    return Ok(total);
                }
            }
        }
        // The chunk and its CRLF.
        total += copy_exactly(from, to, size + 2).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_framed_by_length_or_chunks() {
        let framing = |head: &str| body_framing(head.as_bytes()).unwrap();
        assert!(matches!(
            framing("POST /x HTTP/1.1\r\ncontent-length: 12\r\n\r\n"),
            Body::Length(12)
        ));
        assert!(matches!(
            framing("GET /x HTTP/1.1\r\nHost: h\r\n\r\n"),
            Body::Length(0)
        ));
        assert!(matches!(
            framing("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Body::Chunked
        ));
        assert!(body_framing(b"POST /x HTTP/1.1\r\nContent-Length: x\r\n\r\n").is_err());
    }

    #[tokio::test]
    async fn requests_and_bytes_are_counted_as_they_cross() {
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream_addr = upstream.local_addr().unwrap();
        // An upstream that reads the requests, whatever their framing, then answers.
        tokio::spawn(async move {
            let (stream, _) = upstream.accept().await.unwrap();
            let (read, mut write) = stream.into_split();
            let mut sink = Vec::new();
            requests(BufReader::new(read), &mut sink, &Counters::default())
                .await
                .unwrap();
            write.write_all(b"0123456789").await.unwrap();
        });
        let (addr, counters) = start(upstream_addr).await.unwrap();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let first = b"POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
        let second = b"POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        client.write_all(first).await.unwrap();
        client.write_all(second).await.unwrap();
        client.shutdown().await.unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"0123456789");
        let traffic = counters.take();
        assert_eq!(traffic.requests, 2);
        assert_eq!(traffic.bytes_sent, (first.len() + second.len()) as u64);
        assert_eq!(traffic.bytes_received, 10);
        assert_eq!(
            counters.take().requests,
            0,
            "taken: counted from zero again"
        );
    }
}
