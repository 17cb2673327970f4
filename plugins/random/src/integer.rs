//! `random:RandomInteger`: a random whole number in an inclusive range.

use std::sync::OnceLock;

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ResourceContext, ResourceSchema, TypedResource,
};
use rand::{Rng, RngExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::inputs::{Keepers, every_input_replaces, schema_once};

/// The inputs of `random:RandomInteger`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct IntegerInputs {
    /// The smallest possible value.
    pub(crate) min: i64,
    /// The largest possible value.
    pub(crate) max: i64,
    /// Arbitrary values that, when changed, generate a new value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) keepers: Option<Keepers>,
}

/// The outputs: the inputs and the integer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct IntegerOutputs {
    #[serde(flatten)]
    pub(crate) inputs: IntegerInputs,
    /// The generated integer.
    pub(crate) result: i64,
}

/// The `random:RandomInteger` resource type.
pub(crate) struct RandomInteger;

impl TypedResource for RandomInteger {
    type Inputs = IntegerInputs;
    type Outputs = IntegerOutputs;

    fn schema(&self) -> ResourceSchema {
        static SCHEMA: OnceLock<ResourceSchema> = OnceLock::new();
        schema_once(&SCHEMA, || {
            every_input_replaces(
                ResourceSchema::derive::<Self>("random:RandomInteger")
                    .describe("A random integer from min to max (inclusive), generated once."),
            )
        })
    }

    fn validate(&self, _: &ResourceContext<'_>, inputs: &IntegerInputs) -> Vec<CheckFailure> {
        let (min, max) = (inputs.min, inputs.max);
        if min > max {
            vec![CheckFailure::new(
                "min",
                format!("must not be greater than max ({min} > {max})"),
            )]
        } else {
            Vec::new()
        }
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        inputs: IntegerInputs,
    ) -> Result<Created<IntegerOutputs>, ProviderError> {
        if inputs.min > inputs.max {
            return Err(ProviderError::invalid(
                "min",
                "must not be greater than max",
            ));
        }
        let result = generate(inputs.min, inputs.max, &mut rand::rng());
        Ok(Created {
            id: result.to_string(),
            outputs: IntegerOutputs { inputs, result },
        })
    }
}

/// A uniformly random integer in `min..=max`; `min <= max`.
fn generate<R: Rng + ?Sized>(min: i64, max: i64, rng: &mut R) -> i64 {
    rng.random_range(min..=max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_sdk::Type;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn stays_in_the_range_and_reaches_both_ends() {
        let mut rng = StdRng::seed_from_u64(5);
        let values: Vec<i64> = (0..200).map(|_| generate(-2, 2, &mut rng)).collect();
        assert!(values.iter().all(|n| (-2..=2).contains(n)));
        assert!(values.contains(&-2) && values.contains(&2));
    }

    #[test]
    fn a_single_value_range_is_that_value() {
        assert_eq!(generate(7, 7, &mut StdRng::seed_from_u64(0)), 7);
    }

    #[test]
    fn the_result_is_an_integer_and_every_input_replaces() {
        let schema = RandomInteger.schema();
        let names: Vec<&str> = schema.inputs.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["min", "max", "keepers"]);
        assert!(schema.inputs.iter().all(|p| p.replace_on_change));
        assert!(schema.inputs[0].required && !schema.inputs[2].required);
        assert_eq!(schema.inputs[2].ty, Type::map(Type::Any));
        let result = schema.outputs.iter().find(|p| p.name == "result").unwrap();
        assert_eq!(result.ty, Type::Integer);
        assert!(result.required);
        assert!(schema.outputs.iter().any(|p| p.name == "min"));
    }
}
