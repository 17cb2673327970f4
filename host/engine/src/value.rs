//! Property values: the data model shared by programs, providers and state.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::shown::escape_controls;

pub mod map;

/// A map of property names to values, ordered so that state files and diffs are deterministic.
pub type PropertyMap = map::SortedMap<Value>;

/// The key that marks a JSON object as a special value (secret or unknown) rather than a map.
pub const SIG_KEY: &str = "plinth:sig";

/// A property value.
///
/// Integers and floats are distinct (`8402` stays `8402` through state and displays), but equal
/// when they are the same number: `Integer(2) == Number(2.0)`, so that state written before
/// integers existed, or values from guests that have only floats, compare as the numbers they
/// are rather than as a change.
#[derive(Clone, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    /// A 64-bit whole number.
    Integer(i64),
    /// A floating-point number.
    Number(f64),
    String(String),
    Array(Vec<Value>),
    Object(PropertyMap),
    /// A value that is hidden in displays and sealed at rest.
    Secret(Box<Value>),
    /// A value not known yet (outputs of resources to be created, during preview).
    Unknown,
    /// Program values only: the output of another registration, resolved by the engine.
    Output(OutputRef),
}

/// A reference to a field of another registration's result.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OutputRef {
    pub handle: u64,
    pub field: OutputField,
}

/// Which part of a registration's result an [`OutputRef`] designates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OutputField {
    /// An output property at a path; empty means the whole value.
    Property(Vec<String>),
    Id,
    Urn,
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) | (Value::Unknown, Value::Unknown) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Integer(a), Value::Integer(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::Integer(i), Value::Number(n)) | (Value::Number(n), Value::Integer(i)) => {
                integral(*n) == Some(*i)
            }
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => a == b,
            (Value::Object(a), Value::Object(b)) => a == b,
            (Value::Secret(a), Value::Secret(b)) => a == b,
            (Value::Output(a), Value::Output(b)) => a == b,
            _ => false,
        }
    }
}

/// The `i64` a float is exactly, if any.
pub fn integral(n: f64) -> Option<i64> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    (n.fract() == 0.0 && (-LIMIT..LIMIT).contains(&n)).then_some(n as i64)
}

