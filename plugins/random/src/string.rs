//! `random:RandomString` and `random:RandomPassword`: random strings from character classes.
//! They differ only in that a password's `result` is a secret and its id says nothing.

use std::sync::OnceLock;

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema, Secret,
    TypedResource,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::charset::{Class, LOWER, NUMERIC, Rules, SPECIAL, UPPER};
use crate::inputs::{Keepers, every_input_replaces, in_range, schema_once, yes};

/// The longest string generated, so that a typo cannot exhaust the plugin's memory.
const MAX_LENGTH: i64 = 1 << 16;

/// The inputs of `random:RandomString` and `random:RandomPassword`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct StringInputs {
    /// The number of characters.
    length: i64,
    /// Use special characters.
    #[serde(default = "yes")]
    special: bool,
    /// Use upper-case letters.
    #[serde(default = "yes")]
    upper: bool,
    /// Use lower-case letters.
    #[serde(default = "yes")]
    lower: bool,
    /// Use digits.
    #[serde(default = "yes")]
    numeric: bool,
    /// The least number of upper-case letters.
    #[serde(default)]
    min_upper: i64,
    /// The least number of lower-case letters.
    #[serde(default)]
    min_lower: i64,
    /// The least number of digits.
    #[serde(default)]
    min_numeric: i64,
    /// The least number of special characters.
    #[serde(default)]
    min_special: i64,
    /// The special characters to use instead of !@#$%&*()-_=+[]{}<>:?
    #[serde(default, skip_serializing_if = "Option::is_none")]
    override_special: Option<String>,
    /// Arbitrary values that, when changed, generate a new value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keepers: Option<Keepers>,
}

impl StringInputs {
    /// `length` characters of every class, with no minimum counts.
    fn of_length(length: i64) -> StringInputs {
        StringInputs {
            length,
            special: true,
            upper: true,
            lower: true,
            numeric: true,
            min_upper: 0,
            min_lower: 0,
            min_numeric: 0,
            min_special: 0,
            override_special: None,
            keepers: None,
        }
    }

    /// Values outside their ranges.
    fn out_of_range(&self) -> Vec<CheckFailure> {
        let counts = [
            ("min_upper", self.min_upper),
            ("min_lower", self.min_lower),
            ("min_numeric", self.min_numeric),
            ("min_special", self.min_special),
        ];
        let length = in_range("length", self.length, 1, MAX_LENGTH);
        (length.into_iter())
            .chain(
                counts
                    .iter()
                    .filter_map(|(name, n)| in_range(name, *n, 0, MAX_LENGTH)),
            )
            .collect()
    }

    /// The generation rules the inputs describe; the counts must be in range.
    fn rules(&self) -> Rules {
        let count = |n: i64| usize::try_from(n).unwrap_or(0);
        let class = |name, chars: &str, enabled, min| Class {
            name,
            chars: chars.chars().collect(),
            enabled,
            min: count(min),
        };
        let special = self.override_special.as_deref().unwrap_or(SPECIAL);
        Rules {
            length: count(self.length),
            classes: vec![
                class("upper", UPPER, self.upper, self.min_upper),
                class("lower", LOWER, self.lower, self.min_lower),
                class("numeric", NUMERIC, self.numeric, self.min_numeric),
                class("special", special, self.special, self.min_special),
            ],
        }
    }

    /// Why no string can be made from these inputs, if none can.
    fn problems(&self) -> Vec<CheckFailure> {
        match self.out_of_range() {
            out if out.is_empty() => self.rules().problems(),
            out => out,
        }
    }

    /// A string made from these inputs.
    fn generate(&self) -> Result<String, ProviderError> {
        match self.problems() {
            problems if problems.is_empty() => Ok(self.rules().generate(&mut rand::rng())),
            problems => Err(ProviderError::Invalid(problems)),
        }
    }
}

/// The outputs: the inputs and the string (`R`: plain, or a secret for a password).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(bound = "R: Serialize + DeserializeOwned")]
pub(crate) struct StringOutputs<R: JsonSchema> {
    #[serde(flatten)]
    inputs: StringInputs,
    /// The generated string.
    result: R,
}

/// `random:RandomString`: the result is plain text and is the id.
pub(crate) struct RandomString;

/// `random:RandomPassword`: the result is a secret; the id is `none`.
pub(crate) struct RandomPassword;

impl TypedResource for RandomString {
    type Inputs = StringInputs;
    type Outputs = StringOutputs<String>;

