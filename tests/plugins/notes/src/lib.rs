//! The `notes` provider, for end-to-end tests of declared capabilities: it asks for the
//! directory `/notes`, read-write, and plinth loads it only where the project grants that.
//!
//! `notes:Note` is a file `/notes/<name>.txt` holding its `text` input (a change replaces the
//! note); its id is the file name.

use std::io::ErrorKind;

use plinth_sdk::{
    Capabilities, Created, PropertyMap, PropertySchema, Provider, ProviderError, ResourceContext,
    ResourceSchema, ResourceType, Type, Value,
};

/// Where the plugin asks to see the directory its notes live in.
const NOTES: &str = "/notes";

#[derive(Default)]
struct Notes;

impl Provider for Notes {
    fn name(&self) -> &str {
        "notes"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::new().dir(NOTES, true, "each note is a file there")
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![Box::new(Note)]
    }
}

struct Note;

impl ResourceType for Note {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("notes:Note")
            .describe("A file /notes/<name>.txt holding `text`; other inputs are free-form.")
            .open()
            .input(
                PropertySchema::new("text")
                    .of(Type::String)
                    .required()
                    .replace_on_change(),
            )
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        let id = format!("{}.txt", ctx.name());
        if !ctx.preview() {
            let text = inputs
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            std::fs::write(path(&id), text)
                .map_err(|e| ProviderError::failed(format!("writing {}: {e}", path(&id))))?;
        }
        Ok(Created {
            id,
            outputs: inputs,
        })
    }

    fn delete(
        &self,
        _ctx: &ResourceContext<'_>,
        id: &str,
        _inputs: PropertyMap,
        _outputs: PropertyMap,
    ) -> Result<(), ProviderError> {
        match std::fs::remove_file(path(id)) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                Err(ProviderError::failed(format!("deleting {}: {e}", path(id))))
            }
            _ => Ok(()),
        }
    }
}

fn path(id: &str) -> String {
    format!("{NOTES}/{id}")
}

plinth_sdk::export_provider!(Notes);
