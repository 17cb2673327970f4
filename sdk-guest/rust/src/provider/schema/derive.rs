//! Schemas derived from Rust types: `schemars` describes a type as a JSON Schema (following its
//! serde attributes: renames, defaults, skipped and optional fields, enums), which is converted
//! here into plinth's [`Type`]s.
//!
//! The conversion understands what `schemars` generates for serde types: `type` (with `null` for
//! an `Option`), `properties`/`required`, `additionalProperties` (maps), `items` (lists),
//! `enum`/`const` and `oneOf`/`anyOf` of strings (unit enums), `$ref` to `$defs` (a nested
//! struct, whose name becomes the object type's name), `description` (doc comments) and
//! `default`. Anything it cannot express, such as an untagged enum of different types or a
//! recursive type, becomes [`Type::Any`]: still checked when the inputs are deserialized. Two
//! extensions set plinth's flags on a field:
//! `#[schemars(extend("x-plinth-replace-on-change" = true))]` and
//! `#[schemars(extend("x-plinth-secret" = true))]` (a [`Secret`](crate::Secret) field is secret
//! already); a third makes a top-level input write-only, naming its version input:
//! `#[schemars(extend("x-plinth-write-only" = "password_wo_version"))]` (see
//! [`PropertySchema::write_only`]).

use schemars::JsonSchema;
use schemars::generate::{Contract, SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value as Json};

use super::{ObjectType, PropertySchema, Type};
use crate::Value;

/// The extension marking a field whose change replaces the resource.
pub(crate) const REPLACE_ON_CHANGE: &str = "x-plinth-replace-on-change";
/// The extension marking a field that is always a secret.
pub(crate) const SECRET: &str = "x-plinth-secret";
/// The extension marking a write-only input, whose value is the name of its version input.
pub(crate) const WRITE_ONLY: &str = "x-plinth-write-only";

/// The properties of the struct `T`, as its `Deserialize` reads them: a field with a default or
/// of type `Option` is optional. A type that is not a struct has none.
///
/// ```
/// use plinth_sdk::{properties_of, Type};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Config {
///     /// Where the service runs.
///     region: String,
///     #[serde(default)]
///     replicas: u32,
/// }
///
/// let properties = properties_of::<Config>();
/// assert_eq!(properties[0].name, "region");
/// assert_eq!(properties[0].description, "Where the service runs.");
/// assert!(properties[0].required);
/// assert_eq!(properties[1].ty, Type::Integer);
/// assert!(!properties[1].required);
/// ```
pub fn properties_of<T: JsonSchema + ?Sized>() -> Vec<PropertySchema> {
    properties_with::<T>(Contract::Deserialize)
}

/// The properties of `T` as its `Serialize` writes them: what outputs are.
pub(crate) fn output_properties_of<T: JsonSchema + ?Sized>() -> Vec<PropertySchema> {
    properties_with::<T>(Contract::Serialize)
}

fn properties_with<T: JsonSchema + ?Sized>(contract: Contract) -> Vec<PropertySchema> {
    let outputs = matches!(contract, Contract::Serialize);
    let mut settings = SchemaSettings::draft2020_12();
    settings.contract = contract;
    settings.meta_schema = None;
    let root = SchemaGenerator::new(settings).into_root_schema_for::<T>();
    let Some(object) = root.as_object() else {
        return Vec::new();
    };
    let empty = Map::new();
    let defs = object
        .get("$defs")
        .and_then(Json::as_object)
        .unwrap_or(&empty);
    let mut converter = Converter {
        defs,
        visiting: Vec::new(),
        outputs,
    };
    match converter.shape(root.as_value()).ty {
        Type::Object(object) => object.properties,
        _ => Vec::new(),
    }
}

/// What one JSON Schema says about a value.
struct Shape {
    ty: Type,
    /// `null` is allowed: an `Option`.
    nullable: bool,
    description: String,
    default: Option<Value>,
    secret: bool,
    replace_on_change: bool,
    /// The version input of a write-only input.
    write_only_version: Option<String>,
}

impl Shape {
    fn of(ty: Type) -> Shape {
        Shape {
            ty,
            nullable: false,
            description: String::new(),
            default: None,
            secret: false,
            replace_on_change: false,
            write_only_version: None,
        }
    }
}

struct Converter<'a> {
    defs: &'a Map<String, Json>,
    /// The definitions being converted: a reference back to one is a recursive type.
    visiting: Vec<String>,
    /// Describing outputs: a field listed as required is always set, default or not.
    outputs: bool,
}

