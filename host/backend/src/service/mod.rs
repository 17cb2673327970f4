//! The client side of `plinth serve`'s protocol (`/api/v1/…`): the [`Backend`](crate::Backend)
//! over it, requests retried through transient failures, the keeper renewing an update's lease,
//! and the persister that sends an update's journal in numbered batches.

mod backend;
mod lease;
mod persister;
mod transport;

pub use backend::ServiceBackend;
pub use lease::{LeaseKeeper, LeaseState};
pub use persister::{MAX_BATCH, ServicePersister};
pub use transport::{ServiceError, Transport};
