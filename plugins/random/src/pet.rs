//! `random:RandomPet`: a random, readable name such as `vocal-mongoose`, from the word lists of
//! the petname project (as Terraform's `random_pet` uses).

use std::sync::OnceLock;

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use rand::Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::inputs::{Keepers, every_input_replaces, in_range, schema_once};

/// The inputs of `random:RandomPet`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PetInputs {
    /// The number of words, from 1 to 255.
    #[serde(default = "two")]
    length: i64,
    /// A string to put before the words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    /// The string between the words (and after the prefix).
    #[serde(default = "dash")]
    separator: String,
    /// Arbitrary values that, when changed, generate a new value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keepers: Option<Keepers>,
}

fn two() -> i64 {
    2
}

fn dash() -> String {
    "-".to_owned()
}

/// The outputs: the inputs and the name.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PetOutputs {
    #[serde(flatten)]
    inputs: PetInputs,
    /// The generated name.
    result: String,
}

/// The `random:RandomPet` resource type.
pub(crate) struct RandomPet;

impl TypedResource for RandomPet {
    type Inputs = PetInputs;
    type Outputs = PetOutputs;

    fn schema(&self) -> ResourceSchema {
        static SCHEMA: OnceLock<ResourceSchema> = OnceLock::new();
        schema_once(&SCHEMA, || {
            every_input_replaces(
                ResourceSchema::derive::<Self>("random:RandomPet").describe(
                    "A random pet name (adverbs, an adjective and a noun), generated once.",
                ),
            )
        })
    }

    fn validate(&self, _: &ResourceContext<'_>, inputs: &PetInputs) -> Vec<CheckFailure> {
        in_range("length", inputs.length, 1, 255)
            .into_iter()
            .collect()
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        inputs: PetInputs,
    ) -> Result<Created<PetOutputs>, ProviderError> {
        let words = u8::try_from(inputs.length)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| ProviderError::invalid("length", "must be from 1 to 255"))?;
        let name = generate(
            words,
            inputs.prefix.as_deref(),
            &inputs.separator,
            &mut rand::rng(),
        );
        Ok(Created {
            id: name.clone(),
            outputs: PetOutputs {
                inputs,
                result: name,
            },
        })
    }

    /// Imports the name `id`: its words are the ones between dashes (the default separator).
    fn import(
        &self,
        _: &ResourceContext<'_>,
        id: String,
    ) -> Result<Option<ReadResult<PetInputs, PetOutputs>>, ProviderError> {
        let words = id.split('-').count();
        if id.is_empty() || id.split('-').any(str::is_empty) || words > 255 {
            return Err(ProviderError::Failed(
                "a pet name to import is 1 to 255 words joined by `-`".to_owned(),
            ));
        }
        let inputs = PetInputs {
            length: words as i64,
            prefix: None,
            separator: dash(),
            keepers: None,
        };
        Ok(Some(ReadResult {
            id: id.clone(),
            outputs: PetOutputs {
                inputs: inputs.clone(),
                result: id,
            },
            inputs,
        }))
    }
}

/// `words` words joined by `separator`, after `prefix` and a separator if a prefix is given.
fn generate(words: u8, prefix: Option<&str>, separator: &str, rng: &mut dyn Rng) -> String {
    let mut name = match prefix {
        Some(prefix) => format!("{prefix}{separator}"),
        None => String::new(),
    };
    petname::Petnames::small()
        .namer(words, separator)
        .generate_into(&mut name, rng);
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_sdk::Value;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn has_the_number_of_words() {
        let mut rng = StdRng::seed_from_u64(3);
        for words in 1..=4 {
            let name = generate(words, None, "-", &mut rng);
            assert_eq!(name.split('-').count(), usize::from(words), "{name}");
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{name}"
            );
        }
    }

    #[test]
    fn prefix_and_separator() {
        let name = generate(2, Some("web"), "_", &mut StdRng::seed_from_u64(4));
        assert!(name.starts_with("web_"), "{name}");
        assert_eq!(name.split('_').count(), 3, "{name}");
    }

    #[test]
    fn defaults_show_in_the_schema() {
        let schema = RandomPet.schema();
        let length = &schema.inputs[0];
        assert_eq!(length.default, Some(Value::from(2)));
        assert!(!length.required);
        assert_eq!(schema.inputs[2].default, Some(Value::from("-")));
    }
}
