//! A provider's typed schema: what its resources, functions and configuration take and produce.
//! Language-neutral, like Pulumi's package schema: SDKs are generated from it and inputs are
//! validated against it. Serialized as JSON in the shape `plugin inspect --json` shows.

use serde::{Deserialize, Serialize};

use crate::value::Value;

/// The type of a property.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PropertyType {
    /// Any value: what an untyped schema (from a guest built before 0.3) says.
    #[default]
    Any,
    String,
    /// A 64-bit whole number.
    Integer,
    /// A number, whole or not.
    Number,
    Boolean,
    /// A list of values of one type.
    Array {
        items: Box<PropertyType>,
    },
    /// An object with any keys and values of one type.
    Map {
        values: Box<PropertyType>,
    },
    /// An object with named properties.
    Object(ObjectType),
    /// One of these strings.
    Enum {
        values: Vec<String>,
    },
}

/// An object type: named properties, each with its own type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ObjectType {
    /// A name for the type (`Rule`), for generated SDKs; `None` for an anonymous object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub properties: Vec<PropertySchema>,
}

/// A provider's description of a property: of a resource's inputs or outputs, of a function's
/// arguments, of the configuration, or of a nested object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PropertySchema {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default)]
    pub required: bool,
    /// The property is always a secret.
    #[serde(default)]
    pub secret: bool,
    /// A change replaces the resource (or, for configuration, every resource the provider
    /// manages). Top-level properties only.
    #[serde(default)]
    pub replace_on_change: bool,
    #[serde(rename = "type", default)]
    pub ty: PropertyType,
    /// The value used when the property is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Set on a write-only resource input (a password that is sent, never stored): the name of
    /// the input whose change sends it again. The engine passes a write-only input to the
    /// provider's `check`, `create` and `update` only, never records, diffs or shows its value;
    /// a new value is sent when the version input changes. Top-level resource inputs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_only_version: Option<String>,
}

impl PropertySchema {
    /// An optional property of type `ty` with nothing else said about it.
    pub fn new(name: impl Into<String>, ty: PropertyType) -> PropertySchema {
        PropertySchema {
            name: name.into(),
            ty,
            ..PropertySchema::default()
        }
    }
}

/// A provider's description of a resource type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceSchema {
    pub token: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub inputs: Vec<PropertySchema>,
    pub outputs: Vec<PropertySchema>,
}

impl ResourceSchema {
    /// The write-only inputs, each with the name of its version input.
    pub fn write_only(&self) -> impl Iterator<Item = (&str, &str)> {
        (self.inputs.iter())
            .filter_map(|p| Some((p.name.as_str(), p.write_only_version.as_deref()?)))
    }

    /// Why the write-only marks of this schema cannot be honoured: a version input that is not
    /// an input, or is itself write-only.
    pub fn check_write_only(&self) -> Result<(), String> {
        for (name, version) in self.write_only() {
            match self.inputs.iter().find(|p| p.name == version) {
                None => {
                    return Err(format!(
                        "{}: the write-only input {name} names the version input {version}, \
                         which is not an input",
                        self.token
                    ));
                }
                Some(p) if p.write_only_version.is_some() => {
                    return Err(format!(
                        "{}: the version input {version} of the write-only input {name} is \
                         write-only itself: a version must be recorded",
                        self.token
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// A provider's description of a function `invoke` accepts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionSchema {
    pub token: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The arguments.
    pub inputs: Vec<PropertySchema>,
    /// The result's type.
    pub output: PropertyType,
}

impl FunctionSchema {
    /// A function with untyped arguments and result: what a guest before 0.3 declares.
    pub fn untyped(token: impl Into<String>) -> FunctionSchema {
        FunctionSchema {
            token: token.into(),
            ..FunctionSchema::default()
        }
    }
}

impl std::fmt::Display for PropertyType {
    /// `integer`, `array of string`, `map of number`, `object Rule`, `one of "a", "b"`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PropertyType::Any => f.write_str("any"),
            PropertyType::String => f.write_str("string"),
            PropertyType::Integer => f.write_str("integer"),
            PropertyType::Number => f.write_str("number"),
            PropertyType::Boolean => f.write_str("boolean"),
            PropertyType::Array { items } => write!(f, "array of {items}"),
            PropertyType::Map { values } => write!(f, "map of {values}"),
            PropertyType::Object(object) => match &object.name {
                Some(name) => write!(f, "object {name}"),
                None => f.write_str("object"),
            },
            PropertyType::Enum { values } => {
                let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
                write!(f, "one of {}", quoted.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_serialize_as_tagged_objects() {
        let rule = ObjectType {
            name: Some("Rule".into()),
            description: String::new(),
            properties: vec![PropertySchema {
                required: true,
                ..PropertySchema::new("port", PropertyType::Integer)
            }],
        };
        let ty = PropertyType::Array {
            items: Box::new(PropertyType::Object(rule)),
        };
        let json = serde_json::to_value(&ty).unwrap();
        assert_eq!(json["type"], "array");
        assert_eq!(json["items"]["type"], "object");
        assert_eq!(json["items"]["name"], "Rule");
        assert_eq!(json["items"]["properties"][0]["type"]["type"], "integer");
        let back: PropertyType = serde_json::from_value(json).unwrap();
        assert_eq!(back, ty);
        assert_eq!(ty.to_string(), "array of object Rule");
    }

    #[test]
    fn defaults_keep_their_type() {
        let p = PropertySchema {
            default: Some(Value::Integer(8)),
            ..PropertySchema::new("length", PropertyType::Integer)
        };
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains("\"default\":8"), "{json}");
        let back: PropertySchema = serde_json::from_str(&json).unwrap();
        assert!(matches!(back.default, Some(Value::Integer(8))));
    }

    #[test]
    fn enums_display_their_values() {
        let ty = PropertyType::Enum {
            values: vec!["tcp".into(), "udp".into()],
        };
        assert_eq!(ty.to_string(), r#"one of "tcp", "udp""#);
    }
}
