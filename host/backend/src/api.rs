//! The one interface the CLI stores stacks through, whichever backend holds them (files under a
//! directory today; a shared service tomorrow). The CLI holds an `Arc<dyn Backend>` and never
//! asks which it is.
//!
//! A stack is resolved once into a [`StackRef`]; every operation takes it, so a command makes no
//! further round trip to look the stack up again. Everything that changes a stack's state goes
//! through an [`Update`]: it holds the stack (a lock, or a service's lease) for as long as it
//! lives, and begins with the state to start from, in one call.

use std::sync::Arc;

use plinth_engine::events::Event;
use plinth_engine::journal::Persister;
use plinth_engine::names::{ProjectName, StackName};

use plinth_state::{
    HistoryEntry, ImportReport, LoadedStack, LockHolder, StackSummary, UpdateLog, UsedPlugins,
};

use plinth_state::protocol::ConfigKey;
use plinth_state::protocol::policy::RequiredPack;
use plinth_state::tags::StackTags;

use crate::edit::StateEdit;
use crate::error::BackendError;
use crate::secrets::Crypter;

/// A stack a backend found: what every operation on it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackRef {
    pub project: ProjectName,
    pub name: StackName,
}

impl std::fmt::Display for StackRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// Where stacks are stored.
pub trait Backend: Send + Sync {
    /// The backend's URL, as `plinth whoami` shows it.
    fn url(&self) -> String;
    /// Who the backend knows the caller as.
    fn user(&self) -> Result<String, BackendError>;
    /// Forgets what the backend keeps for the caller's session (`plinth logout`).
    fn logout(&self) -> Result<(), BackendError>;

    /// Creates an empty stack and selects it.
    fn create_stack(
        &self,
        project: &ProjectName,
        name: &StackName,
    ) -> Result<StackRef, BackendError>;
    /// The stack of that name; an error naming the command that creates it if there is none.
    fn get_stack(&self, project: &ProjectName, name: &StackName) -> Result<StackRef, BackendError>;
    /// The project's stacks, by name.
    fn list_stacks(&self, project: &ProjectName) -> Result<Vec<StackSummary>, BackendError>;
    /// Removes a stack; one that still has resources only with `force`. Returns what the
    /// backend keeps of it, to tell the user (a service keeps it, restorable, for a while).
    fn remove_stack(&self, stack: &StackRef, force: bool) -> Result<Option<String>, BackendError>;
    /// Renames a stack: its state (every URN names the stack), history, logs and tags move to
    /// `new`, and it stays selected if it was. Refused while an update holds it, or if `new`
    /// exists. The stack's configuration file is the caller's to move.
    fn rename_stack(&self, stack: &StackRef, new: &StackName) -> Result<StackRef, BackendError>;
    /// The stack's tags.
    fn tags(&self, stack: &StackRef) -> Result<StackTags, BackendError>;
    /// Sets tag `name` of the stack to `value` (both checked first).
    fn set_tag(&self, stack: &StackRef, name: &str, value: &str) -> Result<(), BackendError>;
    /// Removes tag `name`; whether the stack had it.
    fn remove_tag(&self, stack: &StackRef, name: &str) -> Result<bool, BackendError>;
    /// The stack later commands operate on, if one is selected.
    fn selected_stack(&self, project: &ProjectName) -> Option<StackName>;
    fn select_stack(&self, stack: &StackRef) -> Result<(), BackendError>;

    /// Seals and opens the stack's secrets: its configuration's and its state's.
    fn crypter(&self, stack: &StackRef) -> Arc<dyn Crypter>;

    /// The stack's state, for reading (`preview`, outputs): takes nothing.
    fn load(&self, stack: &StackRef) -> Result<LoadedStack, BackendError>;
    /// [`load`](Self::load) with every secret replaced by null: needs no key.
    fn load_redacted(&self, stack: &StackRef) -> Result<LoadedStack, BackendError>;

    /// Takes the stack for a change and returns the state to start from. `command` names the
    /// taker to anyone else who tries.
    fn begin_update(
        &self,
        stack: &StackRef,
        command: &str,
    ) -> Result<Box<dyn Update>, BackendError>;

    /// [`begin_update`](Self::begin_update), telling a backend that shows them (the service's
    /// console) the stack's configuration keys `config` (no secret's value).
    fn begin_update_with_config(
        &self,
        stack: &StackRef,
        command: &str,
        config: Vec<ConfigKey>,
    ) -> Result<Box<dyn Update>, BackendError> {
        let _ = config;
        self.begin_update(stack, command)
    }

