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

use plinth_engine::value::PropertyMap;
use serde::Deserialize;

use crate::error::StateError;
use crate::secrets::{CodecError, Crypter, from_sealed_json};

/// The oldest schema this plinth upgrades on load.
pub const OLDEST_UPGRADED_SCHEMA: u32 = 1;

/// The first schema whose stacks have a root resource.
pub(crate) const ROOTED_SINCE: u32 = 2;

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

/// The stack outputs of a schema-1 file, kept beside the resources, which the checkpoint itself
/// ignores.
pub(crate) fn schema_one_outputs(
    bytes: &[u8],
    crypter: &dyn Crypter,
    path: &Path,
) -> Result<PropertyMap, StateError> {
    let one: SchemaOne = from_sealed_json(bytes, crypter).map_err(|e| match e {
        CodecError::Json(e) => StateError::Corrupt {
            path: path.to_owned(),
            reason: e.to_string(),
        },
        CodecError::Secrets(e) => e.into(),
    })?;
    Ok(one.snapshot.outputs)
}
