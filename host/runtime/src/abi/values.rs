//! Conversion between the engine's [`Value`] trees and the WIT `value`: a flattened list of
//! nodes, `nodes[0]` the root, containers referring to their children by index.
//!
//! What comes from a guest is checked: every index in range, every node the child of at most one
//! parent (so no cycles and no shared subtrees that could blow up when expanded), a bounded depth,
//! an object where a property map is required, no output references from providers, and no NaN
//! or infinite number (JSON, in which state is stored, has none: it would be stored as `null`).
//! Strings are moved out of the guest's nodes, never copied.
//!
//! What a guest sends is also the one place where its strings in values reach the host, so
//! they are concealed here (see [`conceal`]): a key holding a known secret is refused, and a
//! plain string or number holding one comes back marked secret.

use std::borrow::Cow;

use plinth_engine::shown::escape_controls;
use plinth_engine::value::{OutputField, OutputRef, PropertyMap, Value};

use crate::abi::bindings::types as wit;
use crate::masking::secret_masker;

/// How deep a value from a guest may nest. State is stored as JSON, which is read back with a
/// nesting limit of 128, and a secret costs a level of its own there: this leaves ample room.
pub(crate) const MAX_DEPTH: usize = 64;

/// Why a value from a guest was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ValueError {
    #[error("an empty value: it needs at least its root node")]
    Empty,
    #[error("node {parent} refers to node {child}, but the value has only {len} nodes")]
    BadIndex {
        parent: usize,
        child: u32,
        len: usize,
    },
    #[error(
        "node {child} is referred to more than once (again by node {parent}): a value must be a \
         tree, without cycles or shared nodes"
    )]
    NotATree { parent: usize, child: u32 },
    #[error("the value nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("node {node} has the key `{key}` twice")]
    DuplicateKey { node: usize, key: String },
    #[error(
        "node {node} has a property name holding the value of a secret (`{masked}`): a \
         property name cannot be kept secret, so the value is refused rather than renamed"
    )]
    SecretKey {
        node: usize,
        /// The name with the secret masked, escaped for display.
        masked: String,
    },
    #[error("expected an object of properties, found {found}")]
    NotAnObject { found: &'static str },
    #[error(
        "node {node} is a reference to another resource's output, which only programs may send"
    )]
    OutputFromProvider { node: usize },
    #[error(
        "{} is {what}: a number must be finite (state is JSON, which has no NaN or infinity)",
        if path.is_empty() { "the value".to_owned() } else { format!("`{path}`") }
    )]
    NotFinite {
        /// Where, from the value's root (`outputs.size`, `list[2].x`), escaped for display.
        path: String,
        what: &'static str,
    },
}

impl ValueError {
    /// This error, for the value under `segment` (a key, or `[i]`) of its parent.
    fn under(self, segment: impl FnOnce() -> String) -> ValueError {
        match self {
            ValueError::NotFinite { path, what } => {
                let segment = segment();
                let path = match path.as_bytes().first() {
                    None => segment,
                    Some(b'[') => format!("{segment}{path}"),
                    Some(_) => format!("{segment}.{path}"),
                };
                ValueError::NotFinite { path, what }
            }
            other => other,
        }
    }
}

/// A number from a guest, refused if it is not finite.
fn finite(n: f64) -> Result<f64, ValueError> {
    if n.is_finite() {
        return Ok(n);
    }
    let what = if n.is_nan() {
        "NaN"
    } else if n > 0.0 {
        "infinity"
    } else {
        "negative infinity"
    };
    Err(ValueError::NotFinite {
        path: String::new(),
        what,
    })
}

/// Who sent a value: only programs may refer to other registrations' outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Provider,
    Program,
}

/// Flattens a value for a guest.
pub(crate) fn to_wit(value: &Value) -> wit::Value {
    secret_masker().learn(value);
    let mut nodes = Vec::with_capacity(node_count(value));
    flatten(value, &mut nodes);
    wit::Value { nodes }
}

