//! A stack's recorded state: resources in topological order, plus operations in flight.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::resource::ResourceState;
use crate::urn::Urn;
use crate::value::PropertyMap;

/// A provider call that was started but whose outcome is not recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingOperation {
    pub kind: OperationKind,
    /// The state being operated on (for a create: the inputs it was created from).
    pub resource: ResourceState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OperationKind {
    Creating,
    Updating,
    Deleting,
}

/// The state of a stack.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Always a valid topological order: a resource's parent and dependencies come before it.
    #[serde(default)]
    pub resources: Vec<ResourceState>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_operations: Vec<PendingOperation>,
    /// The stack's outputs.
    #[serde(default)]
    pub outputs: PropertyMap,
}

/// Why a snapshot is not valid.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum IntegrityError {
    #[error("resource {urn} appears twice as a live resource")]
    DuplicateUrn { urn: Urn },
    #[error("resource {urn} refers to {missing} ({relation}), which does not come before it")]
    MissingPredecessor {
        urn: Urn,
        missing: Urn,
        relation: &'static str,
    },
    #[error("resource {urn} is a custom resource without an id")]
    MissingId { urn: Urn },
    #[error("pending {kind:?} operation on {urn}, which is not in the state")]
    DanglingPendingOperation { kind: OperationKind, urn: Urn },
}

impl Snapshot {
    /// Checks the invariants every persisted snapshot must hold.
    pub fn verify_integrity(&self) -> Result<(), IntegrityError> {
        let mut seen: HashSet<&Urn> = HashSet::with_capacity(self.resources.len());
        let mut live: HashSet<&Urn> = HashSet::with_capacity(self.resources.len());
        for r in &self.resources {
            if let Some(parent) = &r.parent {
                check_before(&seen, r, parent, "parent")?;
            }
            for dep in &r.dependencies {
                check_before(&seen, r, dep, "dependency")?;
            }
            if r.custom && r.id.is_empty() {
                return Err(IntegrityError::MissingId { urn: r.urn.clone() });
            }
            if !r.delete && !live.insert(&r.urn) {
                return Err(IntegrityError::DuplicateUrn { urn: r.urn.clone() });
            }
            seen.insert(&r.urn);
        }
        for op in &self.pending_operations {
            let urn = &op.resource.urn;
            if op.kind != OperationKind::Creating && !seen.contains(urn) {
                return Err(IntegrityError::DanglingPendingOperation {
                    kind: op.kind,
                    urn: urn.clone(),
                });
            }
        }
        Ok(())
    }

    /// Live (not replaced) resources.
    pub fn live_resources(&self) -> impl Iterator<Item = &ResourceState> {
        self.resources.iter().filter(|r| !r.delete)
    }
}

fn check_before(
    seen: &HashSet<&Urn>,
    r: &ResourceState,
    pred: &Urn,
    relation: &'static str,
) -> Result<(), IntegrityError> {
    if seen.contains(pred) {
        Ok(())
    } else {
        Err(IntegrityError::MissingPredecessor {
            urn: r.urn.clone(),
            missing: pred.clone(),
            relation,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn state(name: &str, deps: &[&str]) -> ResourceState {
        ResourceState {
            urn: urn(name),
            ty: "test:Thing".into(),
            custom: true,
            id: format!("id-{name}"),
            inputs: PropertyMap::new(),
            outputs: PropertyMap::new(),
            parent: None,
            dependencies: deps.iter().map(|d| urn(d)).collect(),
            protect: false,
            retain_on_delete: false,
            delete: false,
        }
    }

    pub fn urn(name: &str) -> Urn {
        Urn::new("s", "p", None, "test:Thing", name)
    }

    #[test]
    fn accepts_topological_order() {
        let snap = Snapshot {
            resources: vec![state("a", &[]), state("b", &["a"])],
            ..Default::default()
        };
        snap.verify_integrity().unwrap();
    }

    #[test]
    fn rejects_dependency_after_dependent() {
        let snap = Snapshot {
            resources: vec![state("b", &["a"]), state("a", &[])],
            ..Default::default()
        };
        assert!(matches!(
            snap.verify_integrity(),
            Err(IntegrityError::MissingPredecessor { .. })
        ));
    }

    #[test]
    fn rejects_two_live_states_but_allows_a_replaced_one() {
        let mut old = state("a", &[]);
        let snap = Snapshot {
            resources: vec![old.clone(), state("a", &[])],
            ..Default::default()
        };
        assert!(matches!(
            snap.verify_integrity(),
            Err(IntegrityError::DuplicateUrn { .. })
        ));
        old.delete = true;
        let snap = Snapshot {
            resources: vec![old, state("a", &[])],
            ..Default::default()
        };
        snap.verify_integrity().unwrap();
    }

    #[test]
    fn rejects_dangling_pending_delete() {
        let snap = Snapshot {
            pending_operations: vec![PendingOperation {
                kind: OperationKind::Deleting,
                resource: state("x", &[]),
            }],
            ..Default::default()
        };
        assert!(snap.verify_integrity().is_err());
    }
}
