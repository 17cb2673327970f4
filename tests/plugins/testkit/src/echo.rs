//! `testkit:Echo`: outputs are the inputs plus a `generation` counter. With a `print_inputs`
//! input, `create` prints its string inputs, secrets revealed, to stdout and stderr.

use plinth_sdk::{
    Created, PropertyMap, PropertySchema, ProviderError, ResourceContext, ResourceSchema,
    ResourceType, Type, Value,
};

/// The `testkit:Echo` resource type, made by a provider configured with `region`.
pub(crate) struct Echo {
    pub(crate) region: Option<String>,
}

impl ResourceType for Echo {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("testkit:Echo")
            .describe("Echoes its inputs; other inputs than replace_key are free-form.")
            .open()
            .equal_inputs_mean_no_change()
            .input(
                PropertySchema::new("replace_key")
                    .describe("Changing it replaces the resource; other inputs update it.")
                    .replace_on_change(),
            )
            .output(
                PropertySchema::new("generation")
                    .of(Type::Integer)
                    .describe("1 when created, incremented by each update.")
                    .required(),
            )
    }

    fn create(
        &self,
        _ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        print_inputs(&inputs);
        Ok(Created {
            id: uuid::Uuid::new_v4().to_string(),
            outputs: self.outputs(inputs, 1),
        })
    }

    fn update(
        &self,
        _ctx: &ResourceContext<'_>,
        _id: &str,
        _old_inputs: PropertyMap,
        old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        let generation = old_outputs
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        Ok(self.outputs(new_inputs, generation + 1))
    }
}

impl Echo {
    /// The inputs, with the generation and the provider's region.
    fn outputs(&self, mut inputs: PropertyMap, generation: i64) -> PropertyMap {
        inputs.insert("generation".to_owned(), generation.into());
        if let Some(region) = &self.region {
            inputs.insert("region".to_owned(), region.as_str().into());
        }
        inputs
    }
}

/// Prints the string inputs, revealed, if `print_inputs` is one of them: a careless plugin.
fn print_inputs(inputs: &PropertyMap) {
    if !inputs.contains_key("print_inputs") {
        return;
    }
    for (key, value) in inputs {
        if let Some(text) = value.as_str() {
            println!("plugin prints {key}: {text}");
            eprintln!("plugin warns {key}: {text}");
        }
    }
}