/// Flattens a property map for a guest: the root is an object.
pub(crate) fn map_to_wit(map: &PropertyMap) -> wit::Value {
    map.values().for_each(|v| secret_masker().learn(v));
    let mut nodes = Vec::with_capacity(1 + map.values().map(node_count).sum::<usize>());
    nodes.push(wit::Node::Null);
    nodes[0] = wit::Node::Object(flatten_entries(map, &mut nodes));
    wit::Value { nodes }
}

/// How many nodes `value` flattens to: the list is allocated once, at its final size.
fn node_count(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(node_count).sum(),
        Value::Object(map) => map.values().map(node_count).sum(),
        Value::Secret(inner) => node_count(inner),
        _ => 0,
    }
}

/// Rebuilds a value a guest sent.
pub(crate) fn from_wit(value: wit::Value, origin: Origin) -> Result<Value, ValueError> {
    let mut tree = Tree::new(value, origin);
    let root = tree.take_root()?;
    let value = tree.convert(0, root, 0)?;
    secret_masker().learn(&value);
    if secret_masker().knows_none() {
        return Ok(value);
    }
    conceal(value, 0)
}

/// Rebuilds a property map a guest sent: the root must be an object.
pub(crate) fn map_from_wit(value: wit::Value, origin: Origin) -> Result<PropertyMap, ValueError> {
    let mut tree = Tree::new(value, origin);
    match tree.take_root()? {
        wit::Node::Object(entries) => {
            let map = tree.entries(0, entries, 0)?;
            map.values().for_each(|v| secret_masker().learn(v));
            if secret_masker().knows_none() {
                return Ok(map);
            }
            conceal_entries(map, 0)
        }
        other => Err(ValueError::NotAnObject {
            found: describe(&other),
        }),
    }
}

/// Conceals the known secrets in a value a guest sent, once its own secrets are learned: a
/// plain string holding a secret's plaintext (an input echoed back as plain text, a connection
/// string built from a password) or a number equal to one is marked secret, as the value it
/// came from was. A key holding one (of at least [`crate::masking::MIN_KEY_SECRET_LEN`] characters) is
/// refused: a key cannot be secret, and renaming it would silently change the data. `node`
/// names the value for errors.
fn conceal(value: Value, node: usize) -> Result<Value, ValueError> {
    let masker = secret_masker();
    Ok(match value {
        Value::String(text) if masker.contains_secret(&text) => {
            Value::Secret(Box::new(Value::String(text)))
        }
        Value::Integer(n) if masker.is_secret(&n.to_string()) => {
            Value::Secret(Box::new(Value::Integer(n)))
        }
        Value::Number(n) if masker.is_secret(&n.to_string()) => {
            Value::Secret(Box::new(Value::Number(n)))
        }
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| conceal(v, node))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(conceal_entries(map, node)?),
        // A secret is concealed already; nothing else holds text.
        other => other,
    })
}

fn conceal_entries(map: PropertyMap, node: usize) -> Result<PropertyMap, ValueError> {
    // A map's keys are unique already: only its values change.
    map.into_iter()
        .map(|(key, value)| {
            if let Cow::Owned(masked) = secret_masker().mask_key(&key) {
                let masked = escape_controls(&masked).into_owned();
                return Err(ValueError::SecretKey { node, masked });
            }
            Ok((key, conceal(value, node)?))
        })
        .collect()
}

