//! `stack import`: replace a stack's state with a checkpoint from elsewhere.

use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::is_stack_type;

use crate::checkpoint::Checkpoint;
use crate::error::BackendError;
use crate::journal_file::write_atomically;
use crate::local::LocalBackend;
use crate::lock::StackLock;
use crate::secrets::Crypter;

/// What an import did.
#[derive(Debug)]
pub struct ImportReport {
    pub resources: usize,
    /// Pending operations the imported state carried, now cleared.
    pub cleared_pending: usize,
}

/// The checkpoint `bytes` as the state of `stack` of `project` (`stack import`), its secrets
/// sealed by `crypter`: refused if it is another stack's, or fails the integrity checks unless
/// `force`; its pending operations cleared.
pub(crate) fn imported_checkpoint(
    project: &ProjectName,
    stack: &StackName,
    bytes: &[u8],
    force: bool,
    crypter: &dyn Crypter,
) -> Result<(Vec<u8>, ImportReport), BackendError> {
    let source = std::path::Path::new("<import>");
    let checkpoint = Checkpoint::parse_unverified(bytes, stack, source, crypter)?;
    if checkpoint.project != *project || checkpoint.stack != *stack {
        return Err(BackendError::Corrupt {
            path: source.to_owned(),
            reason: format!(
                "it is the state of stack `{}` of project `{}`, not of stack `{stack}` of project `{project}`; \
                 its resource URNs name that stack",
                checkpoint.stack, checkpoint.project
            ),
        });
    }
    // Even a state imported with `--force` holds only fields plinth could have written.
    crate::checkpoint::check_fields(&checkpoint.snapshot, source)?;
    if let Err(e) = checkpoint.snapshot.verify_integrity()
        && !force
    {
        return Err(BackendError::Corrupt {
            path: source.to_owned(),
            reason: format!("{e}; pass --force to import it anyway"),
        });
    }
    let Snapshot {
        resources,
        pending_operations,
    } = checkpoint.snapshot;
    let report = ImportReport {
        // The stack's root is the stack itself, not one of its resources.
        resources: (resources.iter()).filter(|r| !is_stack_type(&r.ty)).count(),
        cleared_pending: pending_operations.len(),
    };
    let snapshot = Snapshot {
        resources,
        pending_operations: Vec::new(),
    };
    let imported = Checkpoint::new(project, stack, snapshot).with_plugins(checkpoint.plugins);
    Ok((imported.to_json(crypter)?, report))
}

impl LocalBackend {
    /// Replaces the stack's state with the checkpoint in `bytes` (the lock must be held), as
    /// [`imported_checkpoint`] makes it; the previous checkpoint is kept as a backup.
    pub fn import(
        &self,
        project: &ProjectName,
        stack: &StackName,
        bytes: &[u8],
        force: bool,
        _lock: &StackLock,
    ) -> Result<ImportReport, BackendError> {
        let crypter = self.crypter(stack);
        let (json, report) = imported_checkpoint(project, stack, bytes, force, crypter.as_ref())?;
        self.replace_checkpoint(project, stack, &json)?;
        Ok(report)
    }

    /// Makes `json` the stack's checkpoint (the lock must be held): backs up the current one,
    /// writes the new one atomically, and discards any journal, which the new checkpoint
    /// supersedes.
    pub(crate) fn replace_checkpoint(
        &self,
        project: &ProjectName,
        stack: &StackName,
        json: &[u8],
    ) -> Result<(), BackendError> {
        self.backup_checkpoint(project, stack)?;
        let path = self.path(project, stack, "json");
        write_atomically(&path, json).map_err(BackendError::io("writing", &path))?;
        let journal = self.path(project, stack, "journal");
        match std::fs::remove_file(&journal) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(BackendError::io("removing", &journal)(e))
            }
            _ => Ok(()),
        }
    }
}
