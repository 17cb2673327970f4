//! The bound on provider calls in flight (`--parallel`), handed out in the order steps became
//! ready. A place in line is taken synchronously, when the scheduler starts a step, not when the
//! step's task first runs: tasks race to their first poll, so a semaphore acquired inside them
//! would serve them in whatever order the runtime happened to poll them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The operation was cancelled while a step waited for its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cancelled while waiting for a turn")]
pub(crate) struct Cancelled;

/// A fair, ordered limit on steps running at once.
#[derive(Clone)]
pub(crate) struct StepLimit {
    state: Arc<Mutex<LimitState>>,
    /// A first Ctrl-C ends every wait for a permit.
    cancel: CancellationToken,
}

struct LimitState {
    free: usize,
    /// Places in line, first come first served; a sender whose receiver is gone is skipped.
    queue: VecDeque<oneshot::Sender<()>>,
}

/// A place in line for a permit, taken when a step became ready.
pub(crate) struct Reservation {
    limit: StepLimit,
    turn: Turn,
}

enum Turn {
    Granted,
    Waiting(oneshot::Receiver<()>),
    Taken,
}

/// Held while a step runs; the next in line gets it when dropped.
pub(crate) struct Permit {
    limit: StepLimit,
}

impl StepLimit {
    pub(crate) fn new(permits: usize, cancel: CancellationToken) -> StepLimit {
        StepLimit {
            state: Arc::new(Mutex::new(LimitState {
                free: permits.clamp(1, super::MAX_PARALLEL),
                queue: VecDeque::new(),
            })),
            cancel,
        }
    }

    /// Takes the next place in line.
    pub(crate) fn reserve(&self) -> Reservation {
        let mut state = self.state.lock().expect("step limit");
        let turn = if state.free > 0 && state.queue.is_empty() {
            state.free -= 1;
            Turn::Granted
        } else {
            let (tx, rx) = oneshot::channel();
            state.queue.push_back(tx);
            Turn::Waiting(rx)
        };
        Reservation {
            limit: self.clone(),
            turn,
        }
    }

    /// Hands a freed permit to the first one still waiting in line, or keeps it.
    fn release(&self) {
        let mut state = self.state.lock().expect("step limit");
        while let Some(next) = state.queue.pop_front() {
            if next.send(()).is_ok() {
                return;
            }
        }
        state.free += 1;
    }
}

impl Reservation {
    /// Waits for this reservation's turn, unless the operation is cancelled first.
    pub(crate) async fn acquire(mut self) -> Result<Permit, Cancelled> {
        if let Turn::Waiting(rx) = &mut self.turn {
            tokio::select! {
                biased;
                _ = self.limit.cancel.cancelled() => return Err(Cancelled),
                granted = rx => granted.expect("a queued sender is only dropped after sending"),
            }
        }
        self.turn = Turn::Taken;
        Ok(Permit {
            limit: self.limit.clone(),
        })
    }
}

impl Drop for Reservation {
    /// A reservation given up passes on a permit it was granted (or is being granted).
    fn drop(&mut self) {
        let granted = match &mut self.turn {
            Turn::Granted => true,
            Turn::Waiting(rx) => {
                // Closed first, so that no permit can arrive after the check.
                rx.close();
                rx.try_recv().is_ok()
            }
            Turn::Taken => false,
        };
        if granted {
            self.limit.release();
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.limit.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn permits_go_in_the_order_places_were_taken() {
        let limit = StepLimit::new(1, CancellationToken::new());
        let first = limit.reserve().acquire().await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, mut done) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..50 {
            let reservation = limit.reserve();
            let (order, done_tx) = (order.clone(), done_tx.clone());
            tokio::spawn(async move {
                let _permit = reservation.acquire().await.unwrap();
                order.lock().unwrap().push(i);
                done_tx.send(()).unwrap();
            });
        }
        drop(first);
        for _ in 0..50 {
            done.recv().await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..50).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_dropped_reservation_passes_its_turn_on() {
        let limit = StepLimit::new(1, CancellationToken::new());
        let held = limit.reserve().acquire().await.unwrap();
        let skipped = limit.reserve();
        let next = limit.reserve();
        drop(held);
        drop(skipped);
        let permit = next.acquire().await.unwrap();
        drop(permit);
        assert!(limit.reserve().acquire().await.is_ok());
    }

    #[tokio::test]
    async fn cancellation_ends_a_wait_for_a_permit() {
        let cancel = CancellationToken::new();
        let limit = StepLimit::new(1, cancel.clone());
        let _held = limit.reserve().acquire().await.unwrap();
        let waiting = limit.reserve();
        cancel.cancel();
        assert!(matches!(waiting.acquire().await, Err(Cancelled)));
    }
}
