//! The `scale` provider, built with `wit-bindgen` directly against `wit/plugin-0.2` (not the
//! SDK, which follows the current version), as a guest compiled before plinth moved to 0.3
//! would be: every number it sees or sends is an `f64`. End-to-end tests load it beside 0.3
//! providers to prove that such guests keep working and that integers cross to and from it.
//!
//! - `scale:Product` takes a number `value` (required) and a number `factor` (default: the
//!   provider's configured `factor`, else 1); a change of either replaces it. Its outputs are
//!   `value`, `factor` and `product`, their product, all numbers (floats); its id is
//!   `product-<name>`. It refuses a `value` that is not a number.
//! - Configuration: `factor`, a number (0.2 describes its configuration).

wit_bindgen::generate!({
    world: "provider-plugin",
    path: "../../../wit/plugin-0.2",
    additional_derives: [PartialEq],
});

use std::cell::Cell;

use exports::plinth::plugin::provider::{
    Capabilities, CheckResult, Created, DiffResult, Guest, PluginInfo, PropertySchema,
    ProviderError, ReadResult, ResourceSchema,
};
use plinth::plugin::types::{CheckFailure, Node, Value};

const PRODUCT: &str = "scale:Product";

thread_local! {
    /// The configured default `factor`.
    static FACTOR: Cell<f64> = const { Cell::new(1.0) };
}

struct Scale;

fn property(name: &str, required: bool, replace_on_change: bool) -> PropertySchema {
    PropertySchema {
        name: name.into(),
        description: String::new(),
        required,
        secret: false,
        replace_on_change,
    }
}

impl Guest for Scale {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "scale".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            capabilities: Capabilities {
                dirs: Vec::new(),
                env: Vec::new(),
                tcp: Vec::new(),
                udp: Vec::new(),
                http: Vec::new(),
            },
            config: vec![property("factor", false, false)],
            resources: vec![ResourceSchema {
                token: PRODUCT.into(),
                description: "The product of two numbers.".into(),
                inputs: vec![
                    property("value", true, true),
                    property("factor", false, true),
                ],
                outputs: vec![
                    property("value", true, false),
                    property("factor", true, false),
                    property("product", true, false),
                ],
            }],
            functions: Vec::new(),
        }
    }

    fn check_config(config: Value) -> Result<CheckResult, ProviderError> {
        let failures = match field(&config, "factor") {
            None | Some(Node::Number(_)) => Vec::new(),
            Some(_) => vec![failure("factor", "a number is required")],
        };
        Ok(CheckResult {
            inputs: config,
            failures,
        })
    }

    fn configure(config: Value) -> Result<(), ProviderError> {
        if let Some(Node::Number(factor)) = field(&config, "factor") {
            FACTOR.set(*factor);
        }
        Ok(())
    }

    fn check(urn: String, _olds: Option<Value>, news: Value) -> Result<CheckResult, ProviderError> {
        product_type(&urn)?;
        let mut failures = Vec::new();
        for (name, required) in [("value", true), ("factor", false)] {
            match field(&news, name) {
                Some(Node::Number(_) | Node::Unknown) => {}
                None if !required => {}
                other => failures.push(failure(
                    name,
                    &format!("a number is required, got {other:?}"),
                )),
            }
        }
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
        product_type(&urn)?;
        let changed: Vec<String> = ["value", "factor"]
            .into_iter()
            .filter(|name| field(&old_inputs, name) != field(&new_inputs, name))
            .map(str::to_owned)
            .collect();
        Ok(DiffResult {
            replaces: changed.clone(),
            changed,
            delete_before_replace: false,
        })
    }

    fn create(urn: String, inputs: Value, _preview: bool) -> Result<Created, ProviderError> {
        product_type(&urn)?;
        let name = urn.rsplit("::").next().unwrap_or_default();
        Ok(Created {
            id: format!("product-{name}"),
            outputs: outputs(&inputs)?,
        })
    }

    fn read(
        urn: String,
        id: String,
        inputs: Value,
        outputs: Value,
    ) -> Result<Option<ReadResult>, ProviderError> {
        product_type(&urn)?;
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
            "a product is replaced, never updated in place".into(),
        ))
    }

    fn delete(
        urn: String,
        _id: String,
        _inputs: Value,
        _outputs: Value,
    ) -> Result<(), ProviderError> {
        product_type(&urn)
    }

    fn invoke(token: String, _args: Value) -> Result<Value, ProviderError> {
        Err(ProviderError::UnknownType(token))
    }
}

fn failure(property: &str, reason: &str) -> CheckFailure {
    CheckFailure {
        property: property.into(),
        reason: reason.into(),
    }
}

/// Fails unless `urn` names a `scale:Product` (possibly as a child, `parent$scale:Product`).
fn product_type(urn: &str) -> Result<(), ProviderError> {
    let qualified = urn.split("::").nth(2).unwrap_or_default();
    let token = qualified.rsplit('$').next().unwrap_or_default();
    if token == PRODUCT {
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

/// `{value, factor, product}`; the product is unknown while an input is.
fn outputs(inputs: &Value) -> Result<Value, ProviderError> {
    let number = |name: &str, default: Option<f64>| match (field(inputs, name), default) {
        (Some(Node::Number(n)), _) => Ok(Some(*n)),
        (Some(Node::Unknown), _) => Ok(None),
        (None, Some(n)) => Ok(Some(n)),
        (other, _) => Err(ProviderError::Failed(format!(
            "`{name}` must be a number, not {other:?}"
        ))),
    };
    let value = number("value", None)?;
    let factor = number("factor", Some(FACTOR.get()))?;
    let node = |n: Option<f64>| n.map_or(Node::Unknown, Node::Number);
    let product = value.zip(factor).map(|(v, f)| v * f);
    Ok(Value {
        nodes: vec![
            Node::Object(vec![
                ("value".into(), 1),
                ("factor".into(), 2),
                ("product".into(), 3),
            ]),
            node(value),
            node(factor),
            node(product),
        ],
    })
}

export!(Scale);
