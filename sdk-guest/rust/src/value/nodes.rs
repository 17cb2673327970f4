//! Conversions between [`Value`] trees and the flattened node lists that cross the WIT boundary:
//! `nodes[0]` is the root and containers refer to their children by index.

use super::{PropertyMap, Value};
use crate::Error;
use crate::wire::{self, Node};

#[cfg(any(feature = "provider", feature = "program", test))]
/// Flattens a value, root first. Strings and keys are moved, never copied.
pub(crate) fn encode(value: Value) -> wire::Value {
    // Counting first is a walk without allocation; growing the list as it fills would copy it
    // and go through the allocator several times.
    let mut nodes = Vec::with_capacity(count(&value));
    push(&mut nodes, value);
    wire::Value { nodes }
}

#[cfg(any(feature = "provider", feature = "program", test))]
/// How many nodes `value` flattens to.
fn count(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count).sum(),
        Value::Object(map) => map.values().map(count).sum(),
        Value::Secret(inner) => count(inner),
        _ => 0,
    }
}

#[cfg(any(feature = "provider", feature = "program"))]
/// Flattens a property map as an object value.
pub(crate) fn encode_map(map: PropertyMap) -> wire::Value {
    encode(Value::Object(map))
}

#[cfg(any(feature = "provider", feature = "program", test))]
/// Appends `value` and its descendants; returns the index of `value`'s node.
fn push(nodes: &mut Vec<Node>, value: Value) -> u32 {
    let index = nodes.len();
    // Reserve the slot so that the parent precedes its children.
    nodes.push(Node::Null);
    let node = match value {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Boolean(b),
        Value::Integer(n) => Node::Integer(n),
        Value::Number(n) => Node::Number(n),
        Value::String(s) => Node::Text(s),
        Value::Array(items) => Node::Array(items.into_iter().map(|v| push(nodes, v)).collect()),
        Value::Object(map) => Node::Object(
            map.into_iter()
                .map(|(key, v)| {
                    let child = push(nodes, v);
                    (key, child)
                })
                .collect(),
        ),
        Value::Secret(inner) => Node::Secret(push(nodes, *inner)),
        Value::Unknown => Node::Unknown,
        #[cfg(feature = "program")]
        Value::Output(reference) => Node::Output(reference),
    };
    nodes[index] = node;
    // A wasm32 guest cannot hold more than u32::MAX nodes.
    index as u32
}

/// Rebuilds a value from its nodes. An empty list is [`Value::Null`]. Every node may be used
/// once, so malformed lists (dangling indices, shared or cyclic children) are errors, not loops.
pub(crate) fn decode(value: wire::Value) -> Result<Value, Error> {
    if value.nodes.is_empty() {
        return Ok(Value::Null);
    }
    let mut slots: Vec<Option<Node>> = value.nodes.into_iter().map(Some).collect();
    take(&mut slots, 0)
}

/// Rebuilds a property map: the root must be an object (or null, for an empty map).
#[cfg(any(feature = "provider", feature = "policy"))]
pub(crate) fn decode_map(value: wire::Value) -> Result<PropertyMap, Error> {
    match decode(value)? {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(PropertyMap::new()),
        other => Err(Error::new(format!(
            "expected a property map (an object), got {}",
            kind(&other)
        ))),
    }
}

fn take(slots: &mut [Option<Node>], index: u32) -> Result<Value, Error> {
    let slot = slots
        .get_mut(index as usize)
        .ok_or_else(|| Error::new(format!("malformed value: node {index} does not exist")))?;
    let node = slot.take().ok_or_else(|| {
        Error::new(format!(
            "malformed value: node {index} is referenced more than once"
        ))
    })?;
    Ok(match node {
        Node::Null => Value::Null,
        Node::Boolean(b) => Value::Bool(b),
        Node::Integer(n) => Value::Integer(n),
        Node::Number(n) => Value::Number(n),
        Node::Text(s) => Value::String(s),
        Node::Array(children) => Value::Array(
            children
                .into_iter()
                .map(|child| take(slots, child))
                .collect::<Result<_, _>>()?,
        ),
        Node::Object(entries) => {
            // Inserted one by one: collecting would first gather and sort the entries in a
            // list of their own. A repeated key keeps its last value either way.
            let mut map = PropertyMap::new();
            for (key, child) in entries {
                map.insert(key, take(slots, child)?);
            }
            Value::Object(map)
        }
        Node::Secret(child) => Value::Secret(Box::new(take(slots, child)?)),
        Node::Unknown => Value::Unknown,
        #[cfg(feature = "program")]
        Node::Output(reference) => Value::Output(reference),
        #[cfg(not(feature = "program"))]
        Node::Output(_) => {
            return Err(Error::new(
                "malformed value: output references are only valid in programs",
            ));
        }
    })
}

