//! The thread that advances the engine's epoch, which is how call deadlines are enforced.

use std::sync::mpsc;
use std::thread::JoinHandle;

use wasmtime::Engine;

use crate::load::engine::EPOCH_TICK;

/// Advances the epoch every [`EPOCH_TICK`] while it lives. Everything that runs guest code holds
/// an `Arc` of it, so deadlines keep working as long as a guest can run; dropping the last one
/// stops the thread. The thread only holds a weak reference to the engine.
pub(crate) struct EpochTicker {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    pub(crate) fn start(engine: &Engine) -> std::io::Result<EpochTicker> {
        let engine = engine.weak();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("plinth-epoch".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(EPOCH_TICK) {
                    match engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })?;
        Ok(EpochTicker {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        // Disconnecting the channel wakes the thread at once.
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_promptly_on_drop() {
        // That the epoch advances is shown by the deadline tests with real components.
        let engine = crate::load::engine::new_engine(crate::load::tier::Tier::Optimized).unwrap();
        let ticker = EpochTicker::start(&engine).unwrap();
        std::thread::sleep(EPOCH_TICK * 3);
        let started = std::time::Instant::now();
        drop(ticker);
        assert!(
            started.elapsed() < EPOCH_TICK * 5,
            "stopping must not wait for a tick"
        );
    }
}