    fn schema(&self) -> ResourceSchema {
        static SCHEMA: OnceLock<ResourceSchema> = OnceLock::new();
        schema_once(&SCHEMA, || {
            every_input_replaces(
                ResourceSchema::derive::<Self>("random:RandomString").describe(
                    "A random string of letters, digits and special characters, generated once.",
                ),
            )
        })
    }

    fn validate(&self, _: &ResourceContext<'_>, inputs: &StringInputs) -> Vec<CheckFailure> {
        inputs.problems()
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        inputs: StringInputs,
    ) -> Result<Created<Self::Outputs>, ProviderError> {
        let result = inputs.generate()?;
        Ok(Created {
            id: result.clone(),
            outputs: StringOutputs { inputs, result },
        })
    }

    /// Imports the string `id` (Terraform's way): its length is the id's, the other inputs
    /// their defaults.
    fn import(
        &self,
        _: &ResourceContext<'_>,
        id: String,
    ) -> Result<Option<ReadResult<StringInputs, Self::Outputs>>, ProviderError> {
        let length = id.chars().count() as i64;
        let inputs = StringInputs::of_length(length);
        if let Some(problem) = in_range("length", length, 1, MAX_LENGTH) {
            return Err(ProviderError::Invalid(vec![problem]));
        }
        Ok(Some(ReadResult {
            id: id.clone(),
            outputs: StringOutputs {
                inputs: inputs.clone(),
                result: id,
            },
            inputs,
        }))
    }
}

impl TypedResource for RandomPassword {
    type Inputs = StringInputs;
    type Outputs = StringOutputs<Secret<String>>;

    fn schema(&self) -> ResourceSchema {
        static SCHEMA: OnceLock<ResourceSchema> = OnceLock::new();
        schema_once(&SCHEMA, || {
            every_input_replaces(
                ResourceSchema::derive::<Self>("random:RandomPassword")
                    .describe("A random password, kept secret. Same inputs as RandomString."),
            )
        })
    }

    fn validate(&self, _: &ResourceContext<'_>, inputs: &StringInputs) -> Vec<CheckFailure> {
        inputs.problems()
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        inputs: StringInputs,
    ) -> Result<Created<Self::Outputs>, ProviderError> {
        let result = Secret::new(inputs.generate()?);
        Ok(Created {
            id: "none".to_owned(),
            outputs: StringOutputs { inputs, result },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_sdk::{Type, Value, from_value};

    fn inputs(entries: Vec<(&str, Value)>) -> StringInputs {
        from_value(Value::object(entries)).unwrap()
    }

    #[test]
    fn defaults_use_every_class() {
        let rules = inputs(vec![("length", 12.into())]).rules();
        assert_eq!(rules.length, 12);
        assert!(rules.classes.iter().all(|c| c.enabled && c.min == 0));
        assert!(rules.problems().is_empty());
    }

    #[test]
    fn override_special_replaces_the_special_set() {
        let rules = inputs(vec![
            ("length", 4.into()),
            ("override_special", "_%".into()),
        ])
        .rules();
        assert_eq!(rules.classes[3].chars, vec!['_', '%']);
    }

    #[test]
    fn minimums_beyond_the_length_are_a_problem() {
        let given = inputs(vec![
            ("length", 2.into()),
            ("min_upper", 2.into()),
            ("min_numeric", 1.into()),
        ]);
        assert_eq!(given.problems()[0].property, "length");
    }

    #[test]
    fn counts_out_of_range_are_named() {
        let given = inputs(vec![("length", 0.into()), ("min_lower", (-1).into())]);
        let problems: Vec<String> = given.problems().iter().map(|p| p.to_string()).collect();
        assert_eq!(
            problems,
            [
                "length: must be from 1 to 65536, not 0",
                "min_lower: must be from 0 to 65536, not -1"
            ]
        );
    }

    #[test]
    fn a_password_result_is_secret_and_a_string_result_is_not() {
        let secret = |schema: ResourceSchema| {
            let result = schema.outputs.iter().find(|p| p.name == "result").cloned();
            result.map(|p| (p.secret, p.ty))
        };
        assert_eq!(secret(RandomString.schema()), Some((false, Type::String)));
        assert_eq!(secret(RandomPassword.schema()), Some((true, Type::String)));
        let length = &RandomString.schema().inputs[0];
        assert!(length.required && length.replace_on_change);
        assert_eq!(length.ty, Type::Integer);
    }
}
