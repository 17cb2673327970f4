//! `--target`: which resources an operation may change. With `--target-dependents`, a resource
//! that depends on a targeted one is targeted too; the set grows as registrations arrive, which
//! is sound because a step starts only after everything it depends on has resolved.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::resource::ResourceState;
use crate::urn::Urn;

/// The resources an operation may change; the others are left exactly as they were.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    pub urns: HashSet<Urn>,
    /// Also target every resource that depends on a targeted one, transitively.
    pub dependents: bool,
}

pub(crate) struct TargetSet {
    targeted: Mutex<HashSet<Urn>>,
    dependents: bool,
}

impl TargetSet {
    /// The targets, grown (with `dependents`) over the base state's dependency graph, which is
    /// in topological order.
    pub fn new(targets: Targets, base: &[ResourceState]) -> TargetSet {
        let mut targeted = targets.urns;
        if targets.dependents {
            for r in base {
                if r.predecessors().any(|p| targeted.contains(p)) {
                    targeted.insert(r.urn.clone());
                }
            }
        }
        TargetSet {
            targeted: Mutex::new(targeted),
            dependents: targets.dependents,
        }
    }

    /// Whether the resource `urn`, with these parent and dependencies, may change.
    pub fn includes<'a>(&self, urn: &Urn, mut predecessors: impl Iterator<Item = &'a Urn>) -> bool {
        let mut targeted = self.targeted.lock().expect("target set");
        if targeted.contains(urn) {
            return true;
        }
        if self.dependents && predecessors.any(|p| targeted.contains(p)) {
            targeted.insert(urn.clone());
            return true;
        }
        false
    }

    /// Whether `urn` is targeted, without growing the set.
    pub fn contains(&self, urn: &Urn) -> bool {
        self.targeted.lock().expect("target set").contains(urn)
    }
}
