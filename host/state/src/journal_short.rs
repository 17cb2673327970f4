//! Journal lines shorter than the entries they stand for. A create's end leaves the resource as
//! its `begin` entry recorded it, but for the id and outputs the provider returned: the journal
//! file, and the client of a service that accepts it, record only those (`created-as-begun`),
//! and the reader completes them from the `begin` entry before. Every other entry is written
//! whole.

use std::collections::HashMap;

use plinth_engine::journal::JournalEntry;
use plinth_engine::resource::ResourceState;
use plinth_engine::snapshot::PendingKind;
use plinth_engine::value::PropertyMap;
use serde::{Deserialize, Serialize};

use crate::secrets::{CodecError, Crypter, from_sealed_json};

/// What a service's begin answer lists in `journal_extensions` when it takes
/// `created-as-begun` entries.
pub const CREATED_AS_BEGUN: &str = "created-as-begun";

/// How plinth writes a short entry: its tag first, so most are told apart by their first bytes.
const SHORT_PREFIX: &[u8] = br#"{"entry":"created-as-begun""#;

/// One entry of a journal that may hold short ones, as read.
pub enum Line {
    Entry(JournalEntry),
    /// To be completed by [`Begun::complete`].
    Short(CreatedAsBegun),
}

/// Reads `bytes`, an entry or a short one, opening its secrets with `crypter`. The error is the
/// entry's when it is neither.
pub fn decode_line(bytes: &[u8], crypter: &dyn Crypter) -> Result<Line, CodecError> {
    if bytes.starts_with(SHORT_PREFIX) {
        return from_sealed_json(bytes, crypter).map(Line::Short);
    }
    match from_sealed_json(bytes, crypter) {
        Ok(entry) => Ok(Line::Entry(entry)),
        Err(e @ CodecError::Secrets(_)) => Err(e),
        // Written otherwise (spaced, its tag later): tried as a short entry before giving up.
        Err(e) => from_sealed_json(bytes, crypter)
            .map(Line::Short)
            .map_err(|_| e),
    }
}

/// A `created-as-begun` line, as written.
#[derive(Serialize)]
#[serde(tag = "entry", rename = "created-as-begun")]
pub struct CreatedAsBegunRef<'a> {
    seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    replaces: Option<usize>,
    #[serde(skip_serializing_if = "str::is_empty")]
    id: &'a str,
    #[serde(skip_serializing_if = "PropertyMap::is_empty")]
    outputs: &'a PropertyMap,
}

/// A `created-as-begun` line, as read.
#[derive(Deserialize)]
pub struct CreatedAsBegun {
    /// Read as a field, so that it is checked: serde ignores a struct's `tag` when reading it,
    /// and any entry with a `seq` would be taken for a short one.
    #[serde(rename = "entry")]
    _entry: ShortTag,
    seq: u64,
    #[serde(default)]
    replaces: Option<usize>,
    #[serde(default)]
    id: String,
    #[serde(default)]
    outputs: PropertyMap,
}

/// The tag of a short entry, the only one it may have.
#[derive(Deserialize)]
enum ShortTag {
    #[serde(rename = "created-as-begun")]
    CreatedAsBegun,
}

/// The resources of the operations begun and not ended yet in a journal, by sequence number:
/// what a `created-as-begun` line completes. The writer and the reader each keep one.
#[derive(Debug, Default)]
pub struct Begun {
    open: HashMap<u64, ResourceState>,
}

impl Begun {
    /// The short line for `entry`, if it has one.
    pub fn shorten<'a>(&self, entry: &'a JournalEntry) -> Option<CreatedAsBegunRef<'a>> {
        let JournalEntry::Created {
            seq,
            resource,
            replaces,
        } = entry
        else {
            return None;
        };
        let begun = self.open.get(seq)?;
        as_begun(begun, resource).then_some(CreatedAsBegunRef {
            seq: *seq,
            replaces: *replaces,
            id: &resource.id,
            outputs: &resource.outputs,
        })
    }

    /// Follows `entry`, once it is in the journal.
    pub fn follow(&mut self, entry: &JournalEntry) {
        match entry {
            // Only a create ends in a `created` entry: the states of other operations are not
            // kept (a destroy begins as many deletes as it has resources).
            JournalEntry::Begin {
                seq,
                kind: PendingKind::Creating,
                resource,
                ..
            } => {
                self.open.insert(*seq, resource.clone());
            }
            JournalEntry::Created { seq, .. }
            | JournalEntry::Updated { seq, .. }
            | JournalEntry::Failed { seq }
            | JournalEntry::Deleted { seq: Some(seq), .. } => {
                self.open.remove(seq);
            }
            _ => {}
        }
    }

    /// Forgets the operations begun by entries that were not kept after all.
    pub fn forget(&mut self, seqs: impl IntoIterator<Item = u64>) {
        for seq in seqs {
            self.open.remove(&seq);
        }
    }

    /// The entry a `created-as-begun` line stands for; `None` if no `begin` line began it.
    pub fn complete(&mut self, line: CreatedAsBegun) -> Option<JournalEntry> {
        let CreatedAsBegun {
            _entry,
            seq,
            replaces,
            id,
            outputs,
        } = line;
        let mut resource = self.open.remove(&seq)?;
        resource.id = id;
        resource.outputs = outputs;
        Some(JournalEntry::Created {
            seq,
            resource,
            replaces,
        })
    }
}

impl CreatedAsBegun {
    /// The operation it ends.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// Whether `created` is `begun` but for its id and outputs.
fn as_begun(begun: &ResourceState, created: &ResourceState) -> bool {
    // Every field named, so that a field the engine adds cannot be left out unnoticed.
    let ResourceState {
        urn,
        ty,
        custom,
        id: _,
        inputs,
        outputs: _,
        parent,
        dependencies,
        protect,
        retain_on_delete,
        delete,
        provider,
        custom_timeouts,
    } = created;
    (urn, ty, custom, inputs, parent, dependencies)
        == (
            &begun.urn,
            &begun.ty,
            &begun.custom,
            &begun.inputs,
            &begun.parent,
            &begun.dependencies,
        )
        && (protect, retain_on_delete, delete, provider, custom_timeouts)
            == (
                &begun.protect,
                &begun.retain_on_delete,
                &begun.delete,
                &begun.provider,
                &begun.custom_timeouts,
            )
}
