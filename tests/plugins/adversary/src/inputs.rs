//! Reading the string inputs that select an attack.

use plinth_sdk::{PropertyMap, ProviderError, Value};

/// The string input `key`, or an `invalid` error naming it.
pub(crate) fn required<'a>(inputs: &'a PropertyMap, key: &str) -> Result<&'a str, ProviderError> {
    optional(inputs, key).ok_or_else(|| ProviderError::invalid(key, "a string is required"))
}

/// The string input `key`, if set.
pub(crate) fn optional<'a>(inputs: &'a PropertyMap, key: &str) -> Option<&'a str> {
    inputs.get(key).and_then(Value::as_str)
}

/// The input `key` as a whole number (a number, or a string that parses as one).
pub(crate) fn number(inputs: &PropertyMap, key: &str) -> Result<Option<u64>, ProviderError> {
    let Some(value) = inputs.get(key) else {
        return Ok(None);
    };
    value
        .as_f64()
        .map(|n| n as u64)
        .or_else(|| value.as_str()?.parse().ok())
        .map(Some)
        .ok_or_else(|| ProviderError::invalid(key, "a whole number is required"))
}
