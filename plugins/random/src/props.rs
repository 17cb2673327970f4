//! The inputs of the random resources: their kinds and defaults, how they are checked and
//! normalized, and how the resource code reads them back.
//!
//! Every input replaces the resource when it changes, so the generated value stays stable until
//! the user asks for a new one (typically by changing `keepers`).

use plinth_sdk::{Checked, PropertyMap, PropertySchema, ProviderError, ResourceSchema, Value};

/// Integers are carried as `f64`: beyond 2^53 they are not exact.
const MAX_EXACT: i64 = 1 << 53;

/// What values an input accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// A whole number in an inclusive range.
    Int {
        min: i64,
        max: i64,
    },
    Bool,
    Str,
    /// An object with any values: `keepers`.
    Object,
}

impl Kind {
    /// Any whole number that a number value holds exactly.
    pub(crate) const ANY_INT: Kind = Kind::Int {
        min: -MAX_EXACT,
        max: MAX_EXACT,
    };

    /// Why `value` is not of this kind, if it is not.
    fn reject(self, value: &Value) -> Option<String> {
        match self {
            Kind::Int { min, max } => match (value.as_f64(), value.as_i64()) {
                (None, _) => Some("must be a number".into()),
                (_, Some(n)) if (min..=max).contains(&n) => None,
                _ if (min, max) == (-MAX_EXACT, MAX_EXACT) => {
                    Some("must be a whole number no larger than 2^53 in magnitude".into())
                }
                _ if max == MAX_EXACT => Some(format!("must be a whole number of at least {min}")),
                _ => Some(format!("must be a whole number from {min} to {max}")),
            },
            Kind::Bool => value
                .as_bool()
                .is_none()
                .then(|| "must be a boolean".into()),
            Kind::Str => value.as_str().is_none().then(|| "must be a string".into()),
            Kind::Object => value
                .as_object()
                .is_none()
                .then(|| "must be an object".into()),
        }
    }
}

/// One input property.
#[derive(Debug, Clone)]
pub(crate) struct Prop {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) kind: Kind,
    /// Required inputs have no default.
    pub(crate) required: bool,
    /// The value stored when the input is not given.
    pub(crate) default: Option<fn() -> Value>,
}

impl Prop {
    /// An optional input with no default.
    pub(crate) const fn optional(
        name: &'static str,
        kind: Kind,
        description: &'static str,
    ) -> Prop {
        Prop {
            name,
            description,
            kind,
            required: false,
            default: None,
        }
    }

    /// A required input.
    pub(crate) const fn required(
        name: &'static str,
        kind: Kind,
        description: &'static str,
    ) -> Prop {
        Prop {
            required: true,
            ..Prop::optional(name, kind, description)
        }
    }

    /// An optional input with a default.
    pub(crate) const fn defaulted(
        name: &'static str,
        kind: Kind,
        default: fn() -> Value,
        description: &'static str,
    ) -> Prop {
        Prop {
            default: Some(default),
            ..Prop::optional(name, kind, description)
        }
    }
}

/// The `keepers` input every random resource has.
pub(crate) const KEEPERS: Prop = Prop::optional(
    "keepers",
    Kind::Object,
    "Arbitrary values that, when changed, generate a new value.",
);

/// A schema where every input replaces the resource and the outputs are the inputs plus
/// `result`.
pub(crate) fn schema(
    token: &str,
    description: &str,
    props: &[Prop],
    result: PropertySchema,
) -> ResourceSchema {
    let mut schema = ResourceSchema::new(token).describe(description);
    for p in props {
        let mut input = PropertySchema::new(p.name)
            .describe(p.description)
            .replace_on_change();
        if p.required {
            input = input.required();
        }
        schema = schema.input(input);
        schema = schema.output(PropertySchema::new(p.name).describe(p.description));
    }
    schema.output(result.required())
}

/// Applies defaults and rejects unknown properties and values of the wrong kind. Values not
/// known yet (during a preview) are accepted as they are.
pub(crate) fn normalize(token: &str, props: &[Prop], mut inputs: PropertyMap) -> Checked {
    let mut failures = Vec::new();
    for key in inputs.keys() {
        if !props.iter().any(|p| p.name == key) {
            failures.push((key.clone(), format!("is not an input of {token}")));
        }
    }
    for p in props {
        match inputs.get(p.name) {
            None | Some(Value::Null) => match p.default {
                Some(default) => {
                    inputs.insert(p.name.to_owned(), default());
                }
                None if p.required => {
                    failures.push((p.name.to_owned(), "a value is required".into()))
                }
                None => {}
            },
            Some(value) if value.contains_unknowns() => {}
            Some(value) => {
                if let Some(reason) = p.kind.reject(value) {
                    failures.push((p.name.to_owned(), reason));
                }
            }
        }
    }
    let mut checked = Checked::new(inputs);
    for (property, reason) in failures {
        checked.fail(property, reason);
    }
    checked
}

