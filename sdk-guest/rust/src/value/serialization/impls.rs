//! `Serialize` and `Deserialize` for [`Value`]: with this module's serializer and deserializer,
//! a value passes through exactly (secrets, unknowns, output references, integers); with any
//! other (such as `serde_json`'s), it is plain data: a secret as its plaintext, an unknown as
//! `null`.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::{PropertyMap, Value};

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Integer(n) => s.serialize_i64(*n),
            Value::Number(n) => s.serialize_f64(*n),
            Value::String(text) => s.serialize_str(text),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut out = s.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    out.serialize_entry(k, v)?;
                }
                out.end()
            }
            Value::Secret(inner) => s.serialize_newtype_struct(super::SECRET, inner.as_ref()),
            Value::Unknown => s.serialize_unit_struct(super::UNKNOWN),
            #[cfg(feature = "program")]
            Value::Output(reference) => {
                s.serialize_newtype_struct(super::OUTPUT, &EncodedOutput(reference))
            }
        }
    }
}

/// An output reference as `(handle, field, path)`.
#[cfg(feature = "program")]
pub(super) struct EncodedOutput<'a>(pub(super) &'a crate::OutputRef);

#[cfg(feature = "program")]
impl Serialize for EncodedOutput<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use crate::OutputField;
        let none: &[String] = &[];
        let (field, path) = match &self.0.field {
            OutputField::Property(path) => ("property", path.as_slice()),
            OutputField::Id => ("id", none),
            OutputField::Urn => ("urn", none),
        };
        (self.0.handle, field, path).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        // Asks this module's deserializer for the value as it is; others read plain data.
        d.deserialize_newtype_struct(super::RAW, ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a property value")
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Integer(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Number(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = PropertyMap::new();
        while let Some(key) = access.next_key::<String>()? {
            match key.as_str() {
                super::SECRET_KEY if map.is_empty() => {
                    return Ok(Value::Secret(Box::new(access.next_value()?)));
                }
                super::UNKNOWN_KEY if map.is_empty() => {
                    access.next_value::<IgnoredAny>()?;
                    return Ok(Value::Unknown);
                }
                #[cfg(feature = "program")]
                super::OUTPUT_KEY if map.is_empty() => {
                    let encoded: Value = access.next_value()?;
                    let Value::Output(reference) = super::to_value(&OutputNewtype(encoded))
                        .map_err(serde::de::Error::custom)?
                    else {
                        return Err(serde::de::Error::custom("a malformed output reference"));
                    };
                    return Ok(Value::Output(reference));
                }
                _ => {
                    let value = access.next_value()?;
                    map.insert(key, value);
                }
            }
        }
        Ok(Value::Object(map))
    }
}

/// An encoded output reference, serialized back into one.
#[cfg(feature = "program")]
struct OutputNewtype(Value);

#[cfg(feature = "program")]
impl Serialize for OutputNewtype {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(super::OUTPUT, &self.0)
    }
}

/// A [`Value`] field takes any value.
#[cfg(feature = "provider")]
impl schemars::JsonSchema for Value {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AnyValue".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        true.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_formats_see_plain_data() {
        let value = Value::object([
            ("n", Value::Integer(8402)),
            ("f", Value::Number(0.5)),
            ("s", Value::secret("pw")),
            ("u", Value::Unknown),
        ]);
        let json = serde_json::to_value(&value).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"n": 8402, "f": 0.5, "s": "pw", "u": null})
        );
        let back: Value = serde_json::from_value(json).unwrap();
        assert!(matches!(back.get("n"), Some(Value::Integer(8402))));
    }

    #[cfg(feature = "program")]
    #[test]
    fn output_references_pass_through_this_module() {
        use crate::{OutputField, OutputRef};
        let value = Value::object([(
            "ref",
            Value::Output(OutputRef {
                handle: 4,
                field: OutputField::Property(vec!["a".into(), "0".into()]),
            }),
        )]);
        assert_eq!(crate::to_value(&value).unwrap(), value);
        let read: Value = crate::from_value(value.clone()).unwrap();
        assert_eq!(read, value);
    }
}
