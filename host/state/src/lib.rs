//! The vocabulary of a stack's stored state, written once for both sides of the wire: the
//! checkpoint and its stored forms and upgrades, journal entries and the rebuild of a state
//! from them, history and log entries, who holds a stack, and the typed bodies and shared limits
//! of the service protocol. The CLI's backends (`plinth-backend`) and `plinth serve`
//! (`plinth-service`) both speak it.

mod carried;
mod checkpoint;
mod checkpoint_upgrade;
mod error;
mod history;
mod journal_short;
mod layout;
mod lock;
mod logs;
mod par;
pub mod protocol;
mod rebuild;
mod rename;
pub mod run_metadata;
pub mod secrets;
mod stack;
mod stored;
pub mod tags;
mod transfer;

pub use carried::CarriedCheckpoint;
pub use checkpoint::{
    Checkpoint, CheckpointView, CheckpointWritten, Decoded, PluginUse, SCHEMA_VERSION, UsedPlugins,
    check_fields, unrecordable_field,
};
pub use checkpoint_upgrade::{OLDEST_UPGRADED_SCHEMA, SchemaOneEntry};
pub use error::{InvalidState, StateError};
pub use history::{AppliedPlan, HistoryEntry, UpdateKind, UpdateResult};
pub use journal_short::{
    Begun, CREATED_AS_BEGUN, CreatedAsBegun, CreatedAsBegunRef, Line, decode_line,
};
pub use lock::{LockHolder, LockInfo};
pub use logs::{EventNumbering, LogEntry, LoggedEvent, UpdateLog};
pub use rebuild::{
    CHECKPOINT_HEAD, Creates, JournalBatch, ParsedBatch, Rebuilt, Replay, Replayer, rebuild_parsed,
    rebuild_sealed, rebuilt_as_is, rebuilt_as_is_by_head, seal_entry,
};
pub use rename::{rename_snapshot, renamed_checkpoint, version_as_stack};
pub use run_metadata::RunMetadata;
pub use stack::{LoadedStack, StackSummary, TornEnd};
pub use transfer::{ImportReport, imported_checkpoint};
