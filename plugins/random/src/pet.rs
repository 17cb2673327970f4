//! `random:RandomPet`: a random, readable name such as `vocal-mongoose`, from the word lists of
//! the petname project (as Terraform's `random_pet` uses).

use plinth_sdk::{
    Checked, Created, PropertyMap, PropertySchema, ProviderError, ResourceContext, ResourceSchema,
    ResourceType, Value,
};
use rand::Rng;

use crate::props::{KEEPERS, Kind, Prop, int, normalize, schema, string};
use crate::result::{created, planned};

const PROPS: &[Prop] = &[
    Prop::defaulted(
        "length",
        Kind::Int { min: 1, max: 255 },
        || 2.into(),
        "The number of words.",
    ),
    Prop::optional("prefix", Kind::Str, "A string to put before the words."),
    Prop::defaulted(
        "separator",
        Kind::Str,
        || "-".into(),
        "The string between the words (and after the prefix).",
    ),
    KEEPERS,
];

/// The `random:RandomPet` resource type.
pub(crate) struct RandomPet;

impl ResourceType for RandomPet {
    fn schema(&self) -> ResourceSchema {
        schema(
            "random:RandomPet",
            "A random pet name (adverbs, an adjective and a noun), generated once.",
            PROPS,
            PropertySchema::new("result").describe("The generated name."),
        )
    }

    fn check(
        &self,
        ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        Ok(normalize(ctx.type_token(), PROPS, news))
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        if ctx.preview() {
            return Ok(planned(inputs));
        }
        let words = u8::try_from(int(&inputs, "length")?)
            .map_err(|_| ProviderError::invalid("length", "must be from 1 to 255"))?;
        let separator = string(&inputs, "separator").unwrap_or("-");
        let name = generate(
            words,
            string(&inputs, "prefix"),
            separator,
            &mut rand::rng(),
        );
        Ok(created(name.clone(), inputs, Value::from(name)))
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
}
