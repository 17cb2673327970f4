//! File system attacks. They touch whatever path they are given, so that a test can aim them
//! outside a grant (an absolute host path, `..` out of the granted directory, a symlink or a
//! hard link planted inside it) or at a read-only grant, and check that the sandbox refuses;
//! aimed inside a grant that allows them, they must succeed.
//!
//! - `adversary:ReadFile` `{path}` reads the file; its output `content` is what it read.
//! - `adversary:WriteFile` `{action, path, to?, content?}` does `action` when created:
//!   `create` a new file, `overwrite` an existing one, `delete` it, `rename` it to `to`, or
//!   `symlink`: plant a symlink at `path` pointing to `to`.
//!
//! A refusal is reported as the I/O error the sandbox gave, with the path and what was tried.

use std::fs::OpenOptions;
use std::io::Write;

use plinth_sdk::{
    Created, PropertyMap, PropertySchema, ProviderError, ResourceContext, ResourceSchema,
    ResourceType,
};

use crate::inputs;

/// The `adversary:ReadFile` resource type.
pub(crate) struct ReadFile;

impl ResourceType for ReadFile {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("adversary:ReadFile")
            .open()
            .describe("Reads the file at `path` when created.")
            .input(PropertySchema::new("path").required())
            .output(PropertySchema::new("content").describe("What was read."))
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        mut inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        let path = inputs::required(&inputs, "path")?;
        let content =
            std::fs::read_to_string(path).map_err(|e| refused(format!("reading `{path}`"), &e))?;
        inputs.insert("content".to_owned(), content.into());
        Ok(Created {
            id: ctx.name().to_owned(),
            outputs: inputs,
        })
    }
}

/// The `adversary:WriteFile` resource type.
pub(crate) struct WriteFile;

impl ResourceType for WriteFile {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("adversary:WriteFile")
            .open()
            .describe("Changes the file at `path` as `action` says, when created.")
            .input(
                PropertySchema::new("action")
                    .describe("create, overwrite, delete, rename or symlink.")
                    .required(),
            )
            .input(PropertySchema::new("path").required())
            .input(PropertySchema::new("to").describe("rename: the new path; symlink: the target."))
            .input(PropertySchema::new("content").describe("What create and overwrite write."))
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        let action = inputs::required(&inputs, "action")?;
        let path = inputs::required(&inputs, "path")?;
        let content = inputs::optional(&inputs, "content").unwrap_or("adversary was here");
        let to = || inputs::required(&inputs, "to");
        match action {
            "create" => OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .and_then(|mut file| file.write_all(content.as_bytes()))
                .map_err(|e| refused(format!("creating `{path}`"), &e))?,
            "overwrite" => OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(path)
                .and_then(|mut file| file.write_all(content.as_bytes()))
                .map_err(|e| refused(format!("overwriting `{path}`"), &e))?,
            "delete" => {
                std::fs::remove_file(path).map_err(|e| refused(format!("deleting `{path}`"), &e))?
            }
            "rename" => {
                let to = to()?;
                std::fs::rename(path, to)
                    .map_err(|e| refused(format!("renaming `{path}` to `{to}`"), &e))?;
            }
            "symlink" => {
                let to = to()?;
                // `std::os::wasi::fs::symlink_path` is unstable; this is the stable spelling.
                #[allow(deprecated)]
                std::fs::soft_link(to, path)
                    .map_err(|e| refused(format!("planting a symlink `{path}` -> `{to}`"), &e))?;
            }
            _ => {
                return Err(ProviderError::invalid(
                    "action",
                    "expected create, overwrite, delete, rename or symlink",
                ));
            }
        }
        Ok(Created {
            id: ctx.name().to_owned(),
            outputs: inputs,
        })
    }
}

fn refused(what: String, error: &std::io::Error) -> ProviderError {
    ProviderError::failed(format!("adversary: {what}: {error}"))
}
