//! TypeScript: `const x = new Type(ctx, "name", { input: v }, { parent });` on the SDK package
//! `@plinth/<provider>`; its `import` lines go at the top of the module.

use std::collections::BTreeSet;

use plinth_engine::value::Value;

use super::parts::{
    Declaration, Language, Secrets, child_path, script_string, undeclared, variable_name, written,
};
use crate::gen_sdk::ts::property_key;

pub(super) fn declare(
    declaration: &Declaration,
    variable: &str,
    secrets: &mut Secrets,
    imports: &mut BTreeSet<String>,
) -> Vec<String> {
    let class = declaration.resource.name.pascal();
    let module = crate::gen_sdk::ts::package_name(declaration.package);
    imports.insert(format!(
        "import {{ {class} }} from {};",
        script_string(&module)
    ));
    let mut lines = Vec::new();
    let skipped = undeclared(declaration);
    if !skipped.is_empty() {
        lines.push(format!(
            "// Read back but unknown to the SDK, so left out: {}.",
            skipped.join(", ")
        ));
    }
    let mut args = Vec::new();
    for (property, value) in written(declaration) {
        let literal = if property.secret {
            secret(secrets, &property.wire)
        } else {
            literal(value, &property.wire, secrets)
        };
        args.push(format!(
            "  {}: {literal},",
            property_key(&property.name.camel())
        ));
    }
    let mut options = Vec::new();
    if let Some(parent) = &declaration.parent {
        let name = variable_name(Language::TypeScript, &parent.name);
        options.push(format!("parent: {name}"));
    }
    if let Some(provider) = &declaration.provider {
        let name = variable_name(Language::TypeScript, &provider.name);
        options.push(format!("provider: {name}"));
    }
    let options = if options.is_empty() {
        String::new()
    } else {
        format!(", {{ {} }}", options.join(", "))
    };
    let head = format!(
        "const {variable} = new {class}(ctx, {}, ",
        script_string(&declaration.name)
    );
    if args.is_empty() {
        lines.push(format!("{head}{{}}{options});"));
    } else {
        lines.push(format!("{head}{{"));
        lines.extend(args);
        lines.push(format!("}}{options});"));
    }
    lines
}

/// A secret read from the stack's configuration: an `Output<string>`, which stays secret.
fn secret(secrets: &mut Secrets, path: &str) -> String {
    format!(
        "ctx.requireSecretConfig({})",
        script_string(&secrets.key(path))
    )
}

/// `value` as a JavaScript expression: objects, arrays and scalars as literals, keyed by the
/// provider's names.
fn literal(value: &Value, path: &str, secrets: &mut Secrets) -> String {
    match value {
        Value::Null | Value::Unknown | Value::Output(_) => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Integer(n) => n.to_string(),
        Value::Number(n) => number(*n),
        Value::String(text) => script_string(text),
        Value::Secret(_) => secret(secrets, path),
        Value::Array(items) => {
            let items: Vec<String> = (items.iter().enumerate())
                .map(|(i, v)| literal(v, &format!("{path}[{i}]"), secrets))
                .collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".to_owned(),
        Value::Object(map) => {
            let entries: Vec<String> = (map.iter())
                .map(|(k, v)| format!("{}: {}", key(k), literal(v, &child_path(path, k), secrets)))
                .collect();
            format!("{{ {} }}", entries.join(", "))
        }
    }
}

/// An object literal's key: bare or quoted, and computed for `__proto__`, which a literal key
/// would turn into the object's prototype instead of a property.
fn key(text: &str) -> String {
    if text == "__proto__" {
        format!("[{}]", script_string(text))
    } else if property_key(text) == text {
        text.to_owned()
    } else {
        script_string(text)
    }
}

fn number(n: f64) -> String {
    if n.is_nan() {
        "NaN".to_owned()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else {
        format!("{n:?}")
    }
}
