//! Rust values into [`Value`]s: integers stay integers, structs and maps become objects, unit
//! enum variants strings, [`Secret`](crate::Secret)s secrets.

use serde::ser::{self, Serialize};

use super::PathError;
use crate::{Error, PropertyMap, Value};

/// Converts `value` into a [`Value`] with serde: what a typed provider's outputs and a program's
/// typed inputs go through.
///
/// ```
/// use plinth_sdk::{Secret, Value, to_value};
/// use serde::Serialize;
///
/// #[derive(Serialize)]
/// struct Outputs {
///     port: u16,
///     password: Secret<String>,
/// }
///
/// let value = to_value(&Outputs { port: 8402, password: Secret::new("pw".into()) }).unwrap();
/// assert!(matches!(value.get("port"), Some(Value::Integer(8402))));
/// assert!(value.get("password").unwrap().is_secret());
/// ```
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, Error> {
    value.serialize(Serializer).map_err(Error::from)
}

/// The serializer whose output is a [`Value`].
pub(crate) struct Serializer;

type Result<T, E = PathError> = std::result::Result<T, E>;

fn error(message: impl std::fmt::Display) -> PathError {
    <PathError as ser::Error>::custom(message)
}

impl ser::Serializer for Serializer {
    type Ok = Value;
    type Error = PathError;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = Variant<Seq>;
    type SerializeMap = Map;
    type SerializeStruct = Map;
    type SerializeStructVariant = Variant<Map>;

