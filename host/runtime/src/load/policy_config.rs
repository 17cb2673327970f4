//! A policy's configuration checked against the JSON Schema its pack declares for it, by the
//! host, before the pack sees it: a mistyped setting is refused naming the policy, the key and
//! what was expected, whatever the pack's own `configure` would have made of it.

use plinth_engine::shown::escape_controls;
use serde_json::Value;

/// The most schema violations named in one error.
const MOST_NAMED: usize = 5;

/// Refuses `config` (a JSON object, as text) for policy `policy` of pack `pack` unless it
/// matches `schema` (a JSON Schema, as text; empty: the policy takes any configuration).
pub(crate) fn check(pack: &str, policy: &str, schema: &str, config: &str) -> Result<(), String> {
    if schema.trim().is_empty() {
        return Ok(());
    }
    let named = format!("`{}/{}`", escape_controls(pack), escape_controls(policy));
    let schema: Value = serde_json::from_str(schema).map_err(|e| {
        format!("policy {named} declares a configuration schema that is not JSON ({e}): its author must fix the pack")
    })?;
    let validator = jsonschema::validator_for(&schema).map_err(|e| {
        format!(
            "policy {named} declares a configuration schema that is not a JSON Schema ({}): its author must fix the pack",
            escape_controls(&e.to_string())
        )
    })?;
    let config: Value = serde_json::from_str(config)
        .map_err(|e| format!("the configuration of policy {named} is not JSON: {e}"))?;
    let errors: Vec<String> = (validator.iter_errors(&config))
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = match at.as_str() {
                "" => "its top level".to_owned(),
                key => format!("`{}`", escape_controls(key)),
            };
            format!("at {at}: {}", escape_controls(&e.to_string()))
        })
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let more = match errors.len() > MOST_NAMED {
        true => format!(" (and {} more)", errors.len() - MOST_NAMED),
        false => String::new(),
    };
    Err(format!(
        "the configuration of policy {named} does not match the schema the pack declares: {}{more}; \
         correct it in --policy-pack-config (or the service's `policy add --config`)",
        errors[..errors.len().min(MOST_NAMED)].join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"{ "type": "object",
        "properties": { "minimum": { "type": "integer", "minimum": 1 } },
        "additionalProperties": false }"#;

    #[test]
    fn a_configuration_is_checked_against_the_schema_naming_the_policy_key_and_expectation() {
        assert!(check("p", "len", SCHEMA, r#"{ "minimum": 3 }"#).is_ok());
        assert!(check("p", "len", "", r#"{ "anything": true }"#).is_ok());
        let wrong = check("p", "len", SCHEMA, r#"{ "minimum": "3" }"#).unwrap_err();
        assert!(
            wrong.contains("policy `p/len`")
                && wrong.contains("at `/minimum`")
                && wrong.contains("is not of type \"integer\""),
            "{wrong}"
        );
        let extra = check("p", "len", SCHEMA, r#"{ "minimum": 3, "extra": 1 }"#).unwrap_err();
        assert!(
            extra.contains("at its top level") && extra.contains("extra"),
            "{extra}"
        );
        let broken = check("p", "len", "{", "{}").unwrap_err();
        assert!(broken.contains("not JSON"), "{broken}");
        let bogus = check("p", "len", r#"{ "type": 7 }"#, "{}").unwrap_err();
        assert!(bogus.contains("not a JSON Schema"), "{bogus}");
    }
}
