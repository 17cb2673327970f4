//! The end-to-end test program of the postgresql provider: it registers the resources the
//! configuration value `resources` lists, a JSON array of
//! `{"type": "postgresql:Role", "name": "app", "inputs": {...}, "import": "ID"}`.
//!
//! In `inputs`, `{"$secret": "KEY"}` is the secret configuration value `KEY`, and
//! `{"$output": ["NAME", "FIELD"]}` is the output `FIELD` of the resource `NAME` registered
//! before. `{"$password": N}` registers a `random:RandomPassword` of length N (named after the
//! resource and input) and uses its result. Every resource's outputs are exported under its name.
//!
//! An entry `{"invoke": "postgresql:getTables", "name": "NAME", "args": {...}}` calls a provider
//! function instead and exports its result under `NAME`.

use std::collections::BTreeMap;

use plinth_sdk::{Context, Error, PropertyMap, Resource, Value};
use serde_json::Value as Json;

fn main(ctx: &Context) -> Result<(), Error> {
    let spec = ctx.config_or("resources", "[]");
    let spec: Vec<Json> = serde_json::from_str(&spec)
        .map_err(|e| Error::new(format!("`resources` is not a JSON array: {e}")))?;
    let mut registered: BTreeMap<String, Resource> = BTreeMap::new();
    for entry in spec {
        let field = |key: &str| entry.get(key).and_then(Json::as_str).map(str::to_owned);
        let name = field("name").ok_or_else(|| Error::new("a resource without `name`"))?;
        if let Some(token) = field("invoke") {
            let mut args = PropertyMap::new();
            if let Some(Json::Object(given)) = entry.get("args") {
                for (key, value) in given {
                    args.insert(key.clone(), convert(ctx, &registered, &name, value)?);
                }
            }
            ctx.export(name, ctx.invoke(&token, args)?);
            continue;
        }
        let ty = field("type").ok_or_else(|| Error::new("a resource without `type`"))?;
        let mut inputs = PropertyMap::new();
        if let Some(Json::Object(given)) = entry.get("inputs") {
            for (key, value) in given {
                let value = convert(ctx, &registered, &format!("{name}-{key}"), value)?;
                inputs.insert(key.clone(), value);
            }
        }
        let mut builder = ctx.resource(&ty, &name).inputs(inputs);
        if let Some(id) = field("import") {
            builder = builder.import(id);
        }
        let resource = builder.register();
        ctx.export(name.clone(), resource.output("name"));
        registered.insert(name, resource);
    }
    Ok(())
}

fn convert(
    ctx: &Context,
    registered: &BTreeMap<String, Resource>,
    path: &str,
    json: &Json,
) -> Result<Value, Error> {
    Ok(match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Number(n.as_f64().unwrap_or_default()),
        },
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| convert(ctx, registered, path, item))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(map) => {
            if let Some(Json::String(key)) = map.get("$secret") {
                return ctx
                    .secret_config(key)
                    .map(Value::from)
                    .ok_or_else(|| Error::new(format!("no secret config `{key}`")));
            }
            if let Some(Json::Array(reference)) = map.get("$output") {
                let (Some(Json::String(name)), Some(Json::String(field))) =
                    (reference.first(), reference.get(1))
                else {
                    return Err(Error::new("`$output` is [name, field]"));
                };
                let resource = registered.get(name).ok_or_else(|| {
                    Error::new(format!("`$output` names `{name}`, not registered before"))
                })?;
                return Ok(resource.output(field).into());
            }
            if let Some(length) = map.get("$password").and_then(Json::as_i64) {
                let password = ctx
                    .resource("random:RandomPassword", path)
                    .input("length", length)
                    .input("special", false)
                    .register();
                return Ok(password.output("result").into());
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), convert(ctx, registered, path, v)?)))
                    .collect::<Result<_, Error>>()?,
            )
        }
    })
}

plinth_sdk::export_program!(main);
