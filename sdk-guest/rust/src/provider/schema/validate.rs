//! Validating inputs against a schema, as the default `check` does: every failure names the
//! property by its path (`rules[0].port`), what was expected and what was given.

use super::types::quoted;
use super::{PropertySchema, ResourceSchema, Type};
use crate::provider::{CheckFailure, Checked};
use crate::{PropertyMap, Value};

/// Validates and normalizes properties against `declared`, as the default `check` does; an
/// undeclared one is not `owner` (`a setting of the file provider`).
pub(crate) fn validate_properties(
    declared: &[PropertySchema],
    given: PropertyMap,
    owner: &str,
) -> Checked {
    let mut failures = Vec::new();
    let owner = || owner.to_owned();
    let inputs = properties(
        declared,
        given,
        "",
        Some(&owner as &dyn Fn() -> String),
        &mut failures,
    );
    Checked { inputs, failures }
}

/// Stored properties (read back from state, possibly written before integers existed) in the
/// form `declared` describes: whole floats where integers are declared become integers,
/// defaults fill what is missing. Nothing is refused: state is what it is.
pub(crate) fn normalize_stored(declared: &[PropertySchema], stored: PropertyMap) -> PropertyMap {
    properties(declared, stored, "", None, &mut Vec::new())
}

/// Validates and normalizes `inputs` against `schema` (see [`ResourceSchema::validate`]).
pub(super) fn validate(schema: &ResourceSchema, inputs: PropertyMap) -> Checked {
    let mut failures = Vec::new();
    let owner = || format!("an input of {}", schema.token);
    let inputs = properties(
        &schema.inputs,
        inputs,
        "",
        (!schema.open).then_some(&owner as &dyn Fn() -> String),
        &mut failures,
    );
    Checked { inputs, failures }
}

/// Checks the properties of an object at `path` against `declared`: undeclared keys (unless
/// `owner` is `None`: an open object; it says whose property a key is not, and is only worded
/// for a failure), missing required ones, each value's type. Applies defaults and returns the
/// normalized object.
fn properties(
    declared: &[PropertySchema],
    mut given: PropertyMap,
    path: &str,
    owner: Option<&dyn Fn() -> String>,
    failures: &mut Vec<CheckFailure>,
) -> PropertyMap {
    if let Some(owner) = owner {
        for key in given.keys() {
            if !declared.iter().any(|p| &p.name == key) {
                let owner = owner();
                let names = declared.iter().map(|p| p.name.as_str());
                let reason = match suggestion(key, names) {
                    Some(near) => format!("is not {owner}; did you mean `{near}`?"),
                    None if declared.is_empty() => format!("is not {owner}, which takes none"),
                    None => format!(
                        "is not {owner}, which takes {}",
                        declared
                            .iter()
                            .map(|p| format!("`{}`", p.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                failures.push(CheckFailure::new(join(path, key), reason));
            }
        }
    }
    for p in declared {
        match given.remove(&p.name) {
            None | Some(Value::Null) => match &p.default {
                Some(default) => {
                    given.insert(p.name.clone(), default.clone());
                }
                None if p.required => failures.push(CheckFailure::new(
                    join(path, &p.name),
                    format!("a value is required ({})", p.ty.expected()),
                )),
                None => {}
            },
            Some(value) => {
                let value = check(&p.ty, value, &Path::Key(path, &p.name), false, failures);
                let value = if p.secret && !value.is_secret() {
                    Value::secret(value)
                } else {
                    value
                };
                given.insert(p.name.clone(), value);
            }
        }
    }
    given
}

/// Where a value is, spelled out only for a failure: most values are valid.
enum Path<'a> {
    /// The property `key` of the object at a path.
    Key(&'a str, &'a str),
    /// The item `index` of the array at a path.
    Index(&'a str, usize),
}

impl Path<'_> {
    fn spell(&self) -> String {
        match self {
            Path::Key(path, key) => join(path, key),
            Path::Index(path, index) => format!("{path}[{index}]"),
        }
    }
}

/// Checks `value` (at `path`, inside a secret if `hidden`) against `ty`; returns it normalized.
fn check(
    ty: &Type,
    value: Value,
    path: &Path<'_>,
    hidden: bool,
    failures: &mut Vec<CheckFailure>,
) -> Value {
    let mismatch = |failures: &mut Vec<CheckFailure>, value: &Value| {
        let given = if hidden {
            format!("a secret ({})", value.kind())
        } else {
            given(value)
        };
        failures.push(CheckFailure::new(
            path.spell(),
            format!("expected {}, got {given}", ty.expected()),
        ));
    };
    match (ty, value) {
        (_, Value::Unknown) => Value::Unknown,
        (_, Value::Secret(inner)) => {
            Value::Secret(Box::new(check(ty, *inner, path, true, failures)))
        }
        (Type::Any, value) => value,
        (Type::String, value @ Value::String(_))
        | (Type::Boolean, value @ Value::Bool(_))
        | (Type::Integer, value @ Value::Integer(_))
        | (Type::Number, value @ (Value::Number(_) | Value::Integer(_))) => value,
        // Older guests and state carry whole numbers as floats.
        (Type::Integer, Value::Number(n)) => match crate::value::integral(n) {
            Some(i) => Value::Integer(i),
            None => {
                let value = Value::Number(n);
                mismatch(failures, &value);
                value
            }
        },
        (Type::Array(items), Value::Array(values)) => {
            let path = path.spell();
            Value::Array(
                values
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| check(items, v, &Path::Index(&path, i), hidden, failures))
                    .collect(),
            )
        }
        (Type::Map(values), Value::Object(map)) => {
            let path = path.spell();
            Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let v = check(values, v, &Path::Key(&path, &k), hidden, failures);
                        (k, v)
                    })
                    .collect(),
            )
        }
        (Type::Object(object), Value::Object(map)) => {
            let owner = || match &object.name {
                Some(name) => format!("a property of {name}"),
                None => "a property of this object".to_owned(),
            };
            Value::Object(properties(
                &object.properties,
                map,
                &path.spell(),
                Some(&owner as &dyn Fn() -> String),
                failures,
            ))
        }
        (Type::Enum(values), Value::String(s)) if values.contains(&s) => Value::String(s),
        (Type::Enum(values), Value::String(s)) if hidden => {
            let value = Value::String(s);
            mismatch(failures, &value);
            value
        }
        (Type::Enum(values), Value::String(s)) => {
            let hint = suggestion(&s, values.iter().map(String::as_str))
                .map(|near| format!("; did you mean {near:?}?"))
                .unwrap_or_default();
            failures.push(CheckFailure::new(
                path.spell(),
                format!("expected one of {}, got {s:?}{hint}", quoted(values)),
            ));
            Value::String(s)
        }
        (_, value) => {
            mismatch(failures, &value);
            value
        }
    }
}

