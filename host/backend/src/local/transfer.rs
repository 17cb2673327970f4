//! `stack import` on the file backend.

use plinth_engine::names::{ProjectName, StackName};
use plinth_state::{ImportReport, imported_checkpoint};

use super::LocalBackend;
use super::lock::StackLock;
use crate::error::BackendError;
use crate::files::write_atomically;

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
