//! A stack's recorded state: resources in topological order, plus operations in flight.

use foldhash::{HashSet, HashSetExt};

use serde::{Deserialize, Serialize};

use crate::resource::{FieldError, ResourceState};
use crate::urn::Urn;

/// A provider call that was started but whose outcome is not recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingOperation {
    pub kind: PendingKind,
    /// The state being operated on (for a create: the inputs it was created from).
    pub resource: ResourceState,
}

/// What a pending operation was doing to its resource. (What a stack's history records is
/// another thing: the backend's `UpdateKind`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PendingKind {
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
    DanglingPendingOperation { kind: PendingKind, urn: Urn },
}

impl Snapshot {
    /// Checks every recorded resource's fields ([`ResourceState::check_fields`]): what no
    /// state may hold, even one imported with `--force`.
    pub fn check_fields(&self) -> Result<(), FieldError> {
        (self.resources.iter())
            .chain(self.pending_operations.iter().map(|op| &op.resource))
            .try_for_each(ResourceState::check_fields)
    }

    /// Checks the invariants every persisted snapshot must hold.
    pub fn verify_integrity(&self) -> Result<(), IntegrityError> {
        let mut seen: HashSet<&Urn> = HashSet::with_capacity(self.resources.len());
        let mut live: HashSet<&Urn> = HashSet::with_capacity(self.resources.len());
        for r in &self.resources {
            for (relation, pred) in r.relations() {
                check_before(&seen, r, pred, relation)?;
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
            if op.kind != PendingKind::Creating && !seen.contains(urn) {
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

    /// The URN in the state that `query` names: a whole URN, `type::name` or a bare name, as
    /// long as exactly one resource matches.
    pub fn resolve(&self, query: &str) -> Result<Urn, StateEditError> {
        let mut urns: Vec<&Urn> = self.resources.iter().map(|r| &r.urn).collect();
        urns.sort();
        urns.dedup();
        if let Some(urn) = urns.iter().find(|u| u.as_str() == query) {
            return Ok((*urn).clone());
        }
        let matches: Vec<Urn> = if query.starts_with("urn:") {
            Vec::new()
        } else {
            urns.iter()
                .filter(|u| names(u, query))
                .map(|u| (*u).clone())
                .collect()
        };
        match <[Urn; 1]>::try_from(matches) {
            Ok([urn]) => Ok(urn),
            Err(matches) if !matches.is_empty() => Err(StateEditError::Ambiguous {
                query: query.to_owned(),
                matches,
            }),
            Err(_) => {
                // Whatever the query got wrong (stack, type, parent), its last part is the name.
                let name = match Urn::parse(query) {
                    Ok(urn) => urn.name().to_owned(),
                    Err(_) => query.rsplit("::").next().unwrap_or(query).to_owned(),
                };
                let close = urns
                    .into_iter()
                    .filter(|u| u.name() == name)
                    .cloned()
                    .collect();
                Err(StateEditError::NotFound {
                    query: query.to_owned(),
                    close,
                })
            }
        }
    }

    /// Removes every state of `urn` (the live one and any replaced ones awaiting deletion) and
    /// the pending updates and deletes of it, without touching the real resource. Refused for
    /// a protected resource, a parent and a provider that manages resources; for a resource
    /// others depend on only unless `force`, which drops their references to it.
    pub fn remove(&mut self, urn: &Urn, force: bool) -> Result<Removal, StateEditError> {
        let own: Vec<&ResourceState> = self.resources.iter().filter(|r| &r.urn == urn).collect();
        if own.is_empty() {
            return Err(StateEditError::NotFound {
                query: urn.to_string(),
                close: Vec::new(),
            });
        }
        if own.iter().any(|r| r.protect) {
            return Err(StateEditError::Protected { urn: urn.clone() });
        }
        let others = || self.resources.iter().filter(|r| &r.urn != urn);
        let children = distinct(others().filter(|r| r.parent.as_ref() == Some(urn)));
        if !children.is_empty() {
            return Err(StateEditError::HasChildren {
                urn: urn.clone(),
                children,
            });
        }
        // Its managed resources would have no provider to update or delete them with.
        let managed =
            distinct(others().filter(|r| r.provider.as_ref().is_some_and(|p| &p.urn == urn)));
        if !managed.is_empty() {
            return Err(StateEditError::Manages {
                urn: urn.clone(),
                resources: managed,
            });
        }
        let dependents = distinct(others().filter(|r| r.dependencies.contains(urn)));
        if !dependents.is_empty() && !force {
            return Err(StateEditError::HasDependents {
                urn: urn.clone(),
                dependents,
            });
        }

        let (removed, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.resources)
            .into_iter()
            .partition(|r| &r.urn == urn);
        self.resources = kept;
        for r in &mut self.resources {
            r.dependencies.retain(|d| d != urn);
        }
        let mut cleared_pending = Vec::new();
        self.pending_operations.retain(|op| {
            let on_removed = &op.resource.urn == urn && op.kind != PendingKind::Creating;
            if on_removed {
                cleared_pending.push(op.kind);
            }
            !on_removed
        });
        Ok(Removal {
            removed,
            unlinked: dependents,
            cleared_pending,
        })
    }

    /// Sets the `protect` flag of every state of `urn`; returns how many changed.
    pub fn set_protect(&mut self, urn: &Urn, protect: bool) -> Result<usize, StateEditError> {
        let mut found = false;
        let mut changed = 0;
        for r in self.resources.iter_mut().filter(|r| &r.urn == urn) {
            found = true;
            if r.protect != protect {
                r.protect = protect;
                changed += 1;
            }
        }
        if !found {
            return Err(StateEditError::NotFound {
                query: urn.to_string(),
                close: Vec::new(),
            });
        }
        Ok(changed)
    }
}

/// What [`Snapshot::remove`] took out of the state.
#[derive(Debug, Clone, PartialEq)]
pub struct Removal {
    /// The resource's states, in state order.
    pub removed: Vec<ResourceState>,
    /// Resources whose recorded dependency on it was dropped.
    pub unlinked: Vec<Urn>,
    /// The kinds of the pending operations on it that were cleared.
    pub cleared_pending: Vec<PendingKind>,
}

/// Why an edit of the state by hand was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum StateEditError {
    #[error("no resource `{query}` in the state{}", similar(.close))]
    NotFound { query: String, close: Vec<Urn> },
    #[error("`{query}` names {} resources: {}; give the whole URN", .matches.len(), join(.matches))]
    Ambiguous { query: String, matches: Vec<Urn> },
    #[error("{urn} is protected")]
    Protected { urn: Urn },
    #[error("{urn} is the parent of {}", join(.children))]
    HasChildren { urn: Urn, children: Vec<Urn> },
    #[error("{urn} is the provider of {}", join(.resources))]
    Manages { urn: Urn, resources: Vec<Urn> },
    #[error("{urn} is a dependency of {}", join(.dependents))]
    HasDependents { urn: Urn, dependents: Vec<Urn> },
}

fn join(urns: &[Urn]) -> String {
    urns.iter().map(Urn::as_str).collect::<Vec<_>>().join(", ")
}

fn similar(close: &[Urn]) -> String {
    if close.is_empty() {
        String::new()
    } else {
        format!("; resources with that name: {}", join(close))
    }
}

/// Whether `query` is a tail of `urn` that starts at a part boundary and holds at least the
/// whole name: `name`, `type::name`, `pkg:Type::name` or `parent$type::name`.
fn names(urn: &Urn, query: &str) -> bool {
    query.len() >= urn.name().len()
        && !query.starts_with([':', '$'])
        && (urn.as_str())
            .strip_suffix(query)
            .is_some_and(|rest| rest.ends_with([':', '$']))
}

/// The URNs of `states`, each once, in order.
fn distinct<'a>(states: impl Iterator<Item = &'a ResourceState>) -> Vec<Urn> {
    let mut urns: Vec<Urn> = Vec::new();
    for r in states {
        if !urns.contains(&r.urn) {
            urns.push(r.urn.clone());
        }
    }
    urns
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
    use crate::value::PropertyMap;

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
            provider: None,
            custom_timeouts: None,
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

    fn snapshot(states: Vec<ResourceState>) -> Snapshot {
        let snap = Snapshot {
            resources: states,
            ..Default::default()
        };
        snap.verify_integrity().unwrap();
        snap
    }

    fn pending(kind: PendingKind, name: &str) -> PendingOperation {
        PendingOperation {
            kind,
            resource: state(name, &[]),
        }
    }

    #[test]
    fn resolves_a_urn_a_name_or_a_type_and_name() {
        let mut child = state("c", &[]);
        child.urn = Urn::new("s", "p", Some("test:Group"), "test:Thing", "c");
        let snap = snapshot(vec![state("a", &[]), child.clone()]);
        assert_eq!(snap.resolve(urn("a").as_str()), Ok(urn("a")));
        assert_eq!(snap.resolve("a"), Ok(urn("a")));
        assert_eq!(snap.resolve("test:Thing::a"), Ok(urn("a")));
        assert_eq!(snap.resolve("Thing::a"), Ok(urn("a")));
        assert!(snap.resolve("ing::a").is_err());
        assert!(snap.resolve("::a").is_err());
        let colon = snapshot(vec![state("x:y", &[])]);
        assert!(colon.resolve("y").is_err());
        assert_eq!(colon.resolve("x:y"), Ok(urn("x:y")));
        assert_eq!(snap.resolve("test:Thing::c"), Ok(child.urn.clone()));
        assert_eq!(snap.resolve("test:Group$test:Thing::c"), Ok(child.urn));
        assert!(matches!(
            snap.resolve("other:Type::a"),
            Err(StateEditError::NotFound { close, .. }) if close == [urn("a")]
        ));
    }

    #[test]
    fn a_missing_urn_lists_resources_of_the_same_name() {
        let snap = snapshot(vec![state("a", &[]), state("b", &[])]);
        let wrong_stack = Urn::new("prod", "p", None, "test:Thing", "a");
        let err = snap.resolve(wrong_stack.as_str()).unwrap_err();
        assert_eq!(
            err,
            StateEditError::NotFound {
                query: wrong_stack.to_string(),
                close: vec![urn("a")]
            }
        );
        assert!(err.to_string().contains(urn("a").as_str()), "{err}");
        let err = snap.resolve("zzz").unwrap_err();
        assert_eq!(err.to_string(), "no resource `zzz` in the state");
    }

    #[test]
    fn an_ambiguous_name_lists_the_candidates() {
        let mut other = state("a", &[]);
        other.urn = Urn::new("s", "p", None, "test:Other", "a");
        let snap = snapshot(vec![state("a", &[]), other.clone()]);
        let err = snap.resolve("a").unwrap_err();
        assert!(matches!(&err, StateEditError::Ambiguous { matches, .. } if matches.len() == 2));
        assert_eq!(snap.resolve("test:Other::a"), Ok(other.urn));
    }

    #[test]
    fn removes_a_leaf_with_its_replaced_states_and_pending_updates() {
        let mut replaced = state("b", &["a"]);
        replaced.delete = true;
        let mut snap = snapshot(vec![state("a", &[]), replaced, state("b", &["a"])]);
        snap.pending_operations = vec![
            pending(PendingKind::Updating, "b"),
            pending(PendingKind::Creating, "b"),
            pending(PendingKind::Updating, "a"),
        ];
        let removal = snap.remove(&urn("b"), false).unwrap();
        assert_eq!(removal.removed.len(), 2);
        assert!(removal.unlinked.is_empty());
        assert_eq!(removal.cleared_pending, [PendingKind::Updating]);
        assert_eq!(snap.resources, [state("a", &[])]);
        assert_eq!(snap.pending_operations.len(), 2);
        snap.verify_integrity().unwrap();
    }

    #[test]
    fn refuses_to_remove_a_dependency_unless_forced() {
        let mut snap = snapshot(vec![
            state("a", &[]),
            state("b", &["a"]),
            state("c", &["a", "b"]),
        ]);
        let before = snap.clone();
        let err = snap.remove(&urn("a"), false).unwrap_err();
        assert_eq!(
            err,
            StateEditError::HasDependents {
                urn: urn("a"),
                dependents: vec![urn("b"), urn("c")]
            }
        );
        assert_eq!(snap, before);

        let removal = snap.remove(&urn("a"), true).unwrap();
        assert_eq!(removal.unlinked, [urn("b"), urn("c")]);
        assert_eq!(snap.resources, [state("b", &[]), state("c", &["b"])]);
        snap.verify_integrity().unwrap();
    }

    #[test]
    fn refuses_to_remove_a_protected_resource_a_parent_or_a_provider_even_forced() {
        let mut parent = state("g", &[]);
        parent.custom = false;
        parent.id.clear();
        let mut child = state("c", &[]);
        child.parent = Some(urn("g"));
        let mut guarded = state("p", &[]);
        guarded.protect = true;
        let provider = state("k", &[]);
        let mut managed = state("m", &[]);
        managed.provider = Some(crate::resource::ProviderRef {
            urn: urn("k"),
            id: provider.id.clone(),
        });
        let mut snap = snapshot(vec![parent, child, guarded, provider, managed]);
        let before = snap.clone();
        assert_eq!(
            snap.remove(&urn("k"), true),
            Err(StateEditError::Manages {
                urn: urn("k"),
                resources: vec![urn("m")]
            })
        );
        assert_eq!(
            snap.remove(&urn("g"), true),
            Err(StateEditError::HasChildren {
                urn: urn("g"),
                children: vec![urn("c")]
            })
        );
        assert_eq!(
            snap.remove(&urn("p"), true),
            Err(StateEditError::Protected { urn: urn("p") })
        );
        assert!(matches!(
            snap.remove(&urn("nope"), true),
            Err(StateEditError::NotFound { .. })
        ));
        assert_eq!(snap, before);
    }

    #[test]
    fn sets_and_clears_protect() {
        let mut snap = snapshot(vec![state("a", &[])]);
        assert_eq!(snap.set_protect(&urn("a"), true), Ok(1));
        assert_eq!(snap.set_protect(&urn("a"), true), Ok(0));
        assert!(snap.resources[0].protect);
        assert!(snap.remove(&urn("a"), false).is_err());
        assert_eq!(snap.set_protect(&urn("a"), false), Ok(1));
        assert!(!snap.resources[0].protect);
        assert!(snap.set_protect(&urn("b"), false).is_err());
        snap.remove(&urn("a"), false).unwrap();
        assert!(snap.resources.is_empty());
    }

    #[test]
    fn rejects_dangling_pending_delete() {
        let snap = Snapshot {
            pending_operations: vec![PendingOperation {
                kind: PendingKind::Deleting,
                resource: state("x", &[]),
            }],
            ..Default::default()
        };
        assert!(snap.verify_integrity().is_err());
    }
}
