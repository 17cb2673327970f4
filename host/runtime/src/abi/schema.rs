//! Converts the schema a provider's `info` returns (WIT `schema` records, whose types are
//! flattened trees) into the engine's schema types.
//!
//! What a guest sends is checked like a value: every index in range, every node used once (a
//! tree, so no cycles), a bounded depth, defaults well formed. A malformed schema fails the
//! provider's start, naming what is wrong.

use plinth_engine::schema::{
    FunctionSchema, ObjectType, PropertySchema, PropertyType, ResourceSchema,
};

use crate::abi::bindings::v0_3::provider::plinth::plugin::schema as wit;
use crate::abi::values::{self, MAX_DEPTH, Origin};

/// Why a schema from a guest was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum SchemaError {
    #[error("the type of `{property}` is empty: it needs at least its root node")]
    Empty { property: String },
    #[error("the type of `{property}` refers to node {index}, but it has only {len} nodes")]
    BadIndex {
        property: String,
        index: u32,
        len: usize,
    },
    #[error(
        "the type of `{property}` uses node {index} more than once: a type must be a tree, \
         without cycles or shared nodes"
    )]
    NotATree { property: String, index: u32 },
    #[error("the type of `{property}` nests deeper than {MAX_DEPTH} levels")]
    TooDeep { property: String },
    #[error("the default of `{property}` is malformed: {reason}")]
    BadDefault { property: String, reason: String },
}

/// Top-level properties.
pub(crate) fn properties(
    list: Vec<wit::PropertySchema>,
) -> Result<Vec<PropertySchema>, SchemaError> {
    list.into_iter().map(property).collect()
}

pub(crate) fn resource(r: wit::ResourceSchema) -> Result<ResourceSchema, SchemaError> {
    Ok(ResourceSchema {
        token: r.token,
        description: r.description,
        inputs: properties(r.inputs)?,
        outputs: properties(r.outputs)?,
    })
}

pub(crate) fn function(f: wit::FunctionSchema) -> Result<FunctionSchema, SchemaError> {
    let output = Tree::new(&f.token, f.output).root()?;
    Ok(FunctionSchema {
        token: f.token,
        description: f.description,
        inputs: properties(f.inputs)?,
        output,
    })
}

fn property(p: wit::PropertySchema) -> Result<PropertySchema, SchemaError> {
    let ty = Tree::new(&p.name, p.type_).root()?;
    Ok(PropertySchema {
        default: default(&p.name, p.default)?,
        name: p.name,
        description: p.description,
        required: p.required,
        secret: p.secret,
        replace_on_change: p.replace_on_change,
        ty,
        // Marked from `plinth:inputs/write-only`, which `info` does not carry.
        write_only_version: None,
    })
}

fn default(
    property: &str,
    value: Option<crate::abi::bindings::types::Value>,
) -> Result<Option<plinth_engine::value::Value>, SchemaError> {
    value
        .map(|v| values::from_wit(v, Origin::Provider))
        .transpose()
        .map_err(|e| SchemaError::BadDefault {
            property: property.to_owned(),
            reason: e.to_string(),
        })
}

/// The nodes of one type tree; each is taken out once, when its parent is converted.
struct Tree<'a> {
    /// The property the type belongs to, for errors.
    property: &'a str,
    nodes: Vec<Option<wit::TypeNode>>,
}