/// True if every input is known, so that cross-property rules can be checked.
pub(crate) fn all_known(inputs: &PropertyMap) -> bool {
    inputs.values().all(|v| !v.contains_unknowns())
}

/// The whole number input `name`, which `check` has validated.
pub(crate) fn int(inputs: &PropertyMap, name: &str) -> Result<i64, ProviderError> {
    inputs
        .get(name)
        .and_then(Value::as_i64)
        .ok_or_else(|| ProviderError::invalid(name, "must be a whole number"))
}

/// The boolean input `name`, which `check` has validated.
pub(crate) fn boolean(inputs: &PropertyMap, name: &str) -> Result<bool, ProviderError> {
    inputs
        .get(name)
        .and_then(Value::as_bool)
        .ok_or_else(|| ProviderError::invalid(name, "must be a boolean"))
}

/// The string input `name`, if given.
pub(crate) fn string<'a>(inputs: &'a PropertyMap, name: &str) -> Option<&'a str> {
    inputs.get(name).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROPS: &[Prop] = &[
        Prop::required("length", Kind::Int { min: 1, max: 10 }, "The length."),
        Prop::defaulted("upper", Kind::Bool, || true.into(), "Upper case."),
        Prop::optional("prefix", Kind::Str, "A prefix."),
        KEEPERS,
    ];

    fn map(entries: &[(&str, Value)]) -> PropertyMap {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn reasons(checked: &Checked) -> Vec<String> {
        checked.failures.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn applies_defaults() {
        let checked = normalize("t:T", PROPS, map(&[("length", 3.into())]));
        assert!(checked.failures.is_empty());
        assert_eq!(checked.inputs.get("upper"), Some(&Value::Bool(true)));
        assert!(!checked.inputs.contains_key("prefix"));
    }

    #[test]
    fn rejects_missing_wrong_and_unknown_properties() {
        let checked = normalize(
            "t:T",
            PROPS,
            map(&[
                ("upper", "yes".into()),
                ("keepers", 1.into()),
                ("colour", "red".into()),
            ]),
        );
        assert_eq!(
            reasons(&checked),
            vec![
                "colour: is not an input of t:T",
                "length: a value is required",
                "upper: must be a boolean",
                "keepers: must be an object",
            ]
        );
    }

    #[test]
    fn checks_integer_ranges() {
        let reason = |v: Value| reasons(&normalize("t:T", PROPS, map(&[("length", v)])));
        assert_eq!(
            reason(0.into()),
            vec!["length: must be a whole number from 1 to 10"]
        );
        assert_eq!(
            reason(2.5.into()),
            vec!["length: must be a whole number from 1 to 10"]
        );
        assert_eq!(reason("3".into()), vec!["length: must be a number"]);
        assert!(reason(10.into()).is_empty());
    }

    #[test]
    fn accepts_unknowns_during_preview() {
        let inputs = map(&[
            ("length", Value::Unknown),
            ("keepers", Value::object([("pet", Value::Unknown)])),
        ]);
        assert!(!all_known(&inputs));
        assert!(normalize("t:T", PROPS, inputs).failures.is_empty());
    }

    #[test]
    fn schema_replaces_on_every_input() {
        let s = schema("t:T", "A thing.", PROPS, PropertySchema::new("result"));
        assert!(s.inputs.iter().all(|p| p.replace_on_change));
        assert!(s.inputs[0].required);
        assert_eq!(s.outputs.len(), PROPS.len() + 1);
        assert_eq!(s.outputs.last().map(|p| p.name.as_str()), Some("result"));
    }

    #[test]
    fn readers_return_validated_values() {
        let inputs = map(&[("length", 4.into()), ("upper", false.into())]);
        assert_eq!(int(&inputs, "length"), Ok(4));
        assert_eq!(boolean(&inputs, "upper"), Ok(false));
        assert!(int(&inputs, "missing").is_err());
        assert_eq!(string(&inputs, "prefix"), None);
    }
}
