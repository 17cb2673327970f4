//! `random:RandomUuid`: a random (version 4) UUID.

use std::sync::OnceLock;

use plinth_sdk::{Created, ProviderError, ResourceContext, ResourceSchema, TypedResource};
use rand::{Rng, RngExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::inputs::{Keepers, every_input_replaces, schema_once};

/// The inputs of `random:RandomUuid`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct UuidInputs {
    /// Arbitrary values that, when changed, generate a new value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keepers: Option<Keepers>,
}

/// The outputs: the inputs and the UUID.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct UuidOutputs {
    #[serde(flatten)]
    inputs: UuidInputs,
    /// The generated UUID, in lower-case hex.
    result: String,
}

/// The `random:RandomUuid` resource type.
pub(crate) struct RandomUuid;

impl TypedResource for RandomUuid {
    type Inputs = UuidInputs;
    type Outputs = UuidOutputs;

    fn schema(&self) -> ResourceSchema {
        static SCHEMA: OnceLock<ResourceSchema> = OnceLock::new();
        schema_once(&SCHEMA, || {
            every_input_replaces(
                ResourceSchema::derive::<Self>("random:RandomUuid")
                    .describe("A random version 4 UUID, generated once."),
            )
        })
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        inputs: UuidInputs,
    ) -> Result<Created<UuidOutputs>, ProviderError> {
        let result = generate(&mut rand::rng());
        Ok(Created {
            id: result.clone(),
            outputs: UuidOutputs { inputs, result },
        })
    }
}

/// A version 4 UUID from 122 random bits, hyphenated.
fn generate<R: Rng + ?Sized>(rng: &mut R) -> String {
    ::uuid::Builder::from_random_bytes(rng.random())
        .into_uuid()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn is_a_version_4_uuid() {
        let s = generate(&mut StdRng::seed_from_u64(1));
        let parsed = ::uuid::Uuid::parse_str(&s).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(s.len(), 36);
        assert_ne!(s, generate(&mut StdRng::seed_from_u64(2)));
    }
}
