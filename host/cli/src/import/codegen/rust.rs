//! Rust: `let x = Type::builder(ctx, "name", required...).optional(v).register()?;` on the
//! SDK crate `plinth_<provider>_sdk`, to paste into the program's function (a `use` may sit
//! there too).

use std::collections::BTreeSet;

use plinth_engine::value::Value;

use super::parts::{
    Declaration, Language, Secrets, child_path, fits, options, skipped_note, written,
};
use crate::gen_sdk::model::{Package, Property, TypeRef};
use crate::gen_sdk::rust::{field_ident, rust_string, type_ident};

pub(super) fn declare(
    declaration: &Declaration,
    variable: &str,
    secrets: &mut Secrets,
    imports: &mut BTreeSet<String>,
) -> Vec<String> {
    let package = declaration.package;
    let krate = crate_ident(package);
    let ty = type_ident(&declaration.resource.name);
    imports.insert(format!("use {krate}::{ty};"));
    let mut code = Literals {
        package,
        krate,
        secrets,
    };
    let mut lines: Vec<String> = skipped_note(Language::Rust, declaration)
        .into_iter()
        .collect();
    let mut required = vec!["ctx".to_owned(), rust_string(&declaration.name)];
    let mut chain = Vec::new();
    for (property, value) in written(declaration) {
        let literal = code.input(property, value);
        if property.required {
            required.push(literal);
        } else {
            chain.push(format!(".{}({literal})", field_ident(&property.name)));
        }
    }
    let options: String = (options(Language::Rust, declaration).into_iter())
        .map(|(option, variable)| format!(".{option}(&{variable})"))
        .collect();
    if !options.is_empty() {
        chain.push(format!(".options(|o| o{options})"));
    }
    chain.push(".register()?;".to_owned());
    lines.push(format!(
        "let {variable} = {ty}::builder({})",
        required.join(", ")
    ));
    lines.extend(chain.into_iter().map(|c| format!("    {c}")));
    lines
}

