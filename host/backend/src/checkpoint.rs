//! The checkpoint file: a stack's snapshot with a schema version.

use std::path::Path;

use plinth_engine::snapshot::Snapshot;
use serde::{Deserialize, Serialize};

use crate::error::BackendError;

/// The checkpoint schema this plinth writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// What a checkpoint file holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    pub version: u32,
    pub project: String,
    pub stack: String,
    /// The plinth version that wrote the file.
    pub plinth: String,
    pub snapshot: Snapshot,
}

#[derive(Deserialize)]
struct VersionOnly {
    version: u32,
}

impl Checkpoint {
    pub fn new(project: &str, stack: &str, snapshot: Snapshot) -> Checkpoint {
        Checkpoint {
            version: SCHEMA_VERSION,
            project: project.to_owned(),
            stack: stack.to_owned(),
            plinth: env!("CARGO_PKG_VERSION").to_owned(),
            snapshot,
        }
    }

    /// Parses a checkpoint, checking its schema version before anything else so a file from
    /// another plinth is refused, never misread, and checking the snapshot's integrity.
    pub fn parse(bytes: &[u8], stack: &str, path: &Path) -> Result<Checkpoint, BackendError> {
        let corrupt = |reason: String| BackendError::Corrupt {
            path: path.to_owned(),
            reason,
        };
        let version: VersionOnly = serde_json::from_slice(bytes)
            .map_err(|e| corrupt(format!("{e} (no readable schema `version`)")))?;
        if version.version > SCHEMA_VERSION {
            return Err(BackendError::NewerSchema {
                stack: stack.to_owned(),
                found: version.version,
                supported: SCHEMA_VERSION,
            });
        }
        if version.version < SCHEMA_VERSION {
            return Err(BackendError::OlderSchema {
                stack: stack.to_owned(),
                found: version.version,
                supported: SCHEMA_VERSION,
            });
        }
        let checkpoint: Checkpoint =
            serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        checkpoint
            .snapshot
            .verify_integrity()
            .map_err(|e| corrupt(e.to_string()))?;
        Ok(checkpoint)
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a snapshot always serializes");
        bytes.push(b'\n');
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Checkpoint, BackendError> {
        Checkpoint::parse(json.as_bytes(), "dev", Path::new("dev.json"))
    }

    #[test]
    fn round_trips() {
        let cp = Checkpoint::new("p", "dev", Snapshot::default());
        let back = Checkpoint::parse(&cp.to_json(), "dev", Path::new("x")).unwrap();
        assert_eq!(back.snapshot, cp.snapshot);
    }

    #[test]
    fn refuses_newer_and_older_schemas() {
        let newer = r#"{"version": 99, "whatever": true}"#;
        assert!(matches!(
            parse(newer),
            Err(BackendError::NewerSchema { found: 99, .. })
        ));
        let older = r#"{"version": 0}"#;
        assert!(matches!(
            parse(older),
            Err(BackendError::OlderSchema { .. })
        ));
    }

    #[test]
    fn truncated_or_garbage_files_are_corrupt_not_panics() {
        for bad in ["", "{", "garbage", r#"{"version": 1, "snapshot": 3}"#] {
            assert!(
                matches!(parse(bad), Err(BackendError::Corrupt { .. })),
                "{bad}"
            );
        }
    }
}
