//! The snapshot manager: one writer that records every mutation of a stack's state during an
//! operation as a journal entry, before and after each provider call.
//!
//! Entries refer to resources of the *base* snapshot (the checkpoint the operation started from)
//! by index. The snapshot they describe is: resources the operation recorded, in the order it
//! recorded them, followed by the base resources it did not touch. Steps complete only after the
//! steps they depend on, so that order is always topological.
//!
//! `entry` is what the journal records and `read` how it is read back; `state` the snapshot a
//! base and entries describe (its tables in `undo`, every change logged to be taken back);
//! `persist` where entries go and `writer` the snapshot manager that records them. The
//! submodules import from each other, never from this module's re-exports.

mod entry;
mod error;
mod persist;
mod read;
mod state;
mod undo;
mod writer;

pub use entry::JournalEntry;
pub use error::SnapshotError;
pub use persist::{PersistCause, PersistError, Persister, SyncWaker};
pub use state::{JournalState, replay, replay_unchecked};
pub use writer::SnapshotManager;
