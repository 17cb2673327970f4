//! Property values: what resources take as inputs and produce as outputs.

mod convert;
#[cfg(any(feature = "provider", feature = "program", feature = "policy"))]
pub(crate) mod nodes;
pub(crate) mod serialization;

pub use serialization::{from_value, to_value};

use std::collections::BTreeMap;

#[cfg(feature = "program")]
use crate::wire::OutputRef;

/// A map of property names to values, ordered so that diffs and state are deterministic.
pub type PropertyMap = BTreeMap<String, Value>;

/// A property value.
///
/// The accessors (`as_str`, `get`, ...) look through [`Value::Secret`], so a provider reads a
/// secret input like any other; the secret wrapper itself stays in the value.
///
/// Integers and floats are distinct kinds, but equal when they are the same number
/// (`Integer(2) == Number(2.0)`): a guest or a state from before integers existed sends only
/// floats, and the same number is not a change.
#[derive(Debug, Clone, Default)]
pub enum Value {
    /// The absence of a value.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A 64-bit whole number.
    Integer(i64),
    /// A floating-point number.
    Number(f64),
    /// A UTF-8 string.
    String(String),
    /// An ordered list of values.
    Array(Vec<Value>),
    /// A map of names to values.
    Object(PropertyMap),
    /// A value that is encrypted at rest and hidden in displays.
    Secret(Box<Value>),
    /// A value not known yet: an output of a resource that a preview has not created.
    Unknown,
    /// Programs only: a reference to an output of another registration, resolved by the engine.
    #[cfg(feature = "program")]
    Output(OutputRef),
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
            #[cfg(feature = "program")]
            (Value::Output(a), Value::Output(b)) => a == b,
            _ => false,
        }
    }
}

/// The `i64` a float is exactly, if any.
pub(crate) fn integral(n: f64) -> Option<i64> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    (n.fract() == 0.0 && (-LIMIT..LIMIT).contains(&n)).then_some(n as i64)
}

impl Value {
    /// Wraps a value as a secret.
    pub fn secret(value: impl Into<Value>) -> Value {
        Value::Secret(Box::new(value.into()))
    }

    /// Builds an object from `(key, value)` pairs.
    pub fn object<K: Into<String>, V: Into<Value>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Value {
        Value::Object(
            entries
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }

    /// The value inside any secret wrappers.
    pub fn revealed(&self) -> &Value {
        match self {
            Value::Secret(inner) => inner.revealed(),
            other => other,
        }
    }

    /// Removes any secret wrappers, returning the plaintext value.
    pub fn into_revealed(self) -> Value {
        match self {
            Value::Secret(inner) => inner.into_revealed(),
            other => other,
        }
    }

    /// True for [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self.revealed(), Value::Null)
    }

    /// True if this value is a secret.
    pub fn is_secret(&self) -> bool {
        matches!(self, Value::Secret(_))
    }

    /// True if this value or any value inside it is unknown.
    pub fn contains_unknowns(&self) -> bool {
        self.any(&|v| matches!(v, Value::Unknown))
    }

    /// True if every part of this value is known now: nothing unknown and, in programs, no
    /// reference to another registration's output.
    pub fn is_known(&self) -> bool {
        !self.any(&|v| match v {
            Value::Unknown => true,
            #[cfg(feature = "program")]
            Value::Output(_) => true,
            _ => false,
        })
    }

    fn any(&self, pred: &dyn Fn(&Value) -> bool) -> bool {
        pred(self)
            || match self {
                Value::Array(items) => items.iter().any(|v| v.any(pred)),
                Value::Object(map) => map.values().any(|v| v.any(pred)),
                Value::Secret(inner) => inner.any(pred),
                _ => false,
            }
    }

    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self.revealed() {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The number, if this is a number or an integer (exact up to 2^53).
    pub fn as_f64(&self) -> Option<f64> {
        match self.revealed() {
            Value::Number(n) => Some(*n),
            Value::Integer(n) => Some(*n as f64),
            _ => None,
        }
    }

    /// The whole number, if this is an integer, or a number with no fractional part that fits
    /// an `i64` (as older guests and state send integers).
    pub fn as_i64(&self) -> Option<i64> {
        match self.revealed() {
            Value::Integer(n) => Some(*n),
            Value::Number(n) => integral(*n),
            _ => None,
        }
    }

    /// A word for the kind of this value, for messages: `a string`, `an integer`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Integer(_) => "an integer",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
            Value::Secret(_) => "a secret",
            Value::Unknown => "an unknown value",
            #[cfg(feature = "program")]
            Value::Output(_) => "an output reference",
        }
    }

    /// The boolean, if this is a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match self.revealed() {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The items, if this is an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self.revealed() {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The map, if this is an object.
    pub fn as_object(&self) -> Option<&PropertyMap> {
        match self.revealed() {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The property `key`, if this is an object that has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|map| map.get(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accessors_see_through_secrets() {
        let v = Value::secret(Value::object([("n", 3)]));
        assert!(v.is_secret());
        assert_eq!(v.get("n").and_then(Value::as_i64), Some(3));
        assert_eq!(Value::secret("pw").as_str(), Some("pw"));
        assert_eq!(Value::secret("pw").into_revealed(), Value::from("pw"));
    }

    #[test]
    fn as_i64_accepts_only_whole_numbers_in_range() {
        assert_eq!(Value::from(8).as_i64(), Some(8));
        assert_eq!(Value::from(-2.0).as_i64(), Some(-2));
        assert_eq!(Value::from(2.5).as_i64(), None);
        assert_eq!(Value::from(f64::NAN).as_i64(), None);
        assert_eq!(Value::from(1e19).as_i64(), None);
        assert_eq!(Value::from("8").as_i64(), None);
    }

    #[test]
    fn integers_and_floats_are_equal_when_the_same_number() {
        assert_eq!(Value::Integer(3), Value::Number(3.0));
        assert_ne!(Value::Integer(3), Value::Number(3.5));
        assert_ne!(Value::Integer(1), Value::Bool(true));
        assert_eq!(Value::from(3).as_f64(), Some(3.0));
        assert_eq!(Value::Integer(i64::MAX).as_i64(), Some(i64::MAX));
    }

    #[test]
    fn unknowns_are_found_at_any_depth() {
        let v = Value::object([("a", Value::Array(vec![Value::secret(Value::Unknown)]))]);
        assert!(v.contains_unknowns());
        assert!(!v.is_known());
        assert!(Value::object([("a", 1)]).is_known());
    }

    #[test]
    fn null_secrets_are_null() {
        assert!(Value::Null.is_null());
        assert!(Value::secret(Value::Null).is_null());
        assert!(!Value::from(false).is_null());
    }
}
