//! [`Value`]s into Rust values: objects into structs and maps, strings into unit enum variants,
//! whole numbers into integers (a float that is a whole number too: older guests and state send
//! integers that way). Errors name the property by its path (`rules[0].port`).

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

use super::PathError;
use crate::value::integral;
use crate::{Error, PropertyMap, Value};

/// Converts a [`Value`] into a `T` with serde: what a typed provider's inputs go through.
///
/// A secret is read as its plaintext, unless the field is a [`Secret`](crate::Secret) (which
/// keeps it a secret) or a [`Value`] (which receives it as it is). A value not known yet is an
/// error.
///
/// ```
/// use plinth_sdk::{Value, from_value};
/// use serde::Deserialize;
///
/// #[derive(Debug, Deserialize)]
/// struct Rule {
///     port: u16,
/// }
///
/// let rules = Value::from(vec![Value::object([("port", 443)]), Value::object([("port", "80")])]);
/// let error = from_value::<Vec<Rule>>(rules).unwrap_err();
/// assert_eq!(error.message(), r#"[1].port: invalid type: string "80", expected u16"#);
/// ```
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    from_value_at(value).map_err(Error::from)
}

/// [`from_value`], keeping the error's path apart from its message.
pub(crate) fn from_value_at<T: DeserializeOwned>(value: Value) -> Result<T, PathError> {
    T::deserialize(Deserializer::new(value))
}

type Result<T, E = PathError> = std::result::Result<T, E>;

fn error(message: impl std::fmt::Display) -> PathError {
    <PathError as de::Error>::custom(message)
}

/// The deserializer reading a [`Value`].
pub(crate) struct Deserializer {
    value: Value,
    /// Deserializing a [`Value`]: secrets, unknowns and output references are presented as
    /// private one-entry maps instead of being looked through or refused.
    raw: bool,
}

impl Deserializer {
    pub(crate) fn new(value: Value) -> Deserializer {
        Deserializer { value, raw: false }
    }

    /// The value without its secret wrappers, unless it is received as it is.
    fn revealed(self) -> Deserializer {
        if self.raw {
            return self;
        }
        Deserializer {
            value: self.value.into_revealed(),
            raw: false,
        }
    }

    /// For an integer type: a whole float is read as the integer it is.
    fn integer<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let this = self.revealed();
        match this.value {
            Value::Number(n) if !this.raw => match integral(n) {
                Some(i) => visitor.visit_i64(i),
                None => visitor.visit_f64(n),
            },
            _ => de::Deserializer::deserialize_any(this, visitor),
        }
    }
}

/// A one-entry private map: `{key: value}`.
fn special<'de, V: Visitor<'de>>(visitor: V, key: &'static str, value: Value) -> Result<V::Value> {
    visitor.visit_map(MapAccess {
        entries: vec![(key.to_owned(), value)].into_iter(),
        pending: None,
        raw: true,
    })
}

