//! JavaScript and Python, which write a value the same way but for their words: a literal of
//! each kind of value, and a secret read from the stack's configuration instead of written.

use plinth_engine::value::Value;

use super::parts::{Secrets, child_path, script_string};
use crate::gen_sdk::model::Property;

/// How a scripting language spells the literals a value is made of.
pub(super) struct Script {
    pub(super) null: &'static str,
    pub(super) booleans: [&'static str; 2],
    pub(super) not_a_number: &'static str,
    /// Positive infinity; negated with `-`.
    pub(super) infinity: &'static str,
    /// The context's method that reads a secret from the configuration as a secret output.
    pub(super) require_secret: &'static str,
    /// A key of an object literal.
    pub(super) key: fn(&str) -> String,
    /// What pads an object literal's entries inside its braces.
    pub(super) padding: &'static str,
}

impl Script {
    /// A resource input: read from the configuration if it is secret, else a literal.
    pub(super) fn input(
        &self,
        property: &Property,
        value: &Value,
        secrets: &mut Secrets,
    ) -> String {
        if property.secret {
            self.secret(secrets, &property.wire)
        } else {
            self.literal(value, &property.wire, secrets)
        }
    }

    /// The secret at `path`, read from the stack's configuration: an output, which stays
    /// secret.
    fn secret(&self, secrets: &mut Secrets, path: &str) -> String {
        format!(
            "{}({})",
            self.require_secret,
            script_string(&secrets.key(path))
        )
    }

    /// `value` as an expression: objects, arrays and scalars as literals, keyed by the
    /// provider's names; JSON's string escapes are both languages'.
    fn literal(&self, value: &Value, path: &str, secrets: &mut Secrets) -> String {
        match value {
            Value::Null | Value::Unknown | Value::Output(_) => self.null.to_owned(),
            Value::Bool(b) => self.booleans[usize::from(*b)].to_owned(),
            Value::Integer(n) => n.to_string(),
            Value::Number(n) => self.number(*n),
            Value::String(text) => script_string(text),
            Value::Secret(_) => self.secret(secrets, path),
            Value::Array(items) => {
                let items: Vec<String> = (items.iter().enumerate())
                    .map(|(i, v)| self.literal(v, &format!("{path}[{i}]"), secrets))
                    .collect();
                format!("[{}]", items.join(", "))
            }
            Value::Object(map) if map.is_empty() => "{}".to_owned(),
            Value::Object(map) => {
                let entries: Vec<String> = (map.iter())
                    .map(|(k, v)| {
                        let v = self.literal(v, &child_path(path, k), secrets);
                        format!("{}: {v}", (self.key)(k))
                    })
                    .collect();
                let pad = self.padding;
                format!("{{{pad}{}{pad}}}", entries.join(", "))
            }
        }
    }

    fn number(&self, n: f64) -> String {
        if n.is_nan() {
            self.not_a_number.to_owned()
        } else if n.is_infinite() {
            let sign = if n > 0.0 { "" } else { "-" };
            format!("{sign}{}", self.infinity)
        } else {
            format!("{n:?}")
        }
    }
}
