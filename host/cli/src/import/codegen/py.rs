//! Python: `x = Type(ctx, "name", input=v, opts=ResourceOptions(parent=...))` on the SDK
//! module `plinth_<provider>`, to paste into the program's function (an import may sit there
//! too).

use std::collections::BTreeSet;

use plinth_engine::value::Value;

use super::parts::{
    Declaration, Language, Secrets, child_path, script_string, undeclared, variable_name, written,
};
use crate::gen_sdk::py::{IDENTS, field_ident};

pub(super) fn declare(
    declaration: &Declaration,
    variable: &str,
    secrets: &mut Secrets,
    imports: &mut BTreeSet<String>,
) -> Vec<String> {
    let class = IDENTS.pascal(&declaration.resource.name);
    let module = crate::gen_sdk::py::module_name(declaration.package);
    imports.insert(format!("from {module} import {class}"));
    let mut lines = Vec::new();
    let skipped = undeclared(declaration);
    if !skipped.is_empty() {
        lines.push(format!(
            "# Read back but unknown to the SDK, so left out: {}.",
            skipped.join(", ")
        ));
    }
    let mut args = vec!["ctx".to_owned(), script_string(&declaration.name)];
    for (property, value) in written(declaration) {
        let literal = if property.secret {
            secret(secrets, &property.wire)
        } else {
            literal(value, &property.wire, secrets)
        };
        args.push(format!("{}={literal}", field_ident(&property.name)));
    }
    let mut options = Vec::new();
    if let Some(parent) = &declaration.parent {
        options.push(format!(
            "parent={}",
            variable_name(Language::Python, &parent.name)
        ));
    }
    if let Some(provider) = &declaration.provider {
        options.push(format!(
            "provider={}",
            variable_name(Language::Python, &provider.name)
        ));
    }
    if !options.is_empty() {
        imports.insert("from plinth import ResourceOptions".to_owned());
        args.push(format!("opts=ResourceOptions({})", options.join(", ")));
    }
    lines.push(format!("{variable} = {class}("));
    lines.extend(args.into_iter().map(|a| format!("    {a},")));
    lines.push(")".to_owned());
    lines
}

/// A secret read from the stack's configuration: an `Output[str]`, which stays secret.
fn secret(secrets: &mut Secrets, path: &str) -> String {
    format!(
        "ctx.require_secret_config({})",
        script_string(&secrets.key(path))
    )
}

/// `value` as a Python expression; JSON's string escapes are Python's.
fn literal(value: &Value, path: &str, secrets: &mut Secrets) -> String {
    match value {
        Value::Null | Value::Unknown | Value::Output(_) => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
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
        Value::Object(map) => {
            let entries: Vec<String> = (map.iter())
                .map(|(k, v)| {
                    let v = literal(v, &child_path(path, k), secrets);
                    format!("{}: {v}", script_string(k))
                })
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

fn number(n: f64) -> String {
    if n.is_nan() {
        "float(\"nan\")".to_owned()
    } else if n.is_infinite() {
        if n > 0.0 {
            "float(\"inf\")"
        } else {
            "-float(\"inf\")"
        }
        .to_owned()
    } else {
        format!("{n:?}")
    }
}
