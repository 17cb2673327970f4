//! Property values between plinth's engine [`Value`] and the baseline's protobuf `Value`: what a
//! gRPC plugin host and plugin do on every call, as a Wasm host flattens values for a guest.

use plinth_engine::value::{PropertyMap, Value};

use crate::proto::{self, value::Kind};

/// Why a value from the other side was rejected.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("a value without a kind")]
    Empty,
    #[error("an output reference, which only programs may send")]
    OutputRef,
}

pub fn to_proto(value: &Value) -> proto::Value {
    let kind = match value {
        Value::Null => Kind::Null(proto::Empty {}),
        Value::Bool(b) => Kind::Boolean(*b),
        Value::Integer(n) => Kind::Integer(*n),
        Value::Number(n) => Kind::Number(*n),
        Value::String(s) => Kind::Text(s.clone()),
        Value::Array(items) => Kind::Array(proto::Values {
            items: items.iter().map(to_proto).collect(),
        }),
        Value::Object(map) => Kind::Object(map_to_proto(map)),
        Value::Secret(inner) => Kind::Secret(Box::new(to_proto(inner))),
        Value::Unknown => Kind::Unknown(proto::Empty {}),
        // A program's value: never sent to a provider.
        Value::Output(_) => Kind::Unknown(proto::Empty {}),
    };
    proto::Value { kind: Some(kind) }
}

pub fn map_to_proto(map: &PropertyMap) -> proto::Properties {
    proto::Properties {
        fields: map.iter().map(|(k, v)| (k.clone(), to_proto(v))).collect(),
    }
}

pub fn from_proto(value: proto::Value) -> Result<Value, WireError> {
    Ok(match value.kind.ok_or(WireError::Empty)? {
        Kind::Null(_) => Value::Null,
        Kind::Boolean(b) => Value::Bool(b),
        Kind::Integer(n) => Value::Integer(n),
        Kind::Number(n) => Value::Number(n),
        Kind::Text(s) => Value::String(s),
        Kind::Array(items) => Value::Array(
            (items.items.into_iter())
                .map(from_proto)
                .collect::<Result<_, _>>()?,
        ),
        Kind::Object(map) => Value::Object(map_from_proto(Some(map))?),
        Kind::Secret(inner) => Value::Secret(Box::new(from_proto(*inner)?)),
        Kind::Unknown(_) => Value::Unknown,
    })
}

/// An absent map is an empty one, as proto3 sends it.
pub fn map_from_proto(map: Option<proto::Properties>) -> Result<PropertyMap, WireError> {
    (map.unwrap_or_default().fields.into_iter())
        .map(|(k, v)| Ok((k, from_proto(v)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_the_round_trip() {
        let map: PropertyMap = [
            ("s".to_owned(), Value::from("text")),
            ("i".to_owned(), Value::Integer(-7)),
            ("f".to_owned(), Value::Number(1.5)),
            ("b".to_owned(), Value::Bool(true)),
            ("n".to_owned(), Value::Null),
            ("u".to_owned(), Value::Unknown),
            (
                "a".to_owned(),
                Value::Array(vec![Value::Secret(Box::new("pw".into())), Value::Null]),
            ),
        ]
        .into();
        let back = map_from_proto(Some(map_to_proto(&map))).unwrap();
        assert_eq!(back, map);
    }

    #[test]
    fn a_value_without_a_kind_is_rejected() {
        assert!(matches!(
            from_proto(proto::Value { kind: None }),
            Err(WireError::Empty)
        ));
    }
}