impl Value {
    pub fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown)
    }

    /// True if this value or any value inside it is unknown.
    pub fn contains_unknowns(&self) -> bool {
        self.any(&|v| matches!(v, Value::Unknown))
    }

    /// True if this value or any value inside it is a secret.
    pub fn contains_secrets(&self) -> bool {
        self.any(&|v| matches!(v, Value::Secret(_)))
    }

    /// True if this value or any value inside it refers to another registration.
    pub fn contains_outputs(&self) -> bool {
        self.any(&|v| matches!(v, Value::Output(_)))
    }

    fn any(&self, pred: &dyn Fn(&Value) -> bool) -> bool {
        if pred(self) {
            return true;
        }
        match self {
            Value::Array(items) => items.iter().any(|v| v.any(pred)),
            Value::Object(map) => map.values().any(|v| v.any(pred)),
            Value::Secret(inner) => inner.any(pred),
            _ => false,
        }
    }

    /// Visits every output reference in this value.
    pub fn for_each_output(&self, f: &mut dyn FnMut(&OutputRef)) {
        match self {
            Value::Output(r) => f(r),
            Value::Array(items) => items.iter().for_each(|v| v.for_each_output(f)),
            Value::Object(map) => map.values().for_each(|v| v.for_each_output(f)),
            Value::Secret(inner) => inner.for_each_output(f),
            _ => {}
        }
    }

    /// Replaces every output reference with the value `resolve` returns for it.
    pub fn resolve_outputs(self, resolve: &mut dyn FnMut(&OutputRef) -> Value) -> Value {
        match self {
            Value::Output(r) => resolve(&r),
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|v| v.resolve_outputs(resolve))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, v.resolve_outputs(resolve)))
                    .collect(),
            ),
            Value::Secret(inner) => Value::Secret(Box::new(inner.resolve_outputs(resolve))),
            other => other,
        }
    }

    /// The value at `path` below this one. Secrets along the way keep the result secret; an
    /// unknown along the way makes it unknown.
    pub fn at_path(&self, path: &[String]) -> Value {
        let Some((first, rest)) = path.split_first() else {
            return self.clone();
        };
        match self {
            Value::Object(map) => map.get(first).map_or(Value::Null, |v| v.at_path(rest)),
            Value::Array(items) => first
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get(i))
                .map_or(Value::Null, |v| v.at_path(rest)),
            Value::Secret(inner) => match inner.at_path(path) {
                Value::Secret(v) => Value::Secret(v),
                Value::Unknown => Value::Unknown,
                v => Value::Secret(Box::new(v)),
            },
            Value::Unknown => Value::Unknown,
            _ => Value::Null,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The whole number, if this is an integer or a float that is exactly one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Integer(i) => Some(*i),
            Value::Number(n) => integral(*n),
            _ => None,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<f64> for Value {
    fn from(n: f64) -> Self {
        Value::Number(n)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Integer(n)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<PropertyMap> for Value {
    fn from(m: PropertyMap) -> Self {
        Value::Object(m)
    }
}

/// Displays a value for humans: secrets as `[secret]`, unknowns as `[unknown]`.
/// Like a derived `Debug`, except that a secret prints `[secret]`: `{:?}` ends up in logs and
/// panic messages, which must never hold a secret's plaintext.
impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("Null"),
            Value::Bool(b) => f.debug_tuple("Bool").field(b).finish(),
            Value::Integer(n) => f.debug_tuple("Integer").field(n).finish(),
            Value::Number(n) => f.debug_tuple("Number").field(n).finish(),
            Value::String(s) => f.debug_tuple("String").field(s).finish(),
            Value::Array(items) => f.debug_tuple("Array").field(items).finish(),
            Value::Object(map) => f.debug_tuple("Object").field(map).finish(),
            Value::Secret(_) => f.write_str("[secret]"),
            Value::Unknown => f.write_str("Unknown"),
            Value::Output(output) => f.debug_tuple("Output").field(output).finish(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Integer(n) => write!(f, "{n}"),
            // Always with a point or an exponent (`2.0`, `1e20`), so a float never reads as an
            // integer.
            Value::Number(n) => write!(f, "{n:?}"),
            Value::String(s) => write!(f, "{s:?}"),
            Value::Array(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Object(map) => {
                f.write_str("{")?;
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {v}", escape_controls(k))?;
                }
                f.write_str("}")
            }
            Value::Secret(_) => f.write_str("[secret]"),
            Value::Unknown | Value::Output(_) => f.write_str("[unknown]"),
        }
    }
}

// State encoding: plain JSON for plain values; secrets and unknowns as objects tagged with
// `SIG_KEY`. Output references never reach state and refuse to serialize.

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Integer(n) => s.serialize_i64(*n),
            Value::Number(n) => s.serialize_f64(*n),
            Value::String(v) => s.serialize_str(v),
            Value::Array(items) => items.serialize(s),
            Value::Object(map) => map.serialize(s),
            Value::Secret(inner) => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry(SIG_KEY, "secret")?;
                m.serialize_entry("value", inner)?;
                m.end()
            }
            Value::Unknown => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(SIG_KEY, "unknown")?;
                m.end()
            }
            Value::Output(_) => Err(serde::ser::Error::custom(
                "an unresolved output reference cannot be serialized",
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a property value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Integer(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        // Beyond i64, as JSON's other readers do: a float.
        Ok(i64::try_from(v).map_or(Value::Number(v as f64), Value::Integer))
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
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<Value, A::Error> {
        let mut map = map::read_entries(access)?;
        match map.get(SIG_KEY) {
            None => Ok(Value::Object(map)),
            Some(Value::String(sig)) if sig == "secret" => {
                let inner = map
                    .remove("value")
                    .ok_or_else(|| de::Error::custom("secret value without `value`"))?;
                Ok(Value::Secret(Box::new(inner)))
            }
            Some(Value::String(sig)) if sig == "unknown" => Ok(Value::Unknown),
            Some(other) => Err(de::Error::custom(format!(
                "unsupported special value {other} under `{SIG_KEY}`"
            ))),
        }
    }
}

/// [`Value::at_path`] of an object held as a map, without wrapping (and so copying) it first.
pub fn object_at_path(map: &PropertyMap, path: &[String]) -> Value {
    match path.split_first() {
        None => Value::Object(map.clone()),
        Some((first, rest)) => map.get(first).map_or(Value::Null, |v| v.at_path(rest)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_shows_control_characters_escaped_in_strings_and_keys() {
        let hostile = "\x1b]0;t\x07\r\u{202e}\u{9b}";
        let value = Value::Object([(hostile.to_owned(), Value::from(hostile))].into());
        let shown = value.to_string();
        assert!(
            !shown.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{shown}"
        );
        assert!(
            shown.contains(r"\u{1b}]0;t\u{7}\r\u{202e}\u{9b}"),
            "{shown}"
        );
    }

    fn sample() -> Value {
        let mut inner = PropertyMap::new();
        inner.insert("n".into(), Value::Number(1.5));
        inner.insert("s".into(), Value::Secret(Box::new("pw".into())));
        inner.insert("u".into(), Value::Unknown);
        inner.insert("a".into(), Value::Array(vec![Value::Null, true.into()]));
        Value::Object(inner)
    }

    #[test]
    fn json_round_trip_keeps_secrets_and_unknowns_typed() {
        let v = sample();
        let json = serde_json::to_string(&v).unwrap();
        assert!(json.contains(SIG_KEY));
        assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), v);
    }

    #[test]
    fn output_references_refuse_to_serialize() {
        let v = Value::Output(OutputRef {
            handle: 1,
            field: OutputField::Id,
        });
        assert!(serde_json::to_string(&v).is_err());
    }

    #[test]
    fn debug_never_prints_a_secret() {
        let secret_obj = Value::Secret(Box::new(sample()));
        assert_eq!(format!("{secret_obj:?}"), "[secret]");
        let shown = format!("{:?}", sample());
        assert!(
            shown.contains("\"s\": [secret]") && !shown.contains("pw"),
            "{shown}"
        );
        assert_eq!(format!("{:?}", Value::from("x")), "String(\"x\")");
    }

    #[test]
    fn at_path_propagates_secrecy_and_unknowns() {
        let v = sample();
        assert_eq!(v.at_path(&["n".into()]), Value::Number(1.5));
        assert!(matches!(v.at_path(&["s".into()]), Value::Secret(_)));
        assert_eq!(v.at_path(&["a".into(), "1".into()]), Value::Bool(true));
        assert_eq!(v.at_path(&["missing".into()]), Value::Null);
        assert_eq!(Value::Unknown.at_path(&["x".into()]), Value::Unknown);
        let secret_obj = Value::Secret(Box::new(sample()));
        assert_eq!(
            secret_obj.at_path(&["n".into()]),
            Value::Secret(Box::new(Value::Number(1.5)))
        );
    }

    #[test]
    fn integers_and_floats_keep_their_kind_in_json() {
        let v = Value::Array(vec![
            Value::Integer(8402),
            Value::Number(8402.0),
            Value::Number(0.5),
            Value::Integer(i64::MIN),
        ]);
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(json, "[8402,8402.0,0.5,-9223372036854775808]");
        let back: Value = serde_json::from_str(&json).unwrap();
        let Value::Array(items) = back else {
            panic!("an array");
        };
        assert!(matches!(items[0], Value::Integer(8402)));
        assert!(matches!(items[1], Value::Number(n) if n == 8402.0));
        assert!(matches!(items[3], Value::Integer(i64::MIN)));
        // Beyond i64: a float, as JSON readers do.
        let big: Value = serde_json::from_str("18446744073709551615").unwrap();
        assert!(matches!(big, Value::Number(_)));
    }

    #[test]
    fn numbers_compare_by_value() {
        assert_eq!(Value::Integer(2), Value::Number(2.0));
        assert_eq!(Value::Number(-7.0), Value::Integer(-7));
        assert_ne!(Value::Integer(2), Value::Number(2.5));
        assert_ne!(Value::Integer(i64::MAX), Value::Number(9.3e18));
        assert_ne!(Value::Integer(1), Value::Bool(true));
        assert_ne!(Value::Integer(1), Value::String("1".into()));
        assert_eq!(Value::Number(2.0).as_i64(), Some(2));
        assert_eq!(Value::Number(2.5).as_i64(), None);
    }

    #[test]
    fn display_tells_integers_from_floats() {
        assert_eq!(Value::Integer(8402).to_string(), "8402");
        assert_eq!(Value::Number(42.0).to_string(), "42.0");
        assert_eq!(Value::Number(0.25).to_string(), "0.25");
    }

    #[test]
    fn display_hides_secrets() {
        assert_eq!(sample().to_string().matches("pw").count(), 0);
    }
}
