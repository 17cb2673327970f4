//! A program built with `wit-bindgen` directly against `wit/plugin-0.1` (not the SDK, which
//! follows the current version), as a program compiled before plinth moved to 0.2 would be.
//!
//! It registers one `legacy:Note` named `note` whose `text` is the config value `text`
//! (default `hello`), and one apply over the note's `length`. Stack outputs: `length`, the
//! note's length, and `summary`, `<length> characters` computed by the apply.

wit_bindgen::generate!({
    world: "program",
    path: "../../../wit/plugin-0.1",
});

use exports::plinth::plugin::callbacks::Guest;
use plinth::plugin::monitor::{self, LogLevel, RegisterRequest, ResourceOptions};
use plinth::plugin::types::{Node, OutputField, OutputRef, Value};

struct LegacyProgram;

impl Guest for LegacyProgram {
    fn run() -> Result<(), String> {
        let text = monitor::config("text").unwrap_or_else(|| Value {
            nodes: vec![Node::Text("hello".into())],
        });
        let note = monitor::register_resource(&RegisterRequest {
            type_: "legacy:Note".into(),
            name: "note".into(),
            custom: true,
            inputs: object(vec![("text", text)]),
            options: no_options(),
        });
        let length = output(note, "length");
        let summary = monitor::register_apply(std::slice::from_ref(&length));
        let summary = Value {
            nodes: vec![Node::Output(OutputRef {
                handle: summary,
                field: OutputField::Property(Vec::new()),
            })],
        };
        monitor::register_outputs(
            None,
            &object(vec![("length", length), ("summary", summary)]),
        );
        monitor::log(LogLevel::Info, "the legacy program registered its note");
        Ok(())
    }

    fn resume(_apply: u64, inputs: Vec<Value>) -> Result<Value, String> {
        match inputs.first().and_then(|v| v.nodes.first()) {
            Some(Node::Number(length)) => Ok(Value {
                nodes: vec![Node::Text(format!("{length} characters"))],
            }),
            other => Err(format!("expected the note's length, got {other:?}")),
        }
    }
}

fn no_options() -> ResourceOptions {
    ResourceOptions {
        depends_on: Vec::new(),
        parent: None,
        provider: None,
        protect: false,
        retain_on_delete: false,
        delete_before_replace: false,
        ignore_changes: Vec::new(),
        replace_on_changes: Vec::new(),
        aliases: Vec::new(),
        custom_timeouts: None,
        import_id: None,
    }
}

/// A reference to the output `property` of the registration `handle`.
fn output(handle: u64, property: &str) -> Value {
    Value {
        nodes: vec![Node::Output(OutputRef {
            handle,
            field: OutputField::Property(vec![property.into()]),
        })],
    }
}

/// An object of `entries`, each a whole value whose nodes are appended after the root.
fn object(entries: Vec<(&str, Value)>) -> Value {
    let mut nodes = vec![Node::Null];
    let mut keys = Vec::new();
    for (key, value) in entries {
        let offset = nodes.len() as u32;
        keys.push((key.to_owned(), offset));
        nodes.extend(value.nodes.into_iter().map(|node| shift(node, offset)));
    }
    nodes[0] = Node::Object(keys);
    Value { nodes }
}

/// `node` with its child indices moved by `offset`, as when its value is appended to another.
fn shift(node: Node, offset: u32) -> Node {
    match node {
        Node::Array(children) => Node::Array(children.into_iter().map(|c| c + offset).collect()),
        Node::Object(entries) => {
            Node::Object(entries.into_iter().map(|(k, c)| (k, c + offset)).collect())
        }
        Node::Secret(child) => Node::Secret(child + offset),
        other => other,
    }
}

export!(LegacyProgram);
