//! The `legacy` provider, built with `wit-bindgen` directly against `wit/plugin-0.1` (not the
//! SDK, which follows the current version), as a guest compiled before plinth moved to 0.2 would
//! be. End-to-end tests load it to prove that such guests keep working.
//!
//! - `legacy:Note` takes a required `text` (a change replaces the note) and outputs `text` and
//!   `length`, its number of characters; its id is `note-<name>`.
//! - The function `legacy:length` `{text}` returns the number of characters of `text`.

wit_bindgen::generate!({
    world: "provider-plugin",
    path: "../../../wit/plugin-0.1",
    additional_derives: [PartialEq],
});

use exports::plinth::plugin::provider::{
    CheckResult, Created, DiffResult, Guest, PluginInfo, PropertySchema, ProviderError, ReadResult,
    ResourceSchema,
};
use plinth::plugin::types::{CheckFailure, Node, Value};

const NOTE: &str = "legacy:Note";
const LENGTH: &str = "legacy:length";

struct Legacy;

impl Guest for Legacy {
    fn info() -> PluginInfo {
        let property = |name: &str, required, replace_on_change| PropertySchema {
            name: name.into(),
            description: String::new(),
            required,
            secret: false,
            replace_on_change,
        };
        PluginInfo {
            name: "legacy".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            resources: vec![ResourceSchema {
                token: NOTE.into(),
                description: "A note: a text and its length.".into(),
                inputs: vec![property("text", true, true)],
                outputs: vec![
                    property("text", true, false),
                    property("length", true, false),
                ],
            }],
            functions: vec![LENGTH.into()],
        }
    }

    fn check_config(config: Value) -> Result<CheckResult, ProviderError> {
        Ok(CheckResult {
            inputs: config,
            failures: Vec::new(),
        })
    }

    fn configure(_config: Value) -> Result<(), ProviderError> {
        Ok(())
    }

    fn check(urn: String, _olds: Option<Value>, news: Value) -> Result<CheckResult, ProviderError> {
        note_type(&urn)?;
        let failures = match field(&news, "text") {
            Some(Node::Text(_) | Node::Unknown) => Vec::new(),
            _ => vec![CheckFailure {
                property: "text".into(),
                reason: "a string is required".into(),
            }],
        };
        Ok(CheckResult {
            inputs: news,
            failures,
        })
    }

    fn diff(
        urn: String,
        _id: String,
        old_inputs: Value,
        _old_outputs: Value,
        new_inputs: Value,
    ) -> Result<DiffResult, ProviderError> {
        note_type(&urn)?;
        let changed = field(&old_inputs, "text") != field(&new_inputs, "text");
        let text = if changed {
            vec!["text".to_owned()]
        } else {
            Vec::new()
        };
        Ok(DiffResult {
            changed: text.clone(),
            replaces: text,
            delete_before_replace: false,
        })
    }

    fn create(urn: String, inputs: Value, _preview: bool) -> Result<Created, ProviderError> {
        note_type(&urn)?;
        let name = urn.rsplit("::").next().unwrap_or_default();
        Ok(Created {
            id: format!("note-{name}"),
            outputs: note_outputs(&inputs)?,
        })
    }

    fn read(
        urn: String,
        id: String,
        inputs: Value,
        outputs: Value,
    ) -> Result<Option<ReadResult>, ProviderError> {
        note_type(&urn)?;
        Ok(Some(ReadResult {
            id,
            inputs,
            outputs,
        }))
    }

    fn update(
        _urn: String,
        _id: String,
        _old_inputs: Value,
        _old_outputs: Value,
        _new_inputs: Value,
        _preview: bool,
    ) -> Result<Value, ProviderError> {
        Err(ProviderError::Failed(
            "a note is replaced, never updated in place".into(),
        ))
    }

    fn delete(
        urn: String,
        _id: String,
        _inputs: Value,
        _outputs: Value,
    ) -> Result<(), ProviderError> {
        note_type(&urn).map(|_| ())
    }

    fn invoke(token: String, args: Value) -> Result<Value, ProviderError> {
        if token != LENGTH {
            return Err(ProviderError::UnknownType(token));
        }
        match field(&args, "text") {
            Some(Node::Text(text)) => Ok(Value {
                nodes: vec![Node::Number(text.chars().count() as f64)],
            }),
            _ => Err(ProviderError::Invalid(vec![CheckFailure {
                property: "text".into(),
                reason: "a string is required".into(),
            }])),
        }
    }
}

/// Fails unless `urn` names a `legacy:Note` (possibly as a child, `parent$legacy:Note`).
fn note_type(urn: &str) -> Result<(), ProviderError> {
    let qualified = urn.split("::").nth(2).unwrap_or_default();
    let token = qualified.rsplit('$').next().unwrap_or_default();
    if token == NOTE {
        Ok(())
    } else {
        Err(ProviderError::UnknownType(token.to_owned()))
    }
}

/// The node of the top-level property `key` of an object value.
fn field<'a>(value: &'a Value, key: &str) -> Option<&'a Node> {
    let Some(Node::Object(entries)) = value.nodes.first() else {
        return None;
    };
    let (_, index) = entries.iter().find(|(k, _)| k == key)?;
    value.nodes.get(*index as usize)
}

/// `{text, length}` for the inputs of a note; the length is unknown while the text is.
fn note_outputs(inputs: &Value) -> Result<Value, ProviderError> {
    let (text, length) = match field(inputs, "text") {
        Some(Node::Text(text)) => (
            Node::Text(text.clone()),
            Node::Number(text.chars().count() as f64),
        ),
        Some(Node::Unknown) => (Node::Unknown, Node::Unknown),
        _ => return Err(ProviderError::Failed("`text` must be a string".into())),
    };
    Ok(Value {
        nodes: vec![
            Node::Object(vec![("text".into(), 1), ("length".into(), 2)]),
            text,
            length,
        ],
    })
}

export!(Legacy);
