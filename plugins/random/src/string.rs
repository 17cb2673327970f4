//! `random:RandomString` and `random:RandomPassword`: random strings from character classes.
//! They differ only in that a password's `result` is a secret and its id says nothing.

use plinth_sdk::{
    Checked, Created, PropertyMap, PropertySchema, ProviderError, ResourceContext, ResourceSchema,
    ResourceType, Value,
};

use crate::charset::{Class, LOWER, NUMERIC, Rules, SPECIAL, UPPER};
use crate::props::{KEEPERS, Kind, Prop, all_known, boolean, int, normalize, schema, string};
use crate::result::{created, planned};

/// The longest string generated, so that a typo cannot exhaust the plugin's memory.
const MAX_LENGTH: i64 = 1 << 16;
const COUNT: Kind = Kind::Int {
    min: 0,
    max: MAX_LENGTH,
};

const PROPS: &[Prop] = &[
    Prop::required(
        "length",
        Kind::Int {
            min: 1,
            max: MAX_LENGTH,
        },
        "The number of characters.",
    ),
    Prop::defaulted("special", Kind::Bool, yes, "Use special characters."),
    Prop::defaulted("upper", Kind::Bool, yes, "Use upper-case letters."),
    Prop::defaulted("lower", Kind::Bool, yes, "Use lower-case letters."),
    Prop::defaulted("numeric", Kind::Bool, yes, "Use digits."),
    Prop::defaulted(
        "min_upper",
        COUNT,
        zero,
        "The least number of upper-case letters.",
    ),
    Prop::defaulted(
        "min_lower",
        COUNT,
        zero,
        "The least number of lower-case letters.",
    ),
    Prop::defaulted("min_numeric", COUNT, zero, "The least number of digits."),
    Prop::defaulted(
        "min_special",
        COUNT,
        zero,
        "The least number of special characters.",
    ),
    Prop::optional(
        "override_special",
        Kind::Str,
        "The special characters to use instead of !@#$%&*()-_=+[]{}<>:?",
    ),
    KEEPERS,
];

fn yes() -> Value {
    true.into()
}

fn zero() -> Value {
    0.into()
}

/// A random string resource type; [`RandomString::STRING`] or [`RandomString::PASSWORD`].
pub(crate) struct RandomString {
    password: bool,
}

impl RandomString {
    /// `random:RandomString`: the result is plain text and is the id.
    pub(crate) const STRING: RandomString = RandomString { password: false };
    /// `random:RandomPassword`: the result is a secret; the id is `none`.
    pub(crate) const PASSWORD: RandomString = RandomString { password: true };
}

impl ResourceType for RandomString {
    fn schema(&self) -> ResourceSchema {
        if self.password {
            schema(
                "random:RandomPassword",
                "A random password, kept secret. Same inputs as RandomString.",
                PROPS,
                PropertySchema::new("result")
                    .describe("The generated password.")
                    .secret(),
            )
        } else {
            schema(
                "random:RandomString",
                "A random string of letters, digits and special characters, generated once.",
                PROPS,
                PropertySchema::new("result").describe("The generated string."),
            )
        }
    }

    fn check(
        &self,
        ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        let mut checked = normalize(ctx.type_token(), PROPS, news);
        if checked.failures.is_empty() && all_known(&checked.inputs) {
            checked.failures = rules(&checked.inputs)?.problems();
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
        let rules = rules(&inputs)?;
        let problems = rules.problems();
        if !problems.is_empty() {
            return Err(ProviderError::Invalid(problems));
        }
        let result = rules.generate(&mut rand::rng());
        Ok(if self.password {
            created("none".to_owned(), inputs, Value::secret(result))
        } else {
            created(result.clone(), inputs, result.into())
        })
    }
}

/// The generation rules the (checked, known) inputs describe.
fn rules(inputs: &PropertyMap) -> Result<Rules, ProviderError> {
    let class = |name: &'static str, chars: &str| -> Result<Class, ProviderError> {
        Ok(Class {
            name,
            chars: chars.chars().collect(),
            enabled: boolean(inputs, name)?,
            min: count(inputs, &format!("min_{name}"))?,
        })
    };
    let special = string(inputs, "override_special").unwrap_or(SPECIAL);
    Ok(Rules {
        length: count(inputs, "length")?,
        classes: vec![
            class("upper", UPPER)?,
            class("lower", LOWER)?,
            class("numeric", NUMERIC)?,
            class("special", special)?,
        ],
    })
}

fn count(inputs: &PropertyMap, name: &str) -> Result<usize, ProviderError> {
    usize::try_from(int(inputs, name)?)
        .map_err(|_| ProviderError::invalid(name, "must not be negative"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(entries: &[(&str, Value)]) -> PropertyMap {
        let given = entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        normalize("random:RandomString", PROPS, given).inputs
    }

    #[test]
    fn defaults_use_every_class() {
        let rules = rules(&inputs(&[("length", 12.into())])).unwrap();
        assert_eq!(rules.length, 12);
        assert!(rules.classes.iter().all(|c| c.enabled && c.min == 0));
        assert!(rules.problems().is_empty());
    }

    #[test]
    fn override_special_replaces_the_special_set() {
        let rules = rules(&inputs(&[
            ("length", 4.into()),
            ("override_special", "_%".into()),
        ]))
        .unwrap();
        assert_eq!(rules.classes[3].chars, vec!['_', '%']);
    }

    #[test]
    fn minimums_beyond_the_length_are_a_problem() {
        let rules = rules(&inputs(&[
            ("length", 2.into()),
            ("min_upper", 2.into()),
            ("min_numeric", 1.into()),
        ]))
        .unwrap();
        assert_eq!(rules.problems()[0].property, "length");
    }
}
