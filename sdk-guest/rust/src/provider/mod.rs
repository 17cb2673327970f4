//! Writing a resource provider: implement [`ResourceType`] for each type of resource and
//! [`Provider`] for the plugin, then call [`export_provider!`](crate::export_provider).

pub mod bindings;
mod capabilities;
mod error;
pub(crate) mod export;
mod resource;
mod schema;
mod typed;
mod urn;

pub use capabilities::{Capabilities, DirRequest};
pub use error::{CheckFailure, ProviderError};
pub use resource::{Checked, Created, Diff, ReadResult, ResourceContext, ResourceType};
pub use schema::{FunctionSchema, ObjectType, PropertySchema, ResourceSchema, Type, properties_of};
pub(crate) use schema::{SECRET_EXTENSION, normalize_stored};
pub use typed::{Typed, TypedResource};
pub(crate) use urn::Urn;

use crate::{PropertyMap, Value};

/// A resource provider plugin: who it is, the resource types it manages, its configuration and
/// its functions.
///
/// The plugin creates its provider with [`Default`] when it starts; the engine then calls
/// [`configure`](Self::configure) before any resource operation.
pub trait Provider: 'static {
    /// The provider's name, which is also the package of its type tokens (`random`).
    fn name(&self) -> &str;

    /// The provider's version, usually `env!("CARGO_PKG_VERSION")`.
    fn version(&self) -> &str;

    /// What the provider manages, for documentation and generated SDKs. The default says
    /// nothing.
    fn description(&self) -> &str {
        ""
    }

    /// What the provider asks to be granted beyond the bare sandbox: directories, environment
    /// variables, network peers. The host loads the provider only if the project grants all of
    /// it. The default asks for nothing.
    fn capabilities(&self) -> Capabilities {
        Capabilities::new()
    }

    /// The configuration properties (stack config `<name>:<key>`, or a provider resource's
    /// inputs), typed like a resource's inputs ([`properties_of`] derives them from a struct).
    /// A change to one marked `replace_on_change` replaces every resource the provider manages.
    /// The default describes none, so no configuration change replaces anything.
    fn config_schema(&self) -> Vec<PropertySchema> {
        Vec::new()
    }

    /// The resource types the provider manages. Called when the plugin starts and again after
    /// each successful `configure`, so types may capture the configuration.
    fn resource_types(&self) -> Vec<Box<dyn ResourceType>>;

    /// The functions [`invoke`](Self::invoke) accepts (a token converts into an untyped
    /// one: `vec!["pkg:fn".into()]`).
    fn functions(&self) -> Vec<FunctionSchema> {
        Vec::new()
    }

    /// Validates and normalizes the provider's configuration. The default validates it against
    /// [`config_schema`](Self::config_schema) as `check` validates inputs, or accepts it as it is
    /// when the schema describes nothing.
    fn check_config(&self, config: PropertyMap) -> Result<Checked, ProviderError> {
        let declared = self.config_schema();
        if declared.is_empty() {
            return Ok(Checked::new(config));
        }
        let owner = format!("a setting of the {} provider", self.name());
        Ok(schema::validate_properties(&declared, config, &owner))
    }

    /// Applies the (checked) configuration. The default accepts any configuration.
    fn configure(&mut self, config: PropertyMap) -> Result<(), ProviderError> {
        let _ = config;
        Ok(())
    }

    /// Calls the provider function `token`. The default knows no function.
    fn invoke(&self, token: &str, args: PropertyMap) -> Result<Value, ProviderError> {
        let _ = args;
        Err(ProviderError::UnknownType(token.to_owned()))
    }
}

/// Exports a [`Provider`] as the component's `provider` interface.
///
/// The type must implement [`Provider`] and [`Default`]. Calls are dispatched to the resource
/// type whose token matches the URN's type; an unknown token is an `unknown-type` error.
///
/// ```
/// # fn main() {}
/// # mod example {
/// use plinth_sdk::{Created, PropertyMap, Provider, ProviderError, ResourceContext};
/// use plinth_sdk::{ResourceSchema, ResourceType};
///
/// #[derive(Default)]
/// struct Hello;
///
/// impl Provider for Hello {
///     fn name(&self) -> &str {
///         "hello"
///     }
///     fn version(&self) -> &str {
///         "0.1.0"
///     }
///     fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
///         vec![Box::new(Greeting)]
///     }
/// }
///
/// struct Greeting;
///
/// impl ResourceType for Greeting {
///     fn schema(&self) -> ResourceSchema {
///         ResourceSchema::new("hello:Greeting")
///     }
///     fn create(
///         &self,
///         ctx: &ResourceContext<'_>,
///         inputs: PropertyMap,
///     ) -> Result<Created, ProviderError> {
///         Ok(Created { id: ctx.name().to_owned(), outputs: inputs })
///     }
/// }
///
/// plinth_sdk::export_provider!(Hello);
/// # }
/// ```
#[macro_export]
macro_rules! export_provider {
    ($provider:ty) => {
        const _: () = {
            const fn assert_provider<P: $crate::Provider + ::core::default::Default>() {}
            assert_provider::<$provider>();

            type PlinthProviderExport = $crate::__private::ProviderExport<$provider>;
            $crate::__private::provider_bindings::export!(
                PlinthProviderExport with_types_in $crate::__private::provider_bindings
            );
        };
    };
}
