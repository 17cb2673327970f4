//! A guest's stdout or stderr: each line is forwarded to `tracing`, and the last few are kept so
//! that a crash report can show what the guest printed (a Rust guest's panic message, notably).
//! Lines are masked (see [`crate::masking`]) before they go anywhere: a secret is only ever
//! masked whole, so output is masked per complete line, never per write.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;

use crate::masking::secret_masker;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// How many complete lines are kept for crash reports.
const KEPT_LINES: usize = 12;
/// Longer lines are cut to this many bytes.
const MAX_LINE: usize = 1024;

/// Where a guest's complete lines go: `(guest, line)`.
pub(crate) type LineSink = fn(&str, &str);

/// One output stream of one guest instance. Clones share the same buffer. Writes never fail
/// and never block: a guest that prints a lot only loses its oldest lines.
#[derive(Clone)]
pub(crate) struct OutputPipe(Arc<Mutex<PipeState>>);

struct PipeState {
    guest: Arc<str>,
    sink: LineSink,
    /// The line being written.
    partial: Vec<u8>,
    /// The last complete lines.
    recent: VecDeque<String>,
}

impl OutputPipe {
    pub(crate) fn new(guest: Arc<str>, sink: LineSink) -> OutputPipe {
        OutputPipe(Arc::new(Mutex::new(PipeState {
            guest,
            sink,
            partial: Vec::new(),
            recent: VecDeque::new(),
        })))
    }

    fn state(&self) -> MutexGuard<'_, PipeState> {
        // The state stays consistent even if a holder panicked: every update is a single push.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Forgets what was written so far: a new call starts.
    pub(crate) fn clear(&self) {
        let mut state = self.state();
        state.partial.clear();
        state.recent.clear();
    }

    /// The last lines written since [`clear`](Self::clear), an unterminated last line included.
    pub(crate) fn recent_lines(&self) -> Vec<String> {
        let state = self.state();
        let mut lines: Vec<String> = state.recent.iter().cloned().collect();
        if !state.partial.is_empty() {
            let partial = String::from_utf8_lossy(&state.partial);
            lines.push(secret_masker().mask(&partial).into_owned());
        }
        lines
    }

    fn append(&self, mut bytes: &[u8]) {
        let mut state = self.state();
        while !bytes.is_empty() {
            let (chunk, complete) = match bytes.iter().position(|&b| b == b'\n') {
                Some(end) => (&bytes[..end], true),
                None => (bytes, false),
            };
            let room = MAX_LINE.saturating_sub(state.partial.len());
            state
                .partial
                .extend_from_slice(&chunk[..chunk.len().min(room)]);
            bytes = &bytes[chunk.len() + usize::from(complete)..];
            if complete {
                state.end_line();
            }
        }
    }
}

impl PipeState {
    fn end_line(&mut self) {
        let line = String::from_utf8_lossy(&self.partial);
        let line = secret_masker()
            .mask(line.trim_end_matches('\r'))
            .into_owned();
        self.partial.clear();
        (self.sink)(&self.guest, &line);
        if self.recent.len() == KEPT_LINES {
            self.recent.pop_front();
        }
        self.recent.push_back(line);
    }
}

impl IsTerminal for OutputPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for OutputPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for OutputPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

#[async_trait::async_trait]
impl Pollable for OutputPipe {
    async fn ready(&mut self) {}
}

impl AsyncWrite for OutputPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe() -> OutputPipe {
        OutputPipe::new("test".into(), |_, _| {})
    }

    #[test]
    fn keeps_the_last_lines_and_the_unterminated_one() {
        let pipe = pipe();
        for i in 0..20 {
            pipe.append(format!("line {i}\r\n").as_bytes());
        }
        pipe.append(b"no newline");
        let lines = pipe.recent_lines();
        assert_eq!(lines.len(), KEPT_LINES + 1);
        assert_eq!(lines[0], format!("line {}", 20 - KEPT_LINES));
        assert_eq!(lines.last().unwrap(), "no newline");
        pipe.clear();
        assert!(pipe.recent_lines().is_empty());
    }

    #[test]
    fn a_secret_split_across_writes_is_masked_in_the_line_and_the_crash_report() {
        let logged = Arc::new(Mutex::new(Vec::new()));
        static LOGGED: std::sync::OnceLock<Arc<Mutex<Vec<String>>>> = std::sync::OnceLock::new();
        LOGGED.set(logged.clone()).unwrap();
        let pipe = OutputPipe::new("test".into(), |_, line| {
            LOGGED.get().unwrap().lock().unwrap().push(line.to_owned());
        });
        secret_masker().learn_text("split-secret-8f3e");
        pipe.append(b"pw=split-se");
        pipe.append(b"cret-8f3e!\nthen split-sec");
        assert_eq!(logged.lock().unwrap().as_slice(), ["pw=[secret]!"]);
        pipe.append(b"ret-8f3e");
        assert_eq!(pipe.recent_lines(), ["pw=[secret]!", "then [secret]"]);
    }

    #[test]
    fn joins_lines_split_across_writes_and_cuts_long_ones() {
        let pipe = pipe();
        pipe.append(b"hel");
        pipe.append(b"lo\nwor");
        pipe.append(b"ld\n");
        pipe.append(&vec![b'x'; 5000]);
        pipe.append(b"\n");
        let lines = pipe.recent_lines();
        assert_eq!(lines[..2], ["hello", "world"]);
        assert_eq!(lines[2].len(), MAX_LINE);
    }
}