impl Converter<'_> {
    fn shape(&mut self, schema: &Json) -> Shape {
        let Some(object) = schema.as_object() else {
            // `true` (anything) or `false` (nothing): neither says more than `any`.
            return Shape::of(Type::Any);
        };
        let mut shape = if let Some(reference) = object.get("$ref").and_then(Json::as_str) {
            self.reference(reference)
        } else if let Some(alternatives) =
            (object.get("anyOf").or_else(|| object.get("oneOf"))).and_then(Json::as_array)
        {
            self.union(alternatives)
        } else if let Some([only]) = object
            .get("allOf")
            .and_then(Json::as_array)
            .map(Vec::as_slice)
        {
            self.shape(only)
        } else if let Some(values) = object.get("enum").and_then(Json::as_array) {
            strings(values)
        } else if let Some(value) = object.get("const") {
            strings(std::slice::from_ref(value))
        } else {
            self.typed(object)
        };
        if let Some(description) = object.get("description").and_then(Json::as_str) {
            shape.description = description.to_owned();
        }
        if let Some(default) = object.get("default") {
            shape.default = Some(value(default));
        }
        if let Some(version) = object.get(WRITE_ONLY).and_then(Json::as_str) {
            shape.write_only_version = Some(version.to_owned());
            shape.secret = true;
        }
        shape.secret |= flag(object, SECRET);
        shape.replace_on_change |= flag(object, REPLACE_ON_CHANGE);
        shape
    }

    /// `#/$defs/Name`: the definition, an object type named `Name`.
    fn reference(&mut self, reference: &str) -> Shape {
        let Some(name) = reference.strip_prefix("#/$defs/") else {
            return Shape::of(Type::Any);
        };
        let Some(def) = self.defs.get(name) else {
            return Shape::of(Type::Any);
        };
        if self.visiting.iter().any(|v| v == name) {
            // A type tree cannot hold a recursive type.
            return Shape::of(Type::Any);
        }
        self.visiting.push(name.to_owned());
        let mut shape = self.shape(def);
        self.visiting.pop();
        if let Type::Object(object) = &mut shape.ty
            && object.name.is_none()
        {
            object.name = Some(name.to_owned());
        }
        shape
    }

    /// `anyOf`/`oneOf`: `null` makes it nullable; one remaining alternative is that type;
    /// string constants only are an enum; anything else is `any`.
    fn union(&mut self, alternatives: &[Json]) -> Shape {
        let (nulls, others): (Vec<&Json>, Vec<&Json>) =
            alternatives.iter().partition(|a| is_null(a));
        let mut shape = match others.as_slice() {
            [only] => self.shape(only),
            _ => {
                let shapes: Vec<Shape> = others.iter().map(|a| self.shape(a)).collect();
                let mut values = Vec::new();
                for shape in &shapes {
                    match &shape.ty {
                        Type::Enum(v) => values.extend(v.iter().cloned()),
                        _ => {
                            values.clear();
                            break;
                        }
                    }
                }
                if values.is_empty() {
                    Shape::of(Type::Any)
                } else {
                    Shape::of(Type::Enum(values))
                }
            }
        };
        shape.nullable |= !nulls.is_empty();
        shape
    }

    /// A schema with a `type`.
    fn typed(&mut self, object: &Map<String, Json>) -> Shape {
        let types: Vec<&str> = match object.get("type") {
            Some(Json::String(t)) => vec![t.as_str()],
            Some(Json::Array(list)) => list.iter().filter_map(Json::as_str).collect(),
            _ => Vec::new(),
        };
        let nullable = types.contains(&"null");
        let concrete: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
        let ty = match concrete.as_slice() {
            ["string"] => Type::String,
            ["integer"] => Type::Integer,
            ["number"] => Type::Number,
            ["boolean"] => Type::Boolean,
            ["array"] => Type::array(
                object
                    .get("items")
                    .map_or(Type::Any, |items| self.shape(items).ty),
            ),
            ["object"] if object.contains_key("properties") => Type::Object(ObjectType {
                name: None,
                description: (object.get("description").and_then(Json::as_str))
                    .unwrap_or_default()
                    .to_owned(),
                properties: self.fields(object),
            }),
            ["object"] => Type::map(match object.get("additionalProperties") {
                Some(values @ Json::Object(_)) => self.shape(values).ty,
                _ => Type::Any,
            }),
            _ => Type::Any,
        };
        Shape {
            nullable,
            ..Shape::of(ty)
        }
    }

    /// The properties of an object schema, in declaration order.
    fn fields(&mut self, object: &Map<String, Json>) -> Vec<PropertySchema> {
        let required: Vec<&str> = object
            .get("required")
            .and_then(Json::as_array)
            .map(|list| list.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = object.get("properties").and_then(Json::as_object) else {
            return Vec::new();
        };
        properties
            .iter()
            .map(|(name, schema)| {
                let shape = self.shape(schema);
                PropertySchema {
                    name: name.clone(),
                    description: shape.description,
                    required: required.contains(&name.as_str())
                        && !shape.nullable
                        && (self.outputs || shape.default.is_none()),
                    secret: shape.secret,
                    replace_on_change: shape.replace_on_change,
                    ty: shape.ty,
                    default: shape.default,
                    write_only_version: shape.write_only_version,
                }
            })
            .collect()
    }
}

