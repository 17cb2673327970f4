//! Keeps secret what was secret, whatever a provider returns: a property the engine sent as a
//! secret, or the schema declares secret, comes back marked secret at the same path even if the
//! provider returned it plain (as Pulumi re-marks checked inputs and outputs). What a provider
//! returns at another path is left to [`crate::abi::values`], which marks any plain text holding a
//! known secret.

use plinth_engine::provider::PropertySchema;
use plinth_engine::schema::PropertyType;
use plinth_engine::value::{PropertyMap, Value};

/// Marks secret in `returned` every property at a path where `sent` holds a secret.
pub(crate) fn like(sent: &PropertyMap, returned: &mut PropertyMap) {
    for (key, value) in returned.iter_mut() {
        if let Some(was) = sent.get(key) {
            like_value(was, value);
        }
    }
}

fn like_value(sent: &Value, returned: &mut Value) {
    match (sent, returned) {
        (Value::Secret(_), returned) => conceal(returned),
        (Value::Object(sent), Value::Object(returned)) => like(sent, returned),
        (Value::Array(sent), Value::Array(returned)) => {
            (sent.iter().zip(returned.iter_mut())).for_each(|(s, r)| like_value(s, r))
        }
        _ => {}
    }
}

/// Marks secret in `map` every property `schema` declares secret, in nested objects too.
pub(crate) fn by_schema(schema: &[PropertySchema], map: &mut PropertyMap) {
    for property in schema {
        if let Some(value) = map.get_mut(&property.name) {
            by_property(property, value);
        }
    }
}

fn by_property(property: &PropertySchema, value: &mut Value) {
    if property.secret {
        conceal(value);
    } else {
        by_type(&property.ty, value);
    }
}

fn by_type(ty: &PropertyType, value: &mut Value) {
    match (ty, value) {
        (_, Value::Secret(_)) => {}
        (PropertyType::Object(object), Value::Object(map)) => by_schema(&object.properties, map),
        (PropertyType::Array { items }, Value::Array(values)) => {
            values.iter_mut().for_each(|v| by_type(items, v))
        }
        (PropertyType::Map { values: ty }, Value::Object(map)) => {
            map.values_mut().for_each(|v| by_type(ty, v))
        }
        _ => {}
    }
}

/// Marks `value` secret unless it is already, or unknown (which reveals nothing).
fn conceal(value: &mut Value) {
    if !matches!(value, Value::Secret(_) | Value::Unknown) {
        let plain = std::mem::replace(value, Value::Null);
        *value = Value::Secret(Box::new(plain));
    }
}

/// Marks secret all of `value` if anything in `sent` is: a function given a secret may return
/// it in any shape (as Pulumi marks an invoke's result).
pub(crate) fn whole_if_any(sent: &PropertyMap, value: &mut Value) {
    if sent.values().any(Value::contains_secrets) {
        conceal(value);
    }
}

#[cfg(test)]
mod tests {
    use plinth_engine::schema::ObjectType;

    use super::*;

    fn secret(value: impl Into<Value>) -> Value {
        Value::Secret(Box::new(value.into()))
    }

    fn map(entries: Vec<(&str, Value)>) -> PropertyMap {
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    #[test]
    fn what_was_sent_secret_comes_back_secret_at_the_same_path() {
        let sent = map(vec![
            ("pw", secret("hunter22")),
            ("nested", map(vec![("key", secret(7i64))]).into()),
            ("list", Value::Array(vec!["a".into(), secret("b")])),
            ("plain", "x".into()),
        ]);
        let mut returned = map(vec![
            ("pw", "HUNTER22".into()),
            (
                "nested",
                map(vec![("key", 7i64.into()), ("other", 1i64.into())]).into(),
            ),
            ("list", Value::Array(vec!["a".into(), "b".into()])),
            ("plain", "x".into()),
            ("new", Value::Unknown),
        ]);
        like(&sent, &mut returned);
        let expected = map(vec![
            ("pw", secret("HUNTER22")),
            (
                "nested",
                map(vec![("key", secret(7i64)), ("other", 1i64.into())]).into(),
            ),
            ("list", Value::Array(vec!["a".into(), secret("b")])),
            ("plain", "x".into()),
            ("new", Value::Unknown),
        ]);
        assert_eq!(returned, expected);
    }

    #[test]
    fn what_the_schema_declares_secret_is_secret() {
        let nested = PropertyType::Object(ObjectType {
            properties: vec![PropertySchema {
                secret: true,
                ..PropertySchema::new("token", PropertyType::String)
            }],
            ..ObjectType::default()
        });
        let schema = vec![
            PropertySchema {
                secret: true,
                ..PropertySchema::new("password", PropertyType::String)
            },
            PropertySchema::new(
                "users",
                PropertyType::Array {
                    items: Box::new(nested),
                },
            ),
        ];
        let mut returned = map(vec![
            ("password", "plain".into()),
            (
                "users",
                Value::Array(vec![
                    map(vec![("token", "t".into()), ("n", 1i64.into())]).into(),
                ]),
            ),
        ]);
        by_schema(&schema, &mut returned);
        assert_eq!(returned["password"], secret("plain"));
        assert_eq!(
            returned["users"],
            Value::Array(vec![
                map(vec![("token", secret("t")), ("n", 1i64.into())]).into()
            ])
        );
    }
}