impl<'de> de::Deserializer<'de> for Deserializer {
    type Error = PathError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let raw = self.raw;
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Integer(n) => visitor.visit_i64(n),
            Value::Number(n) => visitor.visit_f64(n),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visitor.visit_seq(SeqAccess {
                items: items.into_iter(),
                index: 0,
                raw,
            }),
            Value::Object(map) => visitor.visit_map(MapAccess::new(map, raw)),
            Value::Secret(inner) if raw => special(visitor, super::SECRET_KEY, *inner),
            Value::Secret(inner) => Deserializer::new(*inner).deserialize_any(visitor),
            Value::Unknown if raw => special(visitor, super::UNKNOWN_KEY, Value::Null),
            Value::Unknown => Err(error("the value is not known yet")),
            #[cfg(feature = "program")]
            Value::Output(reference) if raw => {
                let encoded = super::to_value(&super::impls::EncodedOutput(&reference))
                    .map_err(|e| error(e.message()))?;
                special(visitor, super::OUTPUT_KEY, encoded)
            }
            #[cfg(feature = "program")]
            Value::Output(_) => Err(error(
                "the value is another resource's output, not known yet",
            )),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let this = self.revealed();
        match this.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(this),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        let raw = self.raw;
        match name {
            super::SECRET => match self.value {
                Value::Secret(inner) => {
                    visitor.visit_newtype_struct(Deserializer { value: *inner, raw })
                }
                // A plain value where a secret is expected: it is one from now on.
                _ => visitor.visit_newtype_struct(self),
            },
            super::RAW => visitor.visit_newtype_struct(Deserializer {
                value: self.value,
                raw: true,
            }),
            _ => visitor.visit_newtype_struct(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let this = self.revealed();
        let raw = this.raw;
        match this.value {
            Value::String(s) => visitor.visit_enum(s.into_deserializer()),
            Value::Object(map) if map.len() == 1 => {
                let (variant, content) = map.into_iter().next().expect("one entry");
                visitor.visit_enum(EnumAccess {
                    variant,
                    content: Deserializer {
                        value: content,
                        raw,
                    },
                })
            }
            other => Err(error(format!(
                "expected a string or an object with one key (an enum variant), got {}",
                other.kind()
            ))),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.revealed().deserialize_any(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.integer(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool f32 f64 char str string bytes byte_buf unit_struct seq tuple tuple_struct map
        struct identifier
    }
}

/// The items of a list.
struct SeqAccess {
    items: std::vec::IntoIter<Value>,
    index: usize,
    raw: bool,
}

impl<'de> de::SeqAccess<'de> for SeqAccess {
    type Error = PathError;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        let item = Deserializer {
            value: item,
            raw: self.raw,
        };
        seed.deserialize(item)
            .map(Some)
            .map_err(|e| e.at_index(index))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// The entries of an object.
struct MapAccess {
    entries: std::vec::IntoIter<(String, Value)>,
    /// The entry whose key was read and whose value comes next.
    pending: Option<(String, Value)>,
    raw: bool,
}

impl MapAccess {
    fn new(map: PropertyMap, raw: bool) -> MapAccess {
        MapAccess {
            entries: map.into_iter().collect::<Vec<_>>().into_iter(),
            pending: None,
            raw,
        }
    }
}

impl<'de> de::MapAccess<'de> for MapAccess {
    type Error = PathError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        let read = seed
            .deserialize(key.as_str().into_deserializer())
            .map_err(|e: PathError| e.at_key(&key))?;
        self.pending = Some((key, value));
        Ok(Some(read))
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let (key, value) = self
            .pending
            .take()
            .ok_or_else(|| error("a map value was read before its key"))?;
        let value = Deserializer {
            value,
            raw: self.raw,
        };
        seed.deserialize(value).map_err(|e| e.at_key(&key))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// An enum variant given as `{variant: content}`.
struct EnumAccess {
    variant: String,
    content: Deserializer,
}

impl<'de> de::EnumAccess<'de> for EnumAccess {
    type Error = PathError;
    type Variant = VariantAccess;

    fn variant_seed<V: de::DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, VariantAccess)> {
        let variant = seed.deserialize(self.variant.as_str().into_deserializer())?;
        Ok((
            variant,
            VariantAccess {
                variant: self.variant,
                content: self.content,
            },
        ))
    }
}

struct VariantAccess {
    variant: String,
    content: Deserializer,
}

impl<'de> de::VariantAccess<'de> for VariantAccess {
    type Error = PathError;

    fn unit_variant(self) -> Result<()> {
        de::Deserialize::deserialize(self.content).map_err(|e: PathError| e.at_key(&self.variant))
    }

    fn newtype_variant_seed<T: de::DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(self.content)
            .map_err(|e| e.at_key(&self.variant))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_seq(self.content, visitor)
            .map_err(|e| e.at_key(&self.variant))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_map(self.content, visitor)
            .map_err(|e| e.at_key(&self.variant))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;
    use crate::Secret;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Protocol {
        Tcp,
        Udp,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Shape {
        Circle(f64),
        Rect { w: u32, h: u32 },
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Rule {
        port: u16,
        #[serde(default = "tcp")]
        protocol: Protocol,
    }

    fn tcp() -> Protocol {
        Protocol::Tcp
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inputs {
        name: String,
        rules: Vec<Rule>,
        weight: f64,
        count: i64,
        labels: BTreeMap<String, String>,
        note: Option<String>,
        password: Secret<String>,
        shape: Shape,
        anything: Value,
    }

    fn inputs() -> Value {
        Value::object([
            ("name", Value::secret("edge")),
            (
                "rules",
                Value::from(vec![
                    Value::object([("port", Value::Number(22.0))]),
                    Value::object([("port", Value::from(53)), ("protocol", "udp".into())]),
                ]),
            ),
            ("weight", Value::from(2)),
            ("count", Value::Number(7.0)),
            ("labels", Value::object([("team", "web")])),
            ("note", Value::Null),
            ("password", "plain".into()),
            (
                "shape",
                Value::object([("Rect", Value::object([("w", 1), ("h", 2)]))]),
            ),
            (
                "anything",
                Value::object([
                    ("s", Value::secret(Value::object([("n", 1)]))),
                    ("u", Value::Unknown),
                    ("i", Value::Integer(3)),
                    ("f", Value::Number(3.0)),
                ]),
            ),
        ])
    }

    #[test]
    fn values_read_into_their_natural_types() {
        let read: Inputs = from_value(inputs()).unwrap();
        assert_eq!(read.name, "edge");
        assert_eq!(
            read.rules,
            [
                Rule {
                    port: 22,
                    protocol: Protocol::Tcp
                },
                Rule {
                    port: 53,
                    protocol: Protocol::Udp
                }
            ]
        );
        assert_eq!((read.weight, read.count), (2.0, 7));
        assert_eq!(read.labels["team"], "web");
        assert_eq!(read.note, None);
        assert_eq!(read.password.expose(), "plain");
        assert_eq!(read.shape, Shape::Rect { w: 1, h: 2 });
        // A `Value` field receives its value exactly: secrets, unknowns, kinds of numbers.
        let anything = read.anything;
        assert_eq!(
            anything.get("s"),
            Some(&Value::secret(Value::object([("n", 1)])))
        );
        assert_eq!(anything.get("u"), Some(&Value::Unknown));
        assert!(matches!(anything.get("i"), Some(Value::Integer(3))));
        assert!(matches!(anything.get("f"), Some(Value::Number(_))));
        assert_eq!(
            from_value::<Shape>(Value::object([("Circle", 1.5)])).unwrap(),
            Shape::Circle(1.5)
        );
    }

    #[test]
    fn secrets_stay_secret_in_secret_fields() {
        #[derive(Deserialize)]
        struct Holder {
            a: Secret<String>,
            b: Secret<u8>,
        }
        let holder: Holder = from_value(Value::object([
            ("a", Value::secret("pw")),
            ("b", Value::from(1)),
        ]))
        .unwrap();
        assert_eq!(holder.a.expose(), "pw");
        assert_eq!(*holder.b.expose(), 1);
        assert!(crate::to_value(&holder.a).unwrap().is_secret());
    }

    #[test]
    fn errors_name_the_path() {
        let mut bad = inputs();
        if let Value::Object(map) = &mut bad {
            map.insert(
                "rules".into(),
                Value::from(vec![
                    Value::object([("port", 22)]),
                    Value::object([("port", 70000)]),
                ]),
            );
        }
        let error = from_value_at::<Inputs>(bad).unwrap_err();
        assert_eq!(error.path(), "rules[1].port");
        assert!(error.to_string().contains("70000"), "{error}");

        let error = from_value_at::<Rule>(Value::object([("protocol", "tcp")])).unwrap_err();
        assert_eq!(error.to_string(), "missing field `port`");
        let error = from_value_at::<u8>(Value::Number(1.5)).unwrap_err();
        assert!(error.to_string().contains("1.5"), "{error}");
        let error = from_value_at::<String>(Value::Unknown).unwrap_err();
        assert_eq!(error.to_string(), "the value is not known yet");
    }

    #[test]
    fn values_round_trip_through_rust_types() {
        let value = inputs();
        let read: Value = from_value(value.clone()).unwrap();
        assert_eq!(read, value);
        let json: serde_json::Value = from_value(Value::object([("n", 1)])).unwrap();
        assert_eq!(json, serde_json::json!({"n": 1}));
    }
}
