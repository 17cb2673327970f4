//! State storage. The local backend keeps each stack's checkpoint, the journal of an update in
//! progress, and the update lock as files under one state directory.

mod checkpoint;
mod edit;
mod error;
mod history;
mod journal_file;
mod local;
mod lock;
pub mod secrets;
mod transfer;
mod upgrade;

pub use checkpoint::{Checkpoint, PluginUse, SCHEMA_VERSION, UsedPlugins};
pub use edit::StateEdit;
pub use error::BackendError;
pub use history::{HistoryEntry, UpdateKind, UpdateResult};
pub use journal_file::write_atomically;
pub use local::{LoadedStack, LocalBackend, StackSummary};
pub use lock::{LockHolder, LockInfo, StackLock};
pub use transfer::ImportReport;
pub use upgrade::OLDEST_UPGRADED_SCHEMA;
