//! `--target` and `--exclude`: which resources an operation may change. With `--target`, only
//! the named resources; with `--exclude`, every resource but those. With `--target-dependents`
//! (`--exclude-dependents`), a resource that depends on a named one is named too; the set grows
//! as registrations arrive, which is sound because a step starts only after everything it
//! depends on has resolved.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::resource::ResourceState;
use crate::urn::Urn;

/// The resources an operation may change; the others are left exactly as they were.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    pub urns: HashSet<Urn>,
    /// Also name every resource that depends on a named one, transitively.
    pub dependents: bool,
    /// The named resources are the ones left out (`--exclude`): every other one is targeted.
    pub excluded: bool,
}

pub(crate) struct TargetSet {
    /// The named resources: the targeted ones, or with `excluded` those left out.
    named: Mutex<HashSet<Urn>>,
    dependents: bool,
    excluded: bool,
}

impl TargetSet {
    /// The named resources, grown (with `dependents`) over the base state's dependency graph,
    /// which is in topological order.
    pub fn new(targets: Targets, base: &[ResourceState]) -> TargetSet {
        let mut named = targets.urns;
        if targets.dependents {
            for r in base {
                if r.predecessors().any(|p| named.contains(p)) {
                    named.insert(r.urn.clone());
                }
            }
        }
        TargetSet {
            named: Mutex::new(named),
            dependents: targets.dependents,
            excluded: targets.excluded,
        }
    }

    /// Whether the resource `urn`, with these parent and dependencies, may change.
    pub fn includes<'a>(&self, urn: &Urn, mut predecessors: impl Iterator<Item = &'a Urn>) -> bool {
        let mut named = self.named.lock().expect("target set");
        if named.contains(urn) {
            return !self.excluded;
        }
        if self.dependents && predecessors.any(|p| named.contains(p)) {
            named.insert(urn.clone());
            return !self.excluded;
        }
        self.excluded
    }

    /// Whether `urn` is targeted, without growing the set.
    pub fn contains(&self, urn: &Urn) -> bool {
        self.named.lock().expect("target set").contains(urn) != self.excluded
    }

    /// How to let a run change `urn`, which it leaves out, for an error that refuses a step.
    pub fn how_to_include(&self, urn: &Urn) -> String {
        let flag = if self.excluded { "exclude" } else { "target" };
        if self.excluded {
            format!("do not pass `--{flag} {urn}` (nor `--{flag}-dependents` for it)")
        } else {
            format!("add `--{flag} {urn}` or `--{flag}-dependents`")
        }
    }

    /// How a resource the run leaves out is described: `not targeted` or `excluded`.
    pub fn left_out_word(&self) -> &'static str {
        if self.excluded {
            "excluded"
        } else {
            "not targeted"
        }
    }
}
