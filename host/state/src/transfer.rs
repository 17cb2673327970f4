//! `stack import`: a checkpoint from elsewhere, checked and made the state of a stack.

use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::is_stack_type;

use crate::checkpoint::Checkpoint;
use crate::error::StateError;
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
pub fn imported_checkpoint(
    project: &ProjectName,
    stack: &StackName,
    bytes: &[u8],
    force: bool,
    crypter: &dyn Crypter,
) -> Result<(Vec<u8>, ImportReport), StateError> {
    let source = std::path::Path::new("<import>");
    let checkpoint = Checkpoint::parse_unverified(bytes, stack, source, crypter)?;
    if checkpoint.project != *project || checkpoint.stack != *stack {
        return Err(StateError::Corrupt {
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
        return Err(StateError::Corrupt {
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
