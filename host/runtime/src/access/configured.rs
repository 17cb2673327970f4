//! Capabilities that follow configuration. A provider whose needs depend on how it is configured
//! (a database provider reaches the server its configuration names) declares a network pattern
//! that refers to its configuration keys, such as `{host}:{port}`. Such a pattern is checked for
//! form when the plugin loads and resolved when the plugin is configured: the provider then asks
//! for exactly `db.internal:5432`, and that is what the project must grant.

use plinth_engine::schema::PropertySchema;
use plinth_engine::value::{PropertyMap, Value};

/// Whether `pattern` refers to configuration keys.
pub(crate) fn is_configured(pattern: &str) -> bool {
    pattern.contains(['{', '}'])
}

/// A pattern split into literal text and the configuration keys between braces.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Key(&'a str),
}

/// The pieces of `pattern`, or why it is malformed.
fn pieces(pattern: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => {
                pieces.push(Piece::Text(rest));
                break;
            }
            Some(i) if rest.as_bytes()[i] == b'}' => {
                return Err(format!("`{pattern}` has a `}}` without its `{{`"));
            }
            Some(i) => {
                if i > 0 {
                    pieces.push(Piece::Text(&rest[..i]));
                }
                let after = &rest[i + 1..];
                let end = after
                    .find('}')
                    .ok_or_else(|| format!("`{pattern}` has a `{{` without its `}}`"))?;
                let key = &after[..end];
                let valid = !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if !valid {
                    return Err(format!(
                        "`{pattern}` refers to `{{{key}}}`, which is not a configuration key"
                    ));
                }
                pieces.push(Piece::Key(key));
                rest = &after[end + 1..];
            }
        }
    }
    Ok(pieces)
}

/// Checks the form of a configured pattern, when the plugin loads: its keys must be keys of the
/// provider's configuration `schema`.
pub(crate) fn validate(pattern: &str, schema: &[PropertySchema]) -> Result<(), String> {
    for piece in pieces(pattern)? {
        if let Piece::Key(key) = piece
            && !schema.iter().any(|p| p.name == key)
        {
            return Err(format!(
                "`{pattern}` refers to `{{{key}}}`, which is not a setting of the provider"
            ));
        }
    }
    Ok(())
}

/// `pattern` with each `{key}` replaced by the value `config` gives it (or the schema's
/// default); `Ok(None)` while a value is not known yet (during a preview).
pub(crate) fn resolve(
    pattern: &str,
    config: &PropertyMap,
    schema: &[PropertySchema],
) -> Result<Option<String>, String> {
    let mut resolved = String::new();
    for piece in pieces(pattern)? {
        let key = match piece {
            Piece::Text(text) => {
                resolved.push_str(text);
                continue;
            }
            Piece::Key(key) => key,
        };
        let default = schema
            .iter()
            .find(|p| p.name == key)
            .and_then(|p| p.default.as_ref());
        let value = match config.get(key).filter(|v| !matches!(v, Value::Null)) {
            Some(value) => value,
            None => default.ok_or_else(|| format!("the setting `{key}` is not set"))?,
        };
        match value {
            Value::String(text) if !text.is_empty() => resolved.push_str(text),
            Value::Integer(n) => resolved.push_str(&n.to_string()),
            Value::Number(n) if n.fract() == 0.0 => resolved.push_str(&format!("{n:.0}")),
            Value::Unknown => return Ok(None),
            Value::Secret(_) => {
                return Err(format!(
                    "the setting `{key}` is a secret, and a grant cannot name a secret"
                ));
            }
            _ => {
                return Err(format!(
                    "the setting `{key}` must be a non-empty string or a whole number"
                ));
            }
        }
    }
    Ok(Some(resolved))
}

#[cfg(test)]
mod tests {
    use plinth_engine::schema::PropertyType;

    use super::*;

    fn schema() -> Vec<PropertySchema> {
        let mut port = PropertySchema::new("port", PropertyType::Integer);
        port.default = Some(Value::Integer(5432));
        vec![PropertySchema::new("host", PropertyType::String), port]
    }

    fn config(entries: &[(&str, Value)]) -> PropertyMap {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn keys_are_replaced_by_settings_or_defaults() {
        let given = config(&[
            ("host", "db.internal".into()),
            ("port", Value::Integer(6432)),
        ]);
        let resolved = resolve("{host}:{port}", &given, &schema()).unwrap();
        assert_eq!(resolved.as_deref(), Some("db.internal:6432"));
        let defaulted = config(&[("host", "10.0.0.5".into())]);
        let resolved = resolve("{host}:{port}", &defaulted, &schema()).unwrap();
        assert_eq!(resolved.as_deref(), Some("10.0.0.5:5432"));
        let unknown = config(&[("host", Value::Unknown)]);
        assert_eq!(resolve("{host}:{port}", &unknown, &schema()), Ok(None));
    }

    #[test]
    fn missing_secret_and_malformed_are_refused() {
        let err = resolve("{host}:{port}", &config(&[]), &schema()).unwrap_err();
        assert!(err.contains("`host` is not set"), "{err}");
        let secret = config(&[("host", Value::Secret(Box::new("h".into())))]);
        let err = resolve("{host}:1", &secret, &schema()).unwrap_err();
        assert!(err.contains("secret"), "{err}");
        assert!(validate("{host}:{port}", &schema()).is_ok());
        assert!(
            validate("{hots}:1", &schema())
                .unwrap_err()
                .contains("not a setting")
        );
        assert!(
            validate("{host:1", &schema())
                .unwrap_err()
                .contains("without its")
        );
        assert!(
            validate("host}:1", &schema())
                .unwrap_err()
                .contains("without its")
        );
        assert!(
            validate("{a b}:1", &schema())
                .unwrap_err()
                .contains("not a configuration key")
        );
        assert!(is_configured("{host}:1") && !is_configured("db:1"));
    }
}
