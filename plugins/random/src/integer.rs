//! `random:RandomInteger`: a random whole number in an inclusive range.

use plinth_sdk::{
    Checked, Created, PropertyMap, PropertySchema, ProviderError, ResourceContext, ResourceSchema,
    ResourceType,
};
use rand::{Rng, RngExt};

use crate::props::{KEEPERS, Kind, Prop, all_known, int, normalize, schema};
use crate::result::{created, planned};

const PROPS: &[Prop] = &[
    Prop::required("min", Kind::ANY_INT, "The smallest possible value."),
    Prop::required("max", Kind::ANY_INT, "The largest possible value."),
    KEEPERS,
];

/// The `random:RandomInteger` resource type.
pub(crate) struct RandomInteger;

impl ResourceType for RandomInteger {
    fn schema(&self) -> ResourceSchema {
        schema(
            "random:RandomInteger",
            "A random integer from min to max (inclusive), generated once.",
            PROPS,
            PropertySchema::new("result").describe("The generated integer."),
        )
    }

    fn check(
        &self,
        ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        let mut checked = normalize(ctx.type_token(), PROPS, news);
        if checked.failures.is_empty() && all_known(&checked.inputs) {
            let (min, max) = range(&checked.inputs)?;
            if min > max {
                checked.fail(
                    "min",
                    format!("must not be greater than max ({min} > {max})"),
                );
            }
        }
        Ok(checked)
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        if ctx.preview() {
            return Ok(planned(inputs));
        }
        let (min, max) = range(&inputs)?;
        if min > max {
            return Err(ProviderError::invalid(
                "min",
                "must not be greater than max",
            ));
        }
        let n = generate(min, max, &mut rand::rng());
        Ok(created(n.to_string(), inputs, n.into()))
    }
}

fn range(inputs: &PropertyMap) -> Result<(i64, i64), ProviderError> {
    Ok((int(inputs, "min")?, int(inputs, "max")?))
}

/// A uniformly random integer in `min..=max`; `min <= max`.
fn generate<R: Rng + ?Sized>(min: i64, max: i64, rng: &mut R) -> i64 {
    rng.random_range(min..=max)
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
