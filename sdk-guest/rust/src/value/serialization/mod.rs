//! Values to and from Rust types with serde: [`to_value`] and [`from_value`].
//!
//! Secrets, unknown values and (in programs) output references have no serde equivalent, so they
//! travel under private names that only this module's serializer and deserializer understand:
//! a [`Secret`](crate::Secret) field holds a secret, a [`Value`] field receives any value exactly
//! as it is (secrets, unknowns and all). Any other field looks through a secret to its
//! plaintext.

mod de;
mod error;
mod impls;
mod ser;

pub use de::from_value;
#[cfg(feature = "provider")]
pub(crate) use de::from_value_at;
pub(crate) use error::PathError;
pub use ser::to_value;

/// The newtype name under which a [`Secret`](crate::Secret) serializes its value.
pub(crate) const SECRET: &str = "$plinth::private::Secret";
/// The unit struct name under which [`Value::Unknown`](crate::Value::Unknown) serializes.
pub(crate) const UNKNOWN: &str = "$plinth::private::Unknown";
/// The newtype name under which a [`Value`](crate::Value) asks to receive a value as it is.
pub(crate) const RAW: &str = "$plinth::private::Value";
/// The newtype name under which an output reference serializes (programs only).
#[cfg(feature = "program")]
pub(crate) const OUTPUT: &str = "$plinth::private::Output";

/// The keys of the one-entry maps under which a value received as it is presents its secrets,
/// unknowns and output references.
pub(crate) const SECRET_KEY: &str = "$plinth::private::secret";
pub(crate) const UNKNOWN_KEY: &str = "$plinth::private::unknown";
#[cfg(feature = "program")]
pub(crate) const OUTPUT_KEY: &str = "$plinth::private::output";
