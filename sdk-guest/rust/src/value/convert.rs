//! Conversions from Rust values into [`Value`].

use std::collections::{BTreeMap, HashMap};

use super::Value;

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

impl From<&String> for Value {
    fn from(s: &String) -> Self {
        Value::String(s.clone())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<f64> for Value {
    fn from(n: f64) -> Self {
        Value::Number(n)
    }
}

impl From<f32> for Value {
    fn from(n: f32) -> Self {
        Value::Number(n.into())
    }
}

/// Integers stay integers.
macro_rules! from_integer {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Self {
                Value::Integer(n.into())
            }
        }
    )*};
}

from_integer!(i8, i16, i32, i64, u8, u16, u32);

/// Integers stay integers; beyond `i64` (never for `isize`), a number, as JSON readers do.
macro_rules! from_wide_integer {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Self {
                i64::try_from(n).map_or(Value::Number(n as f64), Value::Integer)
            }
        }
    )*};
}

from_wide_integer!(isize, u64, usize);

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(items: Vec<T>) -> Self {
        Value::Array(items.into_iter().map(Into::into).collect())
    }
}

impl<K: Into<String>, V: Into<Value>> From<BTreeMap<K, V>> for Value {
    fn from(map: BTreeMap<K, V>) -> Self {
        Value::object(map)
    }
}

impl<K: Into<String>, V: Into<Value>, S> From<HashMap<K, V, S>> for Value {
    fn from(map: HashMap<K, V, S>) -> Self {
        Value::object(map)
    }
}

/// `None` becomes [`Value::Null`].
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(option: Option<T>) -> Self {
        option.map_or(Value::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PropertyMap;

    #[test]
    fn scalars_convert() {
        assert_eq!(Value::from("a"), Value::String("a".into()));
        assert_eq!(Value::from(String::from("a")), Value::String("a".into()));
        assert_eq!(Value::from(true), Value::Bool(true));
        assert!(matches!(Value::from(7u8), Value::Integer(7)));
        assert!(matches!(Value::from(-7i64), Value::Integer(-7)));
        assert!(matches!(Value::from(u64::MAX), Value::Number(_)));
        assert!(matches!(Value::from(3usize), Value::Integer(3)));
        assert_eq!(Value::from(0.5f32), Value::Number(0.5));
    }

    #[test]
    fn containers_convert() {
        assert_eq!(
            Value::from(vec![1, 2]),
            Value::Array(vec![Value::Integer(1), Value::Integer(2)])
        );
        let map: HashMap<&str, &str> = HashMap::from([("k", "v")]);
        let expected: PropertyMap = [("k".to_owned(), Value::from("v"))].into();
        assert_eq!(Value::from(map), Value::Object(expected.clone()));
        assert_eq!(Value::from(expected.clone()), Value::Object(expected));
        assert_eq!(Value::from(None::<i32>), Value::Null);
        assert_eq!(Value::from(Some("x")), Value::from("x"));
    }
}