    /// Who holds the stack, or held it and left it taken, if anyone.
    fn holder(&self, stack: &StackRef) -> Result<Option<LockHolder>, BackendError>;
    /// Frees the stack, whoever holds it (`plinth cancel`). What its holder recorded stays.
    fn cancel(&self, stack: &StackRef) -> Result<(), BackendError>;

    /// The stack's updates, newest first.
    fn history(&self, stack: &StackRef) -> Result<Vec<HistoryEntry>, BackendError>;
    /// The events of update `number` (as history counts them, the first being 1), or of the
    /// latest update if `None`; `None` when the stack has no such update.
    fn logs(
        &self,
        stack: &StackRef,
        number: Option<u64>,
    ) -> Result<Option<UpdateLog>, BackendError>;

    /// The stack's state as checkpoint JSON, its secrets sealed by the stack's crypter.
    fn export(&self, stack: &StackRef) -> Result<Vec<u8>, BackendError>;

    /// The checkpoint JSON of version `number` (the state history entry `number` left, the
    /// first being 1), its secrets sealed as they were; for `stack rollback`.
    fn version(&self, stack: &StackRef, number: u64) -> Result<Vec<u8>, BackendError>;

    /// The policy packs the backend enforces on the stack, their components fetched and
    /// checked against their digests. A local backend enforces none.
    fn policy_packs(&self, stack: &StackRef) -> Result<Vec<FetchedPack>, BackendError> {
        let _ = stack;
        Ok(Vec::new())
    }

    /// The user asked the command to stop (Ctrl-C): what is still to be recorded should not
    /// wait out an outage. A local backend has none to wait out.
    fn interrupted(&self) {}
}

/// A stack taken for a change: its lock or lease is held until this is dropped.
pub trait Update: Send {
    /// The state the change starts from (a journal an interrupted update left, folded in). It
    /// is opened on first use, so that a change that needs no plaintext (an edit by hand, an
    /// import over a damaged state) needs no key and reads no state it does not use.
    fn base(&mut self) -> Result<&LoadedStack, BackendError>;
    /// The state the change starts from, handed over: the caller, which runs the engine on
    /// it, then holds the only copy it needs (a stack of 100,000 resources takes hundreds of
    /// megabytes, and copying it a tenth of a second). By default a copy of
    /// [`base`](Self::base).
    fn take_base(&mut self) -> Result<LoadedStack, BackendError> {
        self.base().cloned()
    }
    /// Starts recording one phase of engine work (a refresh, then the update, say).
    fn record(&mut self, plugins: UsedPlugins) -> Result<Recording, BackendError>;
    /// Ends the phase begun by [`record`](Self::record): appends `entry` to the history; the
    /// base becomes the state the phase left.
    fn complete(&mut self, entry: &HistoryEntry) -> Result<(), BackendError>;
    /// The state, its secrets left sealed, for an edit by hand.
    fn load_for_edit(&mut self) -> Result<StateEdit, BackendError>;
    /// Writes an edit back if it passes the integrity checks, and records it in the history.
    fn save_edit(&mut self, edit: StateEdit, entry: &HistoryEntry) -> Result<(), BackendError>;
    /// Replaces the state with a checkpoint's (`stack import`), and records it in the history.
    fn import(
        &mut self,
        bytes: &[u8],
        force: bool,
        entry: &HistoryEntry,
    ) -> Result<ImportReport, BackendError>;
    /// The policy packs the backend told the update, as it began, to run (none locally).
    fn policy_packs(&self) -> &[RequiredPack] {
        &[]
    }
}

/// A policy pack a backend enforces, and its component, which matches its digest.
#[derive(Debug, Clone)]
pub struct FetchedPack {
    pub pack: RequiredPack,
    pub component: Vec<u8>,
}

/// Where a phase's work goes: its journal and its events.
pub struct Recording {
    pub persister: Box<dyn Persister>,
    pub events: Box<dyn EventLog>,
}

/// Keeps an update's events for `plinth logs`. Recording must be cheap: it runs beside the
/// steps and must never slow them.
pub trait EventLog: Send {
    fn record(&mut self, event: &Event);
    /// Makes what was recorded durable; the first failure to record, if any, is reported here.
    fn finish(self: Box<Self>) -> Result<(), BackendError>;
}
