//! `kv`: a key-value store in a directory the project grants. Each `kv:Entry` is a file named
//! after its key, holding its value.

use std::io::ErrorKind;

use plinth_sdk::{
    Capabilities, CheckFailure, Created, Provider, ProviderError, ReadResult, ResourceContext,
    ResourceSchema, ResourceType, Typed, TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the provider sees the store; the project grants a directory of its own there.
const STORE: &str = "/store";

#[derive(Default)]
struct Kv;

impl Provider for Kv {
    /// The package of its type tokens: `kv:Entry`.
    fn name(&self) -> &str {
        "kv"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn description(&self) -> &str {
        "A key-value store: one file per key in a directory the project grants."
    }

    /// The host loads the provider only if the project grants this directory.
    fn capabilities(&self) -> Capabilities {
        Capabilities::new().dir(STORE, true, "the store: one file per key")
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![Box::new(Typed(Entry))]
    }
}

/// What a program gives a `kv:Entry`. The schema (types, descriptions, what is required) is
/// derived from this struct.
#[derive(Serialize, Deserialize, JsonSchema)]
struct EntryInputs {
    /// The key: letters, digits, `-`, `_` and `.`. A new key is a new entry.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    key: String,
    /// The value stored under the key.
    value: String,
}

/// What a `kv:Entry` gives back.
#[derive(Serialize, Deserialize, JsonSchema)]
struct EntryOutputs {
    key: String,
    value: String,
    /// The value's length in bytes.
    size: u64,
}

impl EntryOutputs {
    fn of(key: String, value: String) -> EntryOutputs {
        let size = value.len() as u64;
        EntryOutputs { key, value, size }
    }
}

/// `kv:Entry`: a value stored under a key.
struct Entry;

impl TypedResource for Entry {
    type Inputs = EntryInputs;
    type Outputs = EntryOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("kv:Entry").describe("A value stored under a key.")
    }

    /// Rules the types cannot say; the schema's checks (required, types) ran before.
    fn validate(&self, _: &ResourceContext<'_>, inputs: &EntryInputs) -> Vec<CheckFailure> {
        let key = &inputs.key;
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        if key.is_empty() || key == "." || key == ".." || !key.chars().all(allowed) {
            let reason = format!("`{key}` is not a key: use letters, digits, `-`, `_` and `.`");
            return vec![CheckFailure::new("key", reason)];
        }
        Vec::new()
    }

    /// During a preview: the outputs are known from the inputs, so say so.
    fn plan(
        &self,
        _: &ResourceContext<'_>,
        inputs: &EntryInputs,
        _: Option<&EntryOutputs>,
    ) -> Result<Option<EntryOutputs>, ProviderError> {
        let outputs = EntryOutputs::of(inputs.key.clone(), inputs.value.clone());
        Ok(Some(outputs))
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        inputs: EntryInputs,
    ) -> Result<Created<EntryOutputs>, ProviderError> {
        write(&inputs.key, &inputs.value)?;
        Ok(Created {
            id: inputs.key.clone(),
            outputs: EntryOutputs::of(inputs.key, inputs.value),
        })
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: EntryInputs,
        _: EntryOutputs,
    ) -> Result<Option<ReadResult<EntryInputs, EntryOutputs>>, ProviderError> {
        let value = match std::fs::read_to_string(path(&id)) {
            Ok(value) => value,
            // Gone: `Ok(None)`, and the engine forgets the resource. An error would fail the
            // refresh.
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(failed("reading", &id, e)),
        };
        // Changed out of band: the inputs that would give the entry as it is now.
        let inputs = EntryInputs {
            value: value.clone(),
            ..inputs
        };
        Ok(Some(ReadResult {
            outputs: EntryOutputs::of(id.clone(), value),
            id,
            inputs,
        }))
    }

    /// A new value rewrites the file in place (a new key replaces the entry instead).
    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: EntryInputs,
        _: EntryOutputs,
        new_inputs: EntryInputs,
    ) -> Result<EntryOutputs, ProviderError> {
        write(id, &new_inputs.value)?;
        Ok(EntryOutputs::of(new_inputs.key, new_inputs.value))
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: EntryInputs,
        _: EntryOutputs,
    ) -> Result<(), ProviderError> {
        match std::fs::remove_file(path(id)) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(failed("deleting", id, e)),
            _ => Ok(()),
        }
    }
}

/// The file of `key`. `validate` made sure a key is a plain file name.
fn path(key: &str) -> String {
    format!("{STORE}/{key}")
}

fn write(key: &str, value: &str) -> Result<(), ProviderError> {
    std::fs::write(path(key), value).map_err(|e| failed("writing", key, e))
}

fn failed(doing: &str, key: &str, error: std::io::Error) -> ProviderError {
    ProviderError::failed(format!("{doing} {}: {error}", path(key)))
}

plinth_sdk::export_provider!(Kv);