    fn serialize_bool(self, v: bool) -> Result<Value> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value> {
        Ok(Value::Integer(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Value> {
        Ok(Value::Integer(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Value> {
        Ok(Value::Integer(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Value> {
        Ok(Value::Integer(v))
    }
    fn serialize_i128(self, v: i128) -> Result<Value> {
        i64::try_from(v)
            .map(Value::Integer)
            .map_err(|_| error(format!("{v} does not fit a 64-bit integer")))
    }
    fn serialize_u8(self, v: u8) -> Result<Value> {
        Ok(Value::Integer(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Value> {
        Ok(Value::Integer(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Value> {
        Ok(Value::Integer(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Value> {
        Ok(Value::from(v))
    }
    fn serialize_u128(self, v: u128) -> Result<Value> {
        i64::try_from(v)
            .map(Value::Integer)
            .map_err(|_| error(format!("{v} does not fit a 64-bit integer")))
    }
    fn serialize_f32(self, v: f32) -> Result<Value> {
        Ok(Value::Number(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<Value> {
        Ok(Value::Number(v))
    }
    fn serialize_char(self, v: char) -> Result<Value> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value> {
        Ok(Value::String(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value> {
        Ok(Value::Array(
            v.iter().map(|b| Value::Integer((*b).into())).collect(),
        ))
    }
    fn serialize_none(self) -> Result<Value> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<Value> {
        Ok(if name == super::UNKNOWN {
            Value::Unknown
        } else {
            Value::Null
        })
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Value> {
        Ok(Value::String(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Value> {
        let inner = value.serialize(self)?;
        Ok(match name {
            super::SECRET if !inner.is_secret() => Value::Secret(Box::new(inner)),
            #[cfg(feature = "program")]
            super::OUTPUT => Value::Output(output_ref(inner)?),
            _ => inner,
        })
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value> {
        Ok(Value::object([(variant, value.serialize(self)?)]))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq> {
        Ok(Seq(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Seq>> {
        Ok(Variant {
            name: variant,
            inner: self.serialize_seq(Some(len))?,
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Map> {
        Ok(Map {
            map: PropertyMap::new(),
            key: None,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Map> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Map>> {
        Ok(Variant {
            name: variant,
            inner: self.serialize_map(Some(len))?,
        })
    }
}

/// An output reference serialized as `(handle, field, path)`.
#[cfg(feature = "program")]
fn output_ref(value: Value) -> Result<crate::OutputRef> {
    use crate::OutputField;
    let malformed = || error("a malformed output reference");
    let Value::Array(parts) = value else {
        return Err(malformed());
    };
    let [
        Value::Integer(handle),
        Value::String(field),
        Value::Array(path),
    ] = parts.as_slice()
    else {
        return Err(malformed());
    };
    let field = match field.as_str() {
        "id" => OutputField::Id,
        "urn" => OutputField::Urn,
        "property" => OutputField::Property(
            path.iter()
                .map(|p| p.as_str().map(str::to_owned).ok_or_else(malformed))
                .collect::<Result<_>>()?,
        ),
        _ => return Err(malformed()),
    };
    Ok(crate::OutputRef {
        handle: u64::try_from(*handle).map_err(|_| malformed())?,
        field,
    })
}

/// The items of a list being serialized.
pub(crate) struct Seq(Vec<Value>);

impl Seq {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let index = self.0.len();
        self.0
            .push(value.serialize(Serializer).map_err(|e| e.at_index(index))?);
        Ok(())
    }
}

impl ser::SerializeSeq for Seq {
    type Ok = Value;
    type Error = PathError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.push(value)
    }
    fn end(self) -> Result<Value> {
        Ok(Value::Array(self.0))
    }
}

impl ser::SerializeTuple for Seq {
    type Ok = Value;
    type Error = PathError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.push(value)
    }
    fn end(self) -> Result<Value> {
        Ok(Value::Array(self.0))
    }
}

impl ser::SerializeTupleStruct for Seq {
    type Ok = Value;
    type Error = PathError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.push(value)
    }
    fn end(self) -> Result<Value> {
        Ok(Value::Array(self.0))
    }
}

/// The entries of an object being serialized.
pub(crate) struct Map {
    map: PropertyMap,
    /// The key of the entry whose value comes next.
    key: Option<String>,
}

impl Map {
    fn insert<T: Serialize + ?Sized>(&mut self, key: String, value: &T) -> Result<()> {
        let value = value.serialize(Serializer).map_err(|e| e.at_key(&key))?;
        self.map.insert(key, value);
        Ok(())
    }
}

impl ser::SerializeMap for Map {
    type Ok = Value;
    type Error = PathError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.key = Some(key.serialize(KeySerializer)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let key = self
            .key
            .take()
            .ok_or_else(|| error("a map value was serialized before its key"))?;
        self.insert(key, value)
    }
    fn end(self) -> Result<Value> {
        Ok(Value::Object(self.map))
    }
}

impl ser::SerializeStruct for Map {
    type Ok = Value;
    type Error = PathError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.insert(key.to_owned(), value)
    }
    fn end(self) -> Result<Value> {
        Ok(Value::Object(self.map))
    }
}

/// An enum variant with content, serialized as `{variant: content}`.
pub(crate) struct Variant<S> {
    name: &'static str,
    inner: S,
}

impl ser::SerializeTupleVariant for Variant<Seq> {
    type Ok = Value;
    type Error = PathError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.inner.push(value).map_err(|e| e.at_key(self.name))
    }
    fn end(self) -> Result<Value> {
        Ok(Value::object([(self.name, Value::Array(self.inner.0))]))
    }
}

impl ser::SerializeStructVariant for Variant<Map> {
    type Ok = Value;
    type Error = PathError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.inner
            .insert(key.to_owned(), value)
            .map_err(|e| e.at_key(self.name))
    }
    fn end(self) -> Result<Value> {
        Ok(Value::object([(self.name, Value::Object(self.inner.map))]))
    }
}

/// Serializes map keys: strings, and the scalars that read naturally as keys.
struct KeySerializer;

macro_rules! key_from_display {
    ($($method:ident($t:ty)),*) => {$(
        fn $method(self, v: $t) -> Result<String> {
            Ok(v.to_string())
        }
    )*};
}

impl ser::Serializer for KeySerializer {
    type Ok = String;
    type Error = PathError;
    type SerializeSeq = ser::Impossible<String, PathError>;
    type SerializeTuple = ser::Impossible<String, PathError>;
    type SerializeTupleStruct = ser::Impossible<String, PathError>;
    type SerializeTupleVariant = ser::Impossible<String, PathError>;
    type SerializeMap = ser::Impossible<String, PathError>;
    type SerializeStruct = ser::Impossible<String, PathError>;
    type SerializeStructVariant = ser::Impossible<String, PathError>;

    key_from_display!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char),
        serialize_str(&str)
    );

    fn serialize_f32(self, _: f32) -> Result<String> {
        Err(key_error())
    }
    fn serialize_f64(self, _: f64) -> Result<String> {
        Err(key_error())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String> {
        Err(key_error())
    }
    fn serialize_none(self) -> Result<String> {
        Err(key_error())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<String> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<String> {
        Err(key_error())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String> {
        Err(key_error())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String> {
        Err(key_error())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(key_error())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(key_error())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(key_error())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(key_error())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(key_error())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(key_error())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(key_error())
    }
}

fn key_error() -> PathError {
    error("a map key must be a string, a number, a boolean or a unit enum variant")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::*;
    use crate::Secret;

    #[derive(Serialize)]
    #[serde(rename_all = "lowercase")]
    enum Protocol {
        Tcp,
    }

    #[derive(Serialize)]
    enum Shape {
        Circle(f64),
        Rect { w: u32, h: u32 },
        Pair(u8, u8),
    }

    #[derive(Serialize)]
    struct Everything {
        port: u16,
        big: u64,
        ratio: f32,
        name: &'static str,
        maybe: Option<i8>,
        protocol: Protocol,
        shapes: Vec<Shape>,
        by_id: BTreeMap<u32, bool>,
        secret: Secret<Vec<u8>>,
        unit: (),
    }

    #[test]
    fn everything_serializes_to_its_natural_value() {
        let value = to_value(&Everything {
            port: 8402,
            big: u64::MAX,
            ratio: 0.5,
            name: "edge",
            maybe: None,
            protocol: Protocol::Tcp,
            shapes: vec![
                Shape::Circle(1.5),
                Shape::Rect { w: 2, h: 3 },
                Shape::Pair(4, 5),
            ],
            by_id: BTreeMap::from([(7, true)]),
            secret: Secret::new(vec![1]),
            unit: (),
        })
        .unwrap();
        let expected = Value::object([
            ("port", Value::Integer(8402)),
            ("big", Value::Number(u64::MAX as f64)),
            ("ratio", Value::Number(0.5)),
            ("name", "edge".into()),
            ("maybe", Value::Null),
            ("protocol", "tcp".into()),
            (
                "shapes",
                Value::from(vec![
                    Value::object([("Circle", 1.5)]),
                    Value::object([("Rect", Value::object([("w", 2), ("h", 3)]))]),
                    Value::object([("Pair", vec![4, 5])]),
                ]),
            ),
            ("by_id", Value::object([("7", true)])),
            ("secret", Value::secret(vec![1])),
            ("unit", Value::Null),
        ]);
        assert_eq!(value, expected);
        assert!(matches!(value.get("port"), Some(Value::Integer(8402))));
    }

    #[test]
    fn values_serialize_as_themselves() {
        let value = Value::object([
            ("s", Value::secret(Value::object([("n", 1)]))),
            ("u", Value::Unknown),
            ("f", Value::Number(2.0)),
        ]);
        let back = to_value(&value).unwrap();
        assert_eq!(back, value);
        assert!(matches!(back.get("f"), Some(Value::Number(_))));
    }

    #[test]
    fn bad_keys_are_errors_with_their_path() {
        let map = BTreeMap::from([(vec![1], 1)]);
        let error = to_value(&BTreeMap::from([("outer", map)])).unwrap_err();
        assert!(error.message().contains("map key"), "{error}");
    }
}
