//! What the journal records: one entry per mutation of the state, before and after each
//! provider call.

use serde::Serialize;

use crate::resource::ResourceState;
use crate::snapshot::PendingKind;
use crate::urn::Urn;
use crate::value::PropertyMap;

/// One record of the journal. Serialized with its tag first, which its reading
/// ([`read`](super::read)) counts on to read it without buffering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "entry", rename_all = "kebab-case")]
pub enum JournalEntry {
    /// A provider call is about to start.
    Begin {
        seq: u64,
        kind: PendingKind,
        resource: ResourceState,
        /// The base resource an update or delete operates on, or that a create replaces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old: Option<usize>,
    },
    /// A resource was created; with `replaces`, it replaces that base resource, which stays in
    /// the snapshot marked for deletion.
    Created {
        seq: u64,
        resource: ResourceState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replaces: Option<usize>,
    },
    Updated {
        seq: u64,
        old: usize,
        resource: ResourceState,
    },
    /// A base resource was deleted (or, without `seq`, dropped from state without a provider
    /// call, as `retain_on_delete` asks).
    Deleted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
        old: usize,
    },
    /// The operation failed without changing anything.
    Failed { seq: u64 },
    /// A base resource is carried over; `resource` is set when its recorded state changed.
    Same {
        old: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource: Option<ResourceState>,
    },
    /// The outputs of a component resource recorded earlier in this operation (the stack's
    /// outputs are its root's).
    ComponentOutputs { urn: Urn, outputs: PropertyMap },
    /// A base resource found gone out of band leaves the snapshot, and the references other
    /// states hold to it are dropped.
    Forgotten { old: usize },
    /// A pending operation an earlier, interrupted operation left is resolved: dropped, or (a
    /// create) adopted by a `Created` entry of its own.
    ResolvePending { kind: PendingKind, urn: Urn },
}

impl JournalEntry {
    /// The start of a provider call, which must be durable before the call is made.
    pub fn is_begin(&self) -> bool {
        matches!(self, JournalEntry::Begin { .. })
    }

    /// The resource state the entry records, if it records one.
    pub(super) fn state(&self) -> Option<&ResourceState> {
        match self {
            JournalEntry::Begin { resource, .. }
            | JournalEntry::Created { resource, .. }
            | JournalEntry::Updated { resource, .. }
            | JournalEntry::Same {
                resource: Some(resource),
                ..
            } => Some(resource),
            _ => None,
        }
    }
}
