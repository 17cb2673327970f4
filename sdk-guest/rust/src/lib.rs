//! The Rust SDK for plinth guests: resource providers and programs, built as WebAssembly
//! components for `wasm32-wasip2`.
//!
//! A guest crate is a `cdylib` that enables exactly one feature of this crate — `provider`,
//! `program` or `policy` — because a component must contain only its own world. Guests use the types of
//! this crate only; the WIT bindings stay inside it.
//!
//! This SDK builds guests against `plinth:plugin@0.3.0`.
//!
//! The default feature `allocator` installs the guest's global allocator: a bounded cache of
//! small blocks in front of the system allocator, which makes the many small strings and lists
//! of each call across the component boundary cheap. Turn it off (`default-features = false`)
//! to install another one.
//!
//! # Values
//!
//! Inputs and outputs are [`Value`]s, and property maps are [`PropertyMap`]s. Integers
//! ([`Value::Integer`]) and floats ([`Value::Number`]) are distinct: `8402` stays `8402`.
//! Secrets and unknown values (during a preview) stay typed; in programs a value may also refer
//! to another resource's output, which the engine resolves. [`to_value`] and [`from_value`]
//! convert Rust types with serde; a [`Secret`] field stays secret.
//!
//! # A provider
//!
//! ```toml
//! plinth-sdk = { workspace = true, features = ["provider"] }
//! ```
//!
//! Most resources are a [`TypedResource`]: inputs and outputs are Rust structs, the schema is
//! derived from them (see its example). For resources whose inputs are only known at run time,
//! implement the untyped [`ResourceType`] (only `schema` and `create` are required) and give
//! every property a [`Type`]; either way the default `check` validates inputs against the
//! schema. Then implement [`Provider`] for the plugin and export it:
//!
//! ```
//! # fn main() {}
//! # #[cfg(feature = "provider")]
//! # mod example {
//! use plinth_sdk::{
//!     Created, PropertyMap, PropertySchema, Provider, ProviderError, ResourceContext,
//!     ResourceSchema, ResourceType, Type, Value,
//! };
//!
//! #[derive(Default)]
//! struct Greeter;
//!
//! impl Provider for Greeter {
//!     fn name(&self) -> &str {
//!         "greeter"
//!     }
//!     fn version(&self) -> &str {
//!         env!("CARGO_PKG_VERSION")
//!     }
//!     fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
//!         vec![Box::new(Greeting)]
//!     }
//! }
//!
//! /// `greeter:Greeting`: a message for `who`; changing `who` replaces it.
//! struct Greeting;
//!
//! impl ResourceType for Greeting {
//!     fn schema(&self) -> ResourceSchema {
//!         ResourceSchema::new("greeter:Greeting")
//!             .describe("A greeting.")
//!             .input(
//!                 PropertySchema::new("who")
//!                     .of(Type::String)
//!                     .required()
//!                     .replace_on_change(),
//!             )
//!             .output(PropertySchema::new("message").of(Type::String))
//!     }
//!
//!     fn create(
//!         &self,
//!         ctx: &ResourceContext<'_>,
//!         mut inputs: PropertyMap,
//!     ) -> Result<Created, ProviderError> {
//!         let who = inputs.get("who").and_then(Value::as_str).unwrap_or("world");
//!         let message = format!("Hello, {who}!");
//!         inputs.insert("message".into(), message.into());
//!         Ok(Created { id: ctx.name().to_owned(), outputs: inputs })
//!     }
//! }
//!
//! plinth_sdk::export_provider!(Greeter);
//! # }
//! ```
//!
//! # A program
//!
//! ```toml
//! plinth-sdk = { workspace = true, features = ["program"] }
//! ```
//!
//! Declare resources through the [`Context`]; registering never blocks, and outputs flow into
//! other resources' inputs or through [`Output::apply`]. Most programs declare them through
//! typed SDKs that `plinth gen-sdk` generates from each provider's schema (a builder per
//! resource type, typed [`Input`]s and [`Output`]s); underneath, they do this:
//!
//! ```
//! # fn main() {}
//! # #[cfg(feature = "program")]
//! # mod example {
//! use plinth_sdk::{Context, Error, Output};
//!
//! fn main(ctx: &Context) -> Result<(), Error> {
//!     let length: i64 = ctx.config_or("length", "8").parse()?;
//!     let pet = ctx.resource("random:RandomPet", "pet").register();
//!     let suffix = ctx
//!         .resource("random:RandomString", "suffix")
//!         .input("length", length)
//!         .input("keepers", plinth_sdk::Value::object([("pet", pet.output("result"))]))
//!         .register();
//!     let name = Output::all(vec![pet.output("result"), suffix.output("result")])
//!         .apply(|v| format!("{}-{}", v[0].as_str().unwrap_or(""), v[1].as_str().unwrap_or("")));
//!     ctx.export("name", name);
//!     Ok(())
//! }
//!
//! plinth_sdk::export_program!(main);
//! # }
//! ```

#![warn(missing_docs)]

#[cfg(any(
    test,
    all(
        feature = "allocator",
        target_arch = "wasm32",
        not(target_feature = "atomics")
    )
))]
mod alloc;
mod error;
#[cfg(feature = "net")]
pub mod net;
#[cfg(feature = "policy")]
mod policy;
#[cfg(feature = "program")]
mod program;
#[cfg(feature = "provider")]
mod provider;
mod secret;
mod value;
#[cfg(any(feature = "provider", feature = "program", feature = "policy"))]
mod wire;

pub use error::Error;
#[cfg(feature = "policy")]
pub use policy::{EnforcementLevel, Policy, PolicyPack, PolicyResource, Violation};
#[cfg(feature = "program")]
pub use program::{AllOutputs, Context, Input, Output, Resource, ResourceBuilder};
#[cfg(feature = "provider")]
pub use provider::{
    Capabilities, CheckFailure, Checked, Created, Diff, DirRequest, FunctionSchema, ObjectType,
    PropertySchema, Provider, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    ResourceType, Type, Typed, TypedResource, properties_of,
};
/// `schemars`, whose `JsonSchema` derive typed resources use. Depend on it directly, or use this
/// one with `#[schemars(crate = "plinth_sdk::schemars")]` on each derived type.
#[cfg(feature = "provider")]
pub use schemars;
pub use secret::Secret;
pub use value::{PropertyMap, Value, from_value, to_value};
#[cfg(feature = "program")]
pub use wire::{OutputField, OutputRef};

/// What the export macros expand to; not part of the API.
#[doc(hidden)]
pub mod __private {
    #[cfg(feature = "policy")]
    pub use crate::policy::bindings as policy_bindings;
    #[cfg(feature = "policy")]
    pub use crate::policy::export::PolicyExport;
    #[cfg(feature = "program")]
    pub use crate::program::bindings as program_bindings;
    #[cfg(feature = "program")]
    pub use crate::program::export::{ProgramExport, ProgramMain};
    #[cfg(feature = "provider")]
    pub use crate::provider::bindings as provider_bindings;
    #[cfg(feature = "provider")]
    pub use crate::provider::export::ProviderExport;
}
