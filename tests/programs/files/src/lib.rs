//! The end-to-end test program of the `file` provider: its resources come from the stack config
//! `files`, a JSON object that maps each resource's name to its description:
//!
//! ```json
//! {"docs":  {"type": "Directory", "path": "docs"},
//!  "index": {"type": "Template", "in": "docs", "path": "index.html",
//!            "template": "<h1>{{ title }}</h1>", "vars": {"title": "Home"}}}
//! ```
//!
//! `type` is `File`, `Template` or `Directory` (the `file:` type); every other key but `in` is
//! an input, as given. `in` names a `Directory` of the same config: the resource's `path` is
//! then that directory's `path` output joined with its own, so the resource depends on the
//! directory (created after it, deleted before it).
//!
//! Stack outputs: one per resource, named like it: `{path, size, sha256}` (a directory: `{path}`).

use std::collections::BTreeMap;

use plinth_sdk::{Context, Error, PropertyMap, Resource, Value};

fn main(ctx: &Context) -> Result<(), Error> {
    let config = ctx.config_or("files", "{}");
    let files: BTreeMap<String, serde_json::Value> = serde_json::from_str(&config)
        .map_err(|e| Error::new(format!("`files` must be a JSON object of resources: {e}")))?;

    // Directories first, so that resources `in` them can refer to their outputs.
    let (dirs, others): (Vec<_>, Vec<_>) = files
        .iter()
        .partition(|(_, spec)| spec["type"] == "Directory");
    let mut registered: BTreeMap<&str, Resource> = BTreeMap::new();
    for (name, spec) in dirs.into_iter().chain(others) {
        let ty = spec["type"]
            .as_str()
            .ok_or_else(|| Error::new(format!("`{name}` needs a `type`")))?;
        let mut inputs = inputs(name, spec)?;
        if let Some(dir) = spec.get("in").and_then(serde_json::Value::as_str) {
            let parent = registered.get(dir).ok_or_else(|| {
                Error::new(format!("`{name}` is in `{dir}`, which is not a Directory"))
            })?;
            let own = inputs
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let path = parent
                .output("path")
                .apply(move |dir| format!("{}/{own}", dir.as_str().unwrap_or_default()));
            inputs.insert("path".to_owned(), path.into());
        }
        let resource = ctx
            .resource(&format!("file:{ty}"), name)
            .inputs(inputs)
            .register();
        let mut exported = vec![("path", resource.output("path"))];
        if ty != "Directory" {
            exported.push(("size", resource.output("size")));
            exported.push(("sha256", resource.output("sha256")));
        }
        ctx.export(name.as_str(), Value::object(exported));
        registered.insert(name, resource);
    }
    Ok(())
}

/// The inputs a resource's description gives: every key but `type` and `in`.
fn inputs(name: &str, spec: &serde_json::Value) -> Result<PropertyMap, Error> {
    let object = spec
        .as_object()
        .ok_or_else(|| Error::new(format!("`{name}` must be an object")))?;
    Ok(object
        .iter()
        .filter(|(key, _)| !matches!(key.as_str(), "type" | "in"))
        .map(|(key, value)| (key.clone(), value_of(value)))
        .collect())
}

fn value_of(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => (*b).into(),
        serde_json::Value::Number(n) => n.as_f64().unwrap_or_default().into(),
        serde_json::Value::String(s) => s.as_str().into(),
        serde_json::Value::Array(items) => Value::Array(items.iter().map(value_of).collect()),
        serde_json::Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), value_of(v))).collect())
        }
    }
}

plinth_sdk::export_program!(main);
