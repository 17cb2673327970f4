//! `{{ name }}`: a plinth provider. Each resource type is a Rust type implementing
//! `TypedResource`; its schema (what `plinth plugin inspect` shows and what `plinth gen-sdk`
//! turns into typed SDKs) is derived from its inputs and outputs.
//!
//! ```text
//! cargo test                                  # the unit tests below, natively
//! plinth plugin inspect .                     # builds the component and shows its types
//! plinth gen-sdk . --lang rust --out sdks/rust   # a typed SDK for programs (or ts, python)
//! ```

use plinth_sdk::{
    Capabilities, CheckFailure, Created, Provider, ProviderError, ResourceContext, ResourceSchema,
    ResourceType, Typed, TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Default)]
struct Greetings;

impl Provider for Greetings {
    /// The package of its type tokens: `{{ name }}:Greeting`.
    fn name(&self) -> &str {
        "{{ name }}"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn description(&self) -> &str {
        "Greetings, made by `plinth new rust-provider`."
    }

    /// Nothing outside the sandbox: ask for directories, hosts or variables here.
    fn capabilities(&self) -> Capabilities {
        Capabilities::new()
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![Box::new(Typed(Greeting))]
    }
}

/// What a program gives a `{{ name }}:Greeting`.
#[derive(Serialize, Deserialize, JsonSchema)]
struct GreetingInputs {
    /// Who is greeted.
    name: String,
    /// End with `!` rather than `.`.
    #[serde(default)]
    excited: bool,
}

/// What a `{{ name }}:Greeting` gives back.
#[derive(Serialize, Deserialize, JsonSchema)]
struct GreetingOutputs {
    /// The greeting.
    message: String,
}

/// The greeting of `inputs`: the provider's whole logic, tested natively below.
fn message(inputs: &GreetingInputs) -> String {
    let end = if inputs.excited { '!' } else { '.' };
    format!("Hello, {}{end}", inputs.name)
}

/// `{{ name }}:Greeting`: a message made from a name.
struct Greeting;

impl TypedResource for Greeting {
    type Inputs = GreetingInputs;
    type Outputs = GreetingOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("{{ name }}:Greeting").describe("A greeting of a name.")
    }

    /// Rules the types cannot say; the schema's checks (required, types) ran before.
    fn validate(&self, _: &ResourceContext<'_>, inputs: &GreetingInputs) -> Vec<CheckFailure> {
        if inputs.name.trim().is_empty() {
            return vec![CheckFailure::new("name", "must not be empty")];
        }
        Vec::new()
    }

    /// During a preview the outputs are known from the inputs: say so.
    fn plan(
        &self,
        _: &ResourceContext<'_>,
        inputs: &GreetingInputs,
        _: Option<&GreetingOutputs>,
    ) -> Result<Option<GreetingOutputs>, ProviderError> {
        Ok(Some(GreetingOutputs {
            message: message(inputs),
        }))
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: GreetingInputs,
    ) -> Result<Created<GreetingOutputs>, ProviderError> {
        Ok(Created {
            id: ctx.name().to_owned(),
            outputs: GreetingOutputs {
                message: message(&inputs),
            },
        })
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        _: &str,
        _: GreetingInputs,
        _: GreetingOutputs,
        new_inputs: GreetingInputs,
    ) -> Result<GreetingOutputs, ProviderError> {
        Ok(GreetingOutputs {
            message: message(&new_inputs),
        })
    }
    // `read` returns the stored state and `delete` does nothing, by default: a greeting
    // exists only in the state.
}

plinth_sdk::export_provider!(Greetings);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_greeting_names_its_name() {
        let inputs = GreetingInputs {
            name: "world".into(),
            excited: true,
        };
        assert_eq!(message(&inputs), "Hello, world!");
    }

    #[test]
    fn the_schema_comes_from_the_types() {
        let schema = Typed(Greeting).schema();
        assert_eq!(schema.token, "{{ name }}:Greeting");
        let name = schema.inputs.iter().find(|p| p.name == "name").unwrap();
        assert!(name.required);
        let excited = schema.inputs.iter().find(|p| p.name == "excited").unwrap();
        assert!(!excited.required);
    }
}