/// The SDK crate's name in code: `plinth-random-sdk` is `plinth_random_sdk`.
fn crate_ident(package: &Package) -> String {
    (crate::gen_sdk::rust::crate_name(package).chars())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

struct Literals<'a, 's> {
    package: &'a Package,
    krate: String,
    secrets: &'s mut Secrets,
}

impl Literals<'_, '_> {
    /// A resource input: a builder's argument, which takes an `Input<T>` (a value, or an
    /// output such as a secret read from the configuration).
    fn input(&mut self, property: &Property, value: &Value) -> String {
        let path = &property.wire;
        if property.secret || matches!(value, Value::Secret(_)) {
            let inner = unwrap_secret(value);
            if matches!(property.ty, TypeRef::String) && matches!(inner, Value::String(_)) {
                let key = self.secrets.key(path);
                let ty = if property.secret {
                    "plinth_sdk::Secret<String>".to_owned()
                } else {
                    "String".to_owned()
                };
                return format!(
                    "ctx.require_secret_config({})?.typed::<{ty}>()",
                    rust_string(&key)
                );
            }
            return self.nested_secret(&property.ty, property.secret, path);
        }
        match (&property.ty, value) {
            (TypeRef::String, Value::String(text)) => rust_string(text),
            _ => self.literal(&property.ty, value, path),
        }
    }

    /// A secret inside a value, which is no `Input`: the configuration's plaintext, parsed as
    /// the type and made a `Secret` again where the type is one.
    fn nested_secret(&mut self, ty: &TypeRef, secret_type: bool, path: &str) -> String {
        let key = rust_string(&self.secrets.key(path));
        let read = if matches!(ty, TypeRef::String) {
            format!("ctx.require_config({key})?")
        } else {
            format!("ctx.config_as({key})?.unwrap_or_default()")
        };
        if secret_type {
            format!("plinth_sdk::Secret::new({read})")
        } else {
            read
        }
    }

    /// `value` as a Rust expression of the SDK's type for `ty`.
    fn literal(&mut self, ty: &TypeRef, value: &Value, path: &str) -> String {
        if let Value::Secret(_) = value {
            return self.nested_secret(ty, false, path);
        }
        if !fits(ty, value) {
            return self.any(value, path);
        }
        match (ty, value) {
            (TypeRef::Any, _) => self.any(value, path),
            (TypeRef::String, Value::String(text)) => format!("{}.to_owned()", rust_string(text)),
            (TypeRef::Enum(i), Value::String(text)) => {
                let def = &self.package.enums[*i];
                match def.values.iter().find(|v| &v.wire == text) {
                    Some(v) => format!(
                        "{}::{}::{}",
                        self.krate,
                        type_ident(&def.name),
                        type_ident(&v.name)
                    ),
                    None => format!("{}.to_owned()", rust_string(text)),
                }
            }
            (TypeRef::Integer, Value::Integer(n)) => integer(*n),
            (TypeRef::Integer, Value::Number(n)) => integer(*n as i64),
            (TypeRef::Number, Value::Integer(n)) => format!("{n}.0"),
            (TypeRef::Number, Value::Number(n)) => float(*n),
            (TypeRef::Boolean, Value::Bool(b)) => b.to_string(),
            (TypeRef::Array(items), Value::Array(values)) => {
                let items: Vec<String> = (values.iter().enumerate())
                    .map(|(i, v)| self.literal(items, v, &format!("{path}[{i}]")))
                    .collect();
                format!("vec![{}]", items.join(", "))
            }
            (TypeRef::Map(values_ty), Value::Object(map)) => {
                let entries: Vec<String> = (map.iter())
                    .map(|(k, v)| {
                        let v = self.literal(values_ty, v, &child_path(path, k));
                        format!("({}.to_owned(), {v})", rust_string(k))
                    })
                    .collect();
                if entries.is_empty() {
                    "std::collections::BTreeMap::new()".to_owned()
                } else {
                    format!("std::collections::BTreeMap::from([{}])", entries.join(", "))
                }
            }
            (TypeRef::Object(i), Value::Object(map)) => {
                let def = &self.package.objects[*i];
                let name = format!("{}::{}", self.krate, type_ident(&def.name));
                let fields: Vec<String> = (def.properties.iter())
                    .map(|p| {
                        let field = field_ident(&p.name);
                        let value = match map.get(&p.wire) {
                            None | Some(Value::Null) if p.required => {
                                "Default::default()".to_owned()
                            }
                            None | Some(Value::Null) => "None".to_owned(),
                            Some(v) => {
                                let path = child_path(path, &p.wire);
                                let v = if p.secret || matches!(v, Value::Secret(_)) {
                                    self.nested_secret(&p.ty, p.secret, &path)
                                } else {
                                    self.literal(&p.ty, v, &path)
                                };
                                if p.required { v } else { format!("Some({v})") }
                            }
                        };
                        format!("{field}: {value}")
                    })
                    .collect();
                if fields.is_empty() {
                    format!("{name} {{}}")
                } else {
                    format!("{name} {{ {} }}", fields.join(", "))
                }
            }
            _ => self.any(value, path),
        }
    }

    /// A value of no declared type: a `plinth_sdk::Value`.
    fn any(&mut self, value: &Value, path: &str) -> String {
        match value {
            Value::Null | Value::Unknown | Value::Output(_) => "plinth_sdk::Value::Null".to_owned(),
            Value::Bool(b) => format!("plinth_sdk::Value::from({b})"),
            Value::Integer(n) => format!("plinth_sdk::Value::from({})", integer(*n)),
            Value::Number(n) => format!("plinth_sdk::Value::from({})", float(*n)),
            Value::String(text) => format!("plinth_sdk::Value::from({})", rust_string(text)),
            Value::Array(items) => {
                let items: Vec<String> = (items.iter().enumerate())
                    .map(|(i, v)| self.any(v, &format!("{path}[{i}]")))
                    .collect();
                format!("plinth_sdk::Value::Array(vec![{}])", items.join(", "))
            }
            Value::Object(map) => {
                let entries: Vec<String> = (map.iter())
                    .map(|(k, v)| {
                        let v = self.any(v, &child_path(path, k));
                        format!("({}, {v})", rust_string(k))
                    })
                    .collect();
                format!(
                    "plinth_sdk::Value::object(Vec::<(&str, plinth_sdk::Value)>::from([{}]))",
                    entries.join(", ")
                )
            }
            Value::Secret(_) => {
                let key = rust_string(&self.secrets.key(path));
                format!("plinth_sdk::Value::secret(ctx.require_config({key})?)")
            }
        }
    }
}

fn unwrap_secret(value: &Value) -> &Value {
    match value {
        Value::Secret(inner) => unwrap_secret(inner),
        other => other,
    }
}

fn integer(n: i64) -> String {
    if n == i64::MIN {
        "i64::MIN".to_owned()
    } else {
        n.to_string()
    }
}

/// An `f64` literal: Rust's shortest round-trip form, which always reads back as a float.
fn float(n: f64) -> String {
    if n.is_nan() {
        "f64::NAN".to_owned()
    } else if n.is_infinite() {
        if n > 0.0 {
            "f64::INFINITY"
        } else {
            "f64::NEG_INFINITY"
        }
        .to_owned()
    } else {
        let text = format!("{n:?}");
        if text.contains(['.', 'e', 'E']) {
            text
        } else {
            format!("{text}.0")
        }
    }
}