/// Appends `value`'s nodes, parents before children, and returns the index of its root.
fn flatten(value: &Value, nodes: &mut Vec<wit::Node>) -> u32 {
    let index = nodes.len();
    nodes.push(wit::Node::Null);
    let node = match value {
        Value::Null => wit::Node::Null,
        Value::Bool(b) => wit::Node::Boolean(*b),
        Value::Integer(n) => wit::Node::Integer(*n),
        Value::Number(n) => wit::Node::Number(*n),
        Value::String(s) => wit::Node::Text(s.clone()),
        Value::Array(items) => wit::Node::Array(items.iter().map(|v| flatten(v, nodes)).collect()),
        Value::Object(map) => wit::Node::Object(flatten_entries(map, nodes)),
        Value::Secret(inner) => wit::Node::Secret(flatten(inner, nodes)),
        Value::Unknown => wit::Node::Unknown,
        Value::Output(r) => wit::Node::Output(wit::OutputRef {
            handle: r.handle,
            field: match &r.field {
                OutputField::Property(path) => wit::OutputField::Property(path.clone()),
                OutputField::Id => wit::OutputField::Id,
                OutputField::Urn => wit::OutputField::Urn,
            },
        }),
    };
    nodes[index] = node;
    node_index(index)
}

fn flatten_entries(map: &PropertyMap, nodes: &mut Vec<wit::Node>) -> Vec<(String, u32)> {
    map.iter()
        .map(|(k, v)| (k.clone(), flatten(v, nodes)))
        .collect()
}

fn node_index(index: usize) -> u32 {
    u32::try_from(index).expect("a value has fewer than 2^32 nodes")
}

/// The nodes of a value from a guest; each is taken out once, when its parent is converted.
struct Tree {
    nodes: Vec<Option<wit::Node>>,
    origin: Origin,
}

impl Tree {
    fn new(value: wit::Value, origin: Origin) -> Tree {
        Tree {
            nodes: value.nodes.into_iter().map(Some).collect(),
            origin,
        }
    }

    fn take_root(&mut self) -> Result<wit::Node, ValueError> {
        self.nodes
            .first_mut()
            .and_then(Option::take)
            .ok_or(ValueError::Empty)
    }

    /// Converts the child `child` of node `parent`, which is at `depth`.
    fn child(&mut self, parent: usize, child: u32, depth: usize) -> Result<Value, ValueError> {
        let len = self.nodes.len();
        let slot = self
            .nodes
            .get_mut(child as usize)
            .ok_or(ValueError::BadIndex { parent, child, len })?;
        let node = slot.take().ok_or(ValueError::NotATree { parent, child })?;
        self.convert(child as usize, node, depth + 1)
    }

