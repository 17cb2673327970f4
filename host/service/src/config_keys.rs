//! A stack's configuration keys as an update's client sends them when it begins, checked where
//! they are stored: bounded, one line a key, and never a secret's value. The console shows the
//! latest update's (the service never stores `Plinth.<stack>.yaml`).

use plinth_state::protocol::ConfigKey;
use serde_json::Value;

use crate::checks::shown;
use crate::error::ApiError;

/// The most keys kept: a stack's configuration is a handful of settings.
pub(crate) const MAX_KEYS: usize = 1000;
/// The longest key and value kept, in characters.
pub(crate) const MAX_KEY: usize = 200;
pub(crate) const MAX_VALUE: usize = 4096;

/// `keys` as stored, or why they are refused; none stored for none sent (an older client).
pub(crate) fn checked(keys: &[ConfigKey]) -> Result<Option<Value>, ApiError> {
    if keys.is_empty() {
        return Ok(None);
    }
    let refuse = |why: String| Err(ApiError::BadRequest(why));
    if keys.len() > MAX_KEYS {
        return refuse(format!(
            "the update sent {} configuration keys, more than the {MAX_KEYS} kept",
            keys.len()
        ));
    }
    for key in keys {
        let name = &key.key;
        if name.is_empty() || name.chars().count() > MAX_KEY || name.chars().any(char::is_control) {
            return refuse(format!(
                "the configuration key `{}` must be one line of 1 to {MAX_KEY} characters",
                shown(name)
            ));
        }
        if key.secret && key.value.is_some() {
            return refuse(format!(
                "the configuration key `{}` is secret and was sent with a value: a client \
                 sends a secret key's name only",
                shown(name)
            ));
        }
        if key
            .value
            .as_ref()
            .is_some_and(|v| v.chars().count() > MAX_VALUE)
        {
            return refuse(format!(
                "the value of configuration key `{}` is longer than {MAX_VALUE} characters",
                shown(name)
            ));
        }
    }
    Ok(Some(serde_json::to_value(keys).expect("keys serialize")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, secret: bool, value: Option<&str>) -> ConfigKey {
        ConfigKey {
            key: name.to_owned(),
            secret,
            value: value.map(str::to_owned),
        }
    }

    #[test]
    fn a_secret_with_a_value_a_bad_name_or_too_much_is_refused() {
        assert_eq!(checked(&[]).unwrap(), None);
        let ok = [
            key("region", false, Some("eu")),
            key("password", true, None),
        ];
        assert!(checked(&ok).unwrap().is_some());
        for bad in [
            vec![key("password", true, Some("hunter2"))],
            vec![key("", false, None)],
            vec![key("a\nb", false, None)],
            vec![key(&"k".repeat(MAX_KEY + 1), false, None)],
            vec![key("big", false, Some(&"v".repeat(MAX_VALUE + 1)))],
            vec![key("k", false, None); MAX_KEYS + 1],
        ] {
            let Err(ApiError::BadRequest(why)) = checked(&bad) else {
                panic!("{:?} was taken", bad.first());
            };
            assert!(!why.contains("hunter2"), "{why}");
        }
    }
}
