//! The stack's root resource: a component of type `plinth:plinth:Stack` the engine registers
//! before anything a program does, whatever the program's language. Every resource registered
//! without a parent is its child (provider resources excepted), and its outputs are the stack's.

use super::node::Work;
use super::scheduler::Scheduler;
use crate::program::RegisterRequest;
use crate::urn::{STACK_TYPE, provided_package, stack_urn};

/// The root's handle: a program's handles count up from 1, default providers' down from the top.
pub(super) const ROOT_HANDLE: u64 = 0;

impl Scheduler {
    /// Registers the root, named `<project>-<stack>`.
    pub(super) fn register_root(&mut self) {
        let urn = stack_urn(&self.options.project, &self.options.stack);
        let request = RegisterRequest {
            ty: STACK_TYPE.to_owned(),
            name: urn.name().to_owned(),
            custom: false,
            inputs: Default::default(),
            options: Default::default(),
        };
        self.has_root = true;
        self.add_node(Some(ROOT_HANDLE), Work::Resource(request), Vec::new());
    }

    /// The parent of a registration of type `ty` made without one: the root, unless it is a
    /// provider resource (those stand beside the resources they manage).
    pub(super) fn implicit_parent(&self, ty: &str) -> Option<u64> {
        (self.has_root && provided_package(ty).is_none()).then_some(ROOT_HANDLE)
    }

    /// The target of outputs registered for `handle`: the stack's outputs (`None`) are the
    /// root's.
    pub(super) fn outputs_target(&self, handle: Option<u64>) -> Option<u64> {
        handle.or(self.has_root.then_some(ROOT_HANDLE))
    }
}
