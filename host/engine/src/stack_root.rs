//! The stack's root resource in a snapshot: where the stack's outputs live, and how a snapshot
//! recorded before roots existed gets one.

use crate::resource::ResourceState;
use crate::snapshot::Snapshot;
use crate::urn::{STACK_TYPE, is_stack_type, provided_package, stack_urn};
use crate::value::PropertyMap;

static NO_OUTPUTS: PropertyMap = PropertyMap::new();

impl Snapshot {
    /// The stack's root resource, if the stack has one (an empty or destroyed stack has none).
    pub fn root(&self) -> Option<&ResourceState> {
        self.live_resources()
            .find(|r| r.parent.is_none() && is_stack_type(&r.ty))
    }

    /// The stack's outputs: its root's.
    pub fn outputs(&self) -> &PropertyMap {
        self.root().map_or(&NO_OUTPUTS, |r| &r.outputs)
    }

    /// Gives a snapshot recorded before stacks had a root resource the root that the next
    /// update would record: first in the snapshot, holding the stack's `outputs` (kept beside
    /// the resources until then), and the parent of every resource that had none, provider
    /// resources excepted. URNs do not change: the root is no part of its children's. A
    /// snapshot without resources or outputs stays empty, as a new stack is.
    pub fn adopt_root(&mut self, project: &str, stack: &str, outputs: PropertyMap) {
        let nothing = self.resources.is_empty() && self.pending_operations.is_empty();
        if (nothing && outputs.is_empty()) || self.root().is_some() {
            return;
        }
        let urn = stack_urn(project, stack);
        let orphans = (self.resources.iter_mut()).chain(
            self.pending_operations
                .iter_mut()
                .map(|op| &mut op.resource),
        );
        for r in orphans {
            if r.parent.is_none() && provided_package(&r.ty).is_none() {
                r.parent = Some(urn.clone());
            }
        }
        let root = ResourceState {
            urn,
            ty: STACK_TYPE.to_owned(),
            custom: false,
            id: String::new(),
            inputs: PropertyMap::new(),
            outputs,
            parent: None,
            dependencies: Vec::new(),
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        };
        self.resources.insert(0, root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::tests::state;
    use crate::urn::Urn;
    use crate::value::Value;

    #[test]
    fn adopting_a_root_parents_the_orphans_and_keeps_urns() {
        let mut provider = state("default", &[]);
        provider.urn = Urn::new("s", "p", None, "plinth:providers:test", "default");
        provider.ty = "plinth:providers:test".into();
        let mut child = state("child", &[]);
        child.parent = Some(state("a", &[]).urn);
        let mut snapshot = Snapshot {
            resources: vec![provider, state("a", &[]), child, state("b", &["a"])],
            ..Default::default()
        };
        let urns: Vec<Urn> = snapshot.resources.iter().map(|r| r.urn.clone()).collect();
        let outputs: PropertyMap = [("x".to_owned(), Value::from("1"))].into();
        snapshot.adopt_root("p", "s", outputs.clone());

        let root = stack_urn("p", "s");
        assert_eq!(snapshot.resources[0].urn, root);
        assert_eq!(snapshot.outputs(), &outputs);
        assert_eq!(
            snapshot.resources[1..]
                .iter()
                .map(|r| r.urn.clone())
                .collect::<Vec<_>>(),
            urns
        );
        let parents: Vec<Option<&str>> = (snapshot.resources[1..].iter())
            .map(|r| r.parent.as_ref().map(|p| p.name()))
            .collect();
        assert_eq!(parents, [None, Some("p-s"), Some("a"), Some("p-s")]);
        assert!(snapshot.verify_integrity().is_ok());

        // Once is enough.
        let again = snapshot.clone();
        snapshot.adopt_root("p", "s", PropertyMap::new());
        assert_eq!(snapshot, again);
    }

    #[test]
    fn an_empty_stack_stays_empty() {
        let mut snapshot = Snapshot::default();
        snapshot.adopt_root("p", "s", PropertyMap::new());
        assert_eq!(snapshot, Snapshot::default());
        assert!(snapshot.outputs().is_empty());
    }
}