    fn convert(
        &mut self,
        index: usize,
        node: wit::Node,
        depth: usize,
    ) -> Result<Value, ValueError> {
        if depth > MAX_DEPTH {
            return Err(ValueError::TooDeep);
        }
        Ok(match node {
            wit::Node::Null => Value::Null,
            wit::Node::Boolean(b) => Value::Bool(b),
            wit::Node::Integer(n) => Value::Integer(n),
            wit::Node::Number(n) => Value::Number(finite(n)?),
            wit::Node::Text(s) => Value::String(s),
            wit::Node::Array(children) => Value::Array(
                (children.into_iter().enumerate())
                    .map(|(i, child)| {
                        (self.child(index, child, depth)).map_err(|e| e.under(|| format!("[{i}]")))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            wit::Node::Object(entries) => Value::Object(self.entries(index, entries, depth)?),
            wit::Node::Secret(child) => Value::Secret(Box::new(self.child(index, child, depth)?)),
            wit::Node::Unknown => Value::Unknown,
            wit::Node::Output(r) => match self.origin {
                Origin::Provider => return Err(ValueError::OutputFromProvider { node: index }),
                Origin::Program => Value::Output(OutputRef {
                    handle: r.handle,
                    field: match r.field {
                        wit::OutputField::Property(path) => OutputField::Property(path),
                        wit::OutputField::Id => OutputField::Id,
                        wit::OutputField::Urn => OutputField::Urn,
                    },
                }),
            },
        })
    }

    fn entries(
        &mut self,
        index: usize,
        entries: Vec<(String, u32)>,
        depth: usize,
    ) -> Result<PropertyMap, ValueError> {
        let entries = (entries.into_iter())
            .map(|(key, child)| {
                let value = (self.child(index, child, depth))
                    .map_err(|e| e.under(|| key.escape_debug().to_string()))?;
                Ok((key, value))
            })
            .collect::<Result<Vec<_>, ValueError>>()?;
        PropertyMap::from_unique(entries)
            .map_err(|key| ValueError::DuplicateKey { node: index, key })
    }
}

fn describe(node: &wit::Node) -> &'static str {
    match node {
        wit::Node::Null => "null",
        wit::Node::Boolean(_) => "a boolean",
        wit::Node::Integer(_) => "an integer",
        wit::Node::Number(_) => "a number",
        wit::Node::Text(_) => "a string",
        wit::Node::Array(_) => "an array",
        wit::Node::Object(_) => "an object",
        wit::Node::Secret(_) => "a secret",
        wit::Node::Unknown => "an unknown value",
        wit::Node::Output(_) => "an output reference",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wit::Node;

    fn sample() -> PropertyMap {
        let mut nested = PropertyMap::new();
        nested.insert("n".into(), Value::Number(-1.5));
        nested.insert("i".into(), Value::Integer(8402));
        nested.insert("pw".into(), Value::Secret(Box::new("hunter2".into())));
        nested.insert("later".into(), Value::Unknown);
        let mut map = PropertyMap::new();
        map.insert("null".into(), Value::Null);
        map.insert("yes".into(), true.into());
        map.insert("name".into(), "pet".into());
        map.insert(
            "list".into(),
            Value::Array(vec![
                1.0.into(),
                Value::Array(vec![]),
                nested.clone().into(),
            ]),
        );
        map.insert("nested".into(), nested.into());
        map.insert("empty".into(), PropertyMap::new().into());
        map
    }

    fn output(handle: u64, field: OutputField) -> Value {
        Value::Output(OutputRef { handle, field })
    }

    fn value(nodes: Vec<Node>) -> wit::Value {
        wit::Value { nodes }
    }

    #[test]
    fn a_number_that_is_not_finite_is_refused_naming_its_path() {
        for (n, what) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "infinity"),
            (f64::NEG_INFINITY, "negative infinity"),
        ] {
            // {"size": 1, "list": [true, {"x\n": n}]}
            let nodes = vec![
                Node::Object(vec![("size".into(), 1), ("list".into(), 2)]),
                Node::Number(1.0),
                Node::Array(vec![3, 4]),
                Node::Boolean(true),
                Node::Object(vec![("x\n".into(), 5)]),
                Node::Secret(6),
                Node::Number(n),
            ];
            for origin in [Origin::Provider, Origin::Program] {
                let err = map_from_wit(value(nodes.clone()), origin).unwrap_err();
                assert_eq!(
                    err.to_string(),
                    format!(
                        "`list[1].x\\n` is {what}: a number must be finite (state is JSON, which has no NaN or infinity)"
                    )
                );
            }
            let err = from_wit(value(vec![Node::Number(n)]), Origin::Program).unwrap_err();
            assert!(err.to_string().starts_with("the value is"), "{err}");
        }
    }

    #[test]
    fn property_maps_round_trip() {
        let map = sample();
        let flat = map_to_wit(&map);
        assert!(matches!(flat.nodes[0], Node::Object(_)));
        assert_eq!(map_from_wit(flat, Origin::Provider).unwrap(), map);
    }

    #[test]
    fn values_round_trip_with_program_outputs() {
        let values = [
            Value::Null,
            "just a string".into(),
            Value::Secret(Box::new(Value::Secret(Box::new(2.0.into())))),
            Value::Array(vec![
                output(7, OutputField::Property(vec!["a".into(), "0".into()])),
                output(8, OutputField::Id),
                output(9, OutputField::Urn),
            ]),
            sample().into(),
        ];
        for v in values {
            assert_eq!(from_wit(to_wit(&v), Origin::Program).unwrap(), v);
        }
    }

    #[test]
    fn providers_may_not_send_output_references() {
        let v = Value::Array(vec![output(1, OutputField::Id)]);
        assert_eq!(
            from_wit(to_wit(&v), Origin::Provider),
            Err(ValueError::OutputFromProvider { node: 1 })
        );
    }

    #[test]
    fn rejects_malformed_trees() {
        let cases = [
            (value(vec![]), ValueError::Empty),
            (
                value(vec![Node::Array(vec![1, 5]), Node::Null]),
                ValueError::BadIndex {
                    parent: 0,
                    child: 5,
                    len: 2,
                },
            ),
            // The root referring to itself.
            (
                value(vec![Node::Secret(0)]),
                ValueError::NotATree {
                    parent: 0,
                    child: 0,
                },
            ),
            // A cycle below the root.
            (
                value(vec![
                    Node::Array(vec![1]),
                    Node::Array(vec![2]),
                    Node::Array(vec![1]),
                ]),
                ValueError::NotATree {
                    parent: 2,
                    child: 1,
                },
            ),
            // A shared child.
            (
                value(vec![Node::Array(vec![1, 1]), Node::Text("x".into())]),
                ValueError::NotATree {
                    parent: 0,
                    child: 1,
                },
            ),
        ];
        for (flat, error) in cases {
            assert_eq!(from_wit(flat, Origin::Program), Err(error));
        }
    }

    #[test]
    fn rejects_duplicate_keys() {
        let flat = value(vec![
            Node::Object(vec![("a".into(), 1), ("a".into(), 2)]),
            Node::Null,
            Node::Null,
        ]);
        assert_eq!(
            map_from_wit(flat, Origin::Provider),
            Err(ValueError::DuplicateKey {
                node: 0,
                key: "a".into()
            })
        );
    }

    #[test]
    fn property_maps_need_an_object_root() {
        let error = map_from_wit(value(vec![Node::Text("x".into())]), Origin::Provider);
        assert_eq!(error, Err(ValueError::NotAnObject { found: "a string" }));
        assert!(map_from_wit(to_wit(&Value::Null), Origin::Provider).is_err());
    }

    #[test]
    fn a_deep_chain_is_rejected_without_exhausting_the_stack() {
        let n = 1_000_000u32;
        let mut nodes: Vec<Node> = (1..n).map(|i| Node::Array(vec![i])).collect();
        nodes.push(Node::Null);
        assert_eq!(
            from_wit(value(nodes), Origin::Provider),
            Err(ValueError::TooDeep)
        );

        let mut nodes: Vec<Node> = (1..=MAX_DEPTH as u32).map(Node::Secret).collect();
        nodes.push(Node::Null);
        assert!(from_wit(value(nodes), Origin::Provider).is_ok());
    }

    #[test]
    fn integers_stay_integers() {
        let v = Value::Array(vec![Value::Integer(8402), Value::Number(8402.0)]);
        let flat = to_wit(&v);
        assert_eq!(
            flat.nodes,
            vec![
                Node::Array(vec![1, 2]),
                Node::Integer(8402),
                Node::Number(8402.0)
            ]
        );
        let Value::Array(back) = from_wit(flat, Origin::Provider).unwrap() else {
            panic!("an array");
        };
        assert!(matches!(back[..], [Value::Integer(8402), Value::Number(_)]));
    }

    #[test]
    fn unreferenced_nodes_are_ignored() {
        let flat = value(vec![Node::Boolean(true), Node::Text("stray".into())]);
        assert_eq!(from_wit(flat, Origin::Provider), Ok(Value::Bool(true)));
    }

    #[test]
    fn flattening_puts_parents_first_and_children_in_order() {
        let v = Value::Array(vec!["a".into(), Value::Array(vec!["b".into()]), "c".into()]);
        assert_eq!(
            to_wit(&v).nodes,
            vec![
                Node::Array(vec![1, 2, 4]),
                Node::Text("a".into()),
                Node::Array(vec![3]),
                Node::Text("b".into()),
                Node::Text("c".into()),
            ]
        );
    }
}
