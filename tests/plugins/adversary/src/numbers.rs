//! `adversary:Numbers`: a resource whose creation returns a number JSON cannot hold. Input
//! `number`: `nan`, `inf` or `-inf`, returned as the output `stats.size`; any other value is an
//! `invalid` error.

use plinth_sdk::{
    Created, PropertyMap, PropertySchema, ProviderError, ResourceContext, ResourceSchema,
    ResourceType, Value,
};

use crate::inputs;

/// The `adversary:Numbers` resource type.
pub(crate) struct Numbers;

impl ResourceType for Numbers {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("adversary:Numbers")
            .open()
            .describe("Returns NaN or an infinity as `stats.size` when created.")
            .input(PropertySchema::new("number").required())
            .output(PropertySchema::new("stats").describe("`size`: the number asked for."))
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        mut inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        let number = match inputs::required(&inputs, "number")? {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => {
                return Err(ProviderError::invalid(
                    "number",
                    "expected nan, inf or -inf",
                ));
            }
        };
        let mut stats = PropertyMap::new();
        stats.insert("size".to_owned(), Value::Number(number));
        inputs.insert("stats".to_owned(), Value::Object(stats));
        Ok(Created {
            id: ctx.name().to_owned(),
            outputs: inputs,
        })
    }
}
