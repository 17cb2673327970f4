//! `stack export` of a checkpoint as plinth writes it: each resource's sealed secrets carried
//! through in its text as it is, never opened into the value tree and written back (which, for
//! a stack of many secrets, cost more than the rest of the export). What this path does not
//! take on (another schema, another stack's file, a secret in another form, a resource written
//! another way, a checkpoint that fails a check) is read the ordinary way, which also says what
//! is wrong and where.

use std::path::Path;

use plinth_engine::names::{ProjectName, StackName};

use crate::checkpoint::{Checkpoint, CheckpointFile, CheckpointWritten, SCHEMA_VERSION};
use crate::stored::{Carried, SealedSnapshot, StoredSnapshot, WrittenSnapshot};

/// A checkpoint read with its sealed secrets standing unopened, each resource's text kept.
pub struct CarriedCheckpoint {
    checkpoint: Checkpoint,
    carried: Vec<Carried>,
}

impl CarriedCheckpoint {
    /// Reads checkpoint `bytes` of `stack` as [`Checkpoint::parse`] does, with the same checks,
    /// opening no secret. `None` if the file is not of the current schema, names another stack,
    /// holds a secret in another form than plinth's own or fails to read or a check: read it
    /// with [`Checkpoint::parse`] instead.
    pub fn read(bytes: &[u8], stack: &str, path: &Path) -> Option<CarriedCheckpoint> {
        let head = Checkpoint::head(bytes, path).ok()?;
        if head.version != SCHEMA_VERSION || head.stack.is_some_and(|found| found != stack) {
            return None;
        }
        let file: CheckpointFile<SealedSnapshot> = serde_json::from_slice(bytes).ok()?;
        let mut carried = Vec::new();
        let checkpoint = file
            .try_map_snapshot(|sealed| {
                let (snapshot, kept) = sealed.carry()?;
                carried = kept;
                Some(snapshot)
            })?
            .into_checkpoint(StoredSnapshot::into_snapshot);
        checkpoint.snapshot.verify_integrity().ok()?;
        checkpoint.snapshot.check_fields().ok()?;
        Some(CarriedCheckpoint {
            checkpoint,
            carried,
        })
    }

    /// What [`Checkpoint::to_json`] writes of this state as `project`'s stack `stack`, with
    /// every secret still sealed as it was read, at no cost per secret. `None` if a resource
    /// would not be written as it was read (its keys in another order than plinth writes
    /// them): write the state read by [`Checkpoint::parse`] instead.
    pub fn to_json(self, project: &ProjectName, stack: &StackName) -> Option<Vec<u8>> {
        let Checkpoint {
            plugins, snapshot, ..
        } = self.checkpoint;
        CheckpointWritten {
            version: SCHEMA_VERSION,
            project,
            stack,
            plinth: env!("CARGO_PKG_VERSION"),
            plugins: &plugins,
            snapshot: WrittenSnapshot::carried(&snapshot, self.carried)?,
        }
        .to_json()
        .ok()
    }
}
