//! State storage, behind one [`Backend`] interface: [`<dyn Backend>::open`](Backend#method.open) picks the implementation
//! a backend URL names. The file backend ([`local`]) keeps each stack's checkpoint, the journal
//! of an update in progress, and the update lock as files under one state directory; the
//! service backend ([`service`]) is the client of `plinth serve`. What they store is spoken in
//! `plinth-state`'s vocabulary, re-exported here.

mod api;
mod compression;
mod edit;
mod error;
mod files;
pub mod local;
mod open;
pub mod secrets;
pub mod service;

pub use api::{Backend, EventLog, FetchedPack, Recording, StackRef, Update};
pub use edit::StateEdit;
pub use error::BackendError;
pub use files::write_atomically;
pub use local::{LocalBackend, StackLock};
pub use open::{Scheme, ServiceLogin};
pub use plinth_state::protocol::ConfigKey;
pub use plinth_state::protocol::policy::{PackLimits, RequiredPack};
pub use plinth_state::run_metadata;
pub use plinth_state::tags::{StackTags, TagError};
pub use plinth_state::{
    AppliedPlan, CREATED_AS_BEGUN, Checkpoint, Creates, EventNumbering, HistoryEntry, ImportReport,
    InvalidState, JournalBatch, LoadedStack, LockHolder, LockInfo, LogEntry, LoggedEvent,
    OLDEST_UPGRADED_SCHEMA, ParsedBatch, PluginUse, Rebuilt, Replay, RunMetadata, SCHEMA_VERSION,
    StackSummary, StateError, TornEnd, UpdateKind, UpdateLog, UpdateResult, UsedPlugins,
    rebuild_parsed, rebuild_sealed, rebuilt_as_is, seal_entry, version_as_stack,
};