impl<'a> Tree<'a> {
    fn new(property: &'a str, tree: wit::TypeTree) -> Tree<'a> {
        Tree {
            property,
            nodes: tree.nodes.into_iter().map(Some).collect(),
        }
    }

    fn root(mut self) -> Result<PropertyType, SchemaError> {
        if self.nodes.is_empty() {
            return Err(SchemaError::Empty {
                property: self.property.to_owned(),
            });
        }
        self.convert(0, 0)
    }

    fn convert(&mut self, index: u32, depth: usize) -> Result<PropertyType, SchemaError> {
        let property = || self.property.to_owned();
        if depth > MAX_DEPTH {
            return Err(SchemaError::TooDeep {
                property: property(),
            });
        }
        let len = self.nodes.len();
        let slot = self
            .nodes
            .get_mut(index as usize)
            .ok_or_else(|| SchemaError::BadIndex {
                property: property(),
                index,
                len,
            })?;
        let node = slot.take().ok_or_else(|| SchemaError::NotATree {
            property: property(),
            index,
        })?;
        Ok(match node {
            wit::TypeNode::Any => PropertyType::Any,
            wit::TypeNode::String => PropertyType::String,
            wit::TypeNode::Integer => PropertyType::Integer,
            wit::TypeNode::Number => PropertyType::Number,
            wit::TypeNode::Boolean => PropertyType::Boolean,
            wit::TypeNode::Array(items) => PropertyType::Array {
                items: Box::new(self.convert(items, depth + 1)?),
            },
            wit::TypeNode::Map(values) => PropertyType::Map {
                values: Box::new(self.convert(values, depth + 1)?),
            },
            wit::TypeNode::Enum(values) => PropertyType::Enum { values },
            wit::TypeNode::Object(object) => PropertyType::Object(ObjectType {
                name: object.name,
                description: object.description,
                properties: object
                    .properties
                    .into_iter()
                    .map(|field| {
                        Ok(PropertySchema {
                            ty: self.convert(field.type_, depth + 1)?,
                            default: default(&field.name, field.default)?,
                            name: field.name,
                            description: field.description,
                            required: field.required,
                            secret: field.secret,
                            replace_on_change: false,
                            write_only_version: None,
                        })
                    })
                    .collect::<Result<_, SchemaError>>()?,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::bindings::types;
    use wit::TypeNode as N;

    fn tree(nodes: Vec<N>) -> wit::TypeTree {
        wit::TypeTree { nodes }
    }

    fn prop(name: &str, ty: wit::TypeTree) -> wit::PropertySchema {
        wit::PropertySchema {
            name: name.into(),
            description: String::new(),
            required: false,
            secret: false,
            replace_on_change: false,
            type_: ty,
            default: None,
        }
    }

    fn field(name: &str, ty: u32, required: bool) -> wit::FieldSchema {
        wit::FieldSchema {
            name: name.into(),
            description: String::new(),
            required,
            secret: false,
            default: None,
            type_: ty,
        }
    }

    #[test]
    fn nested_types_unflatten() {
        // rules: array of object Rule { port: integer (required), proto: "tcp" | "udp" }
        let rules = prop(
            "rules",
            tree(vec![
                N::Array(1),
                N::Object(wit::ObjectType {
                    name: Some("Rule".into()),
                    description: "A rule.".into(),
                    properties: vec![field("port", 2, true), field("proto", 3, false)],
                }),
                N::Integer,
                N::Enum(vec!["tcp".into(), "udp".into()]),
            ]),
        );
        let p = property(rules).unwrap();
        let PropertyType::Array { items } = p.ty else {
            panic!("an array: {:?}", p.ty);
        };
        let PropertyType::Object(rule) = *items else {
            panic!("an object");
        };
        assert_eq!(rule.name.as_deref(), Some("Rule"));
        assert_eq!(rule.properties[0].ty, PropertyType::Integer);
        assert!(rule.properties[0].required);
        assert_eq!(
            rule.properties[1].ty,
            PropertyType::Enum {
                values: vec!["tcp".into(), "udp".into()]
            }
        );
    }

    #[test]
    fn defaults_are_values() {
        let mut length = prop("length", tree(vec![N::Integer]));
        length.default = Some(types::Value {
            nodes: vec![types::Node::Integer(8)],
        });
        let p = property(length).unwrap();
        assert!(matches!(
            p.default,
            Some(plinth_engine::value::Value::Integer(8))
        ));
        let mut bad = prop("length", tree(vec![N::Integer]));
        bad.default = Some(types::Value { nodes: vec![] });
        assert!(matches!(property(bad), Err(SchemaError::BadDefault { .. })));
    }

    #[test]
    fn malformed_trees_are_errors() {
        let cases = [
            (tree(vec![]), "is empty"),
            (tree(vec![N::Array(7)]), "refers to node 7"),
            (tree(vec![N::Array(0)]), "more than once"),
            (tree(vec![N::Map(1), N::Array(1)]), "more than once"),
        ];
        for (ty, needle) in cases {
            let error = property(prop("x", ty)).unwrap_err().to_string();
            assert!(error.contains(needle), "{error}");
            assert!(error.contains("`x`"), "{error}");
        }
        let deep: Vec<N> = (1..=MAX_DEPTH as u32 + 1)
            .map(N::Array)
            .chain([N::Any])
            .collect();
        assert!(matches!(
            property(prop("x", tree(deep))),
            Err(SchemaError::TooDeep { .. })
        ));
    }
}
