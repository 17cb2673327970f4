//! The guest's own connection, as the host's TLS client reads and writes it: a guest's
//! `wasi:io` input and output streams (from a connection the sandbox already checked against
//! the grants) seen as one tokio byte stream.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, StreamError};

/// The most read or written in one step: a TLS record is at most 16 KiB plus overhead.
const CHUNK: usize = 64 * 1024;

type Waiting<S> = Pin<Box<dyn Future<Output = S> + Send>>;

/// A stream, or the wait for it to become ready, which owns it meanwhile.
enum Side<S> {
    Idle(S),
    Waiting(Waiting<S>),
    /// Only while a state changes.
    Moving,
}

impl<S: wasmtime_wasi::p2::Pollable> Side<S> {
    /// Starts waiting for the stream to become ready.
    fn wait(&mut self) {
        if let Side::Idle(mut stream) = std::mem::replace(self, Side::Moving) {
            *self = Side::Waiting(Box::pin(async move {
                stream.ready().await;
                stream
            }));
        }
    }

    /// The stream, once it is ready (right away if no wait is under way).
    fn poll_idle(&mut self, cx: &mut Context<'_>) -> Poll<&mut S> {
        if let Side::Waiting(wait) = self {
            let stream = ready!(wait.as_mut().poll(cx));
            *self = Side::Idle(stream);
        }
        match self {
            Side::Idle(stream) => Poll::Ready(stream),
            Side::Waiting(_) | Side::Moving => unreachable!("a wait ended above"),
        }
    }
}

/// The guest's connection, read and written by the host's TLS client.
pub(crate) struct Transport {
    input: Side<DynInputStream>,
    output: Side<DynOutputStream>,
    /// A flush was asked of the output and is not confirmed yet.
    flushing: bool,
}

impl Transport {
    pub(crate) fn new(input: DynInputStream, output: DynOutputStream) -> Transport {
        Transport {
            input: Side::Idle(input),
            output: Side::Idle(output),
            flushing: false,
        }
    }
}

fn io_error(error: StreamError) -> io::Error {
    match error {
        StreamError::Closed => io::Error::new(io::ErrorKind::BrokenPipe, "the connection closed"),
        StreamError::LastOperationFailed(e) | StreamError::Trap(e) => io::Error::other(e),
    }
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let input = ready!(this.input.poll_idle(cx));
            match input.read(buf.remaining().min(CHUNK)) {
                Ok(bytes) if bytes.is_empty() => this.input.wait(),
                Ok(bytes) => {
                    buf.put_slice(&bytes);
                    return Poll::Ready(Ok(()));
                }
                // The end of the stream: nothing more is put in `buf`.
                Err(StreamError::Closed) => return Poll::Ready(Ok(())),
                Err(e) => return Poll::Ready(Err(io_error(e))),
            }
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            let output = ready!(this.output.poll_idle(cx));
            match output.check_write() {
                Ok(0) => this.output.wait(),
                Ok(permitted) => {
                    let n = permitted.min(data.len()).min(CHUNK);
                    output
                        .write(Bytes::copy_from_slice(&data[..n]))
                        .map_err(io_error)?;
                    return Poll::Ready(Ok(n));
                }
                Err(e) => return Poll::Ready(Err(io_error(e))),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let output = ready!(this.output.poll_idle(cx));
            if !this.flushing {
                output.flush().map_err(io_error)?;
                this.flushing = true;
            }
            // After a flush, the stream permits writes again once everything went out.
            match output.check_write() {
                Ok(0) => this.output.wait(),
                Ok(_) => {
                    this.flushing = false;
                    return Poll::Ready(Ok(()));
                }
                Err(e) => return Poll::Ready(Err(io_error(e))),
            }
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The guest's stream cannot half-close its socket: flushing is all there is to do.
        self.poll_flush(cx)
    }
}
