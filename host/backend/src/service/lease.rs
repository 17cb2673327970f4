//! Keeps an update's lease: renews it at half its duration on a thread of its own, so that slow
//! steps never let it lapse, until dropped. A lease found lost (403) is recorded for the update
//! to stop on; a renewal that fails for a while is retried at the next tick. Dropping the keeper
//! stops it without waiting: a renewal under way (riding out an outage) ends on its own.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plinth_state::protocol::Renewed;

use super::transport::{ServiceError, Transport};

/// What the keeper knows of the lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    /// Held until this Unix time, as the service last said.
    Held { expires: i64 },
    /// Lost: cancelled, or expired and taken. The message says which.
    Lost(String),
}

/// Renews a lease until dropped.
pub struct LeaseKeeper {
    state: Arc<Mutex<LeaseState>>,
    /// Dropped with the keeper, which ends the renewing thread's wait.
    _stop: mpsc::Sender<()>,
}

impl LeaseKeeper {
    /// Starts renewing lease `lease` of update `update`, which lasts `seconds` and expires at
    /// `expires`.
    pub fn start(
        transport: Transport,
        update: &str,
        lease: &str,
        seconds: f64,
        expires: i64,
    ) -> LeaseKeeper {
        let state = Arc::new(Mutex::new(LeaseState::Held { expires }));
        let (stop, stopped) = mpsc::channel();
        let every = Duration::from_secs_f64((seconds / 2.0).max(0.05));
        let path = format!("updates/{update}/renew");
        let (lease, shared) = (lease.to_owned(), state.clone());
        std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                let renewed = transport.call("POST", &path, Some(&lease), None);
                let mut state = shared.lock().expect("the lease state is never poisoned");
                match renewed {
                    Ok(answer) => {
                        if let Ok(renewed) = serde_json::from_value::<Renewed>(answer) {
                            *state = LeaseState::Held {
                                expires: renewed.lease_expires,
                            };
                        }
                    }
                    Err(ServiceError::LeaseLost(message)) => {
                        *state = LeaseState::Lost(message);
                        return;
                    }
                    // Unreachable after the transport's retries: the next tick tries again, and
                    // the service answers whether the lease outlived the outage.
                    Err(_) => {}
                }
            }
        });
        LeaseKeeper { state, _stop: stop }
    }

    /// What the keeper last learned of the lease.
    pub fn state(&self) -> LeaseState {
        self.state
            .lock()
            .expect("the lease state is never poisoned")
            .clone()
    }
}
