//! The optional `plinth:hints/provider-hints` interface: facts a provider states about itself
//! once, when it starts, so that the host can answer some calls without entering the guest.
//! A provider that does not export it (a JavaScript or Python one, a Rust one built before the
//! hints existed) is asked every time.

use std::collections::HashSet;

use wasmtime::Store;
use wasmtime::component::{Component, ComponentExportIndex, Instance};

use crate::sandbox::Sandbox;

/// The interface, as a component exports it.
const INTERFACE: &str = "plinth:hints/provider-hints@0.1.0";
/// Its one function.
const FUNCTION: &str = "equal-inputs-mean-no-change";
/// The call, as errors name it.
pub(crate) const OPERATION: &str = "equal-inputs-mean-no-change";

/// What a provider stated.
#[derive(Debug, Default)]
pub(crate) struct Hints {
    /// The resource types whose `diff` reports no change when the inputs are unchanged.
    equal_inputs_mean_no_change: HashSet<String>,
}

impl Hints {
    /// Whether `diff` on a resource of type `token` reports no change for unchanged inputs.
    pub(crate) fn equal_inputs_mean_no_change(&self, token: &str) -> bool {
        self.equal_inputs_mean_no_change.contains(token)
    }
}

/// Where `component` exports the hints function, if it does.
pub(crate) fn export_index(component: &Component) -> Option<ComponentExportIndex> {
    let interface = component.get_export_index(None, INTERFACE)?;
    component.get_export_index(Some(&interface), FUNCTION)
}

/// Asks `instance` for its hints; the function is at `index`. A function of another type is an
/// error, as a malformed `info` is.
pub(crate) async fn read(
    store: &mut Store<Sandbox>,
    instance: &Instance,
    index: &ComponentExportIndex,
) -> wasmtime::Result<Hints> {
    let function = instance.get_typed_func::<(), (Vec<String>,)>(&mut *store, index)?;
    let (tokens,) = function.call_async(&mut *store, ()).await?;
    Ok(Hints {
        equal_inputs_mean_no_change: tokens.into_iter().collect(),
    })
}
