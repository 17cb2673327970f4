//! A connection's pair of `wasi:io` streams as `std::io::Read` and `Write`, each wait made
//! through `wasi:io/poll` (which the host bounds by the call's deadline).

use std::io;

use wasip2::io::streams::{InputStream, OutputStream, StreamError};

/// The most asked for or handed over at once.
const CHUNK: u64 = 64 * 1024;

/// The two streams of one connection.
pub(crate) struct Streams {
    pub(crate) input: InputStream,
    pub(crate) output: OutputStream,
}

fn stream_error(error: StreamError) -> io::Error {
    match error {
        StreamError::Closed => io::Error::new(io::ErrorKind::BrokenPipe, "the connection closed"),
        StreamError::LastOperationFailed(e) => io::Error::other(e.to_debug_string()),
    }
}

impl io::Read for Streams {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let want = (buf.len() as u64).min(CHUNK);
            match self.input.read(want) {
                Ok(bytes) if bytes.is_empty() => self.input.subscribe().block(),
                Ok(bytes) => {
                    buf[..bytes.len()].copy_from_slice(&bytes);
                    return Ok(bytes.len());
                }
                // The end of the stream.
                Err(StreamError::Closed) => return Ok(0),
                Err(e) => return Err(stream_error(e)),
            }
        }
    }
}

impl io::Write for Streams {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.output.check_write() {
                Ok(0) => self.output.subscribe().block(),
                Ok(permitted) => {
                    let n = buf.len().min(permitted.min(CHUNK) as usize);
                    self.output.write(&buf[..n]).map_err(stream_error)?;
                    return Ok(n);
                }
                Err(e) => return Err(stream_error(e)),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.output.flush().map_err(stream_error)?;
        // Writable again once everything went out.
        loop {
            match self.output.check_write() {
                Ok(0) => self.output.subscribe().block(),
                Ok(_) => return Ok(()),
                Err(e) => return Err(stream_error(e)),
            }
        }
    }
}
