//! Reading checkpoints of an older schema this plinth still understands, and bringing them to
//! the current one. Only the next update writes the upgraded checkpoint back, so reading a
//! stack never changes its files.
//!
//! Schema 1 kept the stack's outputs beside the resources and had no root resource; schema 2
//! gives every stack a root (`plinth:plinth:Stack`) that holds the outputs and parents every
//! resource registered without a parent. Schema 3 stores the same snapshot with less: what is
//! implied (a parent that is the root, empty property maps) is left out (see `stored.rs`); a
//! schema-2 file needs nothing more than being read.

use std::path::Path;

use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::PropertyMap;
use serde::Deserialize;

use crate::checkpoint::{Checkpoint, SCHEMA_VERSION};
use crate::error::StateError;
use crate::secrets::{CodecError, Crypter, from_sealed_json};

/// The oldest schema this plinth upgrades on load.
pub const OLDEST_UPGRADED_SCHEMA: u32 = 1;

/// The first schema whose stacks have a root resource.
pub(crate) const ROOTED_SINCE: u32 = 2;

/// A checkpoint as its file holds it, before any upgrade.
#[derive(Debug)]
pub struct Decoded {
    pub checkpoint: Checkpoint,
    /// The stack outputs of a schema-1 file, kept beside the resources; `None` for a file of
    /// the current schema.
    pub legacy_outputs: Option<PropertyMap>,
}

/// The part of a schema-1 checkpoint the current schema keeps elsewhere.
#[derive(Deserialize)]
struct SchemaOne {
    snapshot: SchemaOneSnapshot,
}

#[derive(Deserialize)]
struct SchemaOneSnapshot {
    #[serde(default)]
    outputs: PropertyMap,
}

/// A journal entry only a schema-1 plinth writes: the stack's outputs.
#[derive(Deserialize)]
#[serde(tag = "entry", rename_all = "kebab-case")]
pub enum SchemaOneEntry {
    StackOutputs { outputs: PropertyMap },
}

impl Decoded {
    /// Reads the stack outputs of a schema-1 file, which the checkpoint itself ignores.
    pub fn schema_one(
        checkpoint: Checkpoint,
        bytes: &[u8],
        crypter: &dyn Crypter,
        path: &Path,
    ) -> Result<Decoded, StateError> {
        let one: SchemaOne = from_sealed_json(bytes, crypter).map_err(|e| match e {
            CodecError::Json(e) => StateError::Corrupt {
                path: path.to_owned(),
                reason: e.to_string(),
            },
            CodecError::Secrets(e) => e.into(),
        })?;
        Ok(Decoded {
            checkpoint,
            legacy_outputs: Some(one.snapshot.outputs),
        })
    }

    /// The checkpoint in the current schema, with `snapshot` (this checkpoint's, or what a
    /// journal made of it) in place of its own; `journal_outputs` are stack outputs a
    /// schema-1 journal recorded after the checkpoint.
    pub fn upgrade(self, snapshot: Snapshot, journal_outputs: Option<PropertyMap>) -> Checkpoint {
        let mut checkpoint = Checkpoint {
            snapshot,
            ..self.checkpoint
        };
        if let Some(outputs) = journal_outputs.or(self.legacy_outputs) {
            let (project, stack) = (checkpoint.project.clone(), checkpoint.stack.clone());
            checkpoint.snapshot.adopt_root(&project, &stack, outputs);
        }
        checkpoint.version = SCHEMA_VERSION;
        checkpoint
    }

    /// [`upgrade`](Self::upgrade) of the checkpoint's own snapshot.
    pub fn upgraded(self) -> Checkpoint {
        let snapshot = self.checkpoint.snapshot.clone();
        self.upgrade(snapshot, None)
    }
}
