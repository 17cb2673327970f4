//! The `testkit` provider, for end-to-end tests of the engine and the runtime.
//!
//! - `testkit:Echo` returns its (free-form) inputs as outputs, plus `generation`: 1 when
//!   created, incremented by each update, and `region`, the provider's configured region, if
//!   any. A change to `replace_key` replaces the resource; a change to any other input updates
//!   it in place. The id is a random UUID.
//!
//! Configuration: `region` (a change replaces every resource the provider manages) and `note`
//! (changes nothing).
//! - `testkit:Panic`, `testkit:Trap`, `testkit:Fail` and `testkit:Partial` break in `create`
//!   (see [`faults`]); during a preview they plan like any other resource.
//! - `testkit:Record` is a file in the directory granted at `/world` (see [`record`]).
//! - The functions `testkit:readFile` and `testkit:writeFile` touch any path the sandbox lets
//!   them (see [`files`]).

mod echo;
mod faults;
mod files;
mod record;

use plinth_sdk::{
    FunctionSchema, PropertyMap, PropertySchema, Provider, ProviderError, ResourceType, Value,
};

/// The testkit provider.
#[derive(Default)]
struct Testkit {
    /// The configured `region`.
    region: Option<String>,
}

impl Provider for Testkit {
    fn name(&self) -> &str {
        "testkit"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn config_schema(&self) -> Vec<PropertySchema> {
        vec![
            PropertySchema::new("region")
                .describe("Where the resources live: changing it replaces them all.")
                .replace_on_change(),
            PropertySchema::new("note").describe("Free text; changing it changes nothing."),
        ]
    }

    fn configure(&mut self, config: PropertyMap) -> Result<(), ProviderError> {
        self.region = config
            .get("region")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(())
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![
            Box::new(echo::Echo {
                region: self.region.clone(),
            }),
            Box::new(faults::Faulty::PANIC),
            Box::new(faults::Faulty::TRAP),
            Box::new(faults::Faulty::FAIL),
            Box::new(faults::Faulty::PARTIAL),
            Box::new(record::Record),
        ]
    }

    fn functions(&self) -> Vec<FunctionSchema> {
        vec![files::READ_FILE.into(), files::WRITE_FILE.into()]
    }

    fn invoke(&self, token: &str, args: PropertyMap) -> Result<Value, ProviderError> {
        files::invoke(token, &args)
    }
}

plinth_sdk::export_provider!(Testkit);
