//! State storage, behind one [`Backend`] interface. The local backend keeps each stack's
//! checkpoint, the journal of an update in progress, and the update lock as files under one
//! state directory.

mod api;
mod checkpoint;
mod edit;
mod error;
mod history;
mod journal_file;
mod journal_short;
mod layout;
mod local;
mod local_update;
mod lock;
mod logs;
mod rebuild;
pub mod run_metadata;
pub mod secrets;
pub mod service;
mod stored;
mod transfer;
mod upgrade;

pub use api::{Backend, EventLog, Recording, StackRef, Update};
pub use checkpoint::{Checkpoint, PluginUse, SCHEMA_VERSION, UsedPlugins};
pub use edit::StateEdit;
pub use error::{BackendError, InvalidState};
pub use history::{HistoryEntry, UpdateKind, UpdateResult};
pub use journal_file::{TornEnd, write_atomically};
pub use journal_short::CREATED_AS_BEGUN;
pub use local::{LoadedStack, LocalBackend, StackSummary};
pub use lock::{LockHolder, LockInfo, StackLock};
pub use logs::{EventNumbering, LogEntry, LoggedEvent, UpdateLog};
pub use rebuild::{
    Creates, JournalBatch, ParsedBatch, Rebuilt, Replay, rebuild_parsed, rebuild_sealed,
    rebuilt_as_is, seal_entry,
};
pub use run_metadata::RunMetadata;
pub use transfer::ImportReport;
pub use upgrade::OLDEST_UPGRADED_SCHEMA;
