//! Warnings about the operations an interrupted update left pending in a stack's state: what
//! each may mean for the real world, and what to run about it.

use console::style;
use plinth_engine::shown::escape_controls;
use plinth_engine::snapshot::{PendingKind, Snapshot};
use plinth_engine::urn::Urn;

/// Prints a warning on stderr for each pending operation of `snapshot`.
pub fn warn_pending(snapshot: &Snapshot) {
    for op in &snapshot.pending_operations {
        eprintln!(
            "{} {}",
            style("warning:").yellow().bold(),
            escape_controls(&advice(op.kind, &op.resource.urn))
        );
    }
}

fn advice(kind: PendingKind, urn: &Urn) -> String {
    match kind {
        PendingKind::Creating => format!(
            "a create of {urn} was interrupted; the resource may exist in the real world without \
             being in the state — run `plinth refresh` to clear it, or \
             `plinth refresh --import-pending-create {urn}=ID` to adopt it"
        ),
        PendingKind::Updating | PendingKind::Deleting => {
            let what = if kind == PendingKind::Updating {
                "an update"
            } else {
                "a delete"
            };
            format!(
                "{what} of {urn} was interrupted; its recorded state may be stale — run `plinth refresh`"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_says_what_may_be_wrong_and_what_to_run() {
        let urn = Urn::new("dev", "p", None, "t:T", "a");
        let create = advice(PendingKind::Creating, &urn);
        assert!(
            create.starts_with(&format!("a create of {urn} was interrupted"))
                && create.contains(&format!("--import-pending-create {urn}=ID")),
            "{create}"
        );
        let update = advice(PendingKind::Updating, &urn);
        assert!(update.starts_with("an update of"), "{update}");
        let delete = advice(PendingKind::Deleting, &urn);
        assert!(
            delete.starts_with("a delete of") && delete.ends_with("run `plinth refresh`"),
            "{delete}"
        );
    }
}
