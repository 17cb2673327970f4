//! The state a deployment started from, indexed for its steps: live resources by URN, the
//! resources naming each URN as parent or dependency, provider resources by reference.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

use super::request::reference;
use crate::resource::{ProviderRef, ResourceState};
use crate::snapshot::Snapshot;
use crate::urn::{Urn, provided_package};
use crate::value::{PropertyMap, Value};

pub(crate) struct BaseState {
    /// Shared with the snapshot manager.
    snapshot: Arc<Snapshot>,
    live: HashMap<Urn, usize>,
    dependents: HashMap<Urn, Vec<usize>>,
    providers: HashMap<ProviderRef, usize>,
}

impl BaseState {
    pub(crate) fn new(snapshot: Arc<Snapshot>) -> BaseState {
        let resources = &snapshot.resources;
        // Sized once: grown from empty, the tables of 100,000 resources were rehashed a dozen
        // times each.
        let mut live = HashMap::with_capacity(resources.len());
        live.extend(
            (resources.iter().enumerate())
                .filter(|(_, r)| !r.delete)
                .map(|(i, r)| (r.urn.clone(), i)),
        );
        let mut dependents: HashMap<Urn, Vec<usize>> = HashMap::with_capacity(resources.len());
        for (i, r) in resources.iter().enumerate() {
            for p in r.predecessors() {
                dependents.entry(p.clone()).or_default().push(i);
            }
        }
        BaseState {
            live,
            dependents,
            providers: providers_by_reference(resources),
            snapshot,
        }
    }

    pub(crate) fn resources(&self) -> &[ResourceState] {
        &self.snapshot.resources
    }

    /// The live (not replaced) resource with `urn`.
    pub(crate) fn live(&self, urn: &Urn) -> Option<usize> {
        self.live.get(urn).copied()
    }

    /// The resources naming `urn` as parent or dependency.
    pub(crate) fn dependents(&self, urn: &Urn) -> &[usize] {
        self.dependents.get(urn).map_or(&[], Vec::as_slice)
    }

    /// The configuration of the provider resource `reference` names, if the state holds it.
    pub(crate) fn provider_config(&self, reference: &ProviderRef) -> Option<&PropertyMap> {
        let &index = self.providers.get(reference)?;
        Some(&self.snapshot.resources[index].outputs)
    }
}

/// The provider resources of a state, by the reference resources record to them.
pub(crate) fn providers_by_reference(resources: &[ResourceState]) -> HashMap<ProviderRef, usize> {
    (resources.iter().enumerate())
        .filter(|(_, r)| provided_package(&r.ty).is_some())
        .map(|(i, r)| (reference(r.urn.clone(), &Value::String(r.id.clone())), i))
        .collect()
}