/// An enum of the string values in `values` (`null` among them makes it nullable).
fn strings(values: &[Json]) -> Shape {
    let nullable = values.iter().any(Json::is_null);
    let strings: Option<Vec<String>> = values
        .iter()
        .filter(|v| !v.is_null())
        .map(|v| v.as_str().map(str::to_owned))
        .collect();
    Shape {
        nullable,
        ..Shape::of(strings.map_or(Type::Any, Type::Enum))
    }
}

fn is_null(schema: &Json) -> bool {
    schema.get("type").and_then(Json::as_str) == Some("null")
        || schema.get("const").is_some_and(Json::is_null)
}

fn flag(object: &Map<String, Json>, key: &str) -> bool {
    object.get(key).and_then(Json::as_bool).unwrap_or(false)
}

/// A JSON value as a plinth value: integers stay integers.
fn value(json: &Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::Integer(i),
            (None, Some(f)) => Value::Number(f),
            (None, None) => Value::Null,
        },
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(value).collect()),
        Json::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), value(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::Secret;

    #[derive(Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Protocol {
        Tcp,
        Udp,
    }

    /// A firewall rule.
    #[derive(Deserialize, Serialize, JsonSchema)]
    #[allow(dead_code)]
    struct Rule {
        /// The port.
        port: u16,
        #[serde(default = "tcp")]
        protocol: Protocol,
    }

    fn tcp() -> Protocol {
        Protocol::Tcp
    }

    #[derive(Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Inputs {
        /// The firewall's name.
        #[schemars(extend("x-plinth-replace-on-change" = true))]
        name: String,
        rules: Vec<Rule>,
        labels: BTreeMap<String, String>,
        weight: Option<f64>,
        #[serde(default)]
        dry_run: bool,
        token: Secret<String>,
        extra: crate::Value,
        #[serde(skip)]
        cache: u8,
    }

    fn by_name<'a>(properties: &'a [PropertySchema], name: &str) -> &'a PropertySchema {
        properties
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no property `{name}` in {properties:?}"))
    }

    #[test]
    fn a_struct_becomes_typed_properties_in_declaration_order() {
        let properties = properties_of::<Inputs>();
        let names: Vec<&str> = properties.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "name", "rules", "labels", "weight", "dryRun", "token", "extra"
            ]
        );
        let name = by_name(&properties, "name");
        assert_eq!(name.ty, Type::String);
        assert!(name.required && name.replace_on_change && !name.secret);
        assert_eq!(name.description, "The firewall's name.");

        let Type::Array(items) = &by_name(&properties, "rules").ty else {
            panic!("rules is an array");
        };
        let Type::Object(rule) = items.as_ref() else {
            panic!("of objects: {items:?}");
        };
        assert_eq!(rule.name.as_deref(), Some("Rule"));
        assert_eq!(rule.description, "A firewall rule.");
        assert_eq!(rule.properties[0].ty, Type::Integer);
        assert!(rule.properties[0].required);
        assert_eq!(rule.properties[1].ty, Type::one_of(["tcp", "udp"]));
        assert_eq!(rule.properties[1].default, Some(Value::from("tcp")));
        assert!(!rule.properties[1].required);

        assert_eq!(by_name(&properties, "labels").ty, Type::map(Type::String));
        let weight = by_name(&properties, "weight");
        assert_eq!(weight.ty, Type::Number);
        assert!(!weight.required);
        let dry_run = by_name(&properties, "dryRun");
        assert_eq!(dry_run.ty, Type::Boolean);
        assert!(!dry_run.required);
        assert_eq!(dry_run.default, Some(Value::Bool(false)));
        let token = by_name(&properties, "token");
        assert!(token.secret && token.required);
        assert_eq!(token.ty, Type::String);
        assert_eq!(by_name(&properties, "extra").ty, Type::Any);
    }

    #[derive(Serialize, JsonSchema)]
    #[allow(dead_code)]
    struct Node {
        value: i64,
        children: Vec<Node>,
    }

    #[test]
    fn recursion_and_untyped_alternatives_become_any() {
        let properties = properties_of::<Node>();
        assert_eq!(properties[0].ty, Type::Integer);
        assert_eq!(properties[1].ty, Type::array(Type::Any));

        #[derive(Deserialize, JsonSchema)]
        #[serde(untagged)]
        #[allow(dead_code)]
        enum Either {
            Number(i64),
            Text(String),
        }
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Holder {
            either: Either,
        }
        assert_eq!(properties_of::<Holder>()[0].ty, Type::Any);
    }

    #[test]
    fn outputs_are_required_unless_optional() {
        #[derive(Serialize, JsonSchema)]
        #[allow(dead_code)]
        struct Outputs {
            #[serde(default)]
            size: u64,
            note: Option<String>,
        }
        let outputs = output_properties_of::<Outputs>();
        assert!(outputs[0].required, "{outputs:?}");
        assert!(!outputs[1].required, "{outputs:?}");
    }

    #[test]
    fn json_defaults_keep_integers() {
        assert!(matches!(value(&serde_json::json!(3)), Value::Integer(3)));
        assert!(matches!(value(&serde_json::json!(3.0)), Value::Number(_)));
    }
}
