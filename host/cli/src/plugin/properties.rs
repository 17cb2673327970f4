//! A provider's typed schema as `plinth plugin inspect` prints it: each resource type with a
//! table of its inputs and outputs (name, type, whether required or secret, default,
//! description), the properties of nested objects indented beneath their property.

use std::fmt::Write as _;

use plinth_engine::provider::{FunctionSchema, PropertySchema, PropertyType, ResourceSchema};
use plinth_engine::shown::escape_controls as e;

/// The `resources:` section.
pub fn render_resources(resources: &[ResourceSchema]) -> String {
    let mut out = String::from("resources:\n");
    if resources.is_empty() {
        out.push_str("  none\n");
    }
    for resource in resources {
        let _ = writeln!(out, "  {}", e(&resource.token));
        if !resource.description.is_empty() {
            let _ = writeln!(out, "    {}", e(&resource.description));
        }
        section(&mut out, "inputs", &resource.inputs);
        section(&mut out, "outputs", &resource.outputs);
    }
    out
}

/// The `functions:` section.
pub fn render_functions(functions: &[FunctionSchema]) -> String {
    if functions.is_empty() {
        return "functions:    none\n".to_owned();
    }
    let mut out = String::from("functions:\n");
    for function in functions {
        let _ = writeln!(
            out,
            "  {} -> {}",
            e(&function.token),
            e(&function.output.to_string())
        );
        if !function.description.is_empty() {
            let _ = writeln!(out, "    {}", e(&function.description));
        }
        section(&mut out, "arguments", &function.inputs);
    }
    out
}

/// One row of a property table.
struct Row {
    /// The name, indented by its depth in nested objects.
    name: String,
    ty: String,
    flags: String,
    description: String,
}

fn section(out: &mut String, title: &str, properties: &[PropertySchema]) {
    if properties.is_empty() {
        let _ = writeln!(out, "    {title}: none");
        return;
    }
    let _ = writeln!(out, "    {title}:");
    let mut rows = Vec::new();
    collect(&mut rows, properties, 0);
    let width = |column: fn(&Row) -> &str| rows.iter().map(|r| column(r).len()).max();
    let name_width = width(|r| &r.name).unwrap_or(0);
    let type_width = width(|r| &r.ty).unwrap_or(0);
    let flags_width = width(|r| &r.flags).unwrap_or(0);
    for row in &rows {
        let line = format!(
            "      {:name_width$}  {:type_width$}  {:flags_width$}  {}",
            row.name, row.ty, row.flags, row.description
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// Rows for `properties` at `depth`, each followed by the properties of the object it holds.
fn collect(rows: &mut Vec<Row>, properties: &[PropertySchema], depth: usize) {
    for property in properties {
        rows.push(Row {
            // What the plugin wrote, each on its row: a newline cannot start a row of its own.
            name: format!("{}{}", "  ".repeat(depth), e(&property.name)),
            ty: e(&property.ty.to_string()).into_owned(),
            flags: e(&flags(property)).into_owned(),
            description: e(&property.description).into_owned(),
        });
        if let Some(object) = nested_object(&property.ty) {
            collect(rows, &object.properties, depth + 1);
        }
    }
}

/// `required`/`optional`, then `secret`, `replaces`, `write-only` and `default = …` where they
/// apply.
fn flags(property: &PropertySchema) -> String {
    let mut flags = vec![if property.required {
        "required".to_owned()
    } else {
        "optional".to_owned()
    }];
    if property.secret {
        flags.push("secret".to_owned());
    }
    if property.replace_on_change {
        flags.push("replaces".to_owned());
    }
    if let Some(version) = &property.write_only_version {
        // The name is the plugin's: escaped like every name this table shows.
        let version = e(version);
        flags.push(format!("write-only (sent again when {version} changes)"));
    }
    if let Some(default) = &property.default {
        flags.push(format!("default {default}"));
    }
    flags.join(", ")
}

/// The object type a property holds, directly or as the items of an array or map.
fn nested_object(ty: &PropertyType) -> Option<&plinth_engine::provider::ObjectType> {
    match ty {
        PropertyType::Object(object) => Some(object),
        PropertyType::Array { items } => nested_object(items),
        PropertyType::Map { values } => nested_object(values),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_engine::provider::ObjectType;
    use plinth_engine::value::Value;

    #[test]
    fn tables_show_types_flags_defaults_and_nested_objects() {
        let rule = ObjectType {
            name: Some("Rule".into()),
            description: String::new(),
            properties: vec![PropertySchema {
                required: true,
                description: "The port.".into(),
                ..PropertySchema::new("port", PropertyType::Integer)
            }],
        };
        let resource = ResourceSchema {
            token: "net:Firewall".into(),
            description: "A firewall.".into(),
            inputs: vec![
                PropertySchema {
                    required: true,
                    replace_on_change: true,
                    description: "Its name.".into(),
                    ..PropertySchema::new("name", PropertyType::String)
                },
                PropertySchema {
                    default: Some(Value::Integer(3)),
                    ..PropertySchema::new("retries", PropertyType::Integer)
                },
                PropertySchema::new(
                    "rules",
                    PropertyType::Array {
                        items: Box::new(PropertyType::Object(rule)),
                    },
                ),
            ],
            outputs: vec![PropertySchema {
                secret: true,
                required: true,
                ..PropertySchema::new("token", PropertyType::String)
            }],
        };
        let shown = render_resources(&[resource]);
        let expected = "\
resources:
  net:Firewall
    A firewall.
    inputs:
      name     string                required, replaces   Its name.
      retries  integer               optional, default 3
      rules    array of object Rule  optional
        port   integer               required             The port.
    outputs:
      token  string  required, secret
";
        assert_eq!(shown, expected);
        assert_eq!(render_resources(&[]), "resources:\n  none\n");
    }

    #[test]
    fn functions_show_their_arguments_and_result() {
        let function = FunctionSchema {
            token: "kv:get".into(),
            description: "Reads a key.".into(),
            inputs: vec![PropertySchema {
                required: true,
                ..PropertySchema::new("key", PropertyType::String)
            }],
            output: PropertyType::String,
        };
        let shown = render_functions(&[function]);
        assert!(shown.starts_with("functions:\n  kv:get -> string\n    Reads a key.\n"));
        assert!(shown.contains("      key  string  required"), "{shown}");
        assert_eq!(render_functions(&[]), "functions:    none\n");
    }
}
