//! What a registration's step is given: the registration, resolved, and the provider resource
//! it is bound to.

use crate::program::RegisterRequest;
use crate::resource::ProviderRef;
use crate::urn::Urn;
use crate::value::{PropertyMap, Value};

/// A registration ready to run: inputs resolved, URN and dependencies known.
pub(crate) struct ResourceStep {
    pub urn: Urn,
    pub request: RegisterRequest,
    pub inputs: PropertyMap,
    pub parent: Option<Urn>,
    pub dependencies: Vec<Urn>,
    /// The provider resource that manages it (none for components and provider resources).
    pub provider: Option<ProviderBinding>,
}

/// The provider resource a registration is bound to, as its step left it.
#[derive(Debug, Clone)]
pub(crate) struct ProviderBinding {
    pub reference: ProviderRef,
    pub config: PropertyMap,
    /// This run replaced the provider: what it manages is replaced too.
    pub replaced: bool,
}

/// The reference a resource records to the provider resource `urn` with `id`.
pub(crate) fn reference(urn: Urn, id: &Value) -> ProviderRef {
    ProviderRef {
        urn,
        id: id.as_str().unwrap_or_default().to_owned(),
    }
}
