//! `random:RandomUuid`: a random (version 4) UUID.

use plinth_sdk::{
    Created, PropertyMap, PropertySchema, ProviderError, ResourceContext, ResourceSchema,
    ResourceType,
};
use rand::{Rng, RngExt};

use crate::props::{KEEPERS, Prop, normalize, schema};
use crate::result::{created, planned};

const PROPS: &[Prop] = &[KEEPERS];

/// The `random:RandomUuid` resource type.
pub(crate) struct RandomUuid;

impl ResourceType for RandomUuid {
    fn schema(&self) -> ResourceSchema {
        schema(
            "random:RandomUuid",
            "A random version 4 UUID, generated once.",
            PROPS,
            PropertySchema::new("result").describe("The generated UUID, in lower-case hex."),
        )
    }

    fn check(
        &self,
        ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<plinth_sdk::Checked, ProviderError> {
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
        let uuid = generate(&mut rand::rng());
        Ok(created(uuid.clone(), inputs, uuid.into()))
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