/// `path.key`, or `key` at the top.
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// What was given, for a message; a secret's plaintext is never shown.
fn given(value: &Value) -> String {
    if let Value::Secret(inner) = value {
        return format!("a secret ({})", inner.kind());
    }
    const SHOWN: usize = 40;
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Integer(n) => format!("the integer {n}"),
        Value::Number(n) => format!("the number {n:?}"),
        Value::String(s) if s.chars().count() > SHOWN => {
            let head: String = s.chars().take(SHOWN).collect();
            format!("the string {head:?}…")
        }
        Value::String(s) => format!("the string {s:?}"),
        other => other.kind().to_owned(),
    }
}

/// The candidate nearest to `given` if it is near enough to be a likely typo: a few edits
/// away (one for a short name), the closest by edits, then by common prefix.
fn suggestion<'a>(given: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let given = given.to_lowercase();
    candidates
        .filter_map(|c| {
            let lower = c.to_lowercase();
            let edits = strsim::damerau_levenshtein(&given, &lower);
            let allowed = match lower.chars().count() {
                0..=4 => 1,
                5..=8 => 2,
                _ => 3,
            };
            let likeness = strsim::jaro_winkler(&given, &lower);
            (edits <= allowed).then_some((edits, likeness, c))
        })
        .min_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)))
        .map(|(_, _, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> Type {
        Type::object(
            "Rule",
            vec![
                PropertySchema::new("port").of(Type::Integer).required(),
                PropertySchema::new("protocol")
                    .of(Type::one_of(["tcp", "udp"]))
                    .default_value("tcp"),
            ],
        )
    }

    fn schema() -> ResourceSchema {
        ResourceSchema::new("net:Firewall")
            .input(PropertySchema::new("name").of(Type::String).required())
            .input(PropertySchema::new("rules").of(Type::array(rule())))
            .input(PropertySchema::new("labels").of(Type::map(Type::String)))
            .input(PropertySchema::new("weight").of(Type::Number))
            .input(
                PropertySchema::new("enabled")
                    .of(Type::Boolean)
                    .default_value(true),
            )
            .input(PropertySchema::new("token").of(Type::String).secret())
            .input(PropertySchema::new("extra"))
    }

    fn map(entries: Vec<(&str, Value)>) -> PropertyMap {
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    fn reasons(checked: &Checked) -> Vec<String> {
        checked.failures.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn valid_inputs_pass_and_get_their_defaults() {
        let checked = schema().validate(map(vec![
            ("name", "edge".into()),
            ("rules", Value::from(vec![Value::object([("port", 443)])])),
            ("labels", Value::object([("team", "web")])),
            ("weight", 2.into()),
            ("extra", Value::object([("anything", Value::Null)])),
        ]));
        assert_eq!(reasons(&checked), Vec::<String>::new());
        assert_eq!(checked.inputs["enabled"], Value::Bool(true));
        assert_eq!(
            checked.inputs["rules"],
            Value::from(vec![Value::object([
                ("port", Value::from(443)),
                ("protocol", "tcp".into())
            ])])
        );
        assert!(!checked.inputs.contains_key("token"));
    }

    #[test]
    fn wrong_types_are_named_by_path_with_what_was_expected_and_given() {
        let checked = schema().validate(map(vec![
            ("name", 42.into()),
            (
                "rules",
                Value::from(vec![
                    Value::object([("port", 22)]),
                    Value::object([("port", Value::from("80")), ("protocol", "icmp".into())]),
                    Value::from(7),
                ]),
            ),
            ("labels", Value::object([("team", Value::from(true))])),
            ("weight", "heavy".into()),
        ]));
        assert_eq!(
            reasons(&checked),
            [
                "name: expected a string, got the integer 42",
                r#"rules[1].port: expected an integer, got the string "80""#,
                r#"rules[1].protocol: expected one of "tcp", "udp", got "icmp""#,
                "rules[2]: expected an object (Rule), got the integer 7",
                "labels.team: expected a string, got the boolean true",
                r#"weight: expected a number, got the string "heavy""#,
            ]
        );
    }

    #[test]
    fn unknown_properties_suggest_the_nearest_name() {
        let checked = schema().validate(map(vec![
            ("nmae", "edge".into()),
            ("colour", "red".into()),
            (
                "rules",
                Value::from(vec![Value::object([("prot", 1), ("port", 2)])]),
            ),
        ]));
        assert_eq!(
            reasons(&checked),
            [
                "colour: is not an input of net:Firewall, which takes `name`, `rules`, `labels`, \
                 `weight`, `enabled`, `token`, `extra`",
                "nmae: is not an input of net:Firewall; did you mean `name`?",
                "name: a value is required (a string)",
                "rules[0].prot: is not a property of Rule; did you mean `port`?",
            ]
        );
        let checked = ResourceSchema::new("t:T").validate(map(vec![("a", 1.into())]));
        assert_eq!(
            reasons(&checked),
            ["a: is not an input of t:T, which takes none"]
        );
        let open = ResourceSchema::new("t:T").open();
        assert!(
            open.validate(map(vec![("a", 1.into())]))
                .failures
                .is_empty()
        );
    }

    #[test]
    fn enums_suggest_the_nearest_value() {
        let checked = schema().validate(map(vec![
            ("name", "x".into()),
            (
                "rules",
                Value::from(vec![Value::object([
                    ("port", Value::from(1)),
                    ("protocol", "ucp".into()),
                ])]),
            ),
        ]));
        assert_eq!(
            reasons(&checked),
            [r#"rules[0].protocol: expected one of "tcp", "udp", got "ucp"; did you mean "udp"?"#]
        );
    }

    #[test]
    fn whole_floats_become_integers_and_fractions_are_refused() {
        let checked = schema().validate(map(vec![
            ("name", "x".into()),
            (
                "rules",
                Value::from(vec![
                    Value::object([("port", Value::Number(8.0))]),
                    Value::object([("port", Value::Number(8.5))]),
                ]),
            ),
        ]));
        assert_eq!(
            reasons(&checked),
            ["rules[1].port: expected an integer, got the number 8.5"]
        );
        let port = checked.inputs["rules"].as_array().unwrap()[0]
            .get("port")
            .unwrap();
        assert!(matches!(port, Value::Integer(8)), "{port:?}");
    }

    #[test]
    fn unknowns_pass_and_secrets_keep_their_wrapper_and_hide_their_value() {
        let checked = schema().validate(map(vec![
            ("name", Value::Unknown),
            ("rules", Value::from(vec![Value::Unknown])),
            ("weight", Value::secret(1.5)),
            ("token", "plain".into()),
        ]));
        assert!(checked.failures.is_empty(), "{:?}", reasons(&checked));
        assert_eq!(checked.inputs["weight"], Value::secret(1.5));
        assert_eq!(checked.inputs["token"], Value::secret("plain"));

        let checked = schema().validate(map(vec![("name", Value::secret(Value::from(5)))]));
        assert_eq!(
            reasons(&checked),
            ["name: expected a string, got a secret (an integer)"]
        );
    }

    #[test]
    fn long_strings_are_cut_in_messages() {
        let checked = schema().validate(map(vec![
            ("name", "x".into()),
            ("weight", "y".repeat(100).into()),
        ]));
        let reason = &checked.failures[0].reason;
        assert!(reason.ends_with("…"), "{reason}");
        assert!(reason.len() < 100, "{reason}");
    }
}