/// A word for the kind of a value, for error messages.
#[cfg(any(feature = "provider", feature = "policy"))]
fn kind(value: &Value) -> &'static str {
    value.kind()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        Value::object([
            ("name", Value::from("pet")),
            ("count", Value::from(3)),
            ("ok", Value::from(true)),
            ("none", Value::Null),
            ("later", Value::Unknown),
            ("password", Value::secret("hunter2")),
            (
                "nested",
                Value::from(vec![
                    Value::object([("deep", Value::from(vec![1.5, -2.0]))]),
                    Value::Array(vec![]),
                    Value::object(Vec::<(String, Value)>::new()),
                ]),
            ),
        ])
    }

    #[test]
    fn round_trips() {
        assert_eq!(decode(encode(sample())).unwrap(), sample());
        for scalar in [
            Value::Null,
            Value::from("x"),
            Value::Unknown,
            Value::from(0),
        ] {
            assert_eq!(decode(encode(scalar.clone())).unwrap(), scalar);
        }
    }

    #[test]
    fn root_is_first_and_children_follow_their_parent() {
        let encoded = encode(Value::object([("a", Value::secret(1))]));
        assert_eq!(
            encoded.nodes,
            vec![
                Node::Object(vec![("a".into(), 1)]),
                Node::Secret(2),
                Node::Integer(1),
            ]
        );
    }

    #[test]
    fn decodes_any_child_order() {
        // Children need not follow their parent, as long as the tree is well formed.
        let value = wire::Value {
            nodes: vec![
                Node::Array(vec![2, 1]),
                Node::Text("second".into()),
                Node::Secret(3),
                Node::Boolean(false),
            ],
        };
        assert_eq!(
            decode(value).unwrap(),
            Value::Array(vec![Value::secret(false), Value::from("second")])
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let value = wire::Value {
            nodes: vec![
                Node::Object(vec![("a".into(), 1), ("b".into(), 2), ("a".into(), 3)]),
                Node::Integer(1),
                Node::Integer(2),
                Node::Integer(3),
            ],
        };
        assert_eq!(decode(value).unwrap(), Value::object([("a", 3), ("b", 2)]));
    }

    #[test]
    fn the_node_list_is_allocated_once() {
        let encoded = encode(sample());
        assert_eq!(encoded.nodes.capacity(), encoded.nodes.len());
    }

    #[test]
    fn empty_is_null() {
        assert_eq!(decode(wire::Value { nodes: vec![] }).unwrap(), Value::Null);
    }

    #[test]
    fn rejects_malformed_lists() {
        let dangling = wire::Value {
            nodes: vec![Node::Array(vec![5])],
        };
        assert!(decode(dangling).unwrap_err().to_string().contains("node 5"));
        let cycle = wire::Value {
            nodes: vec![Node::Array(vec![1]), Node::Secret(0)],
        };
        assert!(
            decode(cycle)
                .unwrap_err()
                .to_string()
                .contains("more than once")
        );
        let shared = wire::Value {
            nodes: vec![Node::Array(vec![1, 1]), Node::Null],
        };
        assert!(decode(shared).is_err());
    }

    #[cfg(feature = "provider")]
    #[test]
    fn maps_must_be_objects() {
        let map = decode_map(encode(sample())).unwrap();
        assert_eq!(map.get("count"), Some(&Value::from(3)));
        let err = decode_map(encode(Value::from(1))).unwrap_err();
        assert!(err.to_string().contains("an integer"));
        assert!(
            decode_map(wire::Value { nodes: vec![] })
                .unwrap()
                .is_empty()
        );
        assert_eq!(encode_map(map.clone()), encode(Value::Object(map)));
    }

    #[cfg(feature = "program")]
    #[test]
    fn output_references_round_trip() {
        use crate::wire::{OutputField, OutputRef};
        let reference = Value::Output(OutputRef {
            handle: 7,
            field: OutputField::Property(vec!["result".into()]),
        });
        let value = Value::object([("prefix", reference)]);
        assert_eq!(decode(encode(value.clone())).unwrap(), value);
    }

    #[cfg(not(feature = "program"))]
    #[test]
    fn providers_reject_output_references() {
        use crate::wire::{OutputField, OutputRef};
        let value = wire::Value {
            nodes: vec![Node::Output(OutputRef {
                handle: 1,
                field: OutputField::Id,
            })],
        };
        assert!(decode(value).is_err());
    }
}
