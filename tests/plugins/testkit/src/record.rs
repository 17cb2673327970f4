//! `testkit:Record`: a resource that exists outside the engine, as a file `/world/<id>.json`
//! in the directory granted to the plugin at `/world`. The file holds the resource's URN, name
//! and inputs. A `delay_ms` input (default 0) makes create, update and delete sleep that long
//! before and after touching the file, so that a test can interrupt them mid-call. A `wait_for`
//! input (a file under `/world`) holds them instead until the test says so: each first writes
//! `/world/<name>.waiting`, then waits until that file exists, before touching the record.
//!
//! Files are written to `/world/<id>.<name>.tmp` first and renamed into place, so a
//! `<id>.json` file is always whole; an interrupted write leaves only a `.tmp` file, whose name
//! says whose it is, and which deleting the record removes too.

use std::io::ErrorKind;
use std::path::PathBuf;
use std::time::Duration;

use plinth_sdk::{
    Created, PropertyMap, PropertySchema, ProviderError, ReadResult, ResourceContext,
    ResourceSchema, ResourceType, Type, Value,
};

/// Where the plugin sees the directory it keeps its records in.
const WORLD: &str = "/world";

/// The `testkit:Record` resource type.
pub(crate) struct Record;

impl ResourceType for Record {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("testkit:Record")
            .describe("A file /world/<id>.json holding the resource's URN, name and inputs.")
            .open()
            .input(
                PropertySchema::new("delay_ms")
                    .of(Type::Integer)
                    .describe("Sleep this long before and after touching the file (default 0)."),
            )
            .input(PropertySchema::new("wait_for").describe(
                "A file under /world: write /world/<name>.waiting, then wait until this file \
                 exists before touching the record.",
            ))
            .output(PropertySchema::new("file").describe("The file, as the plugin sees it."))
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        let id = if ctx.preview() {
            String::new()
        } else {
            let id = uuid::Uuid::new_v4().to_string();
            gate(ctx, &inputs)?;
            slowly(&inputs, || write(ctx, &id, &inputs))?;
            log("create", ctx, &id)?;
            id
        };
        let outputs = with_file(inputs, &id);
        Ok(Created { id, outputs })
    }

    fn read(
        &self,
        _ctx: &ResourceContext<'_>,
        id: String,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        match std::fs::metadata(file(&id)) {
            Ok(_) => Ok(Some(ReadResult {
                id,
                inputs,
                outputs,
            })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error("reading", &id, &e)),
        }
    }

    fn update(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        _old_inputs: PropertyMap,
        _old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        if !ctx.preview() {
            gate(ctx, &new_inputs)?;
            slowly(&new_inputs, || {
                if !file(id).exists() {
                    return Err(ProviderError::NotFound);
                }
                write(ctx, id, &new_inputs)
            })?;
        }
        Ok(with_file(new_inputs, id))
    }

    fn delete(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        inputs: PropertyMap,
        _outputs: PropertyMap,
    ) -> Result<(), ProviderError> {
        gate(ctx, &inputs)?;
        slowly(&inputs, || {
            match std::fs::remove_file(leftover(ctx, id)) {
                Err(e) if e.kind() != ErrorKind::NotFound => {
                    return Err(io_error("deleting", id, &e));
                }
                _ => {}
            }
            match std::fs::remove_file(file(id)) {
                Ok(()) => log("delete", ctx, id),
                Err(e) if e.kind() == ErrorKind::NotFound => Err(ProviderError::NotFound),
                Err(e) => Err(io_error("deleting", id, &e)),
            }
        })
    }
}

fn file(id: &str) -> PathBuf {
    PathBuf::from(format!("{WORLD}/{id}.json"))
}

/// Where the record of resource `id` is written before it is renamed into place.
fn leftover(ctx: &ResourceContext<'_>, id: &str) -> PathBuf {
    PathBuf::from(format!("{WORLD}/{id}.{}.tmp", ctx.name()))
}

fn with_file(mut outputs: PropertyMap, id: &str) -> PropertyMap {
    outputs.insert("file".to_owned(), file(id).display().to_string().into());
    outputs
}

/// If the `wait_for` input names a file, says that the operation on this resource is waiting
/// (`/world/<name>.waiting`), then waits until that file exists: the test decides when the
/// operation goes on.
fn gate(ctx: &ResourceContext<'_>, inputs: &PropertyMap) -> Result<(), ProviderError> {
    let Some(release) = inputs.get("wait_for").and_then(Value::as_str) else {
        return Ok(());
    };
    let waiting = format!("{WORLD}/{}.waiting", ctx.name());
    std::fs::write(&waiting, "")
        .map_err(|e| ProviderError::failed(format!("writing {waiting}: {e}")))?;
    while !std::path::Path::new(release).exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Runs `action` between two sleeps of the `delay_ms` input.
fn slowly<T>(
    inputs: &PropertyMap,
    action: impl FnOnce() -> Result<T, ProviderError>,
) -> Result<T, ProviderError> {
    let delay = inputs
        .get("delay_ms")
        .and_then(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()))
        .filter(|ms| *ms > 0.0)
        .map(|ms| Duration::from_millis(ms as u64));
    if let Some(delay) = delay {
        std::thread::sleep(delay);
    }
    let result = action()?;
    if let Some(delay) = delay {
        std::thread::sleep(delay);
    }
    Ok(result)
}

/// Writes the record of resource `id` whole: to a temporary file, then renamed into place.
fn write(ctx: &ResourceContext<'_>, id: &str, inputs: &PropertyMap) -> Result<(), ProviderError> {
    let body = serde_json::json!({
        "urn": ctx.urn(),
        "name": ctx.name(),
        "inputs": serde_json::Value::Object(
            inputs.iter().map(|(k, v)| (k.clone(), json(v))).collect()
        ),
    });
    let tmp = leftover(ctx, id);
    std::fs::write(&tmp, body.to_string())
        .and_then(|()| std::fs::rename(&tmp, file(id)))
        .map_err(|e| io_error("writing", id, &e))
}

/// Appends `<op> <name> <id>` to /world/ops.log if that file exists, so tests that create it
/// can see the order of operations.
fn log(op: &str, ctx: &ResourceContext<'_>, id: &str) -> Result<(), ProviderError> {
    use std::io::Write;
    let log = std::fs::OpenOptions::new()
        .append(true)
        .open(format!("{WORLD}/ops.log"));
    if matches!(&log, Err(e) if e.kind() == ErrorKind::NotFound) {
        return Ok(());
    }
    log.and_then(|mut f| writeln!(f, "{op} {} {id}", ctx.name()))
        .map_err(|e| ProviderError::failed(format!("appending to {WORLD}/ops.log: {e}")))
}

fn io_error(action: &str, id: &str, error: &std::io::Error) -> ProviderError {
    ProviderError::failed(format!("{action} the record {WORLD}/{id}.json: {error}"))
}

/// A property value as JSON; secrets are written in plaintext, as a real resource holds them.
fn json(value: &Value) -> serde_json::Value {
    if let Some(b) = value.as_bool() {
        b.into()
    } else if let Some(n) = value.as_f64() {
        n.into()
    } else if let Some(s) = value.as_str() {
        s.into()
    } else if let Some(items) = value.as_array() {
        items.iter().map(json).collect()
    } else if let Some(map) = value.as_object() {
        serde_json::Value::Object(map.iter().map(|(k, v)| (k.clone(), json(v))).collect())
    } else {
        serde_json::Value::Null
    }
}
