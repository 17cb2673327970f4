//! The client side of `plinth serve`'s protocol (`/api/v1/…`): the [`Backend`](crate::Backend)
//! over it, requests retried through transient failures, the keeper renewing an update's lease,
//! the persister that sends an update's journal in numbered batches, the log that sends its
//! engine events, and the crypter of service-managed secrets.

mod backend;
mod crypter;
mod events;
mod lease;
mod oidc;
mod persister;
mod policy_packs;
mod resolver;
mod transport;
mod version_check;

pub use backend::ServiceBackend;
pub use crypter::ServiceCrypter;
pub use events::{ServiceEventLog, fetch_log};
pub use lease::{LeaseKeeper, LeaseState};
pub use oidc::exchange_id_token;
pub use persister::ServicePersister;
pub use plinth_state::protocol::Exchanged;
pub use transport::{ServiceError, Transport};
