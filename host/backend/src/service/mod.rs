//! The client side of `plinth serve`'s protocol (`/api/v1/…`): requests retried through
//! transient failures, and the persister that sends an update's journal in numbered batches.

mod persister;
mod transport;

pub use persister::{MAX_BATCH, ServicePersister};
pub use transport::{ServiceError, Transport};
