//! [`Secret`]: a typed value that stays secret.

use std::fmt;

use serde::de::{Deserialize, Deserializer, Visitor};
use serde::ser::{Serialize, Serializer};

use crate::value::serialization::SECRET;

/// A value that is a secret: sealed in state and hidden in displays. A typed input or output of
/// this type keeps its secrecy through [`to_value`](crate::to_value) and
/// [`from_value`](crate::from_value): an input given as a secret arrives here, one given in plain
/// text becomes a secret, and an output of this type is one. `Debug` never shows the value.
///
/// ```
/// use plinth_sdk::{Secret, Value, from_value};
///
/// let password: Secret<String> = from_value(Value::secret("hunter2")).unwrap();
/// assert_eq!(password.expose(), "hunter2");
/// assert_eq!(format!("{password:?}"), "Secret([secret])");
/// ```
///
/// With a serializer other than the SDK's (such as `serde_json`'s), a secret serializes as its
/// plaintext.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Makes `value` a secret.
    pub fn new(value: T) -> Secret<T> {
        Secret(value)
    }

    /// The plaintext, to use it.
    pub fn expose(&self) -> &T {
        &self.0
    }

    /// The plaintext, unwrapped.
    pub fn into_inner(self) -> T {
        self.0
    }

    /// A secret derived from this one's plaintext.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Secret<U> {
        Secret(f(self.0))
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Secret<T> {
        Secret(value)
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([secret])")
    }
}

impl<T: Serialize> Serialize for Secret<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(SECRET, &self.0)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Secret<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Secret<T>, D::Error> {
        struct SecretVisitor<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for SecretVisitor<T> {
            type Value = Secret<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a secret value")
            }

            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Secret<T>, D::Error> {
                T::deserialize(d).map(Secret)
            }
        }

        d.deserialize_newtype_struct(SECRET, SecretVisitor(std::marker::PhantomData))
    }
}

/// A secret's schema is its plaintext's, marked secret.
#[cfg(feature = "provider")]
impl<T: schemars::JsonSchema> schemars::JsonSchema for Secret<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Secret_of_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = generator.subschema_for::<T>();
        schema.insert(crate::provider::SECRET_EXTENSION.to_owned(), true.into());
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_serializers_see_the_plaintext() {
        let json = serde_json::to_string(&Secret::new("pw")).unwrap();
        assert_eq!(json, "\"pw\"");
        let back: Secret<String> = serde_json::from_str("\"pw\"").unwrap();
        assert_eq!(back.into_inner(), "pw");
    }

    #[test]
    fn debug_hides_and_map_keeps_it_secret() {
        let secret = Secret::new(2).map(|n| n * 21);
        assert_eq!(format!("{secret:?}"), "Secret([secret])");
        assert_eq!(*secret.expose(), 42);
    }
}
