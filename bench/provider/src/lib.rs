//! The `bench` provider, built as a Wasm component: one resource type, `bench:Item`.
//!
//! Inputs: `index` (integer), `payload` (string), `after` (optional string, the id of the item
//! before it in a chain or of its group's root), `secret` (optional, a secret string). Outputs:
//! the inputs and `result`, derived from the payload. Any input change updates the item in
//! place; the id, derived from the URN, never changes. The native gRPC twin (`plinth-bench-grpc-provider`) implements the same type.

#[path = "../../item.rs"]
mod item;

use plinth_sdk::{
    Created, PropertyMap, PropertySchema, Provider, ProviderError, ResourceContext, ResourceSchema,
    ResourceType, Type, Value,
};

#[derive(Default)]
struct Bench;

impl Provider for Bench {
    fn name(&self) -> &str {
        "bench"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![Box::new(Item)]
    }
}

struct Item;

impl ResourceType for Item {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new(item::TOKEN)
            .describe("A benchmark item: outputs its inputs and a result derived from payload.")
            .input(PropertySchema::new("index").of(Type::Integer).required())
            .input(PropertySchema::new("payload").of(Type::String).required())
            .input(PropertySchema::new("after").of(Type::String))
            // A distinct secret per item, with `--secrets`: echoed as a secret output.
            .input(PropertySchema::new("secret").of(Type::String).secret())
            .output(PropertySchema::new("result").of(Type::String).required())
            .equal_inputs_mean_no_change()
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        Ok(Created {
            id: item::id(ctx.urn()),
            outputs: outputs(inputs),
        })
    }

    fn update(
        &self,
        _ctx: &ResourceContext<'_>,
        _id: &str,
        _old_inputs: PropertyMap,
        _old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        Ok(outputs(new_inputs))
    }
}

/// The inputs with `result`, unknown while the payload is.
fn outputs(mut inputs: PropertyMap) -> PropertyMap {
    let result = match inputs.get("payload") {
        Some(Value::String(payload)) => Value::String(item::result(payload)),
        _ => Value::Unknown,
    };
    inputs.insert("result".to_owned(), result);
    inputs
}

plinth_sdk::export_provider!(Bench);
